package mcp_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// changesPage is changes_since's output.
type changesPage struct {
	Changes []graph.Change `json:"changes"`
	Cursor  uint64         `json:"cursor"`
	More    bool           `json:"more"`
}

// docAbout writes a document and n topics it is about in one batch: an
// entry of n+1 nodes and n edges.
func docAbout(t testing.TB, s graph.Store, doc string, n int) *graph.Result {
	t.Helper()
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(doc), Type: "Document", Properties: graph.Props{"title": doc}}}}
	for i := range n {
		id := graph.ID(fmt.Sprintf("topic/%s-%d", strings.ReplaceAll(doc, "/", "-"), i))
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: "Topic", Properties: graph.Props{"name": string(id)}})
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(doc), Label: "about", To: id}})
	}
	r, err := s.Apply(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// changes calls changes_since and checks that its output is under the cap.
func (f *fixture) changes(t testing.TB, cs *mcpsdk.ClientSession, args string) changesPage {
	t.Helper()
	res := f.call(t, cs, "changes_since", args)
	if res.IsError {
		t.Fatalf("changes_since %s: %s", args, text(res))
	}
	data, _ := json.Marshal(res.StructuredContent)
	if max := f.cat.Ceilings().MaxBytes; len(data) > max {
		t.Fatalf("changes_since %s: %d bytes, over the cap of %d", args, len(data), max)
	}
	return structured[changesPage](t, res)
}

// TestChangesSinceNeverSkips: with a 4 KiB cap, paging changes_since from
// 0 lists every entry exactly once, in order, although most entries are
// larger than the cap; an entry too large is listed in part (truncated,
// part) and its parts, read with offset, add up to the whole entry.
func TestChangesSinceNeverSkips(t *testing.T) {
	f := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: 4096}})
	cs := f.connect(t, legacy, nil)
	docAbout(t, f.store, "doc/a", 150)
	f.touch(t, other)
	docAbout(t, f.store, "doc/b", 40)
	if _, err := f.store.Apply(t.Context(), &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "doc/a"}}, Op: "delete_nodes"}); err != nil {
		t.Fatal(err) // a delete whose entry lists 150 edges it cascaded to
	}
	st, _ := f.store.Stats(t.Context())

	var seqs []uint64
	cursor, parts := uint64(0), 0
	for {
		page := f.changes(t, cs, fmt.Sprintf(`{"cursor":%d}`, cursor))
		if len(page.Changes) == 0 && page.More {
			t.Fatalf("cursor %d: an empty page with more", cursor)
		}
		for _, c := range page.Changes {
			seqs = append(seqs, c.Seq)
			whole, err := f.store.Since(t.Context(), c.Seq-1, 1)
			if err != nil {
				t.Fatal(err)
			}
			nodes, edges := c.Nodes, c.Edges
			for next := c; next.Truncated; {
				parts++
				if next.Part == nil || next.Part.NodeCount != len(whole[0].Nodes) || next.Part.EdgeCount != len(whole[0].Edges) {
					t.Fatalf("change %d: part %+v of an entry of %d nodes and %d edges", c.Seq, next.Part, len(whole[0].Nodes), len(whole[0].Edges))
				}
				rest := f.changes(t, cs, fmt.Sprintf(`{"cursor":%d,"offset":%d}`, c.Seq-1, next.Part.Next))
				if len(rest.Changes) != 1 || rest.Changes[0].Seq != c.Seq || rest.Cursor != c.Seq {
					t.Fatalf("change %d from %d: %+v", c.Seq, next.Part.Next, rest)
				}
				next = rest.Changes[0]
				nodes, edges = append(nodes, next.Nodes...), append(edges, next.Edges...)
			}
			if !cmp.Equal(nodes, whole[0].Nodes) || !cmp.Equal(edges, whole[0].Edges) {
				t.Errorf("change %d: its parts are not the entry (%d+%d elements, want %d+%d)", c.Seq, len(nodes), len(edges), len(whole[0].Nodes), len(whole[0].Edges))
			}
		}
		cursor = page.Cursor
		if !page.More {
			break
		}
	}
	var want []uint64
	for s := uint64(1); s <= st.LastSeq; s++ {
		want = append(want, s)
	}
	if diff := cmp.Diff(want, seqs); diff != "" {
		t.Fatalf("sequence numbers read (-want +got):\n%s", diff)
	}
	if parts < 10 {
		t.Errorf("only %d parts read: the entries should not fit 4 KiB", parts)
	}
}

