package graphtest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// A Backend is a Store implementation under test.
type Backend struct {
	// Open returns a new, empty store with the default model, closed when
	// the test ends.
	Open func(t *testing.T) graph.Store
	// Reopen closes s, a store Open returned, and opens the same store
	// again (as a new process would), closed when the test ends.
	Reopen func(t *testing.T, s graph.Store) graph.Store
}

// Run checks that a backend keeps the Store contract (graph/store.go): every
// behaviour the query engine, import, subscriptions and the surfaces rely
// on. Each subtest opens its own store. Listings are checked against an
// in-memory model of what the test wrote, through random batches, so a
// backend that orders, pages, counts or indexes differently fails.
func Run(t *testing.T, b Backend) {
	for _, tc := range []struct {
		name string
		f    func(*testing.T, Backend)
	}{
		{"ApplyAndRead", testApplyAndRead},
		{"RejectedBatchChangesNothing", testRejected},
		{"ExpectedRevisions", testExpectedRevisions},
		{"Idempotency", testIdempotency},
		{"DryRun", testDryRun},
		{"CascadeDelete", testCascade},
		{"Retype", testRetype},
		{"RetypeHub", testRetypeHub},
		{"RandomBatchesAgainstModel", testRandomBatches},
		{"PagesSeeLaterWrites", testPagesSeeLaterWrites},
		{"Since", testSince},
		{"Changed", testChanged},
		{"ConcurrentWriters", testConcurrentWriters},
		{"Reopen", testReopen},
		{"UseModel", testUseModel},
		{"Close", testClose},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, b) })
	}
}

func apply(t *testing.T, s graph.Store, b *graph.Batch) *graph.Result {
	t.Helper()
	res, err := s.Apply(t.Context(), b)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func rev(n int64) *int64 { return &n }

func topic(id, name string) graph.NodeInput {
	return graph.NodeInput{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": name}}
}

// jsonEq reports whether two property sets are the same JSON.
func jsonEq(a, b graph.Props) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func testApplyAndRead(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	res := apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{topic("topic/a", "alpha"), {ID: "service/s", Type: "Service", Properties: graph.Props{"name": "svc", "tier": 2}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/s", Label: "dependsOn", To: "service/s"}, Properties: graph.Props{"critical": true}}},
	})
	if res.Seq != 1 || len(res.Nodes) != 2 || res.Nodes[0] != (graph.ElementResult{ID: "topic/a", Status: graph.Created, Revision: 1}) ||
		res.Nodes[1].Status != graph.Created || len(res.Edges) != 1 || res.Edges[0].Status != graph.Created || res.Edges[0].Revision != 1 {
		t.Fatalf("first batch: %+v", res)
	}
	n, err := s.Node(ctx, "topic/a")
	if err != nil || n.Type != "Topic" || n.Revision != 1 || !jsonEq(n.Properties, graph.Props{"name": "alpha"}) || n.CreatedAt.IsZero() || !n.UpdatedAt.Equal(n.CreatedAt) {
		t.Fatalf("Node(topic/a) = %+v, %v", n, err)
	}
	created := n.CreatedAt
	// An update adds a revision and keeps the creation time; the same
	// properties again change nothing and take no sequence number.
	res = apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "beta")}})
	if res.Seq != 2 || res.Nodes[0].Status != graph.Updated || res.Nodes[0].Revision != 2 {
		t.Fatalf("update: %+v", res)
	}
	res = apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "beta")}})
	if res.Seq != 0 || res.Nodes[0].Status != graph.Unchanged || res.Nodes[0].Revision != 2 {
		t.Fatalf("unchanged upsert: %+v", res)
	}
	n, _ = s.Node(ctx, "topic/a")
	if n.Revision != 2 || !n.CreatedAt.Equal(created) || n.UpdatedAt.Before(created) || !jsonEq(n.Properties, graph.Props{"name": "beta"}) {
		t.Errorf("after the update: %+v", n)
	}
	// Merge patches the properties; null removes one.
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/s", Type: "Service", Merge: true, Properties: graph.Props{"tier": nil, "language": "Go"}}}})
	if n, _ := s.Node(ctx, "service/s"); !jsonEq(n.Properties, graph.Props{"name": "svc", "language": "Go"}) || n.Revision != 2 {
		t.Errorf("after a merge: %+v", n)
	}
	// A self-loop counts once in each direction.
	n, _ = s.Node(ctx, "service/s")
	if want := []graph.EdgeCount{{Label: "dependsOn", Direction: graph.Out, Count: 1}, {Label: "dependsOn", Direction: graph.In, Count: 1}}; !slices.Equal(n.Edges, want) {
		t.Errorf("edge counts of a self-loop: %+v, want %+v", n.Edges, want)
	}
	e, err := s.Edge(ctx, graph.EdgeKey{From: "service/s", Label: "dependsOn", To: "service/s"})
	if err != nil || e.Revision != 1 || !jsonEq(e.Properties, graph.Props{"critical": true}) || e.ID != "dependsOn(service/s,service/s)" {
		t.Errorf("Edge = %+v, %v", e, err)
	}
	nodes, err := s.Nodes(ctx, []graph.ID{"service/s", "topic/none", "topic/a"})
	if err != nil || len(nodes) != 3 || nodes[0] == nil || nodes[0].ID != "service/s" || nodes[1] != nil || nodes[2] == nil || nodes[2].ID != "topic/a" {
		t.Errorf("Nodes = %+v, %v", nodes, err)
	}
	if _, err := s.Node(ctx, "topic/none"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("Node of a missing node: %v, want ErrNotFound", err)
	}
	if _, err := s.Node(ctx, "not an id"); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Node of a malformed ID: %v, want ErrInvalid", err)
	}
	if _, err := s.Edge(ctx, graph.EdgeKey{From: "topic/a", Label: "about", To: "topic/a"}); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("Edge of a missing edge: %v, want ErrNotFound", err)
	}
	if _, err := s.NodesByType(ctx, "NoSuchType", graph.Page{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("NodesByType of an unknown type: %v, want ErrInvalid", err)
	}
	if _, err := s.Edges(ctx, graph.EdgeQuery{Nodes: []graph.ID{"topic/a"}, Labels: []string{"noSuchLabel"}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Edges of an unknown label: %v, want ErrInvalid", err)
	}
	if _, err := s.Edges(ctx, graph.EdgeQuery{Nodes: []graph.ID{"topic/a"}, Page: graph.Page{After: "\x00not a cursor"}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Edges with a malformed cursor: %v, want ErrInvalid", err)
	}
	if _, err := s.Lookup(ctx, graph.IndexQuery{Type: "Topic", Property: "name", Eq: "x"}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Lookup of a property the model does not index: %v, want ErrInvalid", err)
	}
	if _, err := s.Lookup(ctx, graph.IndexQuery{Type: "Service", Property: "tier", Eq: []any{1}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Lookup of an array: %v, want ErrInvalid", err)
	}
	if _, err := s.Postings(ctx, graph.PostingQuery{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Postings of an empty prefix: %v, want ErrInvalid", err)
	}
	if s.Model() == nil {
		t.Error("Model() is nil")
	}
}

// state is everything a store's reads show, for comparisons.
type state struct {
	Stats   *graph.Stats
	Nodes   []*graph.Node
	Edges   []*graph.Edge
	Changes []graph.Change
}

func readState(t *testing.T, s graph.Store) state {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return state{Stats: st, Nodes: scanNodes(t, s, 7), Edges: scanEdges(t, s, 7), Changes: since(t, s, 0, 3)}
}

func sameState(t *testing.T, what string, a, b state) {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	if !bytes.Equal(x, y) {
		t.Errorf("%s: the store changed:\nbefore %s\nafter  %s", what, x, y)
	}
}

func testRejected(t *testing.T, b Backend) {
	s := b.Open(t)
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a"), {ID: "person/p", Type: "Person", Properties: graph.Props{"name": "p"}}}})
	before := readState(t, s)
	for _, tc := range []struct {
		name  string
		batch graph.Batch
		want  error
	}{
		{"empty", graph.Batch{}, graph.ErrInvalid},
		{"one bad property among good elements", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), {ID: "topic/c", Type: "Topic", Properties: graph.Props{"name": 5}}}}, graph.ErrInvalid},
		{"unknown type", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), {ID: "x/y", Type: "Nope"}}}, graph.ErrInvalid},
		{"type change", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), {ID: "topic/a", Type: "Team", Properties: graph.Props{"name": "a"}}}}, graph.ErrInvalid},
		{"dangling edge", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}, Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/p", Label: "memberOf", To: "team/none"}}}}, graph.ErrInvalid},
		{"edge to a node the batch deletes", graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "topic/a"}}, Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/p", Label: "memberOf", To: "topic/a"}}}}, graph.ErrInvalid},
		{"wrong endpoint types", graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "topic/a", Label: "memberOf", To: "person/p"}}}}, graph.ErrInvalid},
		{"keyed edge without a key", graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "topic/a", Label: "relation", To: "topic/a"}}}}, graph.ErrInvalid},
		{"duplicate element", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), topic("topic/b", "c")}}, graph.ErrInvalid},
		{"delete of a missing node", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}, DeleteNodes: []graph.NodeRef{{ID: "topic/none"}}}, graph.ErrNotFound},
		{"delete of a missing edge", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}, DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "person/p", Label: "memberOf", To: "team/t"}}}}, graph.ErrNotFound},
		{"stale revision", graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), {ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "x"}, ExpectedRevision: rev(7)}}}, graph.ErrConflict},
	} {
		_, err := s.Apply(t.Context(), &tc.batch)
		var be *graph.BatchError
		if !errors.Is(err, tc.want) || !errors.As(err, &be) || len(be.Problems) == 0 {
			t.Errorf("%s: %v, want a *BatchError wrapping %v", tc.name, err, tc.want)
		}
		sameState(t, tc.name, before, readState(t, s))
	}
	// A rejected batch takes no sequence number: the next commit has the next one.
	if res := apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}}); res.Seq != before.Stats.LastSeq+1 {
		t.Errorf("the commit after the rejected batches has seq %d, want %d", res.Seq, before.Stats.LastSeq+1)
	}
}

