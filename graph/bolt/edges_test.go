package bolt

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// wantOrder sorts the edges of node as Store.Edges specifies: label,
// direction (out before in), other end, key; for Both a self-loop once.
func wantOrder(edges []graph.EdgeKey, node graph.ID, dir graph.Direction) []graph.EdgeKey {
	type item struct {
		pos edgeOrder
		k   graph.EdgeKey
	}
	var items []item
	for _, k := range edges {
		if dir != graph.In && k.From == node {
			items = append(items, item{edgeOrder{label: k.Label, other: k.To, key: k.Key}, k})
		}
		if dir != graph.Out && k.To == node && !(dir == graph.Both && k.From == node) {
			items = append(items, item{edgeOrder{label: k.Label, in: true, other: k.From, key: k.Key}, k})
		}
	}
	slices.SortFunc(items, func(a, b item) int { return a.pos.compare(b.pos) })
	out := make([]graph.EdgeKey, len(items))
	for i, it := range items {
		out[i] = it.k
	}
	return out
}

// Every store lists a node's edges in one specified order, whatever order
// they were written in, and the cursor carries that order's position, not
// Cayley's value IDs: paging with any page size yields exactly that order.
func TestEdgesOrderIsSpecified(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	hub := graph.ID("topic/hub")
	nodes := []graph.NodeInput{{ID: hub, Type: "Topic", Properties: graph.Props{"name": "hub"}}}
	var edges []graph.EdgeInput
	for i := range 12 {
		d := graph.ID(fmt.Sprintf("doc/d%02d", i))
		nodes = append(nodes, graph.NodeInput{ID: d, Type: "Document", Properties: graph.Props{"title": "d"}})
		edges = append(edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: d, Label: "about", To: hub}})
	}
	for i := range 6 {
		o := graph.ID(fmt.Sprintf("topic/o%d", i))
		nodes = append(nodes, graph.NodeInput{ID: o, Type: "Topic", Properties: graph.Props{"name": "o"}})
	}
	// Entities: keyed relations out of and into the hub entity, and a self-loop.
	ent := graph.ID("entity/hub")
	nodes = append(nodes, graph.NodeInput{ID: ent, Type: "Entity", Properties: graph.Props{"name": "hub", "entityType": "t", "observations": []any{}}})
	for i := range 5 {
		e := graph.ID(fmt.Sprintf("entity/e%d", i))
		nodes = append(nodes, graph.NodeInput{ID: e, Type: "Entity", Properties: graph.Props{"name": string(e), "entityType": "t", "observations": []any{}}})
		for _, key := range []string{"z", "a", "m"} {
			edges = append(edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: e, Label: "relation", To: ent, Key: key}},
				graph.EdgeInput{EdgeKey: graph.EdgeKey{From: ent, Label: "relation", To: e, Key: key}})
		}
	}
	edges = append(edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: ent, Label: "relation", To: ent, Key: "self"}})
	// Written in a shuffled order, in several batches, so that Cayley's
	// value IDs follow no name order.
	rng := rand.New(rand.NewPCG(7, 9))
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	rng.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	apply(t, s, &graph.Batch{Nodes: nodes})
	for i := 0; i < len(edges); i += 7 {
		apply(t, s, &graph.Batch{Edges: edges[i:min(i+7, len(edges))]})
	}
	var all []graph.EdgeKey
	for _, e := range edges {
		all = append(all, e.EdgeKey)
	}

	for _, node := range []graph.ID{hub, ent, "entity/e3"} {
		for _, dir := range []graph.Direction{graph.Out, graph.In, graph.Both} {
			for _, labels := range [][]string{nil, {"relation"}, {"relation", "about"}} {
				want := wantOrder(all, node, dir)
				if labels != nil {
					want = slices.DeleteFunc(want, func(k graph.EdgeKey) bool { return !slices.Contains(labels, k.Label) })
				}
				for _, size := range []int{1, 2, 5, 100} {
					var got []graph.EdgeKey
					q := graph.EdgeQuery{Nodes: []graph.ID{node}, Labels: labels, Direction: dir, Page: graph.Page{Limit: size}}
					for pages := 0; ; pages++ {
						page, err := s.Edges(t.Context(), q)
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range page.Edges {
							got = append(got, e.EdgeKey)
						}
						if page.Next == "" {
							break
						}
						raw, _ := base64.RawURLEncoding.DecodeString(page.Next)
						last := page.Edges[len(page.Edges)-1]
						if !strings.Contains(string(raw), last.Label) || !strings.Contains(string(raw), last.Key) {
							t.Fatalf("cursor %q does not hold the last edge's place (%s)", raw, last.ID)
						}
						q.After = page.Next
					}
					if !slices.Equal(got, want) {
						t.Fatalf("Edges(%s, %s, %v, pages of %d):\n got %v\nwant %v", node, dir, labels, size, got, want)
					}
				}
				adjacentGoesOn(t, s, graph.EdgeQuery{Nodes: []graph.ID{node}, Labels: labels, Direction: dir}, want)
			}
		}
	}

	// Several nodes: node by node, in the order given (twice if given twice).
	q := graph.EdgeQuery{Nodes: []graph.ID{"entity/e3", hub, "entity/e3"}, Direction: graph.Both, Page: graph.Page{Limit: 4}}
	var got []graph.EdgeKey
	for {
		page, err := s.Edges(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Edges {
			got = append(got, e.EdgeKey)
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
	}
	want := slices.Concat(wantOrder(all, "entity/e3", graph.Both), wantOrder(all, hub, graph.Both), wantOrder(all, "entity/e3", graph.Both))
	if !slices.Equal(got, want) {
		t.Errorf("Edges of three nodes:\n got %v\nwant %v", got, want)
	}
	adjacentGoesOn(t, s, graph.EdgeQuery{Nodes: []graph.ID{"entity/e3", hub, "entity/e3"}, Direction: graph.Both}, want)
}

// adjacentGoesOn checks that Adjacent, from the start and after the place
// of each edge of q's listing (Edges' cursor after it), lists the rest of
// want, the whole listing in order.
func adjacentGoesOn(t *testing.T, s *Store, q graph.EdgeQuery, want []graph.EdgeKey) {
	t.Helper()
	q.Limit = 1
	for j := 0; ; j++ {
		var rest []graph.EdgeKey
		err := s.Adjacent(t.Context(), q, func(_ int, k graph.EdgeKey) bool {
			rest = append(rest, k)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rest, want[j:]) {
			t.Fatalf("Adjacent(%v %s %v) after %d edges:\n got %v\nwant %v", q.Nodes, q.Direction, q.Labels, j, rest, want[j:])
		}
		page, err := s.Edges(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if page.Next == "" {
			return
		}
		q.After = page.Next
	}
}

// A page after a write continues after the last edge listed: an edge
// written since that sorts before it is not listed, one after it is.
func TestEdgesCursorSurvivesWrites(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	hub := graph.ID("topic/hub")
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: hub, Type: "Topic", Properties: graph.Props{"name": "hub"}}}}
	for _, d := range []string{"b", "d", "f", "h", "a", "c", "g"} {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID("doc/" + d), Type: "Document", Properties: graph.Props{"title": d}})
		if d != "a" && d != "c" && d != "g" {
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID("doc/" + d), Label: "about", To: hub}})
		}
	}
	apply(t, s, b)
	q := graph.EdgeQuery{Nodes: []graph.ID{hub}, Direction: graph.In, Page: graph.Page{Limit: 2}}
	page, err := s.Edges(t.Context(), q)
	if err != nil || len(page.Edges) != 2 || page.Edges[1].From != "doc/d" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	for _, d := range []string{"a", "c", "g"} {
		apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: graph.ID("doc/" + d), Label: "about", To: hub}}}})
	}
	q.After, q.Limit = page.Next, 100
	page, err = s.Edges(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	var froms []graph.ID
	for _, e := range page.Edges {
		froms = append(froms, e.From)
	}
	if want := []graph.ID{"doc/f", "doc/g", "doc/h"}; !slices.Equal(froms, want) {
		t.Errorf("second page after writes: %v, want %v", froms, want)
	}
}

