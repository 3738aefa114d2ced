package graph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

func rev(n int64) *int64 { return &n }

func ek(from, label, to string) graph.EdgeKey {
	return graph.EdgeKey{From: graph.ID(from), Label: label, To: graph.ID(to)}
}

// seed writes a small graph: a person, a team, a service and a membership.
func seed(t *testing.T, s graph.Store) {
	t.Helper()
	mustApply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada", "email": "ada@example.com"}},
			{ID: "team/core", Type: "Team", Properties: graph.Props{"name": "Core"}},
			{ID: "service/billing", Type: "Service", Properties: graph.Props{"name": "billing", "tier": json.Number("1")}},
		},
		Edges: []graph.EdgeInput{{EdgeKey: ek("person/ada", "memberOf", "team/core"), Properties: graph.Props{"role": "lead"}}},
	})
}

func mustApply(t testing.TB, s graph.Store, b *graph.Batch) *graph.Result {
	t.Helper()
	res, err := s.Apply(t.Context(), b)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

// snapshot is everything observable about a store, for "nothing changed" checks.
type snapshot struct {
	Stats   *graph.Stats
	Changes []graph.Change
	Export  string
}

func snap(t testing.TB, s graph.Store) snapshot {
	t.Helper()
	ctx := t.Context()
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ch, err := s.Since(ctx, 0, graph.MaxPageSize)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if _, err := graph.Export(ctx, s, &b, graph.NDJSON); err != nil {
		t.Fatal(err)
	}
	return snapshot{st, ch, b.String()}
}

func TestRejectedWritesChangeNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		batch graph.Batch
		// want: the element, the rule and the pointer of the problem reported
		elem, rule, ptr string
		cat             error
	}{
		{
			name:  "wrong property type",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "service/x", Type: "Service", Properties: graph.Props{"name": "x", "tier": "high"}}}},
			elem:  `node "service/x"`, rule: "type", ptr: "/nodes/0/properties/tier", cat: graph.ErrInvalid,
		},
		{
			name:  "missing required property",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "person/bob", Type: "Person", Properties: graph.Props{"email": "bob@example.com"}}}},
			elem:  `node "person/bob"`, rule: "required", ptr: "/nodes/0/properties/name", cat: graph.ErrInvalid,
		},
		{
			name:  "unknown node type",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "robot/r2", Type: "Robot", Properties: graph.Props{}}}},
			elem:  `node "robot/r2"`, rule: "unknown-type", ptr: "/nodes/0/type", cat: graph.ErrInvalid,
		},
		{
			name:  "unknown edge label",
			batch: graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: ek("person/ada", "likes", "team/core")}}},
			elem:  "edge likes(person/ada,team/core)", rule: "unknown-label", ptr: "/edges/0/label", cat: graph.ErrInvalid,
		},
		{
			name:  "wrong endpoint types",
			batch: graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: ek("service/billing", "memberOf", "team/core")}}},
			elem:  "edge memberOf(service/billing,team/core)", rule: "endpoint-type", ptr: "/edges/0", cat: graph.ErrInvalid,
		},
		{
			name:  "dangling edge",
			batch: graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: ek("person/ada", "memberOf", "team/ghost")}}},
			elem:  "edge memberOf(person/ada,team/ghost)", rule: "dangling", ptr: "/edges/0/to", cat: graph.ErrInvalid,
		},
		{
			name:  "invalid ID",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada lovelace", Type: "Person", Properties: graph.Props{"name": "A"}}}},
			elem:  `node "person/ada lovelace"`, rule: "id", ptr: "/nodes/0/id", cat: graph.ErrInvalid,
		},
		{
			name:  "type change",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Team", Properties: graph.Props{"name": "Ada"}}}},
			elem:  `node "person/ada"`, rule: "type-change", ptr: "/nodes/0/type", cat: graph.ErrInvalid,
		},
		{
			name:  "stale revision",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada L"}, ExpectedRevision: rev(7)}}},
			elem:  `node "person/ada"`, rule: "revision", ptr: "/nodes/0/expectedRevision", cat: graph.ErrConflict,
		},
		{
			name:  "delete missing node",
			batch: graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "person/nobody"}}},
			elem:  `node "person/nobody"`, rule: "not-found", ptr: "/deleteNodes/0/id", cat: graph.ErrNotFound,
		},
		{
			name:  "duplicate element",
			batch: graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}, {ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "b"}}}},
			elem:  `node "topic/a"`, rule: "duplicate", ptr: "/nodes/1", cat: graph.ErrInvalid,
		},
		{
			name:  "relation without key",
			batch: graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: ek("entity/a", "relation", "entity/b")}}},
			elem:  "edge relation(entity/a,entity/b)", rule: "key", ptr: "/edges/0/key", cat: graph.ErrInvalid,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := graphtest.New(t)
			seed(t, s)
			before := snap(t, s)
			_, err := s.Apply(t.Context(), &tt.batch)
			var be *graph.BatchError
			if !errors.As(err, &be) {
				t.Fatalf("Apply = %v, want a *BatchError", err)
			}
			if !errors.Is(err, tt.cat) {
				t.Errorf("error category: %v is not %v", err, tt.cat)
			}
			p := be.Problems[0]
			if p.Element != tt.elem || p.Rule != tt.rule || p.Pointer != tt.ptr {
				t.Errorf("problem = {element %q, rule %q, pointer %q}, want {%q, %q, %q}\nerror: %v", p.Element, p.Rule, p.Pointer, tt.elem, tt.rule, tt.ptr, err)
			}
			for _, part := range []string{tt.elem, tt.rule, tt.ptr} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("error text %q does not name %q", err, part)
				}
			}
			if diff := cmp.Diff(before, snap(t, s)); diff != "" {
				t.Errorf("a rejected batch changed the store (-before +after):\n%s", diff)
			}
		})
	}
}