func testExpectedRevisions(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	conflict := func(what string, batch *graph.Batch) {
		t.Helper()
		if _, err := s.Apply(ctx, batch); !errors.Is(err, graph.ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", what, err)
		}
	}
	a := topic("topic/a", "a")
	a.ExpectedRevision = rev(1)
	conflict("expected revision 1 of a missing node", &graph.Batch{Nodes: []graph.NodeInput{a}})
	a.ExpectedRevision = rev(0)
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{a}}) // 0: must not exist
	conflict("expected 0 of an existing node", &graph.Batch{Nodes: []graph.NodeInput{a}})
	a = topic("topic/a", "a2")
	a.ExpectedRevision = rev(2)
	conflict("stale expected revision", &graph.Batch{Nodes: []graph.NodeInput{a}})
	a.ExpectedRevision = rev(1)
	if res := apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{a}}); res.Nodes[0].Revision != 2 {
		t.Errorf("update at the expected revision: %+v", res)
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}, {ID: "person/p", Type: "Person", Properties: graph.Props{"name": "p"}}}})
	k := graph.EdgeKey{From: "person/p", Label: "memberOf", To: "team/t"}
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: k, ExpectedRevision: rev(0)}}})
	conflict("edge: expected 0 of an existing edge", &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: k, Properties: graph.Props{"role": "x"}, ExpectedRevision: rev(0)}}})
	if res := apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: k, Properties: graph.Props{"role": "x"}, ExpectedRevision: rev(1)}}}); res.Edges[0].Revision != 2 || res.Edges[0].Status != graph.Updated {
		t.Errorf("edge update at the expected revision: %+v", res)
	}
	conflict("edge delete at a stale revision", &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: k, ExpectedRevision: rev(1)}}})
	conflict("node delete at a stale revision", &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "topic/a", ExpectedRevision: rev(1)}}})
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "topic/a", ExpectedRevision: rev(2)}}, DeleteEdges: []graph.EdgeRef{{EdgeKey: k, ExpectedRevision: rev(2)}}})
	if _, err := s.Node(ctx, "topic/a"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("deleted node: %v", err)
	}
	// A node created again starts at revision 1.
	if res := apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "again")}}); res.Nodes[0].Revision != 1 || res.Nodes[0].Status != graph.Created {
		t.Errorf("node created again: %+v", res)
	}
	// Revisions stop at MaxRevision.
	max := topic("topic/max", "m")
	max.Revision = graph.MaxRevision
	apply(t, s, &graph.Batch{Restore: true, Nodes: []graph.NodeInput{max}})
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/max", "changed")}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a change past MaxRevision: %v, want ErrInvalid", err)
	}
}

func testIdempotency(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	batch := func() *graph.Batch {
		return &graph.Batch{IdempotencyKey: "req-1", Nodes: []graph.NodeInput{topic("topic/a", "a")}}
	}
	first := apply(t, s, batch())
	before := readState(t, s)
	again := apply(t, s, batch())
	if !again.Replayed || again.Seq != first.Seq || !slices.Equal(again.Nodes, first.Nodes) {
		t.Errorf("retry: %+v, want a replay of %+v", again, first)
	}
	sameState(t, "a retried batch", before, readState(t, s))
	other := batch()
	other.Nodes[0].Properties["name"] = "different"
	if _, err := s.Apply(ctx, other); !errors.Is(err, graph.ErrConflict) {
		t.Errorf("the key reused for another batch: %v, want ErrConflict", err)
	}
	// A keyed batch that changes nothing still records its key.
	noop := &graph.Batch{IdempotencyKey: "req-2", Nodes: []graph.NodeInput{topic("topic/a", "a")}}
	if res := apply(t, s, noop); res.Seq != 0 || res.Replayed {
		t.Errorf("keyed batch that changes nothing: %+v", res)
	}
	noop.Nodes[0].Properties["name"] = "changed"
	if _, err := s.Apply(ctx, noop); !errors.Is(err, graph.ErrConflict) {
		t.Errorf("the key of a batch that changed nothing, reused: %v, want ErrConflict", err)
	}
	if _, err := s.Apply(ctx, &graph.Batch{IdempotencyKey: strings.Repeat("k", graph.MaxIdempotencyKey+1), Nodes: []graph.NodeInput{topic("topic/b", "b")}}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a key over MaxIdempotencyKey bytes: %v, want ErrInvalid", err)
	}
	// Keys outlive the process.
	s = b.Reopen(t, s)
	if res := apply(t, s, batch()); !res.Replayed || res.Seq != first.Seq {
		t.Errorf("retry after reopening: %+v", res)
	}
}

