package postgres_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// TestRetypeMovesIndexRows: re-typing nodes between two types that index
// and search the same property moves their lore_prop and lore_postings
// rows to the new type, though property, value, token and weight are
// the same. 300 nodes make one plan large enough for the COPY path.
func TestRetypeMovesIndexRows(t *testing.T) {
	ctx := t.Context()
	m, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "Topic": {"x-lore-node": {"display": "name", "indexed": ["name"], "search": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}}},
	  "Concept": {"x-lore-node": {"display": "name", "indexed": ["name"], "search": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.NewDatabase(t), Model: m})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 300
	b := &graph.Batch{}
	for i := range n {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%03d", i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("graph%d", i)}})
	}
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	mig, err := graph.ParseMigration([]byte(`{"steps": [{"retypeNodes": {"from": "Topic", "to": "Concept"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{}); err != nil || rep.Changed != n || rep.Batches != 1 {
		t.Fatalf("Migrate: %+v %v", rep, err)
	}
	for typ, want := range map[string][]graph.ID{"Topic": nil, "Concept": {"topic/t007"}} {
		p, err := s.Lookup(ctx, graph.IndexQuery{Type: typ, Property: "name", Eq: "graph7"})
		if err != nil || !slices.Equal(p.IDs, want) {
			t.Errorf("Lookup(%s.name) = %+v %v, want %v", typ, p, err, want)
		}
		q, err := s.Postings(ctx, graph.PostingQuery{Prefix: "graph7", Exact: true, Type: typ})
		if err != nil || len(q.Postings) != len(want) {
			t.Errorf("Postings(graph7, %s) = %+v %v, want %v", typ, q, err, want)
		}
	}
	r, err := s.Check(ctx)
	if err != nil || len(r.Problems) > 0 {
		t.Errorf("Check: %+v %v", r, err)
	}
}
