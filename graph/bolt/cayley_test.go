package bolt

// Tests that Cayley's measured defects (../shared/reference/cayley.md) cannot bite.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"

	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	hkv "github.com/hidal-go/hidalgo/kv"
	bbolt "go.etcd.io/bbolt"

	"github.com/lore-dev/lore/schema"
)

func openTest(t testing.TB, dir string, cfg Config) *Store {
	t.Helper()
	cfg.Path = dir
	cfg.NoSync = true
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func apply(t testing.TB, s graph.Store, b *graph.Batch) *graph.Result {
	t.Helper()
	r, err := s.Apply(context.Background(), b)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return r
}

// cayleyLog counts the entries of Cayley's primitive log (values and quads,
// live or tombstoned): it grows with every quad Cayley writes.
func cayleyLog(t testing.TB, s *Store) (n int) {
	t.Helper()
	err := s.read(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bCayleyLog)
		if b == nil {
			return nil
		}
		return eachLogPrimitive(b, func(uint64, []byte) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func topics(prefix string, n int) []graph.NodeInput {
	out := make([]graph.NodeInput, n)
	for i := range out {
		out[i] = graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/%s-%d", prefix, i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("%s %d", prefix, i)}}
	}
	return out
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for w := range 50 {
		wg.Go(func() {
			if _, err := s.Apply(context.Background(), &graph.Batch{Nodes: topics(fmt.Sprintf("w%d", w), 20)}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, _ := s.Stats(t.Context())
	changes, _ := s.Since(t.Context(), 0, 1000)
	if st.Nodes != 1000 || st.Quads != 1000 || len(changes) != 50 {
		t.Errorf("%d nodes, %d quads, %d change-log entries; want 1000, 1000, 50", st.Nodes, st.Quads, len(changes))
	}
	for i, c := range changes {
		if c.Seq != uint64(i+1) || len(c.Nodes) != 20 {
			t.Errorf("entry %d: seq %d with %d nodes", i, c.Seq, len(c.Nodes))
		}
	}
}

// Raw Cayley on bbolt deadlocked 3 of 3 times within about a second with
// three readers and one writer whose commits grow the file.
func TestReadersAndWriterDoNotDeadlock(t *testing.T) {
	run := 10 * time.Second
	if testing.Short() {
		run = 2 * time.Second
	}
	s := openTest(t, t.TempDir(), Config{MmapSize: 1 << 20}) // a small map: commits remap often
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "team/hub", Type: "Team", Properties: graph.Props{"name": "hub"}}}})
	ctx, cancel := context.WithTimeout(t.Context(), run)
	defer cancel()
	var reads, writes atomic.Int64
	var wg sync.WaitGroup
	fail := make(chan error, 5)
	for r := range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				var err error
				switch r {
				case 0:
					_, err = s.Edges(ctx, graph.EdgeQuery{Nodes: []graph.ID{"team/hub"}, Direction: graph.Both, Page: graph.Page{Limit: 500}})
				case 1:
					_, err = s.NodesByType(ctx, "Person", graph.Page{Limit: 200})
				case 2:
					_, err = s.Node(ctx, "team/hub")
				case 3:
					_, err = s.Lookup(ctx, graph.IndexQuery{Type: "Person", Property: "role", Min: "r", Page: graph.Page{Limit: 100}})
				}
				if err != nil && ctx.Err() == nil {
					fail <- err
					return
				}
				reads.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			b := &graph.Batch{}
			for j := range 50 {
				id := graph.ID(fmt.Sprintf("person/p%d-%d", i, j))
				b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: "Person", Properties: graph.Props{"name": fmt.Sprintf("p %d %d", i, j), "role": fmt.Sprintf("role %d", j), "bio": strings.Repeat("x", 300)}})
				b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "memberOf", To: "team/hub"}})
			}
			if _, err := s.Apply(context.Background(), b); err != nil {
				fail <- err
				return
			}
			writes.Add(1)
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(run + time.Minute):
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		t.Fatal("deadlock: readers and writer still running a minute after the deadline")
	}
	close(fail)
	for err := range fail {
		t.Error(err)
	}
	if reads.Load() == 0 || writes.Load() == 0 {
		t.Fatalf("%d reads, %d writes: the test did nothing", reads.Load(), writes.Load())
	}
	t.Logf("%d reads and %d write batches in %v", reads.Load(), writes.Load(), run)
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
}

// A strict ApplyDeltas that fails (adds on new IRIs plus a delete of a
// missing quad) leaves Cayley's caches and buffered index entries behind,
// which the next commit writes: Out() then returns a foreign value or one twice.
func TestRejectedBatchNeverReachesCayley(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}}})
	logBefore := cayleyLog(t, s)
	_, err := s.Apply(t.Context(), &graph.Batch{
		Nodes:       []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}}, {ID: "person/b", Type: "Person", Properties: graph.Props{"name": "b"}}},
		Edges:       []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
		DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "person/b", Label: "memberOf", To: "team/t"}}}, // missing
	})
	if !errors.Is(err, graph.ErrNotFound) {
		t.Fatalf("Apply = %v, want not found", err)
	}
	if got := cayleyLog(t, s); got != logBefore {
		t.Fatalf("Cayley's log went from %d to %d entries: the rejected batch reached ApplyDeltas", logBefore, got)
	}
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}}, {ID: "person/b", Type: "Person", Properties: graph.Props{"name": "b"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}, {EdgeKey: graph.EdgeKey{From: "person/b", Label: "leads", To: "team/t"}}},
	})
	verify := func(s *Store) {
		t.Helper()
		want := map[graph.ID]string{"person/a": "memberOf(person/a,team/t)", "person/b": "leads(person/b,team/t)"}
		for id, edge := range want {
			p, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{id}})
			if err != nil || len(p.Edges) != 1 || p.Edges[0].ID != edge {
				t.Errorf("edges of %s = %v (%v), want exactly %s", id, edgeIDs(p), err, edge)
			}
		}
		p, _ := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"team/t"}, Direction: graph.In})
		if got := edgeIDs(p); len(got) != 2 {
			t.Errorf("in-edges of team/t = %v, want 2", got)
		}
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Errorf("check: %v %v", err, r.Problems)
		}
	}
	verify(s)
	s.Close()
	verify(openTest(t, dir, Config{}))
}

