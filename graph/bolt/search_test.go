package bolt

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// A store of layout 5 held postings of TokenizerVersion 1 (lower-cased
// words, weights 1 or 3, no impact order, no counts): Open rebuilds them
// and reports its progress, after which search folds and stems.
func TestSearchReindexedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "doc/parser", Type: "Document", Properties: graph.Props{"title": "The JSON parser", "summary": "Café notes"}},
		{ID: "doc/other", Type: "Document", Properties: graph.Props{"title": "Other"}},
	}})
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bTok); err != nil {
			return err
		}
		tok, err := tx.CreateBucket(bTok)
		if err != nil {
			return err
		}
		for _, p := range []struct {
			tok, id string
			w       byte
		}{{"json", "doc/parser", 3}, {"parser", "doc/parser", 3}, {"café", "doc/parser", 1}, {"notes", "doc/parser", 1}, {"other", "doc/other", 3}} {
			if err := tok.Put([]byte(p.tok+"\x00Document\x00"+p.id), []byte{p.w}); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		var stale [][]byte
		c := meta.Cursor()
		for k, _ := c.Seek([]byte(dfPrefix)); k != nil && bytes.HasPrefix(k, []byte(dfPrefix)); k, _ = c.Next() {
			stale = append(stale, bytes.Clone(k))
		}
		for _, k := range stale {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return meta.Put([]byte("version"), u64(5))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	var seen []RebuildProgress
	s = openTest(t, dir, Config{Progress: func(p RebuildProgress) { seen = append(seen, p) }})
	if len(seen) < 2 || seen[0].Reason != "the store's layout was upgraded" || !seen[len(seen)-1].Writing || seen[len(seen)-1].Done != 2 {
		t.Errorf("progress %+v, want the upgrade's, from reading to writing 2 records", seen)
	}
	for _, text := range []string{"parsers", "cafe", "CAFÉ note", `"json parser"`, "title:parser"} {
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: text}, graph.Limits{})
		if err != nil || len(res.Hits) != 1 || res.Hits[0].Node.ID != "doc/parser" || res.Total != 1 || res.TotalEstimated {
			t.Errorf("search %q after the re-index: %+v, %v", text, res, err)
		}
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check after the re-index: %v %v", err, r.Problems)
	}
}

// A store of layout 10 kept the search index's weights in values (token
// NUL type NUL ID -> weight, impKey -> weight), one bbolt key each; layout
// 11 packs the index, weights in keys. Open rebuilds it, and every way of
// reading postings answers as it did before.
func TestLayout10SearchIndexUpgrades(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	var nodes []graph.NodeInput
	for i := range 40 {
		title := fmt.Sprintf("parser %d of JSON", i)
		if i%3 == 0 {
			title = fmt.Sprintf("parsing notes %d, parser parser", i)
		}
		nodes = append(nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("doc/d%02d", i)), Type: "Document", Properties: graph.Props{"title": title}})
	}
	apply(t, s, &graph.Batch{Nodes: nodes})
	read := func(s *Store) string {
		t.Helper()
		var out strings.Builder
		queries := []graph.PostingQuery{
			{Prefix: "pars"},
			{Prefix: "parser", Exact: true},
			{Prefix: "parser", Exact: true, Type: "Document"},
			{Prefix: "parser", Exact: true, ByWeight: true},
			{Prefix: "json", Exact: true, Nodes: []graph.TypedID{{Type: "Document", ID: "doc/d01"}, {Type: "Document", ID: "doc/d03"}, {Type: "Document", ID: "doc/x"}}},
		}
		for _, q := range queries {
			q.Limit = 7
			for {
				page, err := s.Postings(t.Context(), q)
				if err != nil {
					t.Fatalf("%+v: %v", q, err)
				}
				fmt.Fprintf(&out, "%+v\n", page.Postings)
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
		}
		terms, err := s.Terms(t.Context(), graph.TermQuery{Prefix: "pars"})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&out, "%+v\n", terms)
		return out.String()
	}
	want := read(s)
	if strings.Count(want, "Weight:") < 80 {
		t.Fatalf("too few postings to test: %s", want)
	}
	// Layout 10's search index, from this one's keys.
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		var keys [][]byte
		c := newPackedCursor(tx.Bucket(bTok))
		for k := c.First(); k != nil; k = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		if c.err != nil {
			return c.err
		}
		if err := tx.DeleteBucket(bTok); err != nil {
			return err
		}
		tok, err := tx.CreateBucket(bTok)
		if err != nil {
			return err
		}
		for _, k := range keys {
			tail := tokTail(k)
			if k[1] == tokByWeight { // NUL token NUL (255 - weight) ID NUL type -> weight
				w := 255 - tail[bytes.IndexByte(tail, 0)+1]
				err = tok.Put(append([]byte{0}, tail...), []byte{w})
			} else { // token NUL type NUL ID -> weight
				err = tok.Put(tail[:len(tail)-2], tail[len(tail)-1:])
			}
			if err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put([]byte("version"), u64(10))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var seen []RebuildProgress
	s = openTest(t, dir, Config{Progress: func(p RebuildProgress) { seen = append(seen, p) }})
	if len(seen) == 0 || seen[0].Reason != "the store's layout was upgraded" {
		t.Errorf("progress %+v, want the upgrade's", seen)
	}
	if got := read(s); got != want {
		t.Errorf("after the upgrade, the postings read\n%s\nwant\n%s", got, want)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check after the upgrade: %v %v", err, r.Problems)
	}
}
