package graph_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// neighborsCeilings let a test's query ask for any page size and work.
var neighborsCeilings = graph.Limits{MaxResults: 1 << 20, MaxHops: 6, MaxVisited: 1 << 30, TimeoutMs: 60_000, MaxBytes: 1 << 30}

// A neighbour as the oracle lists it.
type oNeighbor struct {
	ID    string
	Depth int
	Edge  graph.EdgeKey
}

// listing is the oracle's Store.Edges of one node: by label (sorted), out
// before in, then by the node at the other end and key; for both
// directions a self-loop is listed once, as an out-edge.
func (g *oGraph) listing(id string, labels []string, dir graph.Direction) (others []string, edges []graph.EdgeKey) {
	if len(labels) == 0 {
		labels = oLabels
	}
	labels = slices.Sorted(slices.Values(labels))
	for _, label := range slices.Compact(labels) {
		for _, in := range []bool{false, true} {
			if in && dir == graph.Out || !in && dir == graph.In {
				continue
			}
			var es []oEdge
			if in {
				for _, e := range g.in[label][id] {
					if dir != graph.Both || e.from != id {
						es = append(es, e)
					}
				}
			} else {
				es = slices.Clone(g.out[label][id])
			}
			other := func(e oEdge) string {
				if in {
					return e.from
				}
				return e.to
			}
			slices.SortFunc(es, func(a, b oEdge) int { return cmp.Or(cmp.Compare(other(a), other(b)), cmp.Compare(a.key, b.key)) })
			for _, e := range es {
				others = append(others, other(e))
				edges = append(edges, graph.EdgeKey{From: graph.ID(e.from), Label: e.label, To: graph.ID(e.to), Key: e.key})
			}
		}
	}
	return others, edges
}

// neighbors is the oracle's neighbourhood: breadth first, each node once
// with the first edge listed to it, depth 1 in ID order, each deeper
// level in the order its nodes are first listed from the one before.
func (g *oGraph) neighbors(id string, labels []string, dir graph.Direction, depth int) []oNeighbor {
	seen := map[string]bool{id: true}
	var out []oNeighbor
	frontier := []string{id}
	for d := 1; d <= depth && len(frontier) > 0; d++ {
		var level []oNeighbor
		for _, f := range frontier {
			others, edges := g.listing(f, labels, dir)
			for i, o := range others {
				if !seen[o] {
					seen[o] = true
					level = append(level, oNeighbor{o, d, edges[i]})
				}
			}
		}
		if d == 1 {
			slices.SortStableFunc(level, func(a, b oNeighbor) int { return cmp.Compare(a.ID, b.ID) })
		}
		frontier = frontier[:0]
		for _, n := range level {
			frontier = append(frontier, n.ID)
		}
		out = append(out, level...)
	}
	return out
}

// neighborsOf turns a page into the oracle's terms, checking that it has
// an edge for each node.
func neighborsOf(t *testing.T, r *graph.NeighborsResult, ctx string) []oNeighbor {
	t.Helper()
	if len(r.Nodes) != len(r.Edges) {
		t.Fatalf("%s: %d nodes and %d edges", ctx, len(r.Nodes), len(r.Edges))
	}
	out := []oNeighbor{}
	for i, n := range r.Nodes {
		out = append(out, oNeighbor{string(n.Node.ID), n.Depth, r.Edges[i]})
	}
	return out
}