// If a commit does fail inside Cayley's transaction (here: Lore's own
// records refuse a corrupted counter), the store replaces its QuadStore so
// Cayley's leftover state never reaches the next commit.
func TestFailedCommitRecovers(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
	})
	// Corrupt the edge summary so the next commit's hook fails after
	// Cayley has buffered its own index entries.
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bNodes)
		rec, err := decodeNodeRec(b.Get([]byte("team/t")))
		if err != nil {
			return err
		}
		rec.Deg = nil
		return b.Put([]byte("team/t"), rec.encode())
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Apply(t.Context(), &graph.Batch{
		Nodes:       []graph.NodeInput{{ID: "person/c", Type: "Person", Properties: graph.Props{"name": "c"}}, {ID: "team/u", Type: "Team", Properties: graph.Props{"name": "u"}}},
		Edges:       []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/c", Label: "memberOf", To: "team/u"}}},
		DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
	})
	if err == nil || !strings.Contains(err.Error(), "would go negative") {
		t.Fatalf("Apply = %v, want the counter failure", err)
	}
	if _, err := s.Repair(t.Context()); err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/d", Type: "Person", Properties: graph.Props{"name": "d"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/d", Label: "memberOf", To: "team/t"}}},
	})
	p, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"team/t"}, Direction: graph.In})
	if got := edgeIDs(p); err != nil || len(got) != 2 || got[0] != "memberOf(person/a,team/t)" || got[1] != "memberOf(person/d,team/t)" {
		t.Errorf("in-edges of team/t = %v (%v), want a's and d's", got, err)
	}
	for _, id := range []graph.ID{"person/c", "team/u"} {
		if _, err := s.Node(t.Context(), id); !errors.Is(err, graph.ErrNotFound) {
			t.Errorf("%s from the failed commit: %v", id, err)
		}
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
}

func edgeIDs(p *graph.EdgePage) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, e := range p.Edges {
		out = append(out, e.ID)
	}
	return out
}

// Re-adding an existing quad leaks Cayley's refcounts; Lore never submits one.
func TestReimportLeavesCountsUnchanged(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	b := func() *graph.Batch {
		return &graph.Batch{
			Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}},
			Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
		}
	}
	apply(t, s, b())
	st1, _ := s.Stats(t.Context())
	log1 := cayleyLog(t, s)
	for range 3 {
		if r := apply(t, s, b()); r.Seq != 0 {
			t.Errorf("an unchanged batch made change-log entry %d", r.Seq)
		}
	}
	st2, _ := s.Stats(t.Context())
	if st1.Nodes != st2.Nodes || st1.Edges != st2.Edges || st1.Quads != st2.Quads || st1.LastSeq != st2.LastSeq || cayleyLog(t, s) != log1 {
		t.Errorf("re-import changed the store: %+v -> %+v, Cayley log %d -> %d", st1, st2, log1, cayleyLog(t, s))
	}
	// Delete once: nothing is left behind (no orphan values in Cayley).
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "person/a"}, {ID: "team/t"}}})
	st3, _ := s.Stats(t.Context())
	if st3.Quads != 0 || st3.Nodes != 0 {
		t.Errorf("after deleting everything: %+v", st3)
	}
	nodes := 0
	it := s.qs.NodesAllIterator().Iterate()
	for it.Next(t.Context()) {
		nodes++
	}
	it.Close()
	if nodes != 0 {
		t.Errorf("Cayley still lists %d values after every quad was deleted", nodes)
	}
}

// Bolt's KV never compacts: 3,000 updates of one property took a node
// read from 94 µs to 4.5 ms. Lore keeps properties out of Cayley, so an
// update writes no quad at all; BenchmarkReadAfterUpdates measures the read.
func TestPropertyUpdatesWriteNoQuads(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/s", Type: "Service", Properties: graph.Props{"name": "s", "tier": 0}}}})
	before := cayleyLog(t, s)
	for i := range 3000 {
		apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/s", Type: "Service", Properties: graph.Props{"name": "s", "tier": i % 4, "description": fmt.Sprint(i)}}}})
	}
	if after := cayleyLog(t, s); after != before {
		t.Errorf("3,000 property updates grew Cayley's log from %d to %d entries", before, after)
	}
	n, err := s.Node(t.Context(), "service/s")
	if err != nil || n.Revision != 3001 || n.Properties["description"] != "2999" {
		t.Errorf("node = %+v, %v", n, err)
	}
}

// Edge churn does leave tombstones in Cayley's index; Compact drops them.
func TestCompactDropsTombstones(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}}}})
	e := graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}
	for range 500 {
		apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: e}}})
		apply(t, s, &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: e}}})
	}
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: e, Properties: graph.Props{"role": "lead"}}}})
	churned := cayleyLog(t, s)
	before := exportString(t, s)
	seq := s.lastSeq
	s.Close()
	st, err := Compact(t.Context(), Config{Path: dir, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Config{})
	if got := cayleyLog(t, s); got >= churned/10 {
		t.Errorf("Cayley's log: %d entries after compaction, %d before", got, churned)
	}
	if after := exportString(t, s); after != before {
		t.Errorf("compaction changed the graph:\n%s\n---\n%s", before, after)
	}
	if s.lastSeq != seq {
		t.Errorf("sequence %d after compaction, want %d", s.lastSeq, seq)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
	t.Logf("compacted %d -> %d bytes", st.BytesBefore, st.BytesAfter)
	// The change log (1,001 entries) dominates this small file, so the
	// sizes are close, and where bbolt places pages varies: allow a few.
	if st.BytesAfter > st.BytesBefore+4*4096 {
		t.Errorf("file grew from %d to %d bytes", st.BytesBefore, st.BytesAfter)
	}
}

func exportString(t testing.TB, s graph.Store) string {
	t.Helper()
	var b strings.Builder
	if _, err := graph.Export(t.Context(), s, &b, graph.NDJSON); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Cayley's own bbolt open has no lock timeout: a second process blocks forever.
func TestSecondOpenFailsFast(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, Config{})
	start := time.Now()
	_, err := Open(t.Context(), Config{Path: dir})
	if !errors.Is(err, graph.ErrLocked) || !strings.Contains(err.Error(), "store locked") || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second Open = %v, want a lock error naming the holder", err)
	}
	// The lock timeout is 1s; Cayley's own open would wait for ever. The
	// bound leaves room for a busy machine (4.3s was seen at a load
	// average of 12).
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("second Open took %v, want about the lock timeout (1s)", d)
	}
}