func TestEveryViolationReported(t *testing.T) {
	s := graphtest.New(t)
	_, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "adr/1", Type: "Decision", Properties: graph.Props{"title": json.Number("5"), "status": "maybe", "date": "someday", "extra": true}},
		{ID: "service/x", Type: "Service", Properties: graph.Props{"name": "x", "tier": json.Number("1.5")}},
	}})
	var be *graph.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("Apply = %v", err)
	}
	var got []string
	for _, p := range be.Problems {
		got = append(got, p.Pointer+" "+p.Rule)
	}
	want := []string{
		"/nodes/0/properties/date format",
		"/nodes/0/properties/extra additionalProperties",
		"/nodes/0/properties/status enum",
		"/nodes/0/properties/title type",
		"/nodes/1/properties/tier type",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

func TestOneInvalidElementWritesNothing(t *testing.T) {
	s := graphtest.New(t)
	before := snap(t, s)
	var b graph.Batch
	for i := range 1000 {
		props := graph.Props{"name": fmt.Sprintf("topic %d", i)}
		if i == 500 {
			props["name"] = json.Number("500") // the one invalid element, in the middle
		}
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: props})
	}
	_, err := s.Apply(t.Context(), &b)
	var be *graph.BatchError
	if !errors.As(err, &be) || len(be.Problems) != 1 || be.Problems[0].Pointer != "/nodes/500/properties/name" {
		t.Fatalf("Apply = %v, want one problem at /nodes/500/properties/name", err)
	}
	if diff := cmp.Diff(before, snap(t, s)); diff != "" {
		t.Errorf("the batch wrote something (-before +after):\n%s", diff)
	}
	b.Nodes[500].Properties["name"] = "topic 500"
	res := mustApply(t, s, &b)
	if st := snap(t, s).Stats; st.Nodes != 1000 || res.Seq != 1 {
		t.Errorf("after fixing: %d nodes, seq %d; want 1000, 1", st.Nodes, res.Seq)
	}
}

func TestRevisions(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	ctx := t.Context()
	n, _ := s.Node(ctx, "person/ada")
	if n.Revision != 1 {
		t.Fatalf("revision = %d, want 1", n.Revision)
	}
	res := mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada Lovelace"}, ExpectedRevision: rev(1)}}})
	if r := res.Nodes[0]; r.Status != graph.Updated || r.Revision != 2 {
		t.Errorf("update = %+v, want updated at revision 2", r)
	}
	// The same write again changes nothing: no revision, no change-log entry.
	res = mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada Lovelace"}}}})
	if r := res.Nodes[0]; r.Status != graph.Unchanged || r.Revision != 2 || res.Seq != 0 {
		t.Errorf("unchanged write = %+v (seq %d), want unchanged at revision 2, no entry", r, res.Seq)
	}
	// A writer holding the old revision is refused.
	_, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada B"}, ExpectedRevision: rev(1)}}})
	if !errors.Is(err, graph.ErrConflict) || !strings.Contains(err.Error(), "expected revision 1, but it is at revision 2") {
		t.Errorf("stale write: %v", err)
	}
	// Revision 0 means "create only".
	_, err = s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "X"}, ExpectedRevision: rev(0)}}})
	if !errors.Is(err, graph.ErrConflict) {
		t.Errorf("create-only over an existing node: %v", err)
	}
	// Merge keeps other properties; null removes one.
	mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/ada", Type: "Person", Merge: true, Properties: graph.Props{"role": "CTO", "email": nil}}}})
	n, _ = s.Node(ctx, "person/ada")
	if diff := cmp.Diff(graph.Props{"name": "Ada Lovelace", "role": "CTO"}, n.Properties); diff != "" || n.Revision != 3 {
		t.Errorf("merged node (rev %d) (-want +got):\n%s", n.Revision, diff)
	}
	if !n.CreatedAt.Before(n.UpdatedAt) {
		t.Errorf("createdAt %v should precede updatedAt %v", n.CreatedAt, n.UpdatedAt)
	}
	// Edges have revisions too.
	e := ek("person/ada", "memberOf", "team/core")
	_, err = s.Apply(ctx, &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: e, ExpectedRevision: rev(2)}}})
	if !errors.Is(err, graph.ErrConflict) {
		t.Errorf("stale edge delete: %v", err)
	}
}

