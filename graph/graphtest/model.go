package graphtest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// derivedModel returns the default model with edit applied to its
// document (decoded as JSON).
func derivedModel(t *testing.T, edit func(defs map[string]any)) *schema.Model {
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

// testUseModel: a ModelSwitcher puts a model in use while it serves,
// unless the log went on after the change the caller checked the data at
// (ErrConflict); then the
// change is one change-log entry (OpModel) that wakes Changed, the next
// write is validated with the new model, the data already stored is
// indexed as the new model says, and a reopened store keeps it. Putting
// the same model in use again writes nothing; a model that lacks a type
// the store holds is ErrInvalid and changes nothing.
func testUseModel(t *testing.T, b Backend) {
	s := b.Open(t)
	sw, ok := s.(graph.ModelSwitcher)
	if !ok {
		return // opening with a model is the way to change it (cmd/lore)
	}
	ctx := t.Context()
	v2 := derivedModel(t, func(defs map[string]any) {
		topic := defs["Topic"].(map[string]any)
		topic["x-lore-node"].(map[string]any)["indexed"] = []string{"name"}
		topic["properties"].(map[string]any)["name"].(map[string]any)["maxLength"] = 20
	})
	first := apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/graphs", "graphs")}})
	woke := s.Changed()
	if _, err := sw.UseModel(ctx, v2, first.Seq-1); !errors.Is(err, graph.ErrConflict) {
		t.Fatalf("UseModel with data checked before the last write: %v, want ErrConflict", err)
	}
	if got := s.Model().Version(); got == v2.Version() {
		t.Fatal("a model refused for a stale check is in use")
	}
	seq, err := sw.UseModel(ctx, v2, first.Seq)
	if err != nil || seq != first.Seq+1 {
		t.Fatalf("UseModel: seq %d, %v; want %d", seq, err, first.Seq+1)
	}
	select {
	case <-woke:
	default:
		t.Fatal("UseModel returned before Changed woke")
	}
	if got := s.Model().Version(); got != v2.Version() {
		t.Fatalf("Model() is %s after UseModel, want %s", got, v2.Version())
	}
	chs := since(t, s, first.Seq, 10)
	if len(chs) != 1 || chs[0].Seq != seq || !chs[0].ModelChanged() {
		t.Fatalf("the log after UseModel: %+v", chs)
	}
	if st, err := s.Stats(ctx); err != nil || st.LastSeq != seq {
		t.Fatalf("Stats after UseModel: %+v %v", st, err)
	}
	p, err := s.Lookup(ctx, graph.IndexQuery{Type: "Topic", Property: "name", Eq: "graphs"})
	if err != nil || len(p.IDs) != 1 || p.IDs[0] != "topic/graphs" {
		t.Fatalf("lookup by the new model's index of a node stored before: %+v %v", p, err)
	}
	_, err = s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/long", strings.Repeat("x", 21))}})
	if !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("a write the new model rejects: %v", err)
	}
	if again, err := sw.UseModel(ctx, v2, seq); err != nil || again != 0 {
		t.Fatalf("UseModel of the model in use: seq %d, %v", again, err)
	}
	lacking := derivedModel(t, func(defs map[string]any) {
		delete(defs, "Topic")
		for _, d := range defs { // and from the edges' ends
			if e, ok := d.(map[string]any)["x-lore-edge"].(map[string]any); ok {
				for _, end := range []string{"from", "to"} {
					if names, ok := e[end].([]any); ok {
						e[end] = slices.DeleteFunc(names, func(n any) bool { return n == "Topic" })
					}
				}
			}
		}
	})
	if _, err := sw.UseModel(ctx, lacking, seq); !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("UseModel of a model without a type the store holds: %v", err)
	}
	if got := s.Model().Version(); got != v2.Version() {
		t.Fatalf("a refused model is in use: %s", got)
	}
	if st, err := s.Stats(ctx); err != nil || st.LastSeq != seq {
		t.Fatalf("a refused model wrote to the log: %+v %v", st, err)
	}
	s = b.Reopen(t, s)
	if got := s.Model().Version(); got != v2.Version() {
		t.Fatalf("the reopened store uses %s, want %s", got, v2.Version())
	}
	if st, err := s.Stats(ctx); err != nil || st.LastSeq != seq {
		t.Fatalf("reopening wrote to the log: %+v %v", st, err)
	}
}