// quad.Time hashes without sub-second precision: values 0.3 s apart merged.
func TestSubsecondTimesStayDistinct(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	t1 := time.Date(2026, 1, 2, 12, 0, 0, 100_000_000, time.UTC)
	t2 := t1.Add(300 * time.Millisecond)
	apply(t, s, &graph.Batch{Restore: true, Nodes: []graph.NodeInput{
		{ID: "doc/a", Type: "Document", Properties: graph.Props{"title": t1.Format(time.RFC3339Nano)}, CreatedAt: t1, UpdatedAt: t1},
		{ID: "doc/b", Type: "Document", Properties: graph.Props{"title": t2.Format(time.RFC3339Nano)}, CreatedAt: t2, UpdatedAt: t2},
	}})
	nodes, _ := s.Nodes(t.Context(), []graph.ID{"doc/a", "doc/b"})
	for i, want := range []time.Time{t1, t2} {
		if n := nodes[i]; !n.CreatedAt.Equal(want) || n.Properties["title"] != want.Format(time.RFC3339Nano) {
			t.Errorf("%s: createdAt %v, title %v; want %v", n.ID, n.CreatedAt, n.Properties["title"], want)
		}
	}
	if got := graph.NormalizeTime(time.Date(2026, 1, 2, 12, 0, 0, 123_456_789, time.FixedZone("x", 3600))); !got.Equal(time.Date(2026, 1, 2, 11, 0, 0, 123_456_000, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("NormalizeTime = %v", got)
	}
}

func TestModelMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}})
	s.Close()
	small := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"Thing":{"x-lore-node":{},"type":"object"}}}`
	m, err := loadModelString(small)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), Config{Path: dir, Model: m})
	if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "node type Topic") {
		t.Errorf("Open with a model lacking Topic = %v", err)
	}
	// The store still opens with its own model.
	s = openTest(t, dir, Config{})
	if _, ok := s.Model().Node("Topic"); !ok {
		t.Error("the stored model was lost")
	}
}

func TestCursorsAreStable(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: append(topics("a", 250), graph.NodeInput{ID: "team/t", Type: "Team", Properties: graph.Props{"name": "t"}})})
	var b graph.Batch
	for i := range 250 {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("person/p%03d", i)), Type: "Person", Properties: graph.Props{"name": fmt.Sprintf("p%03d", i), "role": fmt.Sprintf("p%03d", i)}})
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(fmt.Sprintf("person/p%03d", i)), Label: "memberOf", To: "team/t"}})
	}
	apply(t, s, &b)
	// Page through the in-edges of team/t while edges are added: no
	// duplicate, no gap among the edges that existed throughout.
	seen := map[string]bool{}
	q := graph.EdgeQuery{Nodes: []graph.ID{"team/t"}, Direction: graph.In, Page: graph.Page{Limit: 40}}
	for i := 0; ; i++ {
		p, err := s.Edges(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Edges {
			if seen[e.ID] {
				t.Fatalf("edge %s listed twice", e.ID)
			}
			seen[e.ID] = true
		}
		if p.Next == "" {
			break
		}
		q.After = p.Next
		id := graph.ID(fmt.Sprintf("person/late%d", i))
		apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: id, Type: "Person", Properties: graph.Props{"name": "late"}}}, Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: id, Label: "leads", To: "team/t"}}}})
	}
	for i := range 250 {
		if id := fmt.Sprintf("memberOf(person/p%03d,team/t)", i); !seen[id] {
			t.Errorf("edge %s missed", id)
		}
	}
	// Node pages by type and index lookups page without gaps too.
	var ids []graph.ID
	p := graph.Page{Limit: 33}
	for {
		page, err := s.NodesByType(t.Context(), "Person", p)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range page.Nodes {
			ids = append(ids, n.ID)
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	persons, _ := s.Stats(t.Context())
	if int64(len(ids)) != persons.NodeTypes["Person"] {
		t.Errorf("paged %d persons, the store has %d", len(ids), persons.NodeTypes["Person"])
	}
	var looked []graph.ID
	iq := graph.IndexQuery{Type: "Person", Property: "role", Min: "p100", Max: "p199", Page: graph.Page{Limit: 7}}
	for {
		page, err := s.Lookup(t.Context(), iq)
		if err != nil {
			t.Fatal(err)
		}
		looked = append(looked, page.IDs...)
		if page.Next == "" {
			break
		}
		iq.After = page.Next
	}
	if len(looked) != 100 || looked[0] != "person/p100" || looked[99] != "person/p199" {
		t.Errorf("range lookup returned %d IDs: %v…", len(looked), looked[:min(3, len(looked))])
	}
}

func TestLookup(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "adr/1", Type: "Decision", Properties: graph.Props{"title": "a", "status": "accepted", "date": "2020-01-01", "number": 1}},
		{ID: "adr/2", Type: "Decision", Properties: graph.Props{"title": "b", "status": "superseded", "date": "2021-06-01", "number": 2}},
		{ID: "adr/3", Type: "Decision", Properties: graph.Props{"title": "c", "status": "accepted", "date": "2022-03-01", "number": 10}},
	}})
	for _, tt := range []struct {
		q    graph.IndexQuery
		want string
	}{
		{graph.IndexQuery{Property: "status", Eq: "accepted"}, "adr/1 adr/3"},
		{graph.IndexQuery{Property: "number", Min: 2}, "adr/2 adr/3"},
		{graph.IndexQuery{Property: "number", Min: 1, MinExclusive: true, Max: 10, MaxExclusive: true}, "adr/2"},
		{graph.IndexQuery{Property: "number", Max: 2}, "adr/1 adr/2"},
		{graph.IndexQuery{Property: "date", Min: "2021-01-01", Max: "2021-12-31"}, "adr/2"},
		{graph.IndexQuery{Property: "number", Eq: 10}, "adr/3"},
	} {
		tt.q.Type = "Decision"
		p, err := s.Lookup(t.Context(), tt.q)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range p.IDs {
			got = append(got, string(id))
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("Lookup(%+v) = %v, want %s", tt.q, got, tt.want)
		}
	}
	if _, err := s.Lookup(t.Context(), graph.IndexQuery{Type: "Decision", Property: "context", Eq: "x"}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("lookup on an unindexed property: %v", err)
	}
}

func loadModelString(s string) (*schema.Model, error) { return schema.Load([]byte(s)) }

// A bulk load defers its index entries; they are flushed in key order as
// they pile up and at the end, and a load that dies leaves a store whose
// indexes Open rebuilds.
func TestBulkLoadDefersIndexes(t *testing.T) {
	cfg := Config{DeferAfter: -1, DeferFlush: 700}
	var data strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	for i := 1; i < 1500; i++ {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d","kind":"guide"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i-1)
	}
	verify := func(s *Store) {
		t.Helper()
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("check: %v %v", err, r.Problems)
		}
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "topic number 1234"}, graph.Limits{})
		if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t1234" {
			t.Errorf("search after the bulk load: %+v, %v", res, err)
		}
		n, _ := s.Node(t.Context(), "topic/t7")
		if len(n.Edges) != 1 || n.Edges[0].Direction != graph.In || n.Edges[0].Count != 1 {
			t.Errorf("edge counts of topic/t7: %+v", n.Edges)
		}
	}

	s := openTest(t, t.TempDir(), cfg)
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 200}); err != nil {
		t.Fatal(err)
	}
	verify(s)

	// A load that dies before its final flush.
	dir := t.TempDir()
	s = openTest(t, dir, cfg)
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	_ = end // never called: the process "dies"
	b := &graph.Batch{}
	for line := range strings.Lines(data.String()) {
		addLine(t, b, line)
		if b.Len() == 500 {
			apply(t, s, b)
			b = &graph.Batch{}
		}
	}
	apply(t, s, b)
	s.deferred = nil // what a dead process leaves: entries never written
	s.Close()
	verify(openTest(t, dir, cfg))
}

// Edge summaries collected by a bulk load build up across many deferred
// flushes: every node gains in- and out-edges in batches far apart, and
// each flush must add to what the one before wrote.
func TestBulkLoadSummariesAcrossFlushes(t *testing.T) {
	cfg := Config{DeferAfter: -1, DeferFlush: 300}
	const topics, docs = 400, 1200
	var data strings.Builder
	for i := range topics {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", i, i)
	}
	for i := range docs {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d","kind":"guide"}}`+"\n", i, i)
	}
	// Round r links every doc to a topic spread over all of them (so that
	// consecutive batches touch the same topics): each topic ends
	// with 3*docs/topics in-edges, each doc with 3 out-edges.
	for r := range 3 {
		for i := range docs {
			fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, (i*131+r*17)%topics)
		}
	}
	// Renaming topics after their index entries were deferred: the new
	// search tokens replace the old, whether or not a flush came between.
	// The second renaming deletes index entries the first one put.
	for _, name := range []string{"renamed", "final"} {
		for i := range topics {
			fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"%s %d"}}`+"\n", i, name, i)
		}
	}
	s := openTest(t, t.TempDir(), cfg)
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 100}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "final 17"}, graph.Limits{})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t17" {
		t.Errorf("search for a renamed topic: %+v, %v", res, err)
	}
	if res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "renamed"}, graph.Limits{}); err != nil || len(res.Hits) != 0 {
		t.Errorf("search for a name no longer held: %d hits, %v", len(res.Hits), err)
	}
	for id, want := range map[graph.ID]graph.EdgeCount{
		"topic/t5": {Label: "about", Direction: graph.In, Count: 3 * docs / topics},
		"doc/d5":   {Label: "about", Direction: graph.Out, Count: 3},
	} {
		n, err := s.Node(t.Context(), id)
		if err != nil || len(n.Edges) != 1 || n.Edges[0] != want {
			t.Errorf("%s: edges %+v (%v), want [%+v]", id, n.Edges, err, want)
		}
	}
}

// Stores of older layouts are upgraded when opened: version 1 kept
// in-edge counters only, one bDeg entry per node and label, and counted
// out-edges from the records; version 2 kept one summary per node in bDeg.
// Both had node records without a summary. Open rewrites the records with
// their summaries and empties bDeg; a crash before it finishes leaves the
// mark for the next Open.
func TestUpgradeFromOlderLayouts(t *testing.T) {
	for _, version := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("version %d", version), func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, Config{})
			apply(t, s, &graph.Batch{
				Nodes: []graph.NodeInput{
					{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}},
					{ID: "person/b", Type: "Person", Properties: graph.Props{"name": "b"}},
					{ID: "team/core", Type: "Team", Properties: graph.Props{"name": "core"}},
					{ID: "service/api", Type: "Service", Properties: graph.Props{"name": "api"}},
				},
				Edges: []graph.EdgeInput{
					{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/core"}},
					{EdgeKey: graph.EdgeKey{From: "person/b", Label: "memberOf", To: "team/core"}},
					{EdgeKey: graph.EdgeKey{From: "team/core", Label: "owns", To: "service/api"}},
				},
			})
			want, err := s.Node(t.Context(), "team/core")
			if err != nil || len(want.Edges) != 2 {
				t.Fatalf("team/core: %+v %v", want, err)
			}
			// Rewrite the records and bDeg as the old layout kept them.
			err = s.db.DB().Update(func(tx *bbolt.Tx) error {
				nodes := tx.Bucket(bNodes)
				old := map[string][]byte{}
				err := nodes.ForEach(func(k, v []byte) error {
					r, err := decodeNodeRec(v)
					if err != nil {
						return err
					}
					b := []byte{1}
					b = binary.AppendUvarint(b, uint64(len(r.Type)))
					b = append(b, r.Type...)
					b = binary.AppendVarint(b, r.Created)
					b = binary.AppendVarint(b, r.Updated)
					b = binary.AppendUvarint(b, uint64(r.Rev))
					old[string(k)] = append(b, r.Props...)
					return nil
				})
				if err != nil {
					return err
				}
				for k, v := range old {
					if err := nodes.Put([]byte(k), v); err != nil {
						return err
					}
				}
				deg := tx.Bucket(bDeg)
				counts := map[string]int64{}
				_ = tx.Bucket(bEdges).ForEach(func(k, _ []byte) error {
					e := graph.EdgeKeyFromBytes(k)
					counts[string(degKey(e.To, 'i', e.Label))]++
					if version == 2 {
						counts[string(degKey(e.From, 'o', e.Label))]++
					}
					return nil
				})
				if version == 1 {
					for k, n := range counts {
						if err := deg.Put([]byte(k), u64(uint64(n))); err != nil {
							return err
						}
					}
				} else {
					for k, v := range summaries(counts) {
						if err := deg.Put([]byte(k), v); err != nil {
							return err
						}
					}
				}
				return tx.Bucket(bMeta).Put([]byte("version"), u64(version))
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			s = openTest(t, dir, Config{})
			got, err := s.Node(t.Context(), "team/core")
			if err != nil || !slices.Equal(got.Edges, want.Edges) {
				t.Errorf("after the upgrade team/core has edges %+v (%v), want %+v", got.Edges, err, want.Edges)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Errorf("check after the upgrade: %v %v", err, r.Problems)
			}
			_ = s.db.DB().View(func(tx *bbolt.Tx) error {
				if v := tx.Bucket(bMeta).Get([]byte("version")); binary.BigEndian.Uint64(v) != storeVersion {
					t.Errorf("version after the upgrade: %d", binary.BigEndian.Uint64(v))
				}
				if v := tx.Bucket(bNodes).Get([]byte("person/a")); v[0] != nodeRecordVersion {
					t.Errorf("record version after the upgrade: %d", v[0])
				}
				if n := tx.Bucket(bDeg).Stats().KeyN; n != 0 {
					t.Errorf("bDeg holds %d entries after the upgrade", n)
				}
				return nil
			})
		})
	}
}

// Deferred index writes of one key keep their order: a search token put,
// deleted and put again by three batches of one bulk load is there at the
// end.
func TestBulkLoadKeepsWriteOrder(t *testing.T) {
	cfg := Config{DeferAfter: -1}
	s := openTest(t, t.TempDir(), cfg)
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	for _, name := range []string{"alpha", "beta", "alpha"} {
		apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": name}}}})
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "alpha"}, graph.Limits{})
	if err != nil || len(res.Hits) != 1 {
		t.Errorf("search for alpha: %+v, %v", res, err)
	}
}

// valueData loads 3,000 nodes and 3,000 keyed edges by import, then one
// node and edge by the one-batch path, and returns the values Cayley holds.
func valueData(t *testing.T, s *Store) []quad.Value {
	t.Helper()
	var data strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&data, `{"kind":"node","id":"entity/e%d","type":"Entity","properties":{"name":"e%d","entityType":"thing"}}`+"\n", i, i)
	}
	for i := range 3000 {
		fmt.Fprintf(&data, `{"kind":"edge","from":"entity/e%d","label":"relation","to":"entity/e%d","key":"rel_%d"}`+"\n", i, (i*7+1)%3000, i%50)
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "topic/new", Type: "Topic", Properties: graph.Props{"name": "new"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "entity/e1", Label: "relation", To: "entity/e2", Key: "brand_new"}}},
	})
	var vals []quad.Value
	for i := range 3000 {
		vals = append(vals, nodeIRI(graph.ID(fmt.Sprintf("entity/e%d", i))))
	}
	for i := range 50 {
		vals = append(vals, keyIRI(fmt.Sprintf("rel_%d", i)))
	}
	return append(vals, nodeIRI("topic/new"), keyIRI("brand_new"), predType, typeIRI("Entity"), typeIRI("Topic"), labelIRI("relation"))
}

// checkValueLayout fails unless Cayley's values are where store layout 11
// keeps them: the ID and reference count of each value in one record under
// its hash in bValues, nothing else there, and no bucket of the older
// layouts left (the counts' bucket of layouts 4 to 10, the value buckets of
// layouts 3 and before).
func checkValueLayout(t *testing.T, s *Store, vals []quad.Value) {
	t.Helper()
	want := map[string]bool{}
	for _, v := range vals {
		h := refs.HashOf(v)
		want[string(h[:])] = true
	}
	err := s.read(func(tx *bbolt.Tx) error {
		if err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			if cayleyValueBucket(name) {
				t.Errorf("value bucket %q of the old layout is still in the store", name)
			}
			return nil
		}); err != nil {
			return err
		}
		if tx.Bucket(cayleyOPS) != nil {
			t.Errorf("bucket %q, Cayley's quad index of store layouts 10 and before, is still in the store", cayleyOPS)
		}
		if tx.Bucket(bOldCayleyLog) != nil {
			t.Errorf("bucket %q, Cayley's log of store layouts 10 and before, is still in the store", bOldCayleyLog)
		}
		if tx.Bucket(bValueRefs) != nil {
			t.Errorf("bucket %q of store layouts 4 to 10 is still in the store", bValueRefs)
		}
		got := map[string]bool{}
		err := tx.Bucket(bValues).ForEach(func(k, v []byte) error {
			got[string(k)] = true
			id, err := valuePart(v, 'v')
			count, _ := valuePart(v, 'n')
			if err != nil || id == nil || count == nil {
				t.Errorf("value %x: record %x (%v), want an ID and a count", k, v, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !maps.Equal(got, want) {
			t.Errorf("bucket %q holds %d keys; the %d values hash to %d, and they differ", bValues, len(got), len(vals), len(want))
		}
		if v := tx.Bucket(bMeta).Get([]byte("version")); binary.BigEndian.Uint64(v) != storeVersion {
			t.Errorf("store layout version %d, want %d", binary.BigEndian.Uint64(v), storeVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	// Reading edges resolves values through Cayley's lookups.
	n, err := s.Node(t.Context(), "entity/e1")
	if err != nil {
		t.Fatal(err)
	}
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"entity/e1"}})
	if err != nil || len(page.Edges) != 2 {
		t.Errorf("entity/e1 has out-edges %+v (%v), want 2 (summary %+v)", page, err, n.Edges)
	}
}

// Cayley's values live in one bucket (see hookKV), and nowhere else.
func TestCayleyValuesLiveInOneBucket(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	checkValueLayout(t, s, valueData(t, s))
}

// The adapter maps only keys that start with their bucket's hash bytes,
// as Cayley's do; any other is refused, never stored where another key
// might meet it.
func TestValueKeyMapping(t *testing.T) {
	h := refs.HashOf(quad.IRI("n:topic/x"))
	got, part, err := physical(hkv.Key{{'v', h[0], h[1]}, h[:]})
	if err != nil || !bytes.Equal(got[0], bValues) || !bytes.Equal(got[1], h[:]) || part != 'v' {
		t.Errorf("value ID key maps to %q part %q, %v", got, part, err)
	}
	got, part, err = physical(hkv.Key{{'n', h[0], h[1]}, h[:]})
	if err != nil || !bytes.Equal(got[0], bValues) || !bytes.Equal(got[1], h[:]) || part != 'n' {
		t.Errorf("reference count key maps to %q part %q, %v", got, part, err)
	}
	if _, _, err := physical(hkv.Key{{'v', h[0] + 1, h[1]}, h[:]}); err == nil {
		t.Error("a key in a bucket its hash does not name was mapped")
	}
	if got, part, err := physical(hkv.Key{[]byte("log"), []byte{1}}); err != nil || string(got[0]) != "log" || part != 0 {
		t.Errorf("a log key maps to %q part %q, %v", got, part, err)
	}
}

// adapterAgainstAMap makes rounds write transactions of up to writes
// random puts and deletes each (next gives one: a key of keys, and a
// value, or nil to delete it) through s's KV adapter, as Cayley makes
// them, and reads every key of keys back in each transaction and, after
// its commit, in a read transaction, against a map, which it returns
// (keyed by mapKey). A transaction is closed before the test fails, so that
// it can end (the store's Close waits for its writer).
func adapterAgainstAMap(t *testing.T, s *Store, rng *rand.Rand, rounds, writes int, keys []hkv.Key, next func() (hkv.Key, []byte)) map[string][]byte {
	t.Helper()
	want := map[string][]byte{}
	check := func(tx hkv.Tx) error {
		for _, k := range keys {
			got, err := tx.Get(t.Context(), k)
			if w, ok := want[mapKey(k)]; ok != (err == nil) || ok && !bytes.Equal(got, w) || !ok && !errors.Is(err, hkv.ErrNotFound) {
				return fmt.Errorf("%q %x: %x, %v; want %x (held: %v)", k[0], k[1], got, err, w, ok)
			}
		}
		return nil
	}
	for round := range rounds {
		tx, err := s.kv.Tx(t.Context(), true)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(writes) {
			k, v := next()
			if v == nil {
				err = tx.Del(t.Context(), k)
				delete(want, mapKey(k))
			} else {
				err = tx.Put(t.Context(), k, v)
				want[mapKey(k)] = v
			}
			if err != nil {
				break
			}
		}
		if err = cmp.Or(err, check(tx)); err != nil {
			tx.Close()
			t.Fatalf("round %d: %v", round, err)
		}
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		rtx, err := s.kv.Tx(t.Context(), false)
		if err != nil {
			t.Fatal(err)
		}
		err = check(rtx)
		rtx.Close()
		if err != nil {
			t.Fatalf("round %d, after the commit: %v", round, err)
		}
	}
	return want
}

func mapKey(k hkv.Key) string { return string(k[0]) + "\x00" + string(k[1]) }

// A value's ID and count share one record (valueRecord): random puts and
// deletes of either, as Cayley makes them, through the adapter's write
// transactions, read back through its write and read transactions as two
// separate keys would be, against a map of each. A record with neither is
// gone from the bucket.
func TestValueRecordsAgainstTwoMaps(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	rng := rand.New(rand.NewPCG(11, 12))
	var hashes []refs.ValueHash
	var keys []hkv.Key
	key := func(part byte, h refs.ValueHash) hkv.Key { return hkv.Key{{part, h[0], h[1]}, bytes.Clone(h[:])} }
	for i := range 6 {
		h := refs.HashOf(quad.IRI(fmt.Sprintf("n:x/%d", i)))
		hashes = append(hashes, h)
		keys = append(keys, key('v', h), key('n', h))
	}
	want := adapterAgainstAMap(t, s, rng, 40, 8, keys, func() (hkv.Key, []byte) {
		k := key([]byte{'v', 'n'}[rng.IntN(2)], hashes[rng.IntN(len(hashes))])
		if rng.IntN(3) == 0 {
			return k, nil
		}
		return k, binary.AppendUvarint(nil, uint64(1+rng.IntN(1<<(7*rng.IntN(4)+1))))
	})
	err := s.read(func(tx *bbolt.Tx) error {
		for _, h := range hashes {
			_, v := want[mapKey(key('v', h))]
			_, n := want[mapKey(key('n', h))]
			if held := tx.Bucket(bValues).Get(h[:]) != nil; held != (v || n) {
				t.Errorf("value %x: a record %v, an ID %v, a count %v", h[:2], held, v, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// What Cayley never writes is refused, not stored.
	tx, err := s.kv.Tx(t.Context(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	for _, bad := range [][]byte{{0}, {0x80}, {1, 2}} {
		if err := tx.Put(t.Context(), key('v', hashes[0]), bad); err == nil {
			t.Errorf("the adapter stored the value ID %x", bad)
		}
	}
}

// Cayley's log is kept in blocks (bCayleyLog): random puts, replacements
// and deletes of primitives by ID, as Cayley makes them, through the
// adapter's write transactions, read back through its write and read
// transactions, against a map; every bbolt key is a block's base, and a
// block left empty is gone.
func TestLogBlocksAgainstAMap(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	rng := rand.New(rand.NewPCG(13, 14))
	const first = 1 << 40 // above the IDs Cayley gives out here
	key := func(id uint64) hkv.Key { return hkv.Key{[]byte("log"), binary.BigEndian.AppendUint64(nil, id)} }
	var keys []hkv.Key
	for id := uint64(first); id < first+3*logSpan; id++ {
		keys = append(keys, key(id))
	}
	maps := adapterAgainstAMap(t, s, rng, 60, 40, keys, func() (hkv.Key, []byte) {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(3) == 0 {
			return k, nil
		}
		v := make([]byte, rng.IntN(300)) // some longer than a one-byte uvarint
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		return k, v
	})
	want := map[uint64][]byte{}
	for _, k := range keys {
		if v, ok := maps[mapKey(k)]; ok {
			want[binary.BigEndian.Uint64(k[1])] = v
		}
	}
	err := s.read(func(tx *bbolt.Tx) error {
		held := map[uint64]bool{}
		for id := range want {
			held[logBase(id)] = true
		}
		return tx.Bucket(bCayleyLog).ForEach(func(k, v []byte) error {
			base := binary.BigEndian.Uint64(k)
			if base < first {
				return nil
			}
			if base != logBase(base) || !held[base] || len(v) == 0 {
				t.Errorf("bbolt key %d (a base: %v), %d bytes, holding what the map holds: %v", base-first, base == logBase(base), len(v), held[base])
			}
			delete(held, base)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Cayley's [O,P,S] index is kept in blocks (bOPS): random puts,
// replacements and deletes of entries, as Cayley makes them, through the
// adapter's write transactions, in groups large enough to split blocks by
// count and by bytes, read back through its write and read transactions,
// against a map; each block holds one group's entries, in order, within
// its limits, and the blocks of a group do not overlap.
func TestOPSBlocksAgainstAMap(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	rng := rand.New(rand.NewPCG(15, 16))
	const first = 1 << 40 // above the IDs Cayley gives out here
	opsKey := func(o, p, sub uint64) []byte {
		k := binary.BigEndian.AppendUint64(nil, first+o)
		k = binary.BigEndian.AppendUint64(k, first+p)
		return binary.BigEndian.AppendUint64(k, first+sub)
	}
	var keys []hkv.Key
	for o := range 3 {
		for p := range 2 {
			for sub := range 150 {
				keys = append(keys, hkv.Key{[]byte("ops"), opsKey(uint64(o), uint64(p), uint64(sub*sub))})
			}
		}
	}
	maps := adapterAgainstAMap(t, s, rng, 40, 100, keys, func() (hkv.Key, []byte) {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(4) == 0 {
			return k, nil
		}
		var v []byte
		for range 1 + rng.IntN([]int{2, 200}[rng.IntN(2)]) { // some lists fill a block alone
			v = binary.AppendUvarint(v, rng.Uint64N(1<<40))
		}
		return k, v
	})
	want := map[string][]byte{}
	for _, k := range keys {
		if v, ok := maps[mapKey(k)]; ok {
			want[string(k[1])] = v
		}
	}
	err := s.read(func(tx *bbolt.Tx) error {
		var last []byte
		n := 0
		err := tx.Bucket(bOPS).ForEach(func(bk, bv []byte) error {
			if binary.BigEndian.Uint64(bk) < first {
				return nil
			}
			es, err := decodeOPSBlock(bk, bv)
			if err != nil {
				return err
			}
			if len(es) > opsBlockKeys || len(es) > 1 && len(bv) > opsBlockBytes {
				t.Errorf("block %x: %d entries, %d bytes", bk, len(es), len(bv))
			}
			for _, e := range es {
				k := binary.BigEndian.AppendUint64(bytes.Clone(bk[:opsGroupLen]), e.s)
				if last != nil && bytes.Compare(k, last) <= 0 {
					t.Errorf("entry %x after %x", k, last)
				}
				if !bytes.Equal(want[string(k)], e.list) {
					t.Errorf("entry %x: %x, the map holds %x", k, e.list, want[string(k)])
				}
				last, n = k, n+1
			}
			return nil
		})
		if n != len(want) {
			t.Errorf("the blocks hold %d entries, the map %d", n, len(want))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Opening a store of layout 3 moves its values out of Cayley's 131,072
// buckets, in several transactions; a store whose move was interrupted
// (some buckets moved, into the two buckets of layouts 4 to 10, the
// version not yet changed) finishes it; a store of layout 10 moves its
// counts into its values' records. Each moves Cayley's log, a key per
// primitive before layout 11, into blocks, in several transactions, and
// finishes a move that was interrupted. Each way the graph reads back the
// same.
func TestOpenMovesValuesOutOfOldBuckets(t *testing.T) {
	for _, c := range []struct {
		name     string
		layout   uint64
		movedBy  func(k []byte) bool // whether layout 3's buckets hold the value
		inBlocks int                 // the primitives an interrupted move of the log left in blocks
	}{
		{"layout 3", 3, func([]byte) bool { return true }, 0},
		{"layout 3, move interrupted", 3, func(k []byte) bool { return k[0]%2 == 0 }, 0},
		{"layout 10", 10, func([]byte) bool { return false }, 0},
		{"layout 10, log move interrupted", 10, func([]byte) bool { return false }, 45},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, Config{})
			vals := valueData(t, s)
			before := exportString(t, s)
			logBefore := cayleyLog(t, s)
			dumpBefore := cayleyDump(t, s)
			// Put the values back where the old layout kept them: in
			// layout 3's buckets, or layout 4's IDs and counts.
			err := s.db.DB().Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket(bValues)
				counts, err := tx.CreateBucket(bValueRefs)
				if err != nil {
					return err
				}
				var keys [][]byte
				_ = b.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
				for _, k := range keys {
					rec := bytes.Clone(b.Get(k))
					id, _ := valuePart(rec, 'v')
					count, _ := valuePart(rec, 'n')
					if !c.movedBy(k) {
						if err := b.Put(k, id); err != nil {
							return err
						}
						if err := counts.Put(k, count); err != nil {
							return err
						}
						continue
					}
					for _, p := range []struct {
						letter byte
						v      []byte
					}{{'v', id}, {'n', count}} {
						old, err := tx.CreateBucketIfNotExists([]byte{p.letter, k[0], k[1]})
						if err != nil {
							return err
						}
						if err := old.Put(k, p.v); err != nil {
							return err
						}
					}
					if err := b.Delete(k); err != nil {
						return err
					}
				}
				// The log, a key per primitive, but those a move left in
				// blocks.
				blocks := tx.Bucket(bCayleyLog)
				old, err := tx.CreateBucket(bOldCayleyLog)
				if err != nil {
					return err
				}
				type prim struct {
					id uint64
					v  []byte
				}
				var prims []prim
				err = eachLogPrimitive(blocks, func(id uint64, v []byte) error {
					prims = append(prims, prim{id, bytes.Clone(v)})
					return nil
				})
				if err != nil {
					return err
				}
				if err := tx.DeleteBucket(bCayleyLog); err != nil {
					return err
				}
				if blocks, err = tx.CreateBucket(bCayleyLog); err != nil {
					return err
				}
				a := &logAppender{b: blocks}
				for i, p := range prims {
					if i < c.inBlocks {
						err = a.add(p.id, p.v)
					} else {
						err = old.Put(binary.BigEndian.AppendUint64(nil, p.id), p.v)
					}
					if err != nil {
						return err
					}
				}
				if err := a.flush(); err != nil {
					return err
				}
				// The quad index, a key per entry, but the first groups,
				// which an interrupted move left in blocks.
				type entry struct{ k, v []byte }
				var entries []entry
				err = eachOPSEntry(tx.Bucket(bOPS), func(k, v []byte) error {
					entries = append(entries, entry{bytes.Clone(k), bytes.Clone(v)})
					return nil
				})
				if err != nil {
					return err
				}
				if err := tx.DeleteBucket(bOPS); err != nil {
					return err
				}
				opsBlocksLeft, err := tx.CreateBucket(bOPS)
				if err != nil {
					return err
				}
				oldOPS, err := tx.CreateBucket(cayleyOPS)
				if err != nil {
					return err
				}
				groups := 0
				for i, e := range entries {
					if i == 0 || !bytes.Equal(e.k[:opsGroupLen], entries[i-1].k[:opsGroupLen]) {
						groups++
					}
					if c.inBlocks > 0 && groups <= 3 {
						err = encodeOPSBlocks(e.k[:opsGroupLen], []opsEntry{{s: binary.BigEndian.Uint64(e.k[opsGroupLen:]), list: e.v}}, opsBlocksLeft.Put)
					} else {
						err = oldOPS.Put(e.k, e.v)
					}
					if err != nil {
						return err
					}
				}
				return tx.Bucket(bMeta).Put([]byte("version"), u64(c.layout))
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			s = openTest(t, dir, Config{UpgradeChunk: 50}) // several transactions
			checkValueLayout(t, s, vals)
			if after := exportString(t, s); after != before {
				t.Error("the graph exports differently after the move")
			}
			if n := cayleyLog(t, s); n != logBefore {
				t.Errorf("the log holds %d primitives after the move, %d before", n, logBefore)
			}
			if dump := cayleyDump(t, s); !slices.Equal(dump, dumpBefore) {
				t.Errorf("Cayley's part after the move:\n%s\nbefore:\n%s", strings.Join(dump, "\n"), strings.Join(dumpBefore, "\n"))
			}
			// Cayley's writes go on from the records moved.
			apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "entity/e1"}}})
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check after a delete: %v %v", err, r.Problems)
			}
		})
	}
}

// A bulk load writes each commit's index entries with it until it has
// written Config.DeferAfter elements, and defers them from then on: the batches
// committed before are searchable while the load runs, the later ones once
// it ends; and the indexes and summaries are whole at the end.
func TestBulkLoadDefersPastThreshold(t *testing.T) {
	// A load that keeps its file defers past the threshold; one that
	// rewrites it defers from the first element (see Config.DeferAfter).
	for _, tt := range []struct {
		keep bool
		want []bool // after each batch: topic/t5 (batch 1) found, doc/d80 (batch 3) found
	}{
		{true, []bool{true, false, true, false, true, false, true, false}},
		{false, []bool{false, false, false, false, false, false, false, false}},
	} {
		t.Run(fmt.Sprintf("keep=%v", tt.keep), func(t *testing.T) {
			testBulkLoadDefers(t, Config{DeferAfter: 250, KeepLoadFile: tt.keep}, tt.want)
		})
	}
}

func testBulkLoadDefers(t *testing.T, cfg Config, want []bool) {
	var data strings.Builder
	for i := range 100 { // 300 elements, then 100 edges: batches of 100 pass 250 at the third
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc number %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i)
	}
	for i := range 100 { // each topic's second edge comes after the threshold
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, (i+1)%100)
	}
	s := openTest(t, t.TempDir(), cfg)
	found := func(id graph.ID, text string) bool {
		t.Helper()
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: text}, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Hits) > 0 && res.Hits[0].Node.ID == id
	}
	var during []bool
	progress := func(graph.ImportStats) {
		during = append(during, found("topic/t5", "topic number 5"), found("doc/d80", "doc number 80"))
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 100, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(during, want) {
		t.Errorf("searchable during the load: %v, want %v", during, want)
	}
	if !found("doc/d80", "doc number 80") || !found("topic/t5", "topic number 5") {
		t.Error("a node is not searchable after the load")
	}
	n, err := s.Node(t.Context(), "topic/t7") // one edge written directly, one deferred
	if err != nil || len(n.Edges) != 1 || n.Edges[0].Count != 2 {
		t.Fatalf("topic/t7: %+v, %v", n, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}

// The last batch of a bulk load writes the deferred index entries and
// clears the store's mark, so the load needs no transaction of its own
// after it, and the next Open has nothing to rebuild.
func TestBulkLoadLastBatchWritesDeferred(t *testing.T) {
	cfg := Config{DeferAfter: -1}
	dir := t.TempDir()
	s := openTest(t, dir, cfg)
	var data strings.Builder
	for i := range 300 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	st, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var marked bool
	s.read(func(tx *bbolt.Tx) error { marked = tx.Bucket(bMeta).Get(metaDeferred) != nil; return nil })
	if marked {
		t.Error("the store is still marked deferred after the load")
	}
	if st.Batches != 3 {
		t.Errorf("%d batches, want 3", st.Batches)
	}
	res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "topic number 42"}, graph.Limits{})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t42" {
		t.Errorf("search after the load: %+v, %v", res, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}

// A partial bulk load cannot write its deferred entries: either the last
// batch's commit, which carries them, fails, or the flush after the last
// batch does. The load rebuilds them from the records before it returns,
// so the open store's indexes hold the batches that did commit.
func TestBulkLoadFailedFlushRebuilds(t *testing.T) {
	cfg := Config{DeferAfter: -1}
	data := topicsAndDocs()
	for _, tc := range []struct{ name, tail string }{
		// 300 elements in batches of 100: the input ends with a full
		// batch, and the flush after it writes the deferred entries.
		{"flush", ""},
		// One more element: a last batch of one, which carries them.
		{"last batch", `{"kind":"node","id":"topic/last","type":"Topic","properties":{"name":"last"}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), cfg)
			batches := 0
			progress := func(graph.ImportStats) {
				if batches++; batches == 1 {
					// Between commits: the summary of a node whose
					// edges the load tallies cannot be read, so folding
					// the tally into the records fails.
					spoilSummary(t, s, "topic/t5")
				}
			}
			st, err := graph.Import(t.Context(), s, strings.NewReader(data+tc.tail), graph.ImportOptions{BatchSize: 100, Progress: progress, Partial: true})
			if err == nil || !strings.Contains(err.Error(), `"topic/t5": edge summary does not decode`) {
				t.Fatalf("import over a corrupt summary: %v", err)
			}
			if want := int64(3); st.Batches != want {
				t.Errorf("%d batches committed, want %d", st.Batches, want)
			}
			res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "topic number 42"}, graph.Limits{})
			if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t42" {
				t.Errorf("search for a node of a committed batch: %+v, %v", res, err)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check: %v %v", err, r.Problems)
			}
		})
	}
}