func TestBatchEdgesToNewNodesAndDeletedNodes(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	// An edge may join nodes the same batch creates.
	mustApply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/bob", Type: "Person", Properties: graph.Props{"name": "Bob"}}},
		Edges: []graph.EdgeInput{{EdgeKey: ek("person/bob", "memberOf", "team/core")}},
	})
	// An edge may not join a node the same batch deletes.
	_, err := s.Apply(t.Context(), &graph.Batch{
		DeleteNodes: []graph.NodeRef{{ID: "team/core"}},
		Edges:       []graph.EdgeInput{{EdgeKey: ek("person/ada", "leads", "team/core")}},
	})
	if err == nil || !strings.Contains(err.Error(), "the batch deletes that node") {
		t.Errorf("edge to a deleted node: %v", err)
	}
}

func TestDryRun(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	before := snap(t, s)
	res := mustApply(t, s, &graph.Batch{DryRun: true, Nodes: []graph.NodeInput{{ID: "topic/x", Type: "Topic", Properties: graph.Props{"name": "x"}}}})
	if res.Nodes[0].Status != graph.Created {
		t.Errorf("dry run = %+v", res)
	}
	if diff := cmp.Diff(before, snap(t, s)); diff != "" {
		t.Errorf("a dry run wrote (-before +after):\n%s", diff)
	}
}

// TestStatsDuringWrites reads Stats while batches commit: under the race
// detector this catches the change-log end moving outside the lock.
func TestStatsDuringWrites(t *testing.T) {
	s := graphtest.New(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 50 {
			if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: graph.Props{"name": "t"}}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var last uint64
	for {
		select {
		case <-done:
			st, _ := s.Stats(t.Context())
			if st.LastSeq != 50 {
				t.Errorf("lastSeq %d after 50 batches", st.LastSeq)
			}
			return
		default:
		}
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.LastSeq < last {
			t.Fatalf("lastSeq went back from %d to %d", last, st.LastSeq)
		}
		last = st.LastSeq
	}
}

// TestBadNodeEdgesNotReportedAgain checks that a batch's node that is
// refused has its own problem reported, and not one more for each edge
// of the batch that joins it.
func TestBadNodeEdgesNotReportedAgain(t *testing.T) {
	s := graphtest.New(t)
	_, err := s.Apply(t.Context(), &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "service/bad", Type: "Service", Properties: graph.Props{"name": json.Number("1")}},
			{ID: "service/ok", Type: "Service", Properties: graph.Props{"name": "ok"}},
			{ID: "service/unknown", Type: "Nope", Properties: graph.Props{}},
		},
		Edges: []graph.EdgeInput{
			{EdgeKey: ek("service/ok", "dependsOn", "service/bad")},
			{EdgeKey: ek("service/bad", "dependsOn", "service/ok")},
			{EdgeKey: ek("service/ok", "dependsOn", "service/unknown")},
			{EdgeKey: ek("service/ok", "dependsOn", "service/missing")},
		},
	})
	var be *graph.BatchError
	if !errors.As(err, &be) {
		t.Fatalf("Apply = %v, want a *BatchError", err)
	}
	var got []string
	for _, p := range be.Problems {
		got = append(got, p.Pointer+" "+p.Rule)
	}
	want := []string{
		"/nodes/2/type unknown-type",
		"/nodes/0/properties/name type",
		"/edges/3/to dangling",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
}

// A write's result names each element it wrote, edges by their IDs (an
// import, which only counts them, leaves edge IDs out of its batches'
// results); the same edge written again is unchanged, and named too.
func TestWriteResultNamesElements(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	b := &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/bo", Type: "Person", Properties: graph.Props{"name": "Bo"}}},
		Edges: []graph.EdgeInput{
			{EdgeKey: ek("person/bo", "memberOf", "team/core")},
			{EdgeKey: ek("person/ada", "memberOf", "team/core"), Properties: graph.Props{"role": "lead"}},
		},
	}
	res := mustApply(t, s, b)
	got := []graph.ElementResult{res.Nodes[0], res.Edges[0], res.Edges[1]}
	want := []graph.ElementResult{
		{ID: "person/bo", Status: graph.Created, Revision: 1},
		{ID: "memberOf(person/bo,team/core)", Status: graph.Created, Revision: 1},
		{ID: "memberOf(person/ada,team/core)", Status: graph.Unchanged, Revision: 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("the write's result (-want +got):\n%s", d)
	}
}