// TestChangesSinceCursorBounds: a cursor past 2^53-1 is refused with a
// message naming the bound, never taken modulo 2^64 to replay the log.
func TestChangesSinceCursorBounds(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	for _, cursor := range []string{"18446744073709551615", "18446744073709551614", "9007199254740992"} {
		res := f.call(t, cs, "changes_since", `{"cursor":`+cursor+`}`)
		if !res.IsError || !strings.Contains(text(res), "/cursor") || !strings.Contains(text(res), "9007199254740991") {
			t.Errorf("cursor %s: want a refusal naming /cursor and the maximum, got %s", cursor, text(res))
		}
	}
	res0 := f.call(t, cs, "changes_since", fmt.Sprintf(`{"cursor":%d}`, uint64(math.MaxInt64>>10)))
	if !res0.IsError || !strings.Contains(text(res0), "past the last change") {
		t.Errorf("a cursor past the end: want a refusal saying so, got %s", text(res0))
	}
	res := f.call(t, cs, "changes_since", `{"cursor":0,"offset":100000}`)
	if !res.IsError || !strings.Contains(text(res), "past the entry's last element") {
		t.Errorf("an offset past the entry: %s", text(res))
	}
	res = f.call(t, cs, "changes_since", `{"cursor":1000,"offset":1}`)
	if !res.IsError || !strings.Contains(text(res), "past the last change") {
		t.Errorf("an offset into no entry: %s", text(res))
	}
}

// TestCommittedWriteFitsTheCap: a write whose full result is over the byte
// cap is committed and says so: its lists are cut to their first items,
// the counts are whole, and it is not an error.
func TestCommittedWriteFitsTheCap(t *testing.T) {
	const max = 4 << 10
	f := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: max}})
	cs := f.connect(t, legacy, nil)
	before, _ := f.store.Stats(t.Context())
	var nodes, refs []string
	for i := range 400 {
		id := fmt.Sprintf("topic/capped-%d", i)
		nodes = append(nodes, fmt.Sprintf(`{"id":%q,"type":"Topic","properties":{"name":%q}}`, id, id))
		refs = append(refs, fmt.Sprintf(`{"id":%q}`, id))
	}
	type result struct {
		Seq              uint64
		Truncated        bool
		Nodes            []graph.ElementResult
		NodeCount        int
		DeletedNodes     []string
		DeletedNodeCount int
	}
	for _, tc := range []struct {
		tool, args string
		check      func(r result) bool
	}{
		{"upsert_nodes", `{"nodes":[` + strings.Join(nodes, ",") + `]}`,
			func(r result) bool { return r.NodeCount == 400 && len(r.Nodes) > 0 && len(r.Nodes) < 400 }},
		{"delete_nodes", `{"confirm":true,"nodes":[` + strings.Join(refs, ",") + `]}`,
			func(r result) bool {
				return r.DeletedNodeCount == 400 && len(r.DeletedNodes) > 0 && len(r.DeletedNodes) < 400
			}},
	} {
		res := f.call(t, cs, tc.tool, tc.args)
		if res.IsError {
			t.Fatalf("%s: %s", tc.tool, text(res))
		}
		data, _ := json.Marshal(res.StructuredContent)
		r := structured[result](t, res)
		if len(data) > max || r.Seq == 0 || !r.Truncated || !tc.check(r) {
			t.Errorf("%s: %d bytes: %.300s", tc.tool, len(data), data)
		}
		if txt := text(res); !strings.Contains(txt, fmt.Sprintf("committed as change %d", r.Seq)) || !strings.Contains(txt, "only the first are listed") || len(txt) > 2*max {
			t.Errorf("%s: text of %d bytes: %.300s", tc.tool, len(txt), txt)
		}
	}
	if st, _ := f.store.Stats(t.Context()); st.NodeTypes["Topic"] != before.NodeTypes["Topic"] {
		t.Errorf("%d topics after the delete, want %d", st.NodeTypes["Topic"], before.NodeTypes["Topic"])
	}
}
