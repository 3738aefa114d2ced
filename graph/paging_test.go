package graph_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// TestNeighborsAndPathsPaging pages through neighbourhoods and k shortest
// paths of random graphs (the oracle's) a few at a time: the pages, in
// order, are the answer a single call gives, each item once; a cursor is
// set exactly when more follow; a cursor of another call is refused.
func TestNeighborsAndPathsPaging(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(21, 5))
	for gi := range 12 {
		g := randomGraph(rng)
		s := g.load(t, m)
		for qi := range 20 {
			id := graph.ID(g.ids[rng.IntN(len(g.ids))])
			to := graph.ID(g.ids[rng.IntN(len(g.ids))])
			dir := []graph.Direction{graph.Out, graph.In, graph.Both}[qi%3]
			var labels []string
			if rng.IntN(2) == 0 {
				labels = []string{oLabels[rng.IntN(len(oLabels))]}
			}
			size := 1 + rng.IntN(3)
			what := fmt.Sprintf("graph %d, query %d: %s %s %v by %d", gi, qi, id, dir, labels, size)

			nq := graph.NeighborsQuery{ID: id, Labels: labels, Direction: dir, Depth: 1 + qi%3}
			all, err := graph.Neighbors(t.Context(), s, nq, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var nodes []graph.ID
			var edges []graph.EdgeKey
			nq.Limits.MaxResults = size
			for pages := 0; ; pages++ {
				r, err := graph.Neighbors(t.Context(), s, nq, graph.Limits{})
				if err != nil {
					t.Fatalf("%s: page %d: %v", what, pages, err)
				}
				if r.More != (r.Cursor != "") || len(r.Nodes) > size || r.Truncated || len(r.Nodes) != len(r.Edges) {
					t.Fatalf("%s: page %d: %d nodes, %d edges, more %v, cursor %q, truncated %v", what, pages, len(r.Nodes), len(r.Edges), r.More, r.Cursor, r.Truncated)
				}
				for _, n := range r.Nodes {
					nodes = append(nodes, n.Node.ID)
				}
				edges = append(edges, r.Edges...)
				if r.Cursor == "" || pages > len(g.ids) {
					break
				}
				nq.Cursor = r.Cursor
			}
			var want []graph.ID
			for _, n := range all.Nodes {
				want = append(want, n.Node.ID)
			}
			if diff := gocmp.Diff(want, nodes); diff != "" {
				t.Fatalf("%s: neighbours by page (-whole +paged):\n%s", what, diff)
			}
			if !slices.Equal(all.Edges, edges) {
				t.Fatalf("%s: edges by page %v, whole %v", what, edges, all.Edges)
			}

			const k = 8
			pq := graph.PathsQuery{From: id, To: to, Labels: labels, Direction: dir, MaxHops: 4, K: k}
			whole, err := graph.Paths(t.Context(), s, pq, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var paths []graph.Path
			pq.K = size
			for pages := 0; len(paths) < k; pages++ {
				r, err := graph.Paths(t.Context(), s, pq, graph.Limits{})
				if err != nil {
					t.Fatalf("%s: paths page %d: %v", what, pages, err)
				}
				if r.More != (r.Cursor != "") || len(r.Paths) > size || r.Truncated && r.Reason != graph.ReasonHops {
					t.Fatalf("%s: paths page %d: %d paths, more %v, cursor %q, truncated %v %s", what, pages, len(r.Paths), r.More, r.Cursor, r.Truncated, r.Reason)
				}
				paths = append(paths, r.Paths...)
				if r.Cursor == "" {
					break
				}
				pq.Cursor = r.Cursor
			}
			if n := min(len(paths), k); len(whole.Paths) != n || n > 0 && !gocmp.Equal(whole.Paths, paths[:n]) {
				t.Fatalf("%s: paths by page %v, whole %v", what, paths, whole.Paths)
			}
			if pq.Cursor != "" {
				// A cursor of find_paths is no cursor of neighbors, nor of
				// other paths.
				if _, err := graph.Neighbors(t.Context(), s, graph.NeighborsQuery{ID: id, Cursor: pq.Cursor}, graph.Limits{}); err == nil {
					t.Errorf("%s: neighbors took a cursor of find_paths", what)
				}
				other := pq
				other.MaxHops = 3
				if _, err := graph.Paths(t.Context(), s, other, graph.Limits{}); err == nil {
					t.Errorf("%s: find_paths took a cursor of other paths", what)
				}
			}
		}
	}
}

// TestPathsPagingEndsAtTheWorkLimit pages through k shortest paths under
// tiny work limits: each page is the next part of the whole answer, and
// paging ends, on a truncated page without a cursor where the limit cannot
// reach the next path (a cursor that retried the same page would never).
func TestPathsPagingEndsAtTheWorkLimit(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(23, 7))
	ended := 0
	for gi := range 12 {
		g := randomGraph(rng)
		s := g.load(t, m)
		for qi := range 20 {
			from := graph.ID(g.ids[rng.IntN(len(g.ids))])
			to := graph.ID(g.ids[rng.IntN(len(g.ids))])
			dir := []graph.Direction{graph.Out, graph.In, graph.Both}[qi%3]
			pq := graph.PathsQuery{From: from, To: to, Labels: randomLabels(rng), Direction: dir, MaxHops: 4, K: 8}
			whole, err := graph.Paths(t.Context(), s, pq, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			work := 1 + rng.IntN(40)
			what := fmt.Sprintf("graph %d, query %d: %s to %s %s %v, work %d", gi, qi, from, to, dir, pq.Labels, work)
			pq.K, pq.Limits = 1+rng.IntN(3), graph.Limits{MaxVisited: work}
			var paths []graph.Path
			for calls := 0; ; calls++ {
				if calls > 8 {
					t.Fatalf("%s: %d calls for at most 8 paths", what, calls)
				}
				r, err := graph.Paths(t.Context(), s, pq, graph.Limits{})
				if err != nil {
					t.Fatalf("%s: call %d: %v", what, calls, err)
				}
				paths = append(paths, r.Paths...)
				if r.Cursor == "" {
					if r.Truncated && r.Reason == graph.ReasonWork && len(r.Paths) == 0 {
						ended++
					}
					break
				}
				if len(paths) >= 8 {
					break
				}
				pq.Cursor = r.Cursor
			}
			paths = paths[:min(len(paths), 8)]
			if len(paths) > len(whole.Paths) || len(paths) > 0 && !gocmp.Equal(whole.Paths[:len(paths)], paths) {
				t.Fatalf("%s: paths by page %v, whole %v", what, paths, whole.Paths)
			}
		}
	}
	if ended == 0 {
		t.Errorf("no paging ended at the work limit: the test does not check it")
	}
}
