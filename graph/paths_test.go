package graph_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

var (
	pathSeed   = flag.Uint64("lore.pathseed", 0, "seed of TestPathsAgainstAllSimplePaths (0: a new one, logged)")
	pathTrials = flag.Int("lore.pathtrials", 500, "random graphs TestPathsAgainstAllSimplePaths checks")
)

// pathModel has one node type and two edge labels: p is keyed, so several
// p edges may join the same two nodes; q is not.
const pathModel = `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{
	"N":{"x-lore-node":{},"type":"object"},
	"p":{"x-lore-edge":{"from":["N"],"to":["N"],"keyed":true},"type":"object"},
	"q":{"x-lore-edge":{"from":["N"],"to":["N"]},"type":"object"}}}`

func pathStore(t testing.TB) graph.Store {
	t.Helper()
	m, err := schema.Load([]byte(pathModel))
	if err != nil {
		t.Fatal(err)
	}
	return graphtest.Open(t, t.TempDir(), m)
}

// addPathGraph writes nodes of type N and edges.
func addPathGraph(t testing.TB, s graph.Store, nodes []string, edges []graph.EdgeKey) {
	t.Helper()
	b := &graph.Batch{}
	for _, n := range nodes {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(n), Type: "N", Properties: graph.Props{}})
	}
	for _, e := range edges {
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: e})
	}
	if _, err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
}

// parseEdges reads edges given as "a p b" or "a p b key" and the nodes
// they join; node names become IDs "n/" + prefix + name.
func parseEdges(prefix string, specs ...string) (nodes []string, edges []graph.EdgeKey) {
	for _, spec := range specs {
		f := strings.Fields(spec)
		k := graph.EdgeKey{From: graph.ID("n/" + prefix + f[0]), Label: f[1], To: graph.ID("n/" + prefix + f[2])}
		if len(f) > 3 {
			k.Key = f[3]
		}
		edges = append(edges, k)
		for _, id := range []graph.ID{k.From, k.To} {
			if !slices.Contains(nodes, string(id)) {
				nodes = append(nodes, string(id))
			}
		}
	}
	return nodes, edges
}

// showPath renders a path as "a -p> b <q- c", an edge's key in brackets.
func showPath(p graph.Path, keys map[string]graph.EdgeKey) string {
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(string(p.Nodes[0]), "n/"))
	for i, id := range p.Edges {
		k, ok := keys[id]
		if !ok {
			fmt.Fprintf(&b, " ?%s? %s", id, p.Nodes[i+1])
			continue
		}
		label := k.Label
		if k.Key != "" {
			label += "[" + k.Key + "]"
		}
		switch {
		case k.From == p.Nodes[i] && k.To == p.Nodes[i+1]:
			fmt.Fprintf(&b, " -%s> ", label)
		case k.To == p.Nodes[i] && k.From == p.Nodes[i+1]:
			fmt.Fprintf(&b, " <%s- ", label)
		default:
			fmt.Fprintf(&b, " ?%s? ", label)
		}
		b.WriteString(strings.TrimPrefix(string(p.Nodes[i+1]), "n/"))
	}
	return b.String()
}

