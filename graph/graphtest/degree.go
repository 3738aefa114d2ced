package graphtest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// CheckDegreeIndex checks a store's degree index (graph.DegreeRanker), if
// it has one, against its node and edge records, read whole: for every
// node type, edge label and direction, RankByDegree lists exactly the
// nodes of the type with a nonzero count, in order, in pages of any size,
// either way, within degree ranges, and after entries that are not in the
// index. Tests call it after the writes that change what it holds: edge
// and node deletes, re-types, bulk loads.
func CheckDegreeIndex(t testing.TB, s graph.Store) {
	t.Helper()
	if _, ok := s.(graph.DegreeRanker); !ok {
		return
	}
	types := map[graph.ID]string{}
	for after := ""; ; {
		page, err := s.ScanNodes(t.Context(), graph.Page{After: after, Limit: graph.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Nodes {
			types[n.ID] = n.Type
		}
		if after = page.Next; after == "" {
			break
		}
	}
	counts := map[degreeSlot]int64{}
	for after := ""; ; {
		page, err := s.ScanEdges(t.Context(), graph.Page{After: after, Limit: graph.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Edges {
			counts[degreeSlot{e.From, e.Label, graph.Out}]++
			counts[degreeSlot{e.To, e.Label, graph.In}]++
		}
		if after = page.Next; after == "" {
			break
		}
	}
	checkDegreeIndex(t, s, types, counts)
}

// A degreeSlot is one degree of one node.
type degreeSlot struct {
	id    graph.ID
	label string
	dir   graph.Direction
}

// checkDegreeIndex checks the degree index against the nodes' types and
// their nonzero degrees.
func checkDegreeIndex(t testing.TB, s graph.Store, types map[graph.ID]string, counts map[degreeSlot]int64) {
	t.Helper()
	dr, ok := s.(graph.DegreeRanker)
	if !ok {
		return
	}
	m := s.Model()
	for _, typ := range m.NodeTypeNames() {
		for _, label := range m.EdgeLabels() {
			for _, dir := range []graph.Direction{graph.Out, graph.In} {
				var want []graph.DegreeEntry
				for k, n := range counts {
					if k.label == label && k.dir == dir && n > 0 && types[k.id] == typ {
						want = append(want, graph.DegreeEntry{ID: k.id, Degree: n})
					}
				}
				for _, desc := range []bool{false, true} {
					slices.SortFunc(want, func(a, b graph.DegreeEntry) int {
						c := cmp.Compare(a.Degree, b.Degree)
						if desc {
							c = -c
						}
						return cmp.Or(c, cmp.Compare(a.ID, b.ID))
					})
					q := graph.DegreeQuery{Type: typ, Label: label, Direction: dir, Desc: desc}
					what := fmt.Sprintf("RankByDegree %s %s %s desc %v", typ, label, dir, desc)
					for _, limit := range []int{1, 2, graph.MaxPageSize} {
						got := rankAll(t, dr, q, limit)
						if !slices.Equal(got, want) {
							t.Fatalf("%s by %d: %v, want %v", what, limit, got, want)
						}
					}
					if len(want) == 0 {
						continue
					}
					// A range, and a start after an entry that is not in
					// the index: the middle entry's degree, an ID past it.
					mid := want[len(want)/2]
					lo, hi := min(want[0].Degree, mid.Degree), max(want[0].Degree, mid.Degree)
					r := q
					r.Min, r.Max = lo, hi
					var inRange []graph.DegreeEntry
					for _, e := range want {
						if e.Degree >= lo && e.Degree <= hi {
							inRange = append(inRange, e)
						}
					}
					if got := rankAll(t, dr, r, 2); !slices.Equal(got, inRange) {
						t.Fatalf("%s from %d to %d: %v, want %v", what, lo, hi, got, inRange)
					}
					after := graph.DegreeEntry{ID: mid.ID + "~", Degree: mid.Degree}
					a := q
					a.After, a.Limit = &after, graph.MaxPageSize
					var rest []graph.DegreeEntry
					for _, e := range want {
						c := cmp.Compare(e.Degree, after.Degree)
						if desc {
							c = -c
						}
						if cmp.Or(c, cmp.Compare(e.ID, after.ID)) > 0 {
							rest = append(rest, e)
						}
					}
					got, err := dr.RankByDegree(t.Context(), a)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, rest) && len(got)+len(rest) > 0 {
						t.Fatalf("%s after %v: %v, want %v", what, after, got, rest)
					}
				}
			}
		}
	}
}

// rankAll pages through the degree index with pages of limit entries.
func rankAll(t testing.TB, dr graph.DegreeRanker, q graph.DegreeQuery, limit int) []graph.DegreeEntry {
	t.Helper()
	var out []graph.DegreeEntry
	q.Limit = limit
	for {
		page, err := dr.RankByDegree(t.Context(), q)
		if err != nil {
			t.Fatalf("RankByDegree %+v: %v", q, err)
		}
		out = append(out, page...)
		if len(page) < limit {
			return out
		}
		q.After = &out[len(out)-1]
	}
}

// checkDegreeIndex checks the degree index against the model's nodes and
// edges, and that it refuses what the model lacks.
func (m *model) checkDegreeIndex(t *testing.T, s graph.Store) {
	t.Helper()
	dr, ok := s.(graph.DegreeRanker)
	if !ok {
		return
	}
	types := map[graph.ID]string{}
	for id, n := range m.nodes {
		types[id] = n.typ
	}
	counts := map[degreeSlot]int64{}
	for k := range m.edges {
		counts[degreeSlot{k.From, k.Label, graph.Out}]++
		counts[degreeSlot{k.To, k.Label, graph.In}]++
	}
	checkDegreeIndex(t, s, types, counts)
	label := s.Model().EdgeLabels()[0]
	for _, q := range []graph.DegreeQuery{
		{Type: "NoSuchType", Label: label, Direction: graph.In},
		{Type: "Service", Label: "noSuchLabel", Direction: graph.In},
		{Type: "Service", Label: label, Direction: graph.Both},
	} {
		if _, err := dr.RankByDegree(t.Context(), q); !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("RankByDegree %+v: %v, want ErrInvalid", q, err)
		}
	}
}