// topicsAndDocs is an import of 100 topics, then 100 documents each about
// one of them.
func topicsAndDocs() string {
	var data strings.Builder
	for i := range 100 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	for i := range 100 {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i)
	}
	return data.String()
}

// spoilSummary gives node id's record an edge summary that does not decode.
func spoilSummary(t *testing.T, s *Store, id graph.ID) {
	t.Helper()
	if d := s.deferred; d != nil && d.nodes != nil {
		// The record may wait in the load's runs: a run after them spoils it.
		recs := make([]*nodeRec, 1)
		if err := d.nodes.overlay([]graph.ID{id}, recs); err != nil {
			t.Fatal(err)
		}
		if rec := recs[0]; rec != nil {
			rec.Deg = []byte{0xff}
			d.nodes.add([]kv{{[]byte(id), append([]byte{runPut}, rec.encode()...)}}, []string{rec.Type})
			return
		}
	}
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		rec, err := decodeNodeRec(tx.Bucket(bNodes).Get([]byte(id)))
		if err != nil {
			return err
		}
		rec.Deg = []byte{0xff}
		return tx.Bucket(bNodes).Put([]byte(id), rec.encode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A node's edge summary lives in its record: rewriting the record for a
// property change keeps it, and a batch that changes both the node and its
// edges writes the record once with both.
func TestSummaryFollowsRecordRewrites(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	edges := func(id graph.ID) []graph.EdgeCount {
		t.Helper()
		n, err := s.Node(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return n.Edges
	}
	check := func(step string) {
		t.Helper()
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("%s: check: %v %v", step, err, r.Problems)
		}
	}
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "a"}},
			{ID: "team/x", Type: "Team", Properties: graph.Props{"name": "x"}},
			{ID: "team/y", Type: "Team", Properties: graph.Props{"name": "y"}},
		},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/x"}}},
	})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "renamed"}}}})
	if got, want := edges("person/a"), []graph.EdgeCount{{Label: "memberOf", Direction: graph.Out, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("after a property change: %+v, want %+v", got, want)
	}
	check("property change")
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "person/a", Type: "Person", Properties: graph.Props{"name": "again"}}, {ID: "team/x", Type: "Team", Properties: graph.Props{"name": "x2"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/a", Label: "memberOf", To: "team/y"}}},
	})
	if got, want := edges("person/a"), []graph.EdgeCount{{Label: "memberOf", Direction: graph.Out, Count: 2}}; !slices.Equal(got, want) {
		t.Errorf("after a change of node and edges: %+v, want %+v", got, want)
	}
	if got, want := edges("team/x"), []graph.EdgeCount{{Label: "memberOf", Direction: graph.In, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("team/x after its own change: %+v, want %+v", got, want)
	}
	check("node and edges")
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "team/x"}}})
	if got, want := edges("person/a"), []graph.EdgeCount{{Label: "memberOf", Direction: graph.Out, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("after deleting team/x: %+v, want %+v", got, want)
	}
	check("cascade")
}