// TestNeighborsOracle checks neighbors against a brute-force
// breadth-first search on random graphs, some with a hub of thousands of
// edges, self-loops and keyed parallel edges, on both stores: whole, by
// pages of a few, under tiny work limits (a neighbourhood of depth 1 must
// still come whole, page after page, each page moving on; a deeper one a
// prefix, ending on a truncated page without a cursor where the work
// limit cannot reach the next), and, at depth 1, past the deadline (one
// neighbour a call); now and then a page is cut short with CursorAfter,
// as a surface does to fit its byte cap.
func TestNeighborsOracle(t *testing.T) {
	rng, seed := oracleRand(t, "TestNeighborsOracle", 0x6e6272)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	graphs := 9
	if testing.Short() || raceDetector {
		graphs = 3
	}
	cut, ended := 0, 0
	for gi := 0; gi < graphs && !t.Failed(); gi++ {
		g, hub, stores := hubGraphStores(t, rng, m, gi)
		for qi := 0; qi < 20 && !t.Failed(); qi++ {
			id := g.ids[rng.IntN(len(g.ids))]
			if hub != "" && rng.IntN(2) == 0 {
				id = hub
			}
			labels := randomLabels(rng)
			dir := []graph.Direction{graph.Out, graph.In, graph.Both}[rng.IntN(3)]
			depth := []int{1, 1, 2, 3}[rng.IntN(4)]
			want := g.neighbors(id, labels, dir, depth)
			for name, s := range stores {
				ctx := fmt.Sprintf("seed %d, %s store, graph %d (%d nodes, %d edges), query %d: %s %v %s depth %d (%d neighbours)",
					seed, name, gi, len(g.ids), len(g.edges), qi, id, labels, dir, depth, len(want))
				q := graph.NeighborsQuery{ID: graph.ID(id), Labels: labels, Direction: dir, Depth: depth, Limits: graph.Limits{MaxResults: 1 << 20}}
				r, err := graph.Neighbors(t.Context(), s, q, neighborsCeilings)
				if err != nil {
					t.Fatalf("%s: %v", ctx, err)
				}
				if diff := gocmp.Diff(want, neighborsOf(t, r, ctx), cmpopts.EquateEmpty()); diff != "" || r.Truncated || r.More {
					t.Fatalf("%s: whole (-oracle +neighbors), truncated %v, more %v:\n%s", ctx, r.Truncated, r.More, diff)
				}
				page := func(lim graph.Limits, what string, expired bool) {
					q := q
					q.Limits = lim
					var got []oNeighbor
					for calls := 0; ; calls++ {
						if calls > len(want)+1 {
							t.Fatalf("%s, %s: %d calls for %d neighbours", ctx, what, calls, len(want))
						}
						cctx := t.Context()
						if expired {
							// Past its deadline before it starts: a call
							// examines one neighbour all the same.
							var cancel func()
							cctx, cancel = context.WithDeadline(cctx, time.Now().Add(-time.Second))
							defer cancel()
						}
						r, err := graph.Neighbors(cctx, s, q, neighborsCeilings)
						if err != nil {
							t.Fatalf("%s, %s: call %d: %v", ctx, what, calls, err)
						}
						p := neighborsOf(t, r, ctx)
						if r.More != (r.Cursor != "") || len(p) > lim.MaxResults || len(p) < lim.MaxResults && r.More && !r.Truncated {
							t.Fatalf("%s, %s: call %d: %d neighbours, more %v, truncated %v", ctx, what, calls, len(p), r.More, r.Truncated)
						}
						if depth == 1 && len(p) == 0 && r.More {
							t.Fatalf("%s, %s: call %d: an empty page of depth 1 with a cursor (reason %q)", ctx, what, calls, r.Reason)
						}
						cursor := r.Cursor
						if cursor != "" && len(p) > 1 && rng.IntN(3) == 0 {
							// A surface keeps the first k to fit its byte cap.
							k := 1 + rng.IntN(len(p)-1)
							p, cursor = p[:k], r.CursorAfter(k)
						}
						got = append(got, p...)
						if r.Truncated {
							cut++
						}
						if r.Cursor == "" {
							if r.Truncated {
								ended++
								if depth == 1 || r.Reason != graph.ReasonWork || len(p) > 0 {
									t.Fatalf("%s, %s: call %d: truncated (%s), %d neighbours, no cursor", ctx, what, calls, r.Reason, len(p))
								}
								if len(got) > len(want) || gocmp.Diff(want[:len(got)], got, cmpopts.EquateEmpty()) != "" {
									t.Fatalf("%s, %s: the pages are no prefix of the answer (-oracle +pages):\n%s", ctx, what, gocmp.Diff(want, got))
								}
								return
							}
							break
						}
						q.Cursor = cursor
					}
					if diff := gocmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
						t.Fatalf("%s, %s: by pages (-oracle +pages):\n%s", ctx, what, diff)
					}
				}
				size := 1 + rng.IntN(4)
				if len(want) > 200 {
					size = 50 + rng.IntN(400)
				}
				page(graph.Limits{MaxResults: size}, fmt.Sprintf("pages of %d", size), false)
				work := 1 + rng.IntN(12)
				if len(want) > 200 {
					work = 50 + rng.IntN(200)
				}
				page(graph.Limits{MaxResults: 1 + rng.IntN(2*work), MaxVisited: work}, fmt.Sprintf("work %d", work), false)
				if depth == 1 && len(want) < 200 && name == "embedded" {
					// (The PostgreSQL store's read of the start node
					// fails past the deadline, as it should.)
					page(graph.Limits{MaxResults: 1 + rng.IntN(20)}, "past the deadline", true)
				}
			}
		}
	}
	t.Logf("%d truncated pages, %d ended by the work limit", cut, ended)
	if cut == 0 || ended == 0 {
		t.Errorf("no page was cut by a bound, or none ended there: the test does not check them")
	}
}