func testDryRun(t *testing.T, b Backend) {
	s := b.Open(t)
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a")}})
	before := readState(t, s)
	res := apply(t, s, &graph.Batch{DryRun: true, IdempotencyKey: "dry", Nodes: []graph.NodeInput{topic("topic/a", "changed"), topic("topic/b", "b")}})
	if res.Seq != 0 || res.Nodes[0].Status != graph.Updated || res.Nodes[0].Revision != 2 || res.Nodes[1].Status != graph.Created {
		t.Errorf("dry run result: %+v", res)
	}
	sameState(t, "a dry run", before, readState(t, s))
	if res := apply(t, s, &graph.Batch{IdempotencyKey: "dry", Nodes: []graph.NodeInput{topic("topic/c", "c")}}); res.Replayed {
		t.Error("a dry run recorded its idempotency key")
	}
}

func testCascade(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a"}}, {ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}},
			{ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}},
		Edges: []graph.EdgeInput{
			{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}},
			{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/a"}},
			{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/a"}},
			{EdgeKey: graph.EdgeKey{From: "team/t", Label: "owns", To: "service/a"}},
			{EdgeKey: graph.EdgeKey{From: "team/t", Label: "owns", To: "service/b"}},
		},
	})
	res := apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "service/a"}}})
	want := []string{"dependsOn(service/a,service/a)", "dependsOn(service/a,service/b)", "dependsOn(service/b,service/a)", "owns(team/t,service/a)"}
	got := slices.Sorted(slices.Values(res.DeletedEdges))
	if !slices.Equal(res.DeletedNodes, []graph.ID{"service/a"}) || !slices.Equal(got, want) {
		t.Errorf("cascade: deleted %v and %v, want service/a and %v", res.DeletedNodes, got, want)
	}
	changes := since(t, s, res.Seq-1, 10)
	if len(changes) != 1 || len(changes[0].Nodes) != 1 || changes[0].Nodes[0].Action != graph.Deleted || changes[0].Nodes[0].Type != "Service" || len(changes[0].Edges) != 4 {
		t.Errorf("the cascade's change-log entry: %+v", changes)
	}
	for _, c := range changes[0].Edges {
		if c.Action != graph.Deleted || c.Revision != 1 {
			t.Errorf("edge change %+v, want deleted at revision 1", c)
		}
	}
	if edges := scanEdges(t, s, 2); len(edges) != 1 || edges[0].ID != "owns(team/t,service/b)" {
		t.Errorf("edges left: %+v", edges)
	}
	for _, id := range []graph.ID{"service/b", "team/t"} {
		n, err := s.Node(ctx, id)
		if err != nil || len(n.Edges) != 1 || n.Edges[0].Count != 1 || n.Edges[0].Label != "owns" {
			t.Errorf("edge counts of %s after the cascade: %+v, %v", id, n, err)
		}
	}
	if st, _ := s.Stats(ctx); st.Nodes != 2 || st.Edges != 1 || st.EdgeLabels["dependsOn"] != 0 || st.NodeTypes["Service"] != 1 {
		t.Errorf("stats after the cascade: %+v", st)
	}
	CheckDegreeIndex(t, s)
}

