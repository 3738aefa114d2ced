package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	"github.com/lore-dev/lore/schema"
)

// exampleStore is a closed store in a temporary directory holding the
// example dataset, opened with the default model.
func exampleStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(t.Context(), Config{Path: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// defaultWith returns the default model changed by edit (on the decoded document).
func defaultWith(t *testing.T, edit func(defs map[string]any)) *schema.Model {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(schema.DefaultJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["$defs"].(map[string]any))
	data, _ := json.Marshal(doc)
	m, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func serviceNamed(t *testing.T, s *Store, name string) []string {
	t.Helper()
	q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"type":"Service","where":{"name":"`+name+`"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := graph.Run(t.Context(), s, q, graph.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range res.Nodes {
		ids = append(ids, n["id"].(string))
	}
	return ids
}

func storedModel(t *testing.T, dir string) []byte {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: dir, NoSync: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Model().JSON()
}

// A model that indexes another property: Open builds the new index (with
// progress), so a query on it answers as before; a read-only open refuses
// it, saying how to adopt it, and keeps the stored model.
func TestModelChangeRebuildsIndexes(t *testing.T) {
	dir := exampleStore(t)
	indexName := defaultWith(t, func(defs map[string]any) {
		meta := defs["Service"].(map[string]any)["x-lore-node"].(map[string]any)
		meta["indexed"] = append(meta["indexed"].([]any), "name")
	})

	_, err := Open(t.Context(), Config{Path: dir, NoSync: true, ReadOnly: true, Model: indexName})
	if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "Service indexed: adds name") || !strings.Contains(err.Error(), "lore check --repair --model FILE") {
		t.Fatalf("read-only open with a model that changes the indexes = %v", err)
	}
	if !bytes.Equal(storedModel(t, dir), schema.DefaultJSON()) {
		t.Fatal("a refused read-only open saved its model")
	}

	var progress []RebuildProgress
	s, err := Open(t.Context(), Config{Path: dir, NoSync: true, Model: indexName, Progress: func(p RebuildProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if got := serviceNamed(t, s, "billing"); len(got) != 1 || got[0] != "service/billing" {
		t.Errorf("where name = billing under the new model: %v", got)
	}
	if len(progress) < 2 || !progress[len(progress)-1].Writing || progress[0].Reason != "the model changed what is indexed" || progress[len(progress)-1].Total != 383 {
		t.Errorf("progress: %+v", progress)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	s.Close()
	if !bytes.Equal(storedModel(t, dir), indexName.JSON()) {
		t.Error("the adopted model was not saved")
	}
}

// A read-only open uses a model that changes no index for that process
// only; a writer's open saves it.
func TestReadOnlyNeverSavesAModel(t *testing.T) {
	dir := exampleStore(t)
	retitled := defaultWith(t, func(defs map[string]any) { defs["Service"].(map[string]any)["title"] = "A service" })
	s, err := Open(t.Context(), Config{Path: dir, NoSync: true, ReadOnly: true, Model: retitled})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(s.Model().JSON(), retitled.JSON()) {
		t.Error("the read-only store does not use the model it was given")
	}
	if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/x", Type: "Topic", Properties: graph.Props{"name": "x"}}}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a write to a read-only store: %v", err)
	}
	s.Close()
	if !bytes.Equal(storedModel(t, dir), schema.DefaultJSON()) {
		t.Error("a read-only open saved its model")
	}
}

// A read-only open of a path with no store fails, creating nothing; a URL
// is refused whether reading or writing.
func TestOpenNoStoreAndURLs(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	_, err := Open(t.Context(), Config{Path: missing, ReadOnly: true})
	if !errors.Is(err, graph.ErrNoStore) || err.Error() != "no store at "+missing {
		t.Errorf("read-only open of a missing store = %v", err)
	}
	if _, serr := os.Stat(missing); !os.IsNotExist(serr) {
		t.Errorf("the read-only open created %s", missing)
	}
	for _, ro := range []bool{false, true} {
		cwd := t.TempDir()
		t.Chdir(cwd)
		_, err := Open(t.Context(), Config{Path: "postgres://lore@localhost/lore", ReadOnly: ro})
		if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "postgres stores are not supported (PostgreSQL support is planned") {
			t.Errorf("open of a URL (read-only %v) = %v", ro, err)
		}
		if left, _ := os.ReadDir(cwd); len(left) != 0 {
			t.Errorf("opening a URL created %s", left[0].Name())
		}
	}
}

// An all-or-nothing load whose process dies is undone by the next Open.
func TestInterruptedLoadIsUndoneAtOpen(t *testing.T) {
	for _, fast := range []bool{true, false} {
		dir := t.TempDir()
		s := openTest(t, dir, Config{})
		if _, ok, err := s.BeginLoad(fast); err != nil || !ok {
			t.Fatalf("an empty store did not start a load: %v", err)
		}
		// Another writer waits for the load: undoing it would undo the write.
		if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/other", Type: "Topic", Properties: graph.Props{"name": "o"}}}}); !errors.Is(err, graph.ErrConflict) {
			t.Fatalf("a write during a load: %v", err)
		}
		s.loading = false // Apply stands in for the load's own commits (applyPipelined)
		for i := range 3 {
			apply(t, s, &graph.Batch{Op: "import", Nodes: []graph.NodeInput{{ID: graph.ID("topic/t" + string(rune('a'+i))), Type: "Topic", Properties: graph.Props{"name": "t"}}}})
		}
		s.deferred = nil // what a dead process leaves: entries never written
		s.Close()
		s = openTest(t, dir, Config{})
		st, _ := s.Stats(t.Context())
		if st.Nodes != 0 || st.Quads != 0 || st.LastSeq != 3 {
			t.Errorf("fast=%v: after the interrupted load: %+v", fast, st)
		}
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("check: %v %v", err, r.Problems)
		}
		// The store loads again, and its log goes on from 4.
		if _, err := graph.Import(t.Context(), s, strings.NewReader(`{"kind":"node","id":"topic/z","type":"Topic","properties":{"name":"z"}}`), graph.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		if ch, err := s.Since(t.Context(), 0, 10); err != nil || len(ch) != 1 || ch[0].Seq != 4 {
			t.Errorf("change log: %v %v", ch, err)
		}
	}
}

// While an all-or-nothing load is under way, only its own stream writes
// (graph.WithinLoad): another stream, or Apply, is refused with
// ErrConflict and writes nothing, as undoing the load would undo it too.
func TestLoadRefusesOtherWriters(t *testing.T) {
	for _, fast := range []bool{true, false} {
		s := openTest(t, t.TempDir(), Config{})
		done, ok, err := s.BeginLoad(fast)
		if err != nil || !ok {
			t.Fatalf("an empty store did not start a load: %v", err)
		}
		stream := func(ctx context.Context, b *graph.Batch) error {
			ch := make(chan *graph.StreamBatch, 1)
			ch <- &graph.StreamBatch{Batch: b, Last: true}
			close(ch)
			var got error
			s.ApplyStream(ctx, ch, func(_ *graph.StreamBatch, _ *graph.Result, err error) bool {
				got = err
				return err == nil
			})
			return got
		}
		other := &graph.Batch{Op: "import", Nodes: []graph.NodeInput{svc("service/other")}}
		if err := stream(t.Context(), other); !errors.Is(err, graph.ErrConflict) {
			t.Errorf("fast=%v: another stream during the load: %v, want a conflict", fast, err)
		}
		if _, err := s.Apply(t.Context(), other); !errors.Is(err, graph.ErrConflict) {
			t.Errorf("fast=%v: Apply during the load: %v, want a conflict", fast, err)
		}
		own := &graph.Batch{Op: "import", Nodes: []graph.NodeInput{svc("service/own")}}
		if err := stream(graph.WithinLoad(t.Context()), own); err != nil {
			t.Fatalf("fast=%v: the load's stream: %v", fast, err)
		}
		if err := done(true); err != nil {
			t.Fatal(err)
		}
		for id, want := range map[graph.ID]bool{"service/own": true, "service/other": false} {
			n, err := s.Node(t.Context(), id)
			if want && (err != nil || n == nil) || !want && !errors.Is(err, graph.ErrNotFound) {
				t.Errorf("fast=%v: node %s: %v %v, want it there: %v", fast, id, n, err, want)
			}
		}
	}
}
