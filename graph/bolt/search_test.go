package bolt

import (
	"bytes"
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
			if err := tok.Put(tokenKey(p.tok, "Document", graph.ID(p.id)), []byte{p.w}); err != nil {
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