// A commit whose Cayley part fails after Cayley began its transaction
// rolls back Lore's writes too: nothing of the batch remains.
func TestCommitFailingInCayleyWritesNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}})
	before, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var nodes []graph.NodeInput
	for i := range 500 {
		nodes = append(nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("topic number %d", i)}})
	}
	b := &graph.Batch{Nodes: nodes}
	s.wmu.Lock()
	var p *commitPlan
	err = s.read(func(tx *bbolt.Tx) error {
		gp, err := graph.PlanBatch(t.Context(), s.Model(), &boltSnap{s: s, tx: tx}, b, now())
		if err == nil {
			p = newCommitPlan(gp)
		}
		return err
	})
	if err != nil {
		s.wmu.Unlock()
		t.Fatal(err)
	}
	// A quad that exists already: Cayley refuses it in the middle of its
	// part, while Lore's writes are prepared.
	p.deltas = append(p.deltas, deltas(&graph.Plan{Nodes: []graph.NodeOp{{ID: "topic/a", New: &graph.NodeRecord{Type: "Topic"}}}})...)
	err = s.commit(p, "", nil, now())
	s.wmu.Unlock()
	if err == nil {
		t.Fatal("the commit of an existing quad succeeded")
	}
	after, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if before.Nodes != after.Nodes || before.Quads != after.Quads || before.LastSeq != after.LastSeq {
		t.Errorf("stats before %+v, after the failed commit %+v", before, after)
	}
	if _, err := s.Node(t.Context(), "topic/t7"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("a node of the failed commit: %v", err)
	}
	res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "number"}, graph.Limits{})
	if err != nil || len(res.Hits) != 0 {
		t.Errorf("search finds the failed commit's nodes: %+v, %v", res, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	apply(t, s, b) // and the store takes the batch afterwards
	if n, err := s.Node(t.Context(), "topic/t7"); err != nil || n.ID != "topic/t7" {
		t.Fatalf("after a retry: %+v, %v", n, err)
	}
}

// A batch whose deletes use a value more often than its adds (here the
// type predicate and t:Topic: one topic created, two deleted) stores its
// new quads whole: Cayley's ApplyDeltas, given both at once, dropped the
// predicate of the new node's quad, and no delete of the node could
// succeed afterwards (see Store.applyDeltas).
func TestCommitAddsAndDeletesSharingValues(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	topic := func(id string) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": id}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/a"), topic("topic/b")}})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/c")}, DeleteNodes: []graph.NodeRef{{ID: "topic/a"}, {ID: "topic/b"}}})
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/d")}, DeleteNodes: []graph.NodeRef{{ID: "topic/c"}}})
	if st, err := s.Stats(t.Context()); err != nil || st.Nodes != 1 || st.Quads != 1 {
		t.Errorf("stats: %+v, %v", st, err)
	}
}