func TestPathsKShortest(t *testing.T) {
	s := pathStore(t)
	graphs := map[string][]string{
		// Two shortest ways round a diamond, a longer one, and a longest
		// one that only a graph walked both ways has.
		"diamond": {"a p b x", "a p c x", "b p d x", "c p d x", "a p e x", "e p f x", "f p d x", "g p d x", "g p a x"},
		// Two keyed edges join a and b; one q edge joins a and b too.
		"parallel": {"a p b k1", "a p b k2", "a q b", "b q c"},
		// a -> b <- c: only a walk in both directions connects a and c.
		"vee": {"a p b x", "c p b x"},
		// p leads the long way, q the short way.
		"labels": {"a p b x", "b p c x", "a q c"},
		// A chain of 5 and a shortcut of 2.
		"chain": {"a q b", "b q c", "c q d", "d q e", "e q f", "a p x x", "x p f x"},
	}
	keys := map[string]graph.EdgeKey{}
	for name, specs := range graphs {
		nodes, edges := parseEdges(name+"-", specs...)
		addPathGraph(t, s, nodes, edges)
		for _, e := range edges {
			keys[e.String()] = e
		}
	}
	for _, tt := range []struct {
		name, graph, from, to string
		dir                   graph.Direction
		labels                []string
		k, maxHops            int
		limits                graph.Limits
		want                  []string
		truncated             string
	}{
		{name: "diamond k=1", graph: "diamond", from: "a", to: "d", dir: graph.Out, k: 1, want: []string{"a -p[x]> b -p[x]> d"}},
		{name: "diamond k=3 gives the longer path too", graph: "diamond", from: "a", to: "d", dir: graph.Out, k: 3,
			want: []string{"a -p[x]> b -p[x]> d", "a -p[x]> c -p[x]> d", "a -p[x]> e -p[x]> f -p[x]> d"}},
		{name: "diamond k beyond the number of paths", graph: "diamond", from: "a", to: "d", dir: graph.Out, k: 10,
			want: []string{"a -p[x]> b -p[x]> d", "a -p[x]> c -p[x]> d", "a -p[x]> e -p[x]> f -p[x]> d"}},
		{name: "diamond both ways", graph: "diamond", from: "a", to: "d", dir: graph.Both, k: 10,
			want: []string{"a -p[x]> b -p[x]> d", "a -p[x]> c -p[x]> d", "a <p[x]- g -p[x]> d", "a -p[x]> e -p[x]> f -p[x]> d"}},
		{name: "diamond against the edges", graph: "diamond", from: "d", to: "a", dir: graph.In, k: 2,
			want: []string{"d <p[x]- b <p[x]- a", "d <p[x]- c <p[x]- a"}},
		{name: "diamond with the edges reversed finds nothing", graph: "diamond", from: "d", to: "a", dir: graph.Out, k: 2, want: []string{}},
		{name: "diamond maxHops leaves the long path out", graph: "diamond", from: "a", to: "d", dir: graph.Out, k: 3, maxHops: 2,
			want: []string{"a -p[x]> b -p[x]> d", "a -p[x]> c -p[x]> d"}, truncated: graph.ReasonHops},
		{name: "parallel edges are distinct paths", graph: "parallel", from: "a", to: "c", dir: graph.Out, k: 5,
			want: []string{"a -p[k1]> b -q> c", "a -p[k2]> b -q> c", "a -q> b -q> c"}},
		{name: "parallel edges, one label", graph: "parallel", from: "a", to: "b", dir: graph.Both, labels: []string{"p"}, k: 5,
			want: []string{"a -p[k1]> b", "a -p[k2]> b"}},
		{name: "vee out", graph: "vee", from: "a", to: "c", dir: graph.Out, k: 2, want: []string{}},
		{name: "vee in", graph: "vee", from: "a", to: "c", dir: graph.In, k: 2, want: []string{}},
		{name: "vee both", graph: "vee", from: "a", to: "c", dir: graph.Both, k: 2, want: []string{"a -p[x]> b <p[x]- c"}},
		{name: "labels: all", graph: "labels", from: "a", to: "c", dir: graph.Out, k: 3, want: []string{"a -q> c", "a -p[x]> b -p[x]> c"}},
		{name: "labels: p", graph: "labels", from: "a", to: "c", dir: graph.Out, labels: []string{"p"}, k: 3, want: []string{"a -p[x]> b -p[x]> c"}},
		{name: "labels: q", graph: "labels", from: "a", to: "c", dir: graph.Out, labels: []string{"q"}, k: 3, want: []string{"a -q> c"}},
		{name: "from equals to", graph: "diamond", from: "a", to: "a", dir: graph.Both, k: 3, want: []string{"a"}},
		{name: "chain", graph: "chain", from: "a", to: "f", dir: graph.Out, k: 3, want: []string{"a -p[x]> x -p[x]> f", "a -q> b -q> c -q> d -q> e -q> f"}},
		{name: "chain under a small work limit", graph: "chain", from: "a", to: "f", dir: graph.Out, k: 3, limits: graph.Limits{MaxVisited: 12},
			want: []string{"a -p[x]> x -p[x]> f"}, truncated: graph.ReasonWork},
		{name: "k over the results ceiling", graph: "diamond", from: "a", to: "d", dir: graph.Out, k: 3, limits: graph.Limits{MaxResults: 2},
			want: []string{"a -p[x]> b -p[x]> d", "a -p[x]> c -p[x]> d"}, truncated: graph.ReasonResults},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := graph.PathsQuery{From: graph.ID("n/" + tt.graph + "-" + tt.from), To: graph.ID("n/" + tt.graph + "-" + tt.to),
				Direction: tt.dir, Labels: tt.labels, K: tt.k, MaxHops: tt.maxHops, Limits: tt.limits}
			r, err := graph.Paths(t.Context(), s, q, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, p := range r.Paths {
				got = append(got, strings.ReplaceAll(showPath(p, keys), tt.graph+"-", ""))
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			wantLen := -1
			if len(r.Paths) > 0 {
				wantLen = len(r.Paths[0].Edges)
			}
			if r.Length != wantLen {
				t.Errorf("length %d, want %d", r.Length, wantLen)
			}
			if r.Truncated != (tt.truncated != "") || r.Reason != tt.truncated {
				t.Errorf("truncated %v, reason %q; want %q", r.Truncated, r.Reason, tt.truncated)
			}
		})
	}
}

