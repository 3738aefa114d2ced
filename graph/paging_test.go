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
