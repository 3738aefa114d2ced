package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// TestReplicasStartTogether: several Stores opened at once on a new
// database migrate it once (the advisory lock orders them), and agree on
// the cursor key and the model.
func TestReplicasStartTogether(t *testing.T) {
	url := pgtest.NewDatabase(t)
	const n = 6
	stores := make([]*postgres.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = postgres.Open(t.Context(), postgres.Config{URL: url}) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	// Each migration once: three (the schema, the search postings by weight, the degree index).
	var versions, distinct int
	if err := stores[0].Pool().QueryRow(t.Context(), `SELECT count(*), count(DISTINCT version) FROM lore_schema_migrations`).Scan(&versions, &distinct); err != nil || versions != 3 || distinct != 3 {
		t.Fatalf("%d migrations recorded, %d distinct (%v), want 3", versions, distinct, err)
	}
	for i, s := range stores {
		if string(s.CursorKey()) != string(stores[0].CursorKey()) || len(s.CursorKey()) != 32 {
			t.Errorf("replica %d has another cursor key", i)
		}
		if string(s.Model().JSON()) != string(schema.DefaultJSON()) {
			t.Errorf("replica %d has another model", i)
		}
	}
}

// TestModelChangeRebuildsIndexes: opening the store with a model that
// indexes another property rebuilds the property index, and the new
// model is kept for the next Open without one.
func TestModelChangeRebuildsIndexes(t *testing.T) {
	url := pgtest.NewDatabase(t)
	m1, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "A": {"x-lore-node": {"display": "name", "indexed": ["name"], "search": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "A": {"x-lore-node": {"display": "name", "indexed": ["n"], "search": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url, Model: m1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "a/1", Type: "A", Properties: graph.Props{"name": "one", "n": 1}}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, url) // the stored model, m1
	if _, err := s.Lookup(t.Context(), graph.IndexQuery{Type: "A", Property: "n", Eq: 1}); !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("lookup of an unindexed property: %v", err)
	}
	s.Close()
	s2, err := postgres.Open(t.Context(), postgres.Config{URL: url, Model: m2})
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s = open(t, url) // now m2
	p, err := s.Lookup(t.Context(), graph.IndexQuery{Type: "A", Property: "n", Eq: 1})
	if err != nil || len(p.IDs) != 1 || p.IDs[0] != "a/1" {
		t.Fatalf("lookup after the model change: %+v %v", p, err)
	}
}

// TestDeadlineCancelsReads: a read whose ctx is done fails with the
// ctx's error, and the store goes on serving.
func TestDeadlineCancelsReads(t *testing.T) {
	s := open(t, pgtest.NewDatabase(t))
	ctx, cancel := context.WithTimeout(t.Context(), time.Nanosecond)
	defer cancel()
	<-ctx.Done()
	if _, err := s.ScanNodes(ctx, graph.Page{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ScanNodes past its deadline: %v", err)
	}
	if _, err := s.Stats(t.Context()); err != nil {
		t.Error(err)
	}
}

// TestStatementTimeout: Config.StatementTimeout is the ceiling of every
// statement of the store's connections.
func TestStatementTimeout(t *testing.T) {
	s, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.NewDatabase(t), StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Pool().Exec(t.Context(), `SELECT pg_sleep(5)`)
	if err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Errorf("a 5 s statement under a 200 ms ceiling: %v", err)
	}
}

// TestCheckAndRepair: Check finds derived rows that disagree with the
// records, and Repair rebuilds them.
func TestCheckAndRepair(t *testing.T) {
	s := open(t, pgtest.NewDatabase(t))
	ctx := t.Context()
	if _, err := s.Apply(ctx, &graph.Batch{
		Nodes: []graph.NodeInput{topic("topic/a", "alpha beta"), {ID: "service/b", Type: "Service", Properties: graph.Props{"name": "beta"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/b"}}},
	}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Check(ctx)
	if err != nil || !r.OK() || r.Nodes != 2 || r.Edges != 1 || r.Changes != 1 {
		t.Fatalf("check of a sound store: %+v %v", r, err)
	}
	for _, q := range []string{
		`UPDATE lore_degrees SET n = 5 WHERE node_id = 'service/b' AND inbound`,
		`DELETE FROM lore_postings WHERE token = 'alpha'::bytea`,
		`UPDATE lore_counts SET n = 9 WHERE kind = 'node'`,
		`UPDATE lore_degrees SET type = 'Topic' WHERE node_id = 'service/b' AND NOT inbound`,
	} {
		if _, err := s.Pool().Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	r, err = s.Check(ctx)
	if err != nil || len(r.Problems) != 5 { // two counters, a summary, a posting, a degree index row
		t.Fatalf("check of a damaged store: %v %v", r.Problems, err)
	}
	r, err = s.Repair(ctx)
	if err != nil || !r.OK() {
		t.Fatalf("repair: %v %v", r.Problems, err)
	}
	if p, err := s.Postings(ctx, graph.PostingQuery{Prefix: "alpha"}); err != nil || len(p.Postings) != 1 {
		t.Errorf("postings after repair: %+v %v", p, err)
	}
}

func TestRedact(t *testing.T) {
	for _, u := range []string{"postgres://lore:s3cret@db.example:5432/lore?sslmode=require", "postgresql://lore:s3cret@db/lore"} {
		if r := postgres.Redact(u); strings.Contains(r, "s3cret") || !strings.Contains(r, "lore:***@") {
			t.Errorf("Redact(%q) = %q", u, r)
		}
	}
	if _, err := postgres.Open(t.Context(), postgres.Config{URL: "postgres://lore:s3cret@127.0.0.1:1/none?connect_timeout=1"}); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error of an open that fails shows the password: %v", err)
	}
}

// TestReadOnly: a reader of a database without Lore's schema fails with
// ErrNoStore and creates nothing; on a store, it reads and refuses writes.
func TestReadOnly(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, err := postgres.Open(t.Context(), postgres.Config{URL: url, ReadOnly: true})
	if !errors.Is(err, graph.ErrNoStore) {
		t.Fatalf("read-only open of an empty database: %v", err)
	}
	w := open(t, url)
	if _, err := w.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a")}}); err != nil {
		t.Fatal(err)
	}
	r, err := postgres.Open(t.Context(), postgres.Config{URL: url, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Node(t.Context(), "topic/a"); err != nil {
		t.Error(err)
	}
	if _, err := r.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a write through a reader: %v", err)
	}
	if string(r.CursorKey()) != string(w.CursorKey()) {
		t.Error("the reader has another cursor key")
	}
}

// A database of schema version 1 had no degree index: a writer's open
// builds it from the summaries and the nodes' types.
func TestUpgradeBuildsDegreeIndex(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(t.Context(), &graph.Batch{
		Nodes: []graph.NodeInput{topic("topic/a", "a"), {ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}}, {ID: "service/c", Type: "Service", Properties: graph.Props{"name": "c"}}},
		Edges: []graph.EdgeInput{
			{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/c"}},
			{EdgeKey: graph.EdgeKey{From: "service/c", Label: "dependsOn", To: "service/b"}},
			{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/b"}},
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(t.Context(), `DROP INDEX lore_degrees_rank; ALTER TABLE lore_degrees DROP COLUMN type; DELETE FROM lore_schema_migrations WHERE version = 3`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, url)
	graphtest.CheckDegreeIndex(t, s)
	graphtest.CheckOK(t, s)
}
