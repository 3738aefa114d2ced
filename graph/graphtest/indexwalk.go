package graphtest

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// checkWalks checks that an IndexWalker lists the entries of the indexed
// properties the model writes within bounds, in both directions (ties by
// ascending ID in both), a page at a time from each page's last entry,
// and from positions outside the bounds.
func (m *model) checkWalks(t *testing.T, s graph.Store, ids []graph.ID) {
	t.Helper()
	iw, ok := s.(graph.IndexWalker)
	if !ok {
		return
	}
	enc := func(v any) []byte {
		b, _ := graph.EncodeIndexValue(v)
		return b
	}
	plus0 := func(b []byte) []byte { return append(bytes.Clone(b), 0) } // above b, below every value above it
	for _, w := range []graph.IndexWalk{
		{Type: "Service", Property: "tier"},
		{Type: "Service", Property: "tier", From: enc(1), To: enc(3)},
		{Type: "Service", Property: "tier", From: plus0(enc(1)), To: plus0(enc(2))}, // (1, 2]: bounds a value is a proper prefix of
		{Type: "Service", Property: "lifecycle", From: []byte{0x05}},
		{Type: "Service", Property: "lifecycle", From: enc("d"), To: enc("f")},
		{Type: "Service", Property: "lifecycle", To: graph.PrefixEnd(enc("production")[:4])},
		{Type: "Person", Property: "email", From: enc("b")},
		{Type: "Entity", Property: "entityType"},
	} {
		var all []graph.IndexEntry
		for _, id := range ids {
			n := m.nodes[id]
			v, ok := n.props[w.Property]
			if n.typ != w.Type || !ok {
				continue
			}
			for _, e := range graph.IndexEntries(v) {
				if (w.From == nil || bytes.Compare(e, w.From) >= 0) && (w.To == nil || bytes.Compare(e, w.To) < 0) {
					all = append(all, graph.IndexEntry{Value: e, ID: id})
				}
			}
		}
		for _, desc := range []bool{false, true} {
			w.Desc = desc
			want := slices.Clone(all)
			slices.SortFunc(want, func(a, b graph.IndexEntry) int {
				c := bytes.Compare(a.Value, b.Value)
				if desc {
					c = -c
				}
				return cmp.Or(c, strings.Compare(string(a.ID), string(b.ID)))
			})
			for _, limit := range []int{1, 2, 3, graph.MaxPageSize} {
				w.Limit, w.AfterValue, w.AfterID = limit, nil, ""
				var got []graph.IndexEntry
				for {
					page, err := iw.WalkIndex(t.Context(), w)
					if err != nil {
						t.Fatalf("WalkIndex %+v: %v", w, err)
					}
					if len(page) > limit {
						t.Fatalf("WalkIndex %+v: %d entries, above the limit", w, len(page))
					}
					got = append(got, page...)
					if len(page) < limit {
						break
					}
					w.AfterValue, w.AfterID = page[len(page)-1].Value, page[len(page)-1].ID
				}
				if !slices.EqualFunc(got, want, func(a, b graph.IndexEntry) bool { return bytes.Equal(a.Value, b.Value) && a.ID == b.ID }) {
					t.Fatalf("WalkIndex %s.%s [%x, %x) desc %v by %d: %v, want %v", w.Type, w.Property, w.From, w.To, desc, limit, got, want)
				}
			}
			// From a position before the walk's start, every entry; from
			// one past its end, none.
			w.Limit = graph.MaxPageSize
			for _, from := range []struct {
				v    []byte
				id   graph.ID
				want []graph.IndexEntry
			}{{[]byte{0x00}, "", want}, {[]byte{0xff}, "", nil}} {
				w.AfterValue, w.AfterID = from.v, from.id
				if desc {
					w.AfterValue = []byte{0xff ^ from.v[0]}
				}
				got, err := iw.WalkIndex(t.Context(), w)
				if err != nil {
					t.Fatalf("WalkIndex %+v: %v", w, err)
				}
				if len(got) != len(from.want) {
					t.Fatalf("WalkIndex %s.%s desc %v after %x: %d entries, want %d", w.Type, w.Property, desc, w.AfterValue, len(got), len(from.want))
				}
			}
		}
	}
	if _, err := iw.WalkIndex(t.Context(), graph.IndexWalk{Type: "Topic", Property: "name"}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("WalkIndex of a property the model does not index: %v, want ErrInvalid", err)
	}
}