// An oracle edge: a stored edge as a step from one node.
type oracleStep struct {
	to   graph.ID
	edge string
}

// allSimplePaths lists every simple path from one node to another of at
// most maxHops edges (no bound if maxHops < 0), by depth-first search over
// the edge list, in the order PathsResult documents.
func allSimplePaths(edges []graph.EdgeKey, labels []string, dir graph.Direction, from, to graph.ID, maxHops int) []graph.Path {
	adj := map[graph.ID][]oracleStep{}
	for _, e := range edges {
		if len(labels) > 0 && !slices.Contains(labels, e.Label) {
			continue
		}
		if dir != graph.In {
			adj[e.From] = append(adj[e.From], oracleStep{e.To, e.String()})
		}
		if dir != graph.Out {
			adj[e.To] = append(adj[e.To], oracleStep{e.From, e.String()})
		}
	}
	var out []graph.Path
	on := map[graph.ID]bool{from: true}
	var walk func(p graph.Path)
	walk = func(p graph.Path) {
		at := p.Nodes[len(p.Nodes)-1]
		if at == to {
			out = append(out, graph.Path{Nodes: slices.Clone(p.Nodes), Edges: slices.Clone(p.Edges)})
			return
		}
		if maxHops >= 0 && len(p.Edges) == maxHops {
			return
		}
		for _, st := range adj[at] {
			if on[st.to] {
				continue
			}
			on[st.to] = true
			walk(graph.Path{Nodes: append(p.Nodes, st.to), Edges: append(p.Edges, st.edge)})
			on[st.to] = false
		}
	}
	walk(graph.Path{Nodes: []graph.ID{from}, Edges: []string{}})
	slices.SortFunc(out, func(a, b graph.Path) int {
		if c := cmp.Compare(len(a.Edges), len(b.Edges)); c != 0 {
			return c
		}
		for i := range a.Edges {
			if c := cmp.Or(cmp.Compare(a.Nodes[i+1], b.Nodes[i+1]), cmp.Compare(a.Edges[i], b.Edges[i])); c != 0 {
				return c
			}
		}
		return 0
	})
	return out
}