func testPagesSeeLaterWrites(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b"), topic("topic/d", "d"), topic("topic/f", "f")}})
	p1, err := s.ScanNodes(ctx, graph.Page{Limit: 2})
	if err != nil || len(p1.Nodes) != 2 || p1.Next == "" {
		t.Fatalf("first page: %+v, %v", p1, err)
	}
	// Written between the pages: one node before the cursor, one after.
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a"), topic("topic/e", "e")}})
	p2, err := s.ScanNodes(ctx, graph.Page{After: p1.Next, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var ids []graph.ID
	for _, n := range p2.Nodes {
		ids = append(ids, n.ID)
	}
	if !slices.Equal(ids, []graph.ID{"topic/e", "topic/f"}) || p2.Next != "" {
		t.Errorf("second page: %v (next %q), want topic/e, topic/f and no cursor", ids, p2.Next)
	}
	// A page that ends exactly at the end has no cursor.
	if p, err := s.NodesByType(ctx, "Topic", graph.Page{Limit: 5}); err != nil || len(p.Nodes) != 5 || p.Next != "" {
		t.Errorf("a full last page: %d nodes, next %q, %v", len(p.Nodes), p.Next, err)
	}
	// Page sizes: 0 means DefaultPageSize, more than MaxPageSize is capped.
	var batch graph.Batch
	for i := range graph.DefaultPageSize + 1 {
		batch.Nodes = append(batch.Nodes, topic(fmt.Sprintf("topic/n%04d", i), "n"))
	}
	apply(t, s, &batch)
	if p, err := s.ScanNodes(ctx, graph.Page{}); err != nil || len(p.Nodes) != graph.DefaultPageSize || p.Next == "" {
		t.Errorf("a page of the default size: %d nodes, %v", len(p.Nodes), err)
	}
	if p, err := s.ScanNodes(ctx, graph.Page{Limit: graph.MaxPageSize + 1}); err != nil || len(p.Nodes) != graph.DefaultPageSize+6 {
		t.Errorf("a page over the maximum: %d nodes, %v", len(p.Nodes), err)
	}
}

func since(t *testing.T, s graph.Store, seq uint64, limit int) []graph.Change {
	t.Helper()
	var out []graph.Change
	for {
		chs, err := s.Since(t.Context(), seq, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(chs) > limit {
			t.Fatalf("Since(%d, %d) returned %d entries", seq, limit, len(chs))
		}
		if len(chs) == 0 {
			return out
		}
		out = append(out, chs...)
		seq = chs[len(chs)-1].Seq
	}
}

func testSince(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	for i := range 7 {
		apply(t, s, &graph.Batch{Op: fmt.Sprintf("op%d", i), Nodes: []graph.NodeInput{topic(fmt.Sprintf("topic/t%d", i), "t")}})
	}
	all := since(t, s, 0, 3)
	for i, c := range all {
		if c.Seq != uint64(i+1) || c.Op != fmt.Sprintf("op%d", i) || len(c.Nodes) != 1 || c.Nodes[0].ID != graph.ID(fmt.Sprintf("topic/t%d", i)) ||
			c.Nodes[0].Action != graph.Created || c.Nodes[0].Type != "Topic" || c.Time.IsZero() {
			t.Errorf("entry %d: %+v", i, c)
		}
	}
	if len(all) != 7 {
		t.Fatalf("%d entries, want 7", len(all))
	}
	if chs, err := s.Since(ctx, 4, 2); err != nil || len(chs) != 2 || chs[0].Seq != 5 || chs[1].Seq != 6 {
		t.Errorf("Since(4, 2) = %+v, %v", chs, err)
	}
	for _, seq := range []uint64{7, 8, math.MaxUint64 - 1, math.MaxUint64} {
		if chs, err := s.Since(ctx, seq, 10); err != nil || len(chs) != 0 {
			t.Errorf("Since(%d) past the end = %+v, %v; want none (no wrapping)", seq, chs, err)
		}
	}
	if st, _ := s.Stats(ctx); st.LastSeq != 7 {
		t.Errorf("LastSeq = %d, want 7", st.LastSeq)
	}
}

func testChanged(t *testing.T, b Backend) {
	s := b.Open(t)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a")}})
	ch := s.Changed()
	if closed(ch) {
		t.Fatal("Changed is closed before any commit after the call")
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a")}}) // unchanged
	_, _ = s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/b", Type: "Topic"}}})
	apply(t, s, &graph.Batch{DryRun: true, Nodes: []graph.NodeInput{topic("topic/c", "c")}})
	if closed(ch) {
		t.Error("Changed closed without a commit (an unchanged, rejected or dry-run batch)")
	}
	// A waiter is woken by the commit, and sees it.
	woke := make(chan []graph.Change)
	go func() {
		<-ch
		chs, _ := s.Since(context.Background(), 1, 10)
		woke <- chs
	}()
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/d", "d")}})
	if !closed(ch) {
		t.Error("Changed is not closed when Apply returns")
	}
	if chs := <-woke; len(chs) != 1 || chs[0].Seq != 2 {
		t.Errorf("the woken waiter read %+v, want entry 2", chs)
	}
	if closed(s.Changed()) {
		t.Error("a new Changed channel is closed already")
	}
}

func testConcurrentWriters(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/counter", Type: "Topic", Properties: graph.Props{"name": "counter", "description": "0"}}}})
	const writers, writes = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers*writes*2)
	seqs := make(chan uint64, writers*writes*2)
	for w := range writers {
		wg.Go(func() {
			for i := range writes {
				res, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic(fmt.Sprintf("topic/w%d-%02d", w, i), "w")}})
				if err != nil {
					errs <- err
					return
				}
				seqs <- res.Seq
				if i%2 == 1 {
					continue
				}
				// Read-modify-write with the expected revision: a lost
				// update would show in the final count.
				for {
					n, err := s.Node(ctx, "topic/counter")
					if err != nil {
						errs <- err
						return
					}
					var c int
					fmt.Sscan(n.Properties["description"].(string), &c)
					in := topic("topic/counter", "counter")
					in.Properties["description"] = fmt.Sprint(c + 1)
					in.ExpectedRevision = rev(n.Revision)
					res, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{in}})
					if errors.Is(err, graph.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					seqs <- res.Seq
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	close(seqs)
	for err := range errs {
		t.Fatal(err)
	}
	var got []uint64
	for seq := range seqs {
		got = append(got, seq)
	}
	slices.Sort(got)
	const commits = writers*writes + writers*writes/2
	for i, seq := range got {
		if seq != uint64(i+2) {
			t.Fatalf("the writers' sequence numbers are not 2 to %d, each once: %v", commits+1, got)
		}
	}
	p, err := s.NodesByType(ctx, "Topic", graph.Page{Limit: graph.MaxPageSize})
	if err != nil || len(p.Nodes) != writers*writes+1 {
		t.Fatalf("%d topics, want %d: %v", len(p.Nodes), writers*writes+1, err)
	}
	n, _ := s.Node(ctx, "topic/counter")
	if n.Properties["description"] != fmt.Sprint(writers*writes/2) || n.Revision != writers*writes/2+1 {
		t.Errorf("counter: %v at revision %d, want %d at %d (an update was lost)", n.Properties["description"], n.Revision, writers*writes/2, writers*writes/2+1)
	}
	all := since(t, s, 0, 64)
	if len(all) != commits+1 {
		t.Fatalf("%d change-log entries, want %d", len(all), commits+1)
	}
	for i, c := range all {
		if c.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d: the log has a gap", i, c.Seq)
		}
	}
}

func testReopen(t *testing.T, b Backend) {
	s := b.Open(t)
	m := newModel(s.Model(), rand.New(rand.NewPCG(7, 8)))
	for range 10 {
		m.step(t, s)
	}
	before := readState(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	ch, stop := graph.Subscribe(ctx, s, 0)
	var delivered []uint64
	for c := range ch {
		delivered = append(delivered, c.Seq)
		if c.Seq == before.Stats.LastSeq {
			break
		}
	}
	cancel()
	for range ch {
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s = b.Reopen(t, s)
	sameState(t, "reopening", before, readState(t, s))
	m.check(t, s)
	// A subscription resumes where the last one stopped, and hears what
	// is written after it started, in order, with no gap.
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	ch, _ = graph.Subscribe(ctx, s, delivered[len(delivered)-2])
	for range 3 {
		m.step(t, s)
	}
	want := before.Stats.LastSeq
	for c := range ch {
		if c.Seq != want {
			t.Fatalf("subscription after reopening delivered %d, want %d", c.Seq, want)
		}
		if want++; want == m.lastSeq+1 {
			break
		}
	}
	if m.lastSeq <= before.Stats.LastSeq {
		t.Fatalf("the steps after reopening committed nothing (last %d)", m.lastSeq)
	}
	m.check(t, s)
}

func testClose(t *testing.T, b Backend) {
	s := b.Open(t)
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a", "a")}})
	ch := s.Changed()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Error("Close left Changed's waiters waiting")
	}
	ctx := t.Context()
	if _, err := s.Node(ctx, "topic/a"); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("Node after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/b", "b")}}); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("Apply after Close: %v, want ErrClosed", err)
	}
	if _, err := s.Since(ctx, 0, 10); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("Since after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func scanNodes(t *testing.T, s graph.Store, limit int) []*graph.Node {
	t.Helper()
	var out []*graph.Node
	p := graph.Page{Limit: limit}
	for {
		page, err := s.ScanNodes(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Nodes...)
		if page.Next == "" {
			return out
		}
		p.After = page.Next
	}
}

func scanEdges(t *testing.T, s graph.Store, limit int) []*graph.Edge {
	t.Helper()
	var out []*graph.Edge
	p := graph.Page{Limit: limit}
	for {
		page, err := s.ScanEdges(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Edges...)
		if page.Next == "" {
			return out
		}
		p.After = page.Next
	}
}

// The model: what the random batches wrote, by which every listing is
// checked.
type model struct {
	m       *schema.Model
	rng     *rand.Rand
	nodes   map[graph.ID]*mNode
	edges   map[graph.EdgeKey]*mEdge
	lastSeq uint64
}

type mNode struct {
	typ   string
	props graph.Props
	rev   int64
}

type mEdge struct {
	props graph.Props
	rev   int64
}

func newModel(m *schema.Model, rng *rand.Rand) *model {
	return &model{m: m, rng: rng, nodes: map[graph.ID]*mNode{}, edges: map[graph.EdgeKey]*mEdge{}}
}

// The ID space: few enough that batches update, delete and recreate.
var modelIDs = map[string][]graph.ID{
	"Service": {"service/a", "service/b", "service/c", "service/d", "service/e", "service/zz"},
	"Topic":   {"topic/go", "topic/graph", "topic/golang"},
	"Person":  {"person/ada", "person/bob", "person/cy"},
	"Team":    {"team/core", "team/infra"},
	"Entity":  {"entity/e1", "entity/e2", "entity/e3"},
}

var modelWords = []string{"alpha", "beta", "gamma", "graph", "great", "go", "golden"}

func (m *model) pick(xs []graph.ID) graph.ID { return xs[m.rng.IntN(len(xs))] }

func (m *model) word() string { return modelWords[m.rng.IntN(len(modelWords))] }

func (m *model) props(typ string) graph.Props {
	p := graph.Props{"name": m.word() + " " + m.word()}
	switch typ {
	case "Service":
		if m.rng.IntN(4) > 0 {
			p["tier"] = m.rng.IntN(4)
		}
		p["lifecycle"] = []string{"experimental", "production", "deprecated"}[m.rng.IntN(3)]
		p["description"] = m.word()
	case "Person":
		p["email"] = m.word() + "@example.com"
		p["role"] = m.word()
	case "Entity":
		p["entityType"] = []string{"person", "place", "thing"}[m.rng.IntN(3)]
		p["observations"] = []any{m.word(), m.word()}
	}
	return p
}

// An edge shape the default model allows.
var modelEdges = []struct {
	label    string
	from, to string
	keyed    bool
}{
	{"dependsOn", "Service", "Service", false},
	{"memberOf", "Person", "Team", false},
	{"owns", "Team", "Service", false},
	{"relation", "Entity", "Entity", true},
}

// step applies one random batch of up to six valid elements and checks its
// Result against the model.
func (m *model) step(t *testing.T, s graph.Store) {
	t.Helper()
	var b graph.Batch
	type wantRes struct {
		st  graph.Status
		rev int64
	}
	var wantNodes, wantEdges []wantRes
	touchedNode := map[graph.ID]bool{}
	touchedEdge := map[graph.EdgeKey]bool{}
	deleted := map[graph.ID]bool{}
	edgeEnds := map[graph.ID]bool{} // nodes an edge of the batch joins: not to be deleted
	exists := func(id graph.ID) bool { return m.nodes[id] != nil && !deleted[id] }
	for range 1 + m.rng.IntN(6) {
		switch r := m.rng.IntN(10); {
		case r < 4: // a node upsert
			typ := []string{"Service", "Topic", "Person", "Team", "Entity"}[m.rng.IntN(5)]
			id := m.pick(modelIDs[typ])
			if touchedNode[id] {
				continue
			}
			touchedNode[id] = true
			props := m.props(typ)
			old := m.nodes[id]
			if old != nil && m.rng.IntN(4) == 0 {
				props = old.props // the same again: unchanged
			}
			b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: typ, Properties: props})
			switch {
			case old == nil:
				wantNodes = append(wantNodes, wantRes{graph.Created, 1})
			case jsonEq(old.props, props):
				wantNodes = append(wantNodes, wantRes{graph.Unchanged, old.rev})
			default:
				wantNodes = append(wantNodes, wantRes{graph.Updated, old.rev + 1})
			}
		case r < 5: // a node delete
			ids := slices.Sorted(func(yield func(graph.ID) bool) {
				for id := range m.nodes {
					if !yield(id) {
						return
					}
				}
			})
			if len(ids) == 0 {
				continue
			}
			id := m.pick(ids)
			if touchedNode[id] || edgeEnds[id] {
				continue
			}
			touchedNode[id] = true
			deleted[id] = true
			b.DeleteNodes = append(b.DeleteNodes, graph.NodeRef{ID: id})
		case r < 8: // an edge upsert between nodes that exist
			shape := modelEdges[m.rng.IntN(len(modelEdges))]
			k := graph.EdgeKey{From: m.pick(modelIDs[shape.from]), Label: shape.label, To: m.pick(modelIDs[shape.to])}
			if shape.keyed {
				k.Key = []string{"knows", "likes", "a/b c"}[m.rng.IntN(3)]
			}
			if !exists(k.From) || !exists(k.To) || touchedEdge[k] {
				continue
			}
			touchedEdge[k] = true
			edgeEnds[k.From], edgeEnds[k.To] = true, true
			var props graph.Props
			if shape.label == "dependsOn" && m.rng.IntN(2) == 0 {
				props = graph.Props{"critical": m.rng.IntN(2) == 0}
			}
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: k, Properties: props})
			switch old := m.edges[k]; {
			case old == nil:
				wantEdges = append(wantEdges, wantRes{graph.Created, 1})
			case jsonEq(old.props, props):
				wantEdges = append(wantEdges, wantRes{graph.Unchanged, old.rev})
			default:
				wantEdges = append(wantEdges, wantRes{graph.Updated, old.rev + 1})
			}
		default: // an edge delete
			keys := slices.SortedFunc(func(yield func(graph.EdgeKey) bool) {
				for k := range m.edges {
					if !yield(k) {
						return
					}
				}
			}, compareKeys)
			if len(keys) == 0 {
				continue
			}
			k := keys[m.rng.IntN(len(keys))]
			if touchedEdge[k] {
				continue
			}
			touchedEdge[k] = true
			b.DeleteEdges = append(b.DeleteEdges, graph.EdgeRef{EdgeKey: k})
		}
	}
	if b.Len() == 0 {
		return
	}
	if debugSteps {
		j, _ := json.Marshal(b)
		t.Logf("batch: %s", j)
	}
	res := apply(t, s, &b)
	for i, w := range wantNodes {
		if got := res.Nodes[i]; got.Status != w.st || got.Revision != w.rev || got.ID != string(b.Nodes[i].ID) {
			t.Fatalf("batch %+v: node result %d = %+v, want %s at revision %d", b, i, got, w.st, w.rev)
		}
	}
	for i, w := range wantEdges {
		if got := res.Edges[i]; got.Status != w.st || got.Revision != w.rev {
			t.Fatalf("batch %+v: edge result %d = %+v, want %s at revision %d", b, i, got, w.st, w.rev)
		}
	}
	// The model follows.
	changed := false
	for i, n := range b.Nodes {
		if wantNodes[i].st == graph.Unchanged {
			continue
		}
		changed = true
		m.nodes[n.ID] = &mNode{typ: n.Type, props: n.Properties, rev: wantNodes[i].rev}
	}
	for _, d := range b.DeleteNodes {
		changed = true
		delete(m.nodes, d.ID)
		for k := range m.edges {
			if k.From == d.ID || k.To == d.ID {
				delete(m.edges, k)
			}
		}
	}
	for i, e := range b.Edges {
		if wantEdges[i].st == graph.Unchanged {
			continue
		}
		changed = true
		m.edges[e.EdgeKey] = &mEdge{props: e.Properties, rev: wantEdges[i].rev}
	}
	for _, d := range b.DeleteEdges {
		changed = true
		delete(m.edges, d.EdgeKey)
	}
	switch {
	case changed && res.Seq != m.lastSeq+1:
		t.Fatalf("a batch that changed something has seq %d, want %d", res.Seq, m.lastSeq+1)
	case !changed && res.Seq != 0:
		t.Fatalf("a batch that changed nothing has seq %d", res.Seq)
	case changed:
		m.lastSeq++
	}
}

