package graph_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// plainStore hides a store's optional interfaces: queries on it take the
// paths every store has (Store.Edges, Store.Node), so their answers can
// be compared with those of the store's own shortcuts.
type plainStore struct{ graph.Store }

// withHub adds to g a hub: a node with thousands of edges of one label in
// one direction (mostly in-edges), from new leaf nodes and from g's nodes,
// some of them parallel (keyed) or a self-loop.
func withHub(rng *rand.Rand, g *oGraph) (hub string) {
	hub = g.ids[rng.IntN(len(g.ids))]
	n := 1000 + rng.IntN(2000)
	label := oLabels[rng.IntN(2)]
	for i := range n {
		id := fmt.Sprintf("n/leaf%04d", i)
		g.nodes[id] = &oNode{id: id, typ: oTypes[i%3], props: map[string]any{}}
		g.ids = append(g.ids, id)
		e := oEdge{from: id, to: hub, label: label}
		if i%50 == 0 {
			e.from, e.to = e.to, e.from // a few out-edges of the same label
		}
		g.edges = append(g.edges, e)
		if i%7 == 0 {
			g.edges = append(g.edges, oEdge{from: id, to: hub, label: "k", key: "a"}, oEdge{from: id, to: hub, label: "k", key: "b"})
		}
	}
	g.edges = append(g.edges, oEdge{from: hub, to: hub, label: label}, oEdge{from: hub, to: hub, label: "k", key: "self"})
	seen := map[string]bool{}
	kept := g.edges[:0]
	for _, e := range g.edges {
		if !seen[e.id()] {
			seen[e.id()] = true
			kept = append(kept, e)
		}
	}
	g.edges = kept
	for _, l := range oLabels {
		g.out[l], g.in[l] = map[string][]oEdge{}, map[string][]oEdge{}
	}
	for _, e := range g.edges {
		g.out[e.label][e.from] = append(g.out[e.label][e.from], e)
		g.in[e.label][e.to] = append(g.in[e.label][e.to], e)
	}
	return hub
}

// TestCountAdjacentOracle checks the count of one hop from one node (which
// the embedded store answers from its edge summaries or the keys of the
// edges, see graph.AdjacentCounter) against the brute-force oracle and
// against the same query run by expanding the step: every node of random
// graphs, some with a hub of thousands of edges, with self-loops and
// parallel keyed edges, for every label set and direction, and a missing
// node.
func TestCountAdjacentOracle(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	labelSets := [][]string{nil, {"e1"}, {"k"}, {"e1", "e2"}, {"e2", "k"}}
	queries, fromSummary := 0, 0
	for gi := range 6 {
		g := randomGraph(rng)
		ids := append([]string{"n/missing"}, g.ids...)
		if gi%2 == 0 {
			hub := withHub(rng, g)
			ids = append(ids[:min(len(ids), 30)], hub, g.ids[len(g.ids)-1], g.ids[len(g.ids)-50])
		}
		s := g.load(t, m)
		pg := g.loadPostgres(t, m)
		for _, id := range ids {
			for _, labels := range labelSets {
				for _, dir := range []string{"out", "in", "both"} {
					queries++
					st := &oStep{labels: labels, dir: dir, min: 1, max: 1}
					want := 0
					if _, ok := g.nodes[id]; ok {
						for _, d := range g.dist(st, id) {
							if d == 1 {
								want++
							}
						}
					}
					step := map[string]any{"direction": dir, "hops": 1}
					if labels != nil {
						step["edge"] = labels
					}
					doc, _ := json.Marshal(map[string]any{
						"from":     map[string]any{"ids": []string{id, id}},
						"traverse": []any{step},
						"return":   map[string]any{"count": true},
					})
					q, err := graph.ParseQuery(m, doc)
					if err != nil {
						t.Fatal(err)
					}
					// Degrees from the edge summaries and from Store.Node agree.
					var degs [3][]int64
					for i, store := range []graph.Store{s, plainStore{s}, pg} {
						if degs[i], err = graph.Degrees(t.Context(), store, []graph.ID{graph.ID(id)}, labels, graph.Direction(dir)); err != nil {
							t.Fatal(err)
						}
					}
					wantDeg := int64(0)
					if _, ok := g.nodes[id]; ok {
						g.neighbours(st, id, func(string, oEdge) { wantDeg++ })
					}
					if degs[0][0] != wantDeg || degs[1][0] != wantDeg || degs[2][0] != wantDeg {
						t.Fatalf("seed %d, graph %d: degree of %s by %v %s: %d from the summaries, %d from Store.Node, %d from PostgreSQL's summaries, the oracle says %d", seed, gi, id, labels, dir, degs[0][0], degs[1][0], degs[2][0], wantDeg)
					}
					for _, store := range []graph.Store{s, plainStore{s}, pg} {
						res, err := graph.Run(t.Context(), store, q, graph.Limits{})
						if err != nil {
							t.Fatalf("%s on %T: %v", doc, store, err)
						}
						if res.Count == nil || *res.Count != want || res.Truncated {
							t.Fatalf("seed %d, graph %d, %s on %T: count %v (truncated %v), the oracle says %d", seed, gi, doc, store, res.Count, res.Truncated, want)
						}
						if _, plain := store.(plainStore); !plain && res.Stats.Visited <= 2 {
							fromSummary++ // PostgreSQL's too: both answer from their summaries
						}
					}
				}
			}
		}
	}
	t.Logf("%d counts on each store, %d answers from an edge summary alone (embedded and PostgreSQL)", queries, fromSummary)
	if fromSummary == 0 {
		t.Error("no count was answered from the edge summary")
	}
}