// TestPathsAgainstAllSimplePaths checks Paths on small random graphs
// against every simple path: with room enough, the answer is exactly the
// first K of them in the documented order; under a tiny work limit it is
// a start of that list, and says it is truncated when it is shorter.
func TestPathsAgainstAllSimplePaths(t *testing.T) {
	seed := *pathSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -lore.pathseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := pathStore(t)
	checked, tight, several, mixed, partial := 0, 0, 0, 0, 0
	for trial := range *pathTrials {
		n := 2 + rng.IntN(8)
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n/t%d-%c", trial, 'a'+rune(rng.IntN(26)))
			for slices.Contains(nodes[:i], nodes[i]) {
				nodes[i] = fmt.Sprintf("n/t%d-%c", trial, 'a'+rune(rng.IntN(26)))
			}
		}
		var edges []graph.EdgeKey
		for range n + rng.IntN(2*n+1) {
			e := graph.EdgeKey{From: graph.ID(nodes[rng.IntN(n)]), To: graph.ID(nodes[rng.IntN(n)]), Label: "q"}
			if rng.IntN(2) == 0 {
				e.Label, e.Key = "p", []string{"k1", "k2", "k3"}[rng.IntN(3)]
			}
			if !slices.Contains(edges, e) {
				edges = append(edges, e)
			}
		}
		addPathGraph(t, s, nodes, edges)
		for range 4 {
			q := graph.PathsQuery{
				From:      graph.ID(nodes[rng.IntN(n)]),
				To:        graph.ID(nodes[rng.IntN(n)]),
				Direction: []graph.Direction{graph.Out, graph.In, graph.Both}[rng.IntN(3)],
				Labels:    [][]string{nil, {"p"}, {"q"}, {"p", "q"}}[rng.IntN(4)],
				K:         1 + rng.IntN(8),
				MaxHops:   1 + rng.IntN(6),
			}
			if rng.IntN(3) == 0 {
				q.Limits.MaxVisited = 1 + rng.IntN(150)
				tight++
			}
			// Spur searches replay the edges the call has read; a small
			// room keeps only some nodes' edges.
			room := -1
			if rng.IntN(3) == 0 {
				room = rng.IntN(12)
			}
			desc := fmt.Sprintf("trial %d, graph %v, query %+v, cache room %d", trial, edges, q, room)
			if room >= 0 {
				q = graph.WithPathsCache(q, room)
			}
			r, err := graph.Paths(t.Context(), s, q, graph.Limits{})
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			checked++
			all := allSimplePaths(edges, q.Labels, q.Direction, q.From, q.To, q.MaxHops)
			want := all[:min(q.K, len(all))]
			got := r.Paths
			switch {
			case len(got) > 1 && len(got[0].Edges) != len(got[len(got)-1].Edges):
				mixed++
				fallthrough
			case len(got) > 1:
				several++
			}
			if len(got) > 0 && len(got) < len(want) {
				partial++
			}
			if q.Limits.MaxVisited == 0 {
				if diff := gocmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Fatalf("%s: paths (-want +got):\n%s", desc, diff)
				}
			} else if len(got) > len(want) || gocmp.Diff(want[:len(got)], got, cmpopts.EquateEmpty()) != "" {
				t.Fatalf("%s: under a small work limit, paths are not a start of the answer:\nwant %v\ngot %v", desc, want, got)
			}
			if len(got) < len(want) && (!r.Truncated || r.Reason != graph.ReasonWork) {
				t.Fatalf("%s: %d of %d paths, but truncated %v (%q)", desc, len(got), len(want), r.Truncated, r.Reason)
			}
			if len(got) == len(want) && len(want) < q.K && !r.Truncated {
				// Complete: no simple path longer than maxHops may exist.
				if longer := allSimplePaths(edges, q.Labels, q.Direction, q.From, q.To, -1); len(longer) > len(all) {
					t.Fatalf("%s: %d paths and not truncated, but %d exist beyond maxHops", desc, len(got), len(longer)-len(all))
				}
			}
			if r.Truncated && r.Reason == graph.ReasonHops && len(got) >= q.K {
				t.Fatalf("%s: all %d paths found, yet truncated at the hop bound", desc, len(got))
			}
			if len(got) > 0 && r.Length != len(got[0].Edges) || len(got) == 0 && r.Length != -1 {
				t.Fatalf("%s: length %d", desc, r.Length)
			}
		}
	}
	t.Logf("%d queries on %d random graphs: %d found several paths, %d of several lengths; %d under a small work limit, %d of them cut after some paths",
		checked, *pathTrials, several, mixed, tight, partial)
}

