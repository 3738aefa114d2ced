package graph_test

import (
	"errors"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
)

// TestCheckModelSince: after a check of the data at change `at`, the
// writes that came since are checked against the new model: a node
// written since that breaks it, and the edges of a node written since
// (its edges' ends are bounded by its type) are found; nodes written
// before are not read; deleted ones are skipped. A model change among the
// entries is ErrConflict. UseModel at a stale change is ErrConflict, and
// at the change CheckModelSince reached puts the model in use.
func TestCheckModelSince(t *testing.T) {
	ctx := t.Context()
	v1 := migrationModel(t, `"name": {"type": "string"}, "age": {"type": "integer"}`, `"name"`)
	v2 := migrationModel(t, `"name": {"type": "string"}, "age": {"type": "integer", "maximum": 150}`, `"name"`)
	s, err := bolt.Open(ctx, bolt.Config{Path: t.TempDir(), Model: v1, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	person := func(id string, age int) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Person", Properties: graph.Props{"name": id, "age": age}}
	}
	old, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{person("person/old", 200), person("person/a", 1), person("person/b", 2)},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "knows", To: "person/b"}}}})
	if err != nil {
		t.Fatal(err)
	}
	at := old.Seq // the check: person/old breaks v2, found by CheckModel, not here
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{person("person/new", 300), person("person/b", 3), person("person/gone", 1)}}); err != nil {
		t.Fatal(err)
	}
	last, err := s.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "person/gone"}}})
	if err != nil {
		t.Fatal(err)
	}
	fit, seq, err := graph.CheckModelSince(ctx, s, v2, at, 10)
	if err != nil {
		t.Fatal(err)
	}
	// person/new and person/b (and b's edge), not person/old or person/gone.
	if seq != last.Seq || fit.Nodes != 2 || fit.Edges != 1 || fit.RejectedNodes != 1 || fit.RejectedEdges != 0 ||
		len(fit.First) != 1 || fit.First[0].ID != "person/new" {
		t.Fatalf("CheckModelSince(%d): seq %d, %+v", at, seq, fit)
	}
	if _, err := s.UseModel(ctx, v2, at); !errors.Is(err, graph.ErrConflict) {
		t.Fatalf("UseModel at a stale change: %v", err)
	}
	if _, err := s.UseModel(ctx, v1, 0); err != nil { // v1 is in use: nothing to do
		t.Fatal(err)
	}
	v3 := migrationModel(t, `"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}`, `"name"`)
	if _, err := s.UseModel(ctx, v3, seq); err != nil {
		t.Fatal(err)
	}
	if _, _, err := graph.CheckModelSince(ctx, s, v2, at, 10); !errors.Is(err, graph.ErrConflict) {
		t.Fatalf("CheckModelSince across a model change: %v", err)
	}
}
