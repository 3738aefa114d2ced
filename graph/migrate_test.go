package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/schema"
)

// migrationModel returns a model with one node type, Person, whose
// properties are props (JSON Schema), required lists required ones, and a
// knows edge between people.
func migrationModel(t *testing.T, props, required string) *schema.Model {
	t.Helper()
	m, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/people.json", "$defs": {
	  "Person": {"x-lore-node": {"display": "name", "search": ["name"]}, "type": "object", "properties": {` + props + `},
	    "required": [` + required + `], "additionalProperties": false},
	  "knows": {"type": "object", "x-lore-edge": {"from": ["Person"], "to": ["Person"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMigrate: a model change that renames a property, gives a new
// required one a default and changes a property's type is refused while
// the data does not fit it, fits the data as the migration would leave it,
// and after the migration (batches with op "migrate" in the change log,
// one per BatchSize nodes) fits the data itself; running the migration
// again changes nothing. A value that does not convert stops a migration
// before it writes anything.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	v1 := migrationModel(t, `"name": {"type": "string"}, "mail": {"type": "string"}, "age": {"type": "string"}`, `"name"`)
	v2 := migrationModel(t, `"name": {"type": "string"}, "email": {"type": "string"}, "age": {"type": "integer"}, "active": {"type": "boolean"}`, `"name", "active"`)
	s, err := bolt.Open(ctx, bolt.Config{Path: dir, Model: v1})
	if err != nil {
		t.Fatal(err)
	}
	const people = 25
	b := &graph.Batch{}
	for i := range people {
		p := graph.Props{"name": fmt.Sprintf("person %d", i), "age": fmt.Sprint(20 + i)}
		if i%5 != 0 {
			p["mail"] = fmt.Sprintf("p%d@example.org", i)
		}
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("person/p%02d", i)), Type: "Person", Properties: p})
		if i > 0 {
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(fmt.Sprintf("person/p%02d", i)), Label: "knows", To: "person/p00"}})
		}
	}
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	mig, err := graph.ParseMigration([]byte(`{"steps": [
	  {"renameProperty": {"type": "Person", "from": "mail", "to": "email"}},
	  {"setDefault": {"type": "Person", "property": "active", "value": true}},
	  {"convertProperty": {"type": "Person", "property": "age", "to": "integer"}}]}`))
	if err != nil {
		t.Fatal(err)
	}

	fit, err := graph.CheckModel(ctx, s, v2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if fit.RejectedNodes != people || fit.RejectedEdges != 0 {
		t.Fatalf("v2 against the v1 data: %d nodes and %d edges rejected, want %d and 0", fit.RejectedNodes, fit.RejectedEdges, people)
	}
	if fit, err = graph.CheckModel(ctx, graph.Migrated(s, mig), v2, 3); err != nil || !fit.Fits() {
		t.Fatalf("v2 against the data as migrated: %+v %v", fit, err)
	}
	dry, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{DryRun: true})
	if err != nil || dry.Examined != people || dry.Changed != people || dry.Batches != 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	seq0 := lastSeq(t, s)

	// Put v2 in use (lore model apply reopens the store with it), then
	// migrate under it.
	s.Close()
	if s, err = bolt.Open(ctx, bolt.Config{Path: dir, Model: v2}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Changed != people || rep.Batches != 3 {
		t.Errorf("migration: %+v, want %d changed in 3 batches", rep, people)
	}
	if fit, err = graph.CheckModel(ctx, s, v2, 3); err != nil || !fit.Fits() {
		t.Fatalf("v2 against the migrated data: %+v %v", fit, err)
	}
	n, err := s.Node(ctx, "person/p01")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"active":true,"age":21,"email":"p1@example.org","name":"person 1"}`
	if got, _ := json.Marshal(n.Properties); string(got) != want {
		t.Errorf("person/p01 migrated: %s, want %s", got, want)
	}
	if n, _ = s.Node(ctx, "person/p05"); n == nil || n.Properties["email"] != nil || n.Properties["mail"] != nil {
		t.Errorf("person/p05 had no mail, and has no email: %v", n)
	}
	changes, err := s.Since(ctx, seq0, 10)
	if err != nil {
		t.Fatal(err)
	}
	// The model change, then the migration's batches.
	if len(changes) != 4 || !changes[0].ModelChanged() {
		t.Fatalf("%d change-log entries after the model change (first %+v), want the model's and 3", len(changes), changes[0])
	}
	for _, c := range changes[1:] {
		if c.Op != "migrate" {
			t.Errorf("change %d: op %q, want migrate", c.Seq, c.Op)
		}
	}
	// The edges are untouched.
	if st, err := s.Stats(ctx); err != nil || st.Edges != people-1 {
		t.Errorf("edges after the migration: %+v %v", st, err)
	}
	again, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{})
	if err != nil || again.Changed != 0 || lastSeq(t, s) != changes[3].Seq {
		t.Errorf("the migration run again: %+v %v", again, err)
	}

	// A value that does not convert: nothing is written.
	bad := graph.Props{"name": "odd", "active": false, "email": "odd@example.org", "age": 7}
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/odd", Type: "Person", Properties: bad}}}); err != nil {
		t.Fatal(err)
	}
	toInt, err := graph.ParseMigration([]byte(`{"steps": [{"convertProperty": {"type": "Person", "property": "email", "to": "integer"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	before := lastSeq(t, s)
	rep, err = graph.Migrate(ctx, s, toInt, graph.MigrationOptions{BatchSize: 2})
	if !errors.Is(err, graph.ErrInvalid) || rep == nil || rep.Failed != people-people/5+1 || len(rep.First) != 10 ||
		!strings.Contains(err.Error(), `person/odd: /steps/0: property email: "odd@example.org" is not an integer`) {
		t.Fatalf("an unconvertible value: %+v %v", rep, err)
	}
	if lastSeq(t, s) != before {
		t.Error("a migration that cannot convert every value wrote")
	}
}

// TestParseMigration: a migration document is read strictly.
func TestParseMigration(t *testing.T) {
	for doc, want := range map[string]string{
		`{"steps": []}`:   "no steps",
		`{"steps": [{}]}`: "/steps/0: want exactly one of",
		`{"steps": [{"renameProperty": {"type": "A", "from": "x", "to": "x"}}]}`:                                             "from and to are the same",
		`{"steps": [{"renameProperty": {"type": "A", "from": "x"}}]}`:                                                        "renameProperty/to is required",
		`{"steps": [{"setDefault": {"type": "A", "property": "x"}}]}`:                                                        "setDefault/value is required",
		`{"steps": [{"convertProperty": {"type": "A", "property": "x", "to": "date"}}]}`:                                     `want string, integer, number or boolean, not "date"`,
		`{"steps": [{"renameProperty": {"type": "A", "from": "x", "to": "y"}, "setDefault": {}}]}`:                           "want exactly one of",
		`{"steps": [{"renameProperty": {"type": "A", "from": "x", "to": "y", "where": 1}}]}`:                                 `unknown field "where"`,
		`{"steps": [{"setDefault": {"type": "A", "property": "x", "value": 1}}]} {}`:                                         "data after the JSON value",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "A"}}]}`:                                                             "retypeNodes: from and to are the same",
		`{"steps": [{"retypeNodes": {"from": "A"}}]}`:                                                                        "retypeNodes/to is required",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "ids": []}}]}`:                                                  "retypeNodes/ids is empty",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "ids": ["a b"]}}]}`:                                             "retypeNodes/ids/0:",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "where": {"x": {"near": 1}}}}]}`:                                "retypeNodes/where: invalid query: /x",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "where": []}}]}`:                                                "retypeNodes/where: invalid query",
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "when": 1}}]}`:                                                  `unknown field "when"`,
		`{"steps": [{"setDefault": {"type": "B", "property": "x", "value": 1}}, {"retypeNodes": {"from": "A", "to": "B"}}]}`: "/steps/1: retypeNodes: /steps/0 changes B nodes before this step makes more of them",
		// What encoding/json would take silently: the last of two keys, a
		// replaced byte (written into every node by setDefault).
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "from": "C"}}]}`:                    "at /steps/0/retypeNodes/from",
		`{"steps": [{"setDefault": {"type": "A", "property": "x", "value": "` + "\xff" + `"}}]}`: "invalid UTF-8",
		strings.Repeat("[", 200) + strings.Repeat("]", 200):                                      "nested deeper than",
	} {
		if _, err := graph.ParseMigration([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", doc, err, want)
		}
	}
}

func lastSeq(t *testing.T, s graph.Store) uint64 {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.LastSeq
}

// topicModel returns a model with Note nodes, the node types types
// (each with a name and a description, the name searched and indexed),
// and cites edges from notes to nodes of the types in citable.
func topicModel(t *testing.T, types []string, citable string) *schema.Model {
	t.Helper()
	defs := `"Note": {"x-lore-node": {"display": "title"}, "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"], "additionalProperties": false},
	  "cites": {"type": "object", "x-lore-edge": {"from": ["Note"], "to": [` + citable + `]}, "properties": {"page": {"type": "integer"}}, "additionalProperties": false}`
	for _, typ := range types {
		defs += `, "` + typ + `": {"x-lore-node": {"display": "name", "indexed": ["name"], "search": ["name"]}, "type": "object",
		  "properties": {"name": {"type": "string"}, "description": {"type": "string"}}, "required": ["name"], "additionalProperties": false}`
	}
	m, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/topics.json", "$defs": {` + defs + `}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMigrateRetype: a model that adds the type Concept and lets notes
// cite concepts only rejects the edges that cite the stored topics, and
// fits the data as a migration that re-types the topics would leave it
// (the view lists the re-typed nodes under their new type only, and the
// edges' endpoints check with it). The migration, run under the new
// model, keeps the nodes' IDs, properties, creation times and edges, and
// the store's check passes; a model without Topic is then accepted. A
// re-type that leaves an edge joining types its label does not allow is
// rejected by the model check and refused by Migrate, which then writes
// nothing.
func TestMigrateRetype(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	v1 := topicModel(t, []string{"Topic"}, `"Topic"`)
	v2 := topicModel(t, []string{"Topic", "Concept"}, `"Concept"`)
	s, err := bolt.Open(ctx, bolt.Config{Path: dir, Model: v1})
	if err != nil {
		t.Fatal(err)
	}
	const topics = 12
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: "note/n", Type: "Note", Properties: graph.Props{"title": "reading list"}}}}
	for i := range topics {
		id := graph.ID(fmt.Sprintf("topic/t%02d", i))
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("graph %d", i)}})
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: "note/n", Label: "cites", To: id}, Properties: graph.Props{"page": i + 1}})
	}
	if _, err := s.Apply(ctx, b); err != nil {
		t.Fatal(err)
	}
	mig, err := graph.ParseMigration([]byte(`{"steps": [{"retypeNodes": {"from": "Topic", "to": "Concept"}},
	  {"setDefault": {"type": "Concept", "property": "description", "value": "was a topic"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	fit, err := graph.CheckModel(ctx, s, v2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if fit.RejectedNodes != 0 || fit.RejectedEdges != topics {
		t.Fatalf("v2 against the v1 data: %d nodes and %d edges rejected, want 0 and %d", fit.RejectedNodes, fit.RejectedEdges, topics)
	}
	view := graph.Migrated(s, mig)
	if fit, err = graph.CheckModel(ctx, view, v2, 3); err != nil || !fit.Fits() {
		t.Fatalf("v2 against the data as migrated: %+v %v", fit, err)
	}
	// The view lists the re-typed nodes under Concept, in ID order and in
	// pages, and no longer under Topic.
	var listed []graph.ID
	for p := (graph.Page{Limit: 5}); ; {
		page, err := view.NodesByType(ctx, "Concept", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Nodes {
			if n.Type != "Concept" || n.Properties["description"] != "was a topic" {
				t.Errorf("NodesByType(Concept) in the view: %+v", n)
			}
			listed = append(listed, n.ID)
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	if len(listed) != topics || !slices.IsSorted(listed) {
		t.Errorf("NodesByType(Concept) in the view: %v, want the %d topics in ID order", listed, topics)
	}
	if page, err := view.NodesByType(ctx, "Topic", graph.Page{}); err != nil || len(page.Nodes) != 0 {
		t.Errorf("NodesByType(Topic) in the view: %+v %v, want none", page, err)
	}
	before, err := s.Node(ctx, "topic/t03")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	// A model that keeps Topic and lets cites reach topics only: the
	// re-typed nodes fit, the edges citing them no longer do.
	v3 := topicModel(t, []string{"Topic", "Concept"}, `"Topic"`)
	if s, err = bolt.Open(ctx, bolt.Config{Path: dir, Model: v3}); err != nil {
		t.Fatal(err)
	}
	if fit, err = graph.CheckModel(ctx, graph.Migrated(s, mig), v3, 3); err != nil || fit.RejectedNodes != 0 || fit.RejectedEdges != topics ||
		!strings.Contains(fit.First[0].Violations[0].Message, "cites may not join a Note to a Concept") {
		t.Fatalf("v3 against the data as migrated: %+v %v", fit, err)
	}
	seq := lastSeq(t, s)
	if _, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{}); !errors.Is(err, graph.ErrInvalid) ||
		!strings.Contains(err.Error(), "its edge cites(note/n,topic/t00) would join Note to Concept; cites edges join Note to Topic") {
		t.Fatalf("a re-type that breaks edges: %v", err)
	}
	if lastSeq(t, s) != seq {
		t.Fatal("a refused re-type wrote")
	}
	s.Close()

	if s, err = bolt.Open(ctx, bolt.Config{Path: dir, Model: v2}); err != nil {
		t.Fatal(err)
	}
	rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{BatchSize: 5})
	if err != nil || rep.Changed != topics || rep.Batches != 3 {
		t.Fatalf("the migration: %+v %v", rep, err)
	}
	if fit, err = graph.CheckModel(ctx, s, v2, 3); err != nil || !fit.Fits() {
		t.Fatalf("v2 against the migrated data: %+v %v", fit, err)
	}
	n, err := s.Node(ctx, "topic/t03")
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "Concept" || !n.CreatedAt.Equal(before.CreatedAt) || n.Revision != before.Revision+1 || n.Properties["name"] != "graph 3" {
		t.Errorf("topic/t03 re-typed: %+v, before %+v", n, before)
	}
	e, err := s.Edge(ctx, graph.EdgeKey{From: "note/n", Label: "cites", To: "topic/t03"})
	if err != nil || e.Revision != 1 || e.Properties["page"] != json.Number("4") {
		t.Errorf("the edge to topic/t03: %+v %v", e, err)
	}
	if ids, err := s.Lookup(ctx, graph.IndexQuery{Type: "Concept", Property: "name", Eq: "graph 3"}); err != nil || !slices.Equal(ids.IDs, []graph.ID{"topic/t03"}) {
		t.Errorf("Lookup(Concept.name) after the migration: %+v %v", ids, err)
	}
	r, err := s.Check(ctx)
	if err != nil || len(r.Problems) > 0 {
		t.Errorf("Check after the migration: %+v %v", r, err)
	}
	again, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{})
	if err != nil || again.Changed != 0 {
		t.Errorf("the migration run again: %+v %v", again, err)
	}
	// No topic is left: a model without the type fits.
	s.Close()
	v4 := topicModel(t, []string{"Concept"}, `"Concept"`)
	if s, err = bolt.Open(ctx, bolt.Config{Path: dir, Model: v4}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if fit, err = graph.CheckModel(ctx, s, v4, 3); err != nil || !fit.Fits() {
		t.Fatalf("a model without Topic against the migrated data: %+v %v", fit, err)
	}
}