// TestPathsIntoHubs checks Paths on random graphs around a hub, a node
// with thousands of in-edges from leaves (some leaves also joined to the
// rest of the graph), against every simple path within the hop bound.
// Searches out into the hub, or in from it, must also grow from the other
// end: each reads far fewer elements than the hub has edges, which a
// search that chose its side by frontier size, or stopped before the
// level where the two sides meet, would not (or would answer wrongly).
func TestPathsIntoHubs(t *testing.T) {
	seed := *pathSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -lore.pathseed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 18))
	s := pathStore(t)
	checked, found, degreeReads := 0, 0, 0
	for trial := range 6 {
		n := 3 + rng.IntN(8)
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("n/h%d-%02d", trial, i)
		}
		hub := graph.ID(nodes[0])
		var edges []graph.EdgeKey
		add := func(e graph.EdgeKey) {
			if !slices.Contains(edges, e) {
				edges = append(edges, e)
			}
		}
		for range n + rng.IntN(2*n+1) {
			e := graph.EdgeKey{From: graph.ID(nodes[rng.IntN(n)]), To: graph.ID(nodes[rng.IntN(n)]), Label: "q"}
			if rng.IntN(2) == 0 {
				e.Label, e.Key = "p", []string{"k1", "k2"}[rng.IntN(2)]
			}
			add(e)
		}
		hubIn := 1500 + rng.IntN(1500)
		for i := range hubIn {
			leaf := fmt.Sprintf("n/h%d-leaf%04d", trial, i)
			nodes = append(nodes, leaf)
			add(graph.EdgeKey{From: graph.ID(leaf), Label: "q", To: hub})
			if i%40 == 0 { // a few leaves lead into the rest of the graph too
				add(graph.EdgeKey{From: graph.ID(leaf), Label: "q", To: graph.ID(nodes[1+rng.IntN(n-1)])})
			}
		}
		addPathGraph(t, s, nodes, edges)
		for range 12 {
			other := graph.ID(nodes[1+rng.IntN(n-1)])
			q := graph.PathsQuery{
				From: other, To: hub, Direction: graph.Out,
				Labels:  [][]string{nil, {"q"}, {"p", "q"}}[rng.IntN(3)],
				K:       1 + rng.IntN(3),
				MaxHops: 1 + rng.IntN(4),
			}
			switch rng.IntN(3) {
			case 1:
				q.From, q.To, q.Direction = hub, other, graph.In
			case 2:
				q.Direction = graph.Both
				q.MaxHops = min(q.MaxHops, 3)
			}
			desc := fmt.Sprintf("trial %d, hub %s with %d in-edges, query %+v", trial, hub, hubIn, q)
			r, err := graph.Paths(t.Context(), s, q, graph.Limits{})
			if err != nil {
				t.Fatalf("%s: %v", desc, err)
			}
			checked++
			all := allSimplePaths(edges, q.Labels, q.Direction, q.From, q.To, q.MaxHops)
			want := all[:min(q.K, len(all))]
			if diff := gocmp.Diff(want, r.Paths, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s: paths (-want +got):\n%s", desc, diff)
			}
			if r.Truncated && r.Reason != graph.ReasonHops {
				t.Fatalf("%s: truncated (%s)", desc, r.Reason)
			}
			if len(want) > 0 {
				found++
			}
			if q.Direction != graph.Both && r.Stats.Visited >= hubIn/2 {
				t.Fatalf("%s: visited %d elements; the hub's side alone has %d edges, the other end's far fewer", desc, r.Stats.Visited, hubIn)
			}
			// Without the store's optional interfaces (degrees from
			// Store.Node, edges from Store.Edges) the answer is the same.
			plain, err := graph.Paths(t.Context(), plainStore{s}, q, graph.Limits{})
			if err != nil {
				t.Fatalf("%s, plain store: %v", desc, err)
			}
			if diff := gocmp.Diff(r.Paths, plain.Paths, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s: paths on the plain store differ (-own +plain):\n%s", desc, diff)
			}
			// As a server store answers (degrees, but no Adjacency): each
			// level's listing says what Degrees would, which the search
			// then need not read, a round trip each.
			srv := &serverLike{Store: s}
			far, err := graph.Paths(t.Context(), srv, q, graph.Limits{})
			if err != nil {
				t.Fatalf("%s, server-like store: %v", desc, err)
			}
			if diff := gocmp.Diff(r.Paths, far.Paths, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%s: paths on the server-like store differ (-own +server):\n%s", desc, diff)
			}
			// A level listed whole says its degrees; one whose listing
			// stopped at its bound says only that the other side's level
			// is the cheaper one, or, when neither side's cost is known,
			// leaves the choice to their degrees (a read per side).
			if srv.degrees > 2*srv.full {
				t.Errorf("%s: the server-like store's degrees read %d times, after %d listings that stopped at their bound", desc, srv.degrees, srv.full)
			}
			degreeReads += srv.degrees
		}
	}
	t.Logf("%d queries into hubs, %d with a path; degrees read %d times on the server-like store", checked, found, degreeReads)
}

// serverLike has the embedded store's degrees but not its Adjacency, as
// the PostgreSQL store, and counts the Degrees calls, and the pages of
// edges that came back as full as asked (a listing that stops at its
// bound ends with one).
type serverLike struct {
	graph.Store
	degrees, full int
}

func (s *serverLike) Edges(ctx context.Context, q graph.EdgeQuery) (*graph.EdgePage, error) {
	p, err := s.Store.Edges(ctx, q)
	if err == nil && q.Limit > 0 && len(p.Edges) == q.Limit {
		s.full++
	}
	return p, err
}

func (s *serverLike) Degrees(ctx context.Context, ids []graph.ID, labels []string, dir graph.Direction) ([]int64, error) {
	s.degrees++
	return s.Store.(graph.DegreeCounter).Degrees(ctx, ids, labels, dir)
}
