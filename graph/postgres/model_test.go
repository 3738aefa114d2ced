package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// Two versions of a model: v2 requires Topic's area, indexes it, and adds
// a type.
const (
	modelV1 = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "Topic": {"x-lore-node": {"display": "name", "indexed": ["name"], "search": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}, "area": {"type": "string"}}}}}`
	modelV2 = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "Topic": {"x-lore-node": {"display": "name", "indexed": ["name", "area"], "search": ["name"]}, "type": "object", "required": ["area"], "properties": {"name": {"type": "string"}, "area": {"type": "string"}}},
	  "Area": {"x-lore-node": {"display": "name"}, "type": "object", "properties": {"name": {"type": "string"}}}}}`
)

func loadModel(t *testing.T, doc string) *schema.Model {
	t.Helper()
	m, err := schema.Load([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestModelChangeReachesReplicas: two Stores on one database, as two
// replicas, use v1; a third process puts v2 in use. The change is an entry
// of the change log (graph.OpModel), in order after the writes before it.
// Replica B's next write is validated and indexed with v2 at once (before
// its listener could have noticed): a Topic without area is rejected, and
// one with it is found by its area. Replica A, which does not write, takes
// v2 before Changed announces the entry.
func TestModelChangeReachesReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	v1, v2 := loadModel(t, modelV1), loadModel(t, modelV2)
	openWith := func(m *schema.Model, poll time.Duration) *postgres.Store {
		s, err := postgres.Open(ctx, postgres.Config{URL: url, Model: m, PollMin: poll, PollMax: poll})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := openWith(v1, 0)
	// B's listener polls once an hour and hears no NOTIFY it could miss:
	// only its write path can learn of the change in time.
	b := openWith(nil, time.Hour)
	if _, err := a.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/old", Type: "Topic", Properties: graph.Props{"name": "old", "area": "x"}}}}); err != nil {
		t.Fatal(err)
	}
	woke := a.Changed()
	c := openWith(v2, 0) // lore model apply does this
	if got := c.Model().Version(); got != v2.Version() {
		t.Fatalf("the store that put v2 in use uses %s", got)
	}

	_, err := b.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/no-area", Type: "Topic", Properties: graph.Props{"name": "n"}}}})
	if !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("B wrote a Topic without area after v2 was put in use (validated with v1): %v", err)
	}
	res, err := b.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "topic/new", Type: "Topic", Properties: graph.Props{"name": "new", "area": "graphs"}},
		{ID: "area/graphs", Type: "Area", Properties: graph.Props{"name": "graphs"}}}})
	if err != nil {
		t.Fatalf("B's write of v2's elements: %v", err)
	}
	if got := b.Model().Version(); got != v2.Version() {
		t.Fatalf("B uses model %s after its write, want v2 %s", got, v2.Version())
	}
	p, err := b.Lookup(ctx, graph.IndexQuery{Type: "Topic", Property: "area", Eq: "graphs"})
	if err != nil || len(p.IDs) != 1 || p.IDs[0] != "topic/new" {
		t.Fatalf("lookup by v2's new index after B's write: %+v %v", p, err)
	}

	chs, err := b.Since(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 3 || chs[0].ModelChanged() || !chs[1].ModelChanged() || chs[1].Seq != 2 || chs[2].Seq != res.Seq || chs[2].ModelChanged() {
		t.Fatalf("change log: %+v; want the write, the model change (seq 2), then B's write", chs)
	}

	select {
	case <-woke:
	case <-time.After(10 * time.Second):
		t.Fatal("A's Changed did not wake for the model change")
	}
	// Woken, A has taken the model before the entry was announced.
	if got := a.Model().Version(); got != v2.Version() {
		t.Fatalf("A was woken with model %s, want v2 %s", got, v2.Version())
	}
	if _, err := a.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}}); !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("A wrote a Topic without area under v2: %v", err)
	}

	// A store opened later without a model uses v2, and a reopen with v2
	// changes nothing (no entry).
	d := openWith(v2, 0)
	if st, err := d.Stats(ctx); err != nil || st.LastSeq != res.Seq {
		t.Fatalf("reopening with the model in use wrote to the log: %+v %v", st, err)
	}
	if got := openWith(nil, 0).Model().Version(); got != v2.Version() {
		t.Fatalf("a new Store uses %s, want v2", got)
	}
}