// Paging through a hub's in-edges (kept sorted in the hub cache between
// pages) sees a write made between two pages, as a store with no cache
// would.
func TestEdgesHubCacheSeesWrites(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	hub := graph.ID("topic/hub")
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: hub, Type: "Topic", Properties: graph.Props{"name": "hub"}}}}
	var all []graph.EdgeKey
	for i := range 1500 {
		d := graph.ID(fmt.Sprintf("doc/d%04d", i))
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: d, Type: "Document", Properties: graph.Props{"title": "d"}})
		if i%2 == 0 {
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: d, Label: "about", To: hub}})
			all = append(all, b.Edges[len(b.Edges)-1].EdgeKey)
		}
	}
	apply(t, s, b)
	q := graph.EdgeQuery{Nodes: []graph.ID{hub}, Direction: graph.In, Page: graph.Page{Limit: 100}}
	var got []graph.EdgeKey
	for pages := 0; ; pages++ {
		page, err := s.Edges(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Edges {
			got = append(got, e.EdgeKey)
		}
		if page.Next == "" {
			break
		}
		q.After = page.Next
		if pages == 3 {
			// Odd documents link to the hub now: those after the cursor are listed.
			w := &graph.Batch{}
			for i := 1; i < 1500; i += 2 {
				k := graph.EdgeKey{From: graph.ID(fmt.Sprintf("doc/d%04d", i)), Label: "about", To: hub}
				w.Edges = append(w.Edges, graph.EdgeInput{EdgeKey: k})
				if i > 2*(len(got)-1) {
					all = append(all, k)
				}
			}
			apply(t, s, w)
		}
	}
	want := wantOrder(all, hub, graph.In)
	if !slices.Equal(got, want) {
		t.Errorf("paged %d edges, want %d; first difference at %d", len(got), len(want), firstDiffAt(got, want))
	}
}