// A count whose work bound is smaller than the edges it must read is a
// lower bound, marked truncated, as any count cut by a bound is.
func TestCountAdjacentWorkBound(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := randomGraph(rand.New(rand.NewPCG(7, 7)))
	withHub(rand.New(rand.NewPCG(8, 8)), g)
	s := g.load(t, m)
	var hub string
	for _, e := range g.edges {
		if e.key == "self" {
			hub = e.from
		}
	}
	q, err := graph.ParseQuery(m, []byte(`{"from":{"ids":["`+hub+`"]},"traverse":[{"direction":"both"}],"return":{"count":true},"limits":{"maxVisited":100}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []graph.Store{s, g.loadPostgres(t, m)} {
		res, err := graph.Run(t.Context(), store, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Truncated || res.Reason != graph.ReasonWork || res.Stats.Visited > 100 {
			t.Errorf("%T: count under maxVisited 100: %d, truncated %v (%s), visited %d", store, *res.Count, res.Truncated, res.Reason, res.Stats.Visited)
		}
	}
}

// loadPostgres loads g into a new PostgreSQL store (a database of its own),
// closed when the test ends.
func (g *oGraph) loadPostgres(t *testing.T, m *schema.Model) graph.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.NewDatabase(t), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Apply(t.Context(), g.restoreBatch()); err != nil {
		t.Fatal(err)
	}
	return s
}

// A level whose edges pass one Adjacent call's share (16,384 edges: the
// engine then goes on in another call, from the node it stopped at)
// reaches the same nodes as the plain store's pages of Store.Edges.
func TestClosureAcrossAdjacentCalls(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}}
	node := func(id string) {
		g.nodes[id] = &oNode{id: id, typ: "A", props: map[string]any{}}
		g.ids = append(g.ids, id)
	}
	node("n/root")
	const mids, leaves = 170, 110 // 18,700 edges into the mids
	for i := range mids {
		mid := fmt.Sprintf("n/m%03d", i)
		node(mid)
		g.edges = append(g.edges, oEdge{from: mid, to: "n/root", label: "e1"})
		for j := range leaves {
			leaf := fmt.Sprintf("n/l%03d-%03d", i, j)
			node(leaf)
			g.edges = append(g.edges, oEdge{from: leaf, to: mid, label: "e1"})
		}
	}
	s := g.loadInBatches(t, m, 5000)
	q, err := graph.ParseQuery(m, []byte(`{"from":{"ids":["n/root"]},"traverse":[{"edge":"e1","direction":"in","hops":[1,2]}],"return":{"count":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []graph.Store{s, plainStore{s}} {
		res, err := graph.Run(t.Context(), store, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if *res.Count != mids+mids*leaves || res.Truncated {
			t.Errorf("%T: count %d (truncated %v), want %d", store, *res.Count, res.Truncated, mids+mids*leaves)
		}
	}
}

// loadInBatches writes the graph into a new bolt store, n elements a batch.
func (g *oGraph) loadInBatches(t *testing.T, m *schema.Model, n int) graph.Store {
	t.Helper()
	s := graphtest.Open(t, t.TempDir(), m)
	b := &graph.Batch{}
	flush := func() {
		if _, err := s.Apply(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		b = &graph.Batch{}
	}
	for _, id := range g.ids {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(id), Type: g.nodes[id].typ, Properties: graph.Props{}})
		if b.Len() == n {
			flush()
		}
	}
	for _, e := range g.edges {
		b.Edges = append(b.Edges, e.input())
		if b.Len() == n {
			flush()
		}
	}
	if b.Len() > 0 {
		flush()
	}
	return s
}
