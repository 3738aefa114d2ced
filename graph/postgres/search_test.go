package postgres_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// A database whose postings are of TokenizerVersion 1 (lower-cased words,
// weights 1 or 3) is re-indexed when a writer opens it, with progress in
// the log, after which search folds and stems.
func TestSearchReindexedAtOpen(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "doc/parser", Type: "Document", Properties: graph.Props{"title": "The JSON parser", "summary": "Café notes"}},
		{ID: "doc/other", Type: "Document", Properties: graph.Props{"title": "Other"}},
	}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.Pool().Exec(t.Context(), `DELETE FROM lore_postings;
		INSERT INTO lore_postings (token, type, id, weight) VALUES ('json', 'Document', 'doc/parser', 3), ('parser', 'Document', 'doc/parser', 3),
			('café', 'Document', 'doc/parser', 1), ('notes', 'Document', 'doc/parser', 1), ('other', 'Document', 'doc/other', 3);
		DELETE FROM lore_meta WHERE key = 'tokenizer'`)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	var log bytes.Buffer
	s, err = postgres.Open(t.Context(), postgres.Config{URL: url, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if !strings.Contains(log.String(), `msg="re-indexing search" type=Document done=2 total=2`) || !strings.Contains(log.String(), `msg="re-indexed search" nodes=2`) {
		t.Errorf("log of the re-index:\n%s", log.String())
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
	// Opened again, it is not re-indexed.
	s.Close()
	log.Reset()
	if s, err = postgres.Open(t.Context(), postgres.Config{URL: url, Logger: slog.New(slog.NewTextHandler(&log, nil))}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "re-index") {
		t.Errorf("opened again: %s", log.String())
	}
}