func compareKeys(a, b graph.EdgeKey) int {
	return cmp.Or(strings.Compare(string(a.From), string(b.From)), strings.Compare(a.Label, b.Label),
		strings.Compare(string(a.To), string(b.To)), strings.Compare(a.Key, b.Key))
}

// check compares every listing of s with the model.
func (m *model) check(t *testing.T, s graph.Store) {
	t.Helper()
	ctx := t.Context()
	ids := slices.Sorted(func(yield func(graph.ID) bool) {
		for id := range m.nodes {
			if !yield(id) {
				return
			}
		}
	})
	sameNodes := func(what string, got []*graph.Node, want []graph.ID) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: %d nodes, want %d", what, len(got), len(want))
		}
		for i, n := range got {
			w := m.nodes[want[i]]
			if n.ID != want[i] || n.Type != w.typ || n.Revision != w.rev || !jsonEq(n.Properties, w.props) {
				t.Fatalf("%s: node %d is %+v, want %s %+v", what, i, n, want[i], w)
			}
		}
	}
	for _, limit := range []int{1, 4, graph.MaxPageSize} {
		sameNodes(fmt.Sprintf("ScanNodes by %d", limit), scanNodes(t, s, limit), ids)
	}
	// NodesByType, per type.
	for typ := range modelIDs {
		var want []graph.ID
		for _, id := range ids {
			if m.nodes[id].typ == typ {
				want = append(want, id)
			}
		}
		var got []*graph.Node
		p := graph.Page{Limit: 2}
		for {
			page, err := s.NodesByType(ctx, typ, p)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Nodes...)
			if page.Next == "" {
				break
			}
			p.After = page.Next
		}
		sameNodes("NodesByType "+typ, got, want)
	}
	// ScanEdges: from, label, to, key.
	keys := slices.SortedFunc(func(yield func(graph.EdgeKey) bool) {
		for k := range m.edges {
			if !yield(k) {
				return
			}
		}
	}, compareKeys)
	for _, limit := range []int{1, 3, graph.MaxPageSize} {
		got := scanEdges(t, s, limit)
		if len(got) != len(keys) {
			t.Fatalf("ScanEdges by %d: %d edges, want %d", limit, len(got), len(keys))
		}
		for i, e := range got {
			w := m.edges[keys[i]]
			if e.EdgeKey != keys[i] || e.ID != keys[i].String() || e.Revision != w.rev || !jsonEq(e.Properties, w.props) {
				t.Fatalf("ScanEdges by %d: edge %d is %+v, want %v %+v", limit, i, e, keys[i], w)
			}
		}
	}
	// Node: edge counts.
	for _, id := range ids {
		counts := map[graph.EdgeCount]int64{}
		for k := range m.edges {
			if k.From == id {
				counts[graph.EdgeCount{Label: k.Label, Direction: graph.Out}]++
			}
			if k.To == id {
				counts[graph.EdgeCount{Label: k.Label, Direction: graph.In}]++
			}
		}
		var want []graph.EdgeCount
		for c, n := range counts {
			c.Count = n
			want = append(want, c)
		}
		slices.SortFunc(want, func(a, b graph.EdgeCount) int {
			return cmp.Or(strings.Compare(a.Label, b.Label), strings.Compare(string(b.Direction), string(a.Direction))) // out before in
		})
		n, err := s.Node(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(n.Edges, want) {
			t.Fatalf("edge counts of %s: %+v, want %+v", id, n.Edges, want)
		}
	}
	m.checkEdges(t, s, ids)
	m.checkDegrees(t, s, ids)
	m.checkLookups(t, s, ids)
	m.checkWalks(t, s, ids)
	m.checkTypeIDs(t, s)
	m.checkPostings(t, s, ids)
	m.checkDegreeIndex(t, s)
	// Stats.
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	types, labels := map[string]int64{}, map[string]int64{}
	for _, n := range m.nodes {
		types[n.typ]++
	}
	for k := range m.edges {
		labels[k.Label]++
	}
	if st.Nodes != int64(len(m.nodes)) || st.Edges != int64(len(m.edges)) || st.LastSeq != m.lastSeq || !mapsEqual(st.NodeTypes, types) || !mapsEqual(st.EdgeLabels, labels) {
		t.Fatalf("Stats = %+v, want %d nodes %v, %d edges %v, last seq %d", st, len(m.nodes), types, len(m.edges), labels, m.lastSeq)
	}
	// The change log: every entry, in order, with no gap.
	all := since(t, s, 0, 5)
	if uint64(len(all)) != m.lastSeq {
		t.Fatalf("%d change-log entries, want %d", len(all), m.lastSeq)
	}
	for i, c := range all {
		if c.Seq != uint64(i+1) || len(c.Nodes)+len(c.Edges) == 0 {
			t.Fatalf("change-log entry %d: %+v", i, c)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// checkDegrees checks what a DegreeCounter says of the nodes' degrees,
// for every label, each label alone and pairs of them, in each direction
// (Both counts a self-loop twice), a missing node among them: 0.
func (m *model) checkDegrees(t *testing.T, s graph.Store, ids []graph.ID) {
	t.Helper()
	dc, ok := s.(graph.DegreeCounter)
	if !ok {
		return
	}
	nodes := append(slices.Clone(ids), "service/missing")
	all := m.m.EdgeLabels()
	sets := [][]string{nil}
	for i, l := range all {
		sets = append(sets, []string{l}, []string{l, all[(i+1)%len(all)]})
	}
	for _, labels := range sets {
		for _, dir := range []graph.Direction{graph.Out, graph.In, graph.Both} {
			got, err := dc.Degrees(t.Context(), nodes, labels, dir)
			if err != nil {
				t.Fatalf("Degrees %v %s: %v", labels, dir, err)
			}
			for i, id := range nodes {
				var want int64
				for k := range m.edges {
					if len(labels) > 0 && !slices.Contains(labels, k.Label) {
						continue
					}
					if k.From == id && dir != graph.In {
						want++
					}
					if k.To == id && dir != graph.Out {
						want++
					}
				}
				if got[i] != want {
					t.Fatalf("Degrees of %s, labels %v, %s: %d, want %d", id, labels, dir, got[i], want)
				}
			}
		}
	}
	if _, err := dc.Degrees(t.Context(), ids, []string{"noSuchLabel"}, graph.Out); !errors.Is(err, graph.ErrInvalid) {
		t.Fatalf("Degrees of an unknown label: %v, want ErrInvalid", err)
	}
}

// checkEdges pages through Edges for single nodes and sets of nodes, in
// every direction, with and without label filters.
func (m *model) checkEdges(t *testing.T, s graph.Store, ids []graph.ID) {
	t.Helper()
	type listed struct {
		node int
		key  graph.EdgeKey
	}
	expect := func(nodes []graph.ID, labels []string, dir graph.Direction) []listed {
		var out []listed
		for i, id := range nodes {
			type entry struct {
				label string
				in    int
				other graph.ID
				key   graph.EdgeKey
			}
			var es []entry
			for k := range m.edges {
				if len(labels) > 0 && !slices.Contains(labels, k.Label) {
					continue
				}
				if k.From == id && dir != graph.In {
					es = append(es, entry{k.Label, 0, k.To, k})
				}
				if k.To == id && dir != graph.Out && !(dir == graph.Both && k.From == k.To) {
					es = append(es, entry{k.Label, 1, k.From, k})
				}
			}
			slices.SortFunc(es, func(a, b entry) int {
				return cmp.Or(strings.Compare(a.label, b.label), a.in-b.in, strings.Compare(string(a.other), string(b.other)), strings.Compare(a.key.Key, b.key.Key))
			})
			for _, e := range es {
				out = append(out, listed{i, e.key})
			}
		}
		return out
	}
	queries := [][]graph.ID{{"service/zz", "service/a", "service/zz", "topic/none"}}
	if len(ids) > 0 {
		queries = append(queries, append(slices.Clone(ids), ids[0]))
	}
	for _, id := range ids {
		queries = append(queries, []graph.ID{id})
	}
	for qi, nodes := range queries {
		for _, dir := range []graph.Direction{graph.Out, graph.In, graph.Both} {
			for _, labels := range [][]string{nil, {"dependsOn"}, {"relation", "owns"}} {
				want := expect(nodes, labels, dir)
				for _, limit := range []int{1, 3, graph.MaxPageSize} {
					q := graph.EdgeQuery{Nodes: nodes, Labels: labels, Direction: dir, Page: graph.Page{Limit: limit}, KeysOnly: limit == 3}
					var got []graph.EdgeKey
					for {
						page, err := s.Edges(t.Context(), q)
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range page.Edges {
							got = append(got, e.EdgeKey)
							if !q.KeysOnly {
								if w := m.edges[e.EdgeKey]; w == nil || e.Revision != w.rev || !jsonEq(e.Properties, w.props) {
									t.Fatalf("Edges: %+v, want %+v", e, w)
								}
							}
						}
						if page.Next == "" {
							break
						}
						q.After = page.Next
					}
					if len(got) != len(want) {
						t.Fatalf("Edges query %d %s %v by %d: %d edges, want %d:\n got %v\nwant %v", qi, dir, labels, limit, len(got), len(want), got, want)
					}
					for i := range got {
						if got[i] != want[i].key {
							t.Fatalf("Edges query %d %s %v by %d: edge %d is %v, want %v (node %d)", qi, dir, labels, limit, i, got[i], want[i].key, want[i].node)
						}
					}
				}
			}
		}
	}
}

// checkLookups looks up the indexed properties the model writes: equal
// values and ranges, paged.
func (m *model) checkLookups(t *testing.T, s graph.Store, ids []graph.ID) {
	t.Helper()
	type entry struct {
		enc []byte
		id  graph.ID
	}
	expect := func(q graph.IndexQuery) []graph.ID {
		in := func(v any) bool {
			enc, _ := graph.EncodeIndexValue(v)
			if q.Eq != nil {
				eq, _ := graph.EncodeIndexValue(q.Eq)
				return bytes.Equal(enc, eq)
			}
			if q.Min != nil {
				lo, _ := graph.EncodeIndexValue(q.Min)
				if c := bytes.Compare(enc, lo); c < 0 || c == 0 && q.MinExclusive {
					return false
				}
			}
			if q.Max != nil {
				hi, _ := graph.EncodeIndexValue(q.Max)
				if c := bytes.Compare(enc, hi); c > 0 || c == 0 && q.MaxExclusive {
					return false
				}
			}
			return true
		}
		var es []entry
		for _, id := range ids {
			n := m.nodes[id]
			v, ok := n.props[q.Property]
			if n.typ != q.Type || !ok {
				continue
			}
			for _, enc := range graph.IndexEntries(v) {
				if in(decodeScalar(v, enc)) {
					es = append(es, entry{enc, id})
				}
			}
		}
		slices.SortFunc(es, func(a, b entry) int {
			return cmp.Or(bytes.Compare(a.enc, b.enc), strings.Compare(string(a.id), string(b.id)))
		})
		var out []graph.ID
		for _, e := range es {
			out = append(out, e.id)
		}
		return out
	}
	for _, q := range []graph.IndexQuery{
		{Type: "Service", Property: "tier", Eq: 2},
		{Type: "Service", Property: "tier", Eq: json.Number("2.0")},
		{Type: "Service", Property: "tier"},
		{Type: "Service", Property: "tier", Min: 1, Max: 2},
		{Type: "Service", Property: "tier", Min: 1, MinExclusive: true, Max: 3, MaxExclusive: true},
		{Type: "Service", Property: "tier", Max: 1.5},
		{Type: "Service", Property: "lifecycle", Eq: "production"},
		{Type: "Service", Property: "lifecycle", Min: "d", Max: "f"},
		{Type: "Person", Property: "email", Min: "b"},
		{Type: "Entity", Property: "entityType", Eq: "place"},
	} {
		want := expect(q)
		for _, limit := range []int{1, 2, graph.MaxPageSize} {
			q.Limit, q.After = limit, ""
			var got []graph.ID
			for {
				page, err := s.Lookup(t.Context(), q)
				if err != nil {
					t.Fatalf("Lookup %+v: %v", q, err)
				}
				got = append(got, page.IDs...)
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Lookup %s.%s eq %v in [%v, %v] by %d: %v, want %v", q.Type, q.Property, q.Eq, q.Min, q.Max, limit, got, want)
			}
		}
	}
	// An IndexScanner lists the same entries as a Lookup of the whole
	// index, with their values.
	sc, ok := s.(graph.IndexScanner)
	if !ok {
		return
	}
	for _, q := range []graph.IndexQuery{{Type: "Service", Property: "tier"}, {Type: "Service", Property: "lifecycle"}, {Type: "Person", Property: "email"}} {
		var want []string
		for _, id := range ids {
			n := m.nodes[id]
			if v, ok := n.props[q.Property]; ok && n.typ == q.Type {
				for _, enc := range graph.IndexEntries(v) {
					want = append(want, string(enc)+"\x00"+string(id))
				}
			}
		}
		slices.Sort(want)
		var got []string
		if err := sc.ScanIndex(t.Context(), q.Type, q.Property, func(v []byte, id graph.ID) bool {
			got = append(got, string(v)+"\x00"+string(id))
			return true
		}); err != nil {
			t.Fatalf("ScanIndex %s.%s: %v", q.Type, q.Property, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("ScanIndex %s.%s: %q, want %q", q.Type, q.Property, got, want)
		}
		n := 0
		sc.ScanIndex(t.Context(), q.Type, q.Property, func([]byte, graph.ID) bool { n++; return n < 2 })
		if want := min(2, len(want)); n != want {
			t.Fatalf("ScanIndex %s.%s went on after f returned false: %d calls, want %d", q.Type, q.Property, n, want)
		}
	}
	if err := sc.ScanIndex(t.Context(), "Topic", "name", func([]byte, graph.ID) bool { return true }); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("ScanIndex of a property the model does not index: %v, want ErrInvalid", err)
	}
}

// checkTypeIDs checks that a TypeIDLister lists each type's IDs as
// NodesByType lists its nodes, page by page.
func (m *model) checkTypeIDs(t *testing.T, s graph.Store) {
	t.Helper()
	tl, ok := s.(graph.TypeIDLister)
	if !ok {
		return
	}
	for _, typ := range s.Model().NodeTypeNames() {
		var want []graph.ID
		for after := ""; ; {
			page, err := s.NodesByType(t.Context(), typ, graph.Page{After: after, Limit: graph.MaxPageSize})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range page.Nodes {
				want = append(want, n.ID)
			}
			if after = page.Next; after == "" {
				break
			}
		}
		for _, limit := range []int{1, 3, graph.MaxPageSize} {
			var got []graph.ID
			for after := ""; ; {
				page, err := tl.NodeIDsByType(t.Context(), typ, graph.Page{After: after, Limit: limit})
				if err != nil {
					t.Fatalf("NodeIDsByType %s: %v", typ, err)
				}
				got = append(got, page.IDs...)
				if after = page.Next; after == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("NodeIDsByType %s by %d: %v, want %v", typ, limit, got, want)
			}
		}
	}
	if _, err := tl.NodeIDsByType(t.Context(), "NoSuchType", graph.Page{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("NodeIDsByType of a type the model lacks: %v, want ErrInvalid", err)
	}
}

// decodeScalar returns the element of v (a scalar or an array of them)
// whose encoding is enc.
func decodeScalar(v any, enc []byte) any {
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if b, _ := graph.EncodeIndexValue(e); bytes.Equal(b, enc) {
				return e
			}
		}
	}
	return v
}

// checkPostings pages through the text index by prefixes and exact tokens.
func (m *model) checkPostings(t *testing.T, s graph.Store, ids []graph.ID) {
	t.Helper()
	var all []graph.Posting
	for _, id := range ids {
		n := m.nodes[id]
		nt, _ := m.m.Node(n.typ)
		for tok, w := range graph.NodeTokens(nt, n.props) {
			all = append(all, graph.Posting{Token: tok, Type: n.typ, ID: id, Weight: int(w)})
		}
	}
	slices.SortFunc(all, func(a, b graph.Posting) int {
		return cmp.Or(strings.Compare(a.Token, b.Token), strings.Compare(a.Type, b.Type), strings.Compare(string(a.ID), string(b.ID)))
	})
	for _, q := range []graph.PostingQuery{
		{Prefix: "g"}, {Prefix: "go"}, {Prefix: "go", Exact: true}, {Prefix: "gr", Type: "Service"}, {Prefix: "g", Type: "Topic", Exact: true},
		{Prefix: "alpha", Exact: true, Type: "Person"}, {Prefix: "zzz"},
	} {
		var want []graph.Posting
		for _, p := range all {
			if (q.Exact && p.Token == q.Prefix || !q.Exact && strings.HasPrefix(p.Token, q.Prefix)) && (q.Type == "" || p.Type == q.Type) {
				want = append(want, p)
			}
		}
		for _, sz := range []struct{ limit, scan int }{{1, 0}, {3, 2}, {graph.MaxPageSize, 0}} {
			q.Limit, q.MaxScan, q.After = sz.limit, sz.scan, ""
			var got []graph.Posting
			for range 10000 {
				page, err := s.Postings(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				if page.Scanned < len(page.Postings) || len(page.Postings) > q.Size() {
					t.Fatalf("Postings %+v: a page of %d postings, %d scanned", q, len(page.Postings), page.Scanned)
				}
				got = append(got, page.Postings...)
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Postings %q exact %v type %q by %d: %v, want %v", q.Prefix, q.Exact, q.Type, sz.limit, got, want)
			}
		}
	}
	m.checkPostingsByWeight(t, s, all)
	m.checkTerms(t, s, all)
}

// checkPostingsByWeight reads every token's postings by weight, and looks
// some up by node.
func (m *model) checkPostingsByWeight(t *testing.T, s graph.Store, all []graph.Posting) {
	t.Helper()
	tokens := map[string]bool{}
	for _, p := range all {
		tokens[p.Token] = true
	}
	for tok := range tokens {
		for _, typ := range []string{"", "Service", "Topic"} {
			var want []graph.Posting
			var refs []graph.TypedID
			for _, p := range all {
				if p.Token == tok && (typ == "" || p.Type == typ) {
					want = append(want, p)
					refs = append(refs, graph.TypedID{Type: p.Type, ID: p.ID})
				}
			}
			// Random access, for the nodes that hold the token (last first)
			// and one that does not: in the order asked.
			slices.Reverse(refs)
			got, err := s.Postings(t.Context(), graph.PostingQuery{Prefix: tok, Exact: true, Type: typ, Nodes: append(slices.Clone(refs), graph.TypedID{Type: "Service", ID: "service/none"}), Page: graph.Page{Limit: len(refs) + 1}, MaxScan: len(refs) + 1})
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(got.Postings)
			if !slices.Equal(got.Postings, want) {
				t.Fatalf("Postings %q type %q of %d nodes: %v, want %v", tok, typ, len(refs), got.Postings, want)
			}
			slices.SortStableFunc(want, func(a, b graph.Posting) int {
				return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(string(a.ID), string(b.ID)))
			})
			var read []graph.Posting
			q := graph.PostingQuery{Prefix: tok, Exact: true, Type: typ, ByWeight: true, Page: graph.Page{Limit: 2}}
			for range 10000 {
				page, err := s.Postings(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				read = append(read, page.Postings...)
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
			if !slices.Equal(read, want) {
				t.Fatalf("Postings %q type %q by weight: %v, want %v", tok, typ, read, want)
			}
		}
	}
}

// checkTerms lists the tokens of some prefixes with their posting counts.
func (m *model) checkTerms(t *testing.T, s graph.Store, all []graph.Posting) {
	t.Helper()
	for _, q := range []graph.TermQuery{{Prefix: "g"}, {Prefix: "go", Exact: true}, {Prefix: "s", Type: "Service"}, {Prefix: "a", Limit: 2}, {Prefix: "zzz"}} {
		var want []graph.Term
		for _, p := range all {
			if (q.Exact && p.Token == q.Prefix || !q.Exact && strings.HasPrefix(p.Token, q.Prefix)) && (q.Type == "" || p.Type == q.Type) {
				if n := len(want); n > 0 && want[n-1].Token == p.Token {
					want[n-1].Count++
				} else {
					want = append(want, graph.Term{Token: p.Token, Count: 1})
				}
			}
		}
		if q.Limit > 0 {
			want = want[:min(len(want), q.Limit)]
		}
		got, err := s.Terms(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Terms %+v: %v, want %v", q, got, want)
		}
	}
	if _, err := s.Terms(t.Context(), graph.TermQuery{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("Terms of an empty prefix: %v, want ErrInvalid", err)
	}
}

func testRandomBatches(t *testing.T, b Backend) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s := b.Open(t)
			m := newModel(s.Model(), rand.New(rand.NewPCG(seed, 99)))
			for i := range 60 {
				m.step(t, s)
				if i%15 == 14 {
					m.check(t, s)
				}
			}
			m.check(t, s)
		})
	}
}

// debugSteps logs each random batch (set it to see what failed).
var debugSteps = false