// deletesBeforeNodes is a store that deletes a node, through the store
// itself, just before the first Nodes call: a write landing between a
// search and the read of what it found.
type deletesBeforeNodes struct {
	graph.Store
	t      *testing.T
	victim graph.ID
	done   bool
}

func (s *deletesBeforeNodes) Nodes(ctx context.Context, ids []graph.ID) ([]*graph.Node, error) {
	if !s.done {
		s.done = true
		if _, err := s.Store.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: s.victim}}}); err != nil {
			s.t.Fatal(err)
		}
	}
	return s.Store.Nodes(ctx, ids)
}

// A neighbour deleted between the search and the read of the page's nodes
// is left out with its edge: Edges[i] still reaches Nodes[i] (it did not,
// at depth 2, when only the node was dropped). And CursorAfter goes on
// after the first neighbours a page keeps.
func TestNeighborsNodeDeletedDuringCall(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}}
	for i := range 12 {
		id := fmt.Sprintf("n/%02d", i)
		g.nodes[id] = &oNode{id: id, typ: "A", props: map[string]any{}}
		g.ids = append(g.ids, id)
	}
	for i := 1; i < 6; i++ {
		g.edges = append(g.edges, oEdge{from: "n/00", to: fmt.Sprintf("n/%02d", i), label: "e1"})
		g.edges = append(g.edges, oEdge{from: fmt.Sprintf("n/%02d", i), to: fmt.Sprintf("n/%02d", i+5), label: "e2"})
	}
	for _, depth := range []int{1, 2} {
		s := &deletesBeforeNodes{Store: g.load(t, m), t: t, victim: "n/02"}
		q := graph.NeighborsQuery{ID: "n/00", Direction: graph.Out, Depth: depth}
		r, err := graph.Neighbors(t.Context(), s, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Nodes) != len(r.Edges) {
			t.Fatalf("depth %d: %d nodes, %d edges", depth, len(r.Nodes), len(r.Edges))
		}
		for i, n := range r.Nodes {
			if n.Node.ID == s.victim {
				t.Errorf("depth %d: the deleted node is listed", depth)
			}
			if e := r.Edges[i]; e.From != n.Node.ID && e.To != n.Node.ID {
				t.Errorf("depth %d: Edges[%d] = %s does not reach Nodes[%d] = %s", depth, i, e, i, n.Node.ID)
			}
		}
		// The whole answer after the delete, then the same by pages of 3
		// cut after 2 by CursorAfter: each neighbour once.
		r, err = graph.Neighbors(t.Context(), s, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := neighborsOf(t, r, "after the delete")
		var got []oNeighbor
		q.Limits = graph.Limits{MaxResults: 3}
		for pages := 0; ; pages++ {
			if pages > 12 {
				t.Fatalf("depth %d: no end", depth)
			}
			r, err := graph.Neighbors(t.Context(), s, q, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, cursor := neighborsOf(t, r, "pages"), r.Cursor
			if cursor != "" && len(p) == 3 {
				p, cursor = p[:2], r.CursorAfter(2)
			}
			got = append(got, p...)
			if q.Cursor = cursor; cursor == "" {
				break
			}
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("depth %d: pages cut by CursorAfter (-whole +pages):\n%s", depth, diff)
		}
	}
}
