package bolt

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// A descending walk reads a value's entries backwards up to backGroup of
// them, and a value with more forwards from its first key: values with
// one entry, backGroup, backGroup+1 and many, each walk checked against
// the entries sorted, a page at a time, within bounds and without.
func TestWalkIndexDescendingGroups(t *testing.T) {
	m, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/walkdesc.json", "$defs": {
	  "T": {"type": "object", "x-lore-node": {"indexed": ["v"]}, "properties": {"v": {"type": "integer"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s := openTest(t, t.TempDir(), Config{Model: m})
	counts := map[int]int{1: 1, 2: backGroup, 3: backGroup + 1, 4: 1, 5: 3 * backGroup, 6: 2, 7: 1}
	var b graph.Batch
	var all []graph.IndexEntry
	for v, n := range counts {
		enc, _ := graph.EncodeIndexValue(v)
		for i := range n {
			id := graph.ID(fmt.Sprintf("t/%d-%03d", v, (i*37)%n)) // not written in ID order
			b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: "T", Properties: graph.Props{"v": v}})
			all = append(all, graph.IndexEntry{Value: enc, ID: id})
		}
	}
	apply(t, s, &b)
	slices.SortFunc(all, func(a, b graph.IndexEntry) int {
		return cmp.Or(-bytes.Compare(a.Value, b.Value), strings.Compare(string(a.ID), string(b.ID)))
	})
	enc := func(v int) []byte { e, _ := graph.EncodeIndexValue(v); return e }
	for _, bounds := range [][2][]byte{{nil, nil}, {enc(2), enc(6)}, {enc(3), nil}, {nil, enc(3)}} {
		var want []graph.IndexEntry
		for _, e := range all {
			if (bounds[0] == nil || bytes.Compare(e.Value, bounds[0]) >= 0) && (bounds[1] == nil || bytes.Compare(e.Value, bounds[1]) < 0) {
				want = append(want, e)
			}
		}
		for _, limit := range []int{1, 2, backGroup - 1, backGroup, backGroup + 1, 100} {
			w := graph.IndexWalk{Type: "T", Property: "v", From: bounds[0], To: bounds[1], Desc: true, Limit: limit}
			var got []graph.IndexEntry
			for range len(all) + 1 {
				page, err := s.WalkIndex(t.Context(), w)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if len(page) < limit {
					break
				}
				w.AfterValue, w.AfterID = page[len(page)-1].Value, page[len(page)-1].ID
			}
			if !slices.EqualFunc(got, want, func(a, b graph.IndexEntry) bool { return bytes.Equal(a.Value, b.Value) && a.ID == b.ID }) {
				t.Errorf("bounds [%x, %x) by %d: %v, want %v", bounds[0], bounds[1], limit, got, want)
			}
		}
	}
}
