package bolt

import (
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// A bulk load's in-edge entries wait until it ends (pendingIn), but a
// batch that removes edges, or whose planning reads in-edges (a node's
// delete), has them written first: nothing it removes comes back at the
// end, and a delete's cascade finds every edge.
func TestPendingInEdges(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	svc := func(id string) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Service", Properties: graph.Props{"name": id}}
	}
	dep := func(from, to string) graph.EdgeInput {
		return graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(from), Label: "dependsOn", To: graph.ID(to)}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c"), svc("service/d")},
		Edges: []graph.EdgeInput{dep("service/a", "service/b"), dep("service/c", "service/b"), dep("service/d", "service/b")}})
	if s.deferred.in.n != 3 {
		t.Fatalf("%d in-edge entries pending, want 3", s.deferred.in.n)
	}
	apply(t, s, &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "service/c", Label: "dependsOn", To: "service/b"}}}})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/e")}, Edges: []graph.EdgeInput{dep("service/e", "service/b"), dep("service/e", "service/a")}})
	if s.deferred.in.n != 2 {
		t.Fatalf("%d in-edge entries pending, want 2", s.deferred.in.n)
	}
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "service/b"}}})
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	for id, want := range map[graph.ID]int{"service/a": 1, "service/e": 1, "service/d": 0} {
		n, err := s.Node(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, e := range n.Edges {
			got += int(e.Count)
		}
		if got != want {
			t.Errorf("%s has %d edges, want %d: %+v", id, got, want, n.Edges)
		}
	}
}

// A commit that fails during a bulk load takes with it the index entries,
// counts and in-edge entries it had set aside to write at the load's end:
// the batch applied again (short of a node and an edge), and the load ended, the
// store checks clean and counts each node and edge once.
func TestBulkLoadFailedCommitKeepsNoEntries(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	svc := func(id string) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Service", Properties: graph.Props{"name": id}}
	}
	dep := func(from, to string) graph.EdgeInput {
		return graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(from), Label: "dependsOn", To: graph.ID(to)}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c")},
		Edges: []graph.EdgeInput{dep("service/a", "service/b"), dep("service/c", "service/b")}})
	failing := &graph.Batch{Nodes: []graph.NodeInput{svc("service/d"), svc("service/e")},
		Edges:       []graph.EdgeInput{dep("service/d", "service/b"), dep("service/e", "service/d")},
		DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}}}}
	// The commit's edge count would go negative: it fails after it set
	// its entries aside.
	counter := countKey("edge", "dependsOn")
	setCount := func(v []byte) {
		t.Helper()
		if err := s.db.DB().Update(func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(counter, v) }); err != nil {
			t.Fatal(err)
		}
	}
	setCount(u64(1 << 63)) // negative, as the int64 a counter is
	if _, err := s.Apply(t.Context(), failing); err == nil {
		t.Fatal("a commit whose edge count goes negative succeeded")
	}
	setCount(u64(2))
	// Applied again without one of its nodes and one of its edges, whose
	// entries must not come back at the end either.
	failing.Nodes, failing.Edges = failing.Nodes[:1], failing.Edges[:1]
	apply(t, s, failing)
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 4 || st.Edges != 2 {
		t.Fatalf("stats after the load: %d nodes, %d edges, want 4 and 2", st.Nodes, st.Edges)
	}
	for id, want := range map[graph.ID]int{"service/b": 2, "service/d": 1, "service/a": 0} {
		n, err := s.Node(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, e := range n.Edges {
			got += int(e.Count)
		}
		if got != want {
			t.Errorf("%s has %d edges, want %d: %+v", id, got, want, n.Edges)
		}
	}
}