func firstDiffAt(a, b []graph.EdgeKey) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// Forged or foreign cursors are refused, never a panic.
func TestEdgesCursorRefused(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}})
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{"x", enc("e1.0.0.1.2.3"), enc("e2\x005\x00about\x00o\x00doc/a\x00"), enc("e2\x00-1\x00about\x00o\x00doc/a\x00"),
		enc("e2\x000\x00about\x00x\x00doc/a\x00"), enc("e2\x000\x00about")} {
		_, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"topic/a"}, Direction: graph.Both, Page: graph.Page{After: c}})
		if err == nil || !strings.Contains(err.Error(), "not an edge cursor") {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
}

// BenchmarkEdgesHub measures a page of a hub's edges, half way through:
// 20,000 in-edges (read in order from the in-edge index) and 20,000
// out-edges (read in order from the records).
func BenchmarkEdgesHub(b *testing.B) {
	const n = 20000
	s := openTest(b, b.TempDir(), Config{})
	hub := graph.ID("topic/hub")
	apply(b, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: hub, Type: "Topic", Properties: graph.Props{"name": "hub"}}}})
	ent := graph.ID("entity/hub")
	apply(b, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: ent, Type: "Entity", Properties: graph.Props{"name": "hub", "entityType": "t", "observations": []any{}}}}})
	for i := 0; i < n; i += 2500 {
		batch := &graph.Batch{}
		for j := i; j < i+2500; j++ {
			d := graph.ID(fmt.Sprintf("doc/d%05d", j))
			batch.Nodes = append(batch.Nodes, graph.NodeInput{ID: d, Type: "Document", Properties: graph.Props{"title": "d"}})
			batch.Edges = append(batch.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: d, Label: "about", To: hub}},
				graph.EdgeInput{EdgeKey: graph.EdgeKey{From: ent, Label: "relation", To: ent, Key: fmt.Sprintf("k%05d", j)}})
		}
		apply(b, s, batch)
	}
	for _, tc := range []struct {
		name string
		node graph.ID
		dir  graph.Direction
	}{{"in", hub, graph.In}, {"out", ent, graph.Out}} {
		for _, size := range []int{100, 2000} {
			// A cursor half way through.
			q := graph.EdgeQuery{Nodes: []graph.ID{tc.node}, Direction: tc.dir, KeysOnly: true, Page: graph.Page{Limit: n / 2}}
			page, err := s.Edges(b.Context(), q)
			if err != nil || page.Next == "" {
				b.Fatalf("%+v %v", len(page.Edges), err)
			}
			q.After, q.Limit = page.Next, size
			b.Run(fmt.Sprintf("%s/page=%d", tc.name, size), func(b *testing.B) {
				for b.Loop() {
					page, err := s.Edges(b.Context(), q)
					if err != nil || len(page.Edges) != size {
						b.Fatal(len(page.Edges), err)
					}
				}
			})
		}
	}
}
