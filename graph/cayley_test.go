package graph

// Tests that Cayley's measured defects (../shared/reference/cayley.md) cannot bite.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	hkv "github.com/hidal-go/hidalgo/kv"
	bolt "go.etcd.io/bbolt"

	"github.com/lore-dev/lore/schema"
)

func openTest(t testing.TB, dir string, cfg Config) *Bolt {
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

func apply(t testing.TB, s Store, b *Batch) *Result {
	t.Helper()
	r, err := s.Apply(context.Background(), b)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return r
}

// cayleyLog counts the entries of Cayley's primitive log (values and quads,
// live or tombstoned): it grows with every quad Cayley writes.
func cayleyLog(t testing.TB, s *Bolt) (n int) {
	t.Helper()
	err := s.read(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("log"))
		if b == nil {
			return nil
		}
		n = b.Stats().KeyN
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func topics(prefix string, n int) []NodeInput {
	out := make([]NodeInput, n)
	for i := range out {
		out[i] = NodeInput{ID: ID(fmt.Sprintf("topic/%s-%d", prefix, i)), Type: "Topic", Properties: Props{"name": fmt.Sprintf("%s %d", prefix, i)}}
	}
	return out
}

func TestConcurrentWritersLoseNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for w := range 50 {
		wg.Go(func() {
			if _, err := s.Apply(context.Background(), &Batch{Nodes: topics(fmt.Sprintf("w%d", w), 20)}); err != nil {
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
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "team/hub", Type: "Team", Properties: Props{"name": "hub"}}}})
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
					_, err = s.Edges(ctx, EdgeQuery{Nodes: []ID{"team/hub"}, Direction: Both, Page: Page{Limit: 500}})
				case 1:
					_, err = s.NodesByType(ctx, "Person", Page{Limit: 200})
				case 2:
					_, err = s.Node(ctx, "team/hub")
				case 3:
					_, err = s.Lookup(ctx, IndexQuery{Type: "Person", Property: "role", Min: "r", Page: Page{Limit: 100}})
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
			b := &Batch{}
			for j := range 50 {
				id := ID(fmt.Sprintf("person/p%d-%d", i, j))
				b.Nodes = append(b.Nodes, NodeInput{ID: id, Type: "Person", Properties: Props{"name": fmt.Sprintf("p %d %d", i, j), "role": fmt.Sprintf("role %d", j), "bio": strings.Repeat("x", 300)}})
				b.Edges = append(b.Edges, EdgeInput{EdgeKey: EdgeKey{From: id, Label: "memberOf", To: "team/hub"}})
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
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "team/t", Type: "Team", Properties: Props{"name": "t"}}}})
	logBefore := cayleyLog(t, s)
	_, err := s.Apply(t.Context(), &Batch{
		Nodes:       []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}}, {ID: "person/b", Type: "Person", Properties: Props{"name": "b"}}},
		Edges:       []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
		DeleteEdges: []EdgeRef{{EdgeKey: EdgeKey{From: "person/b", Label: "memberOf", To: "team/t"}}}, // missing
	})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Apply = %v, want not found", err)
	}
	if got := cayleyLog(t, s); got != logBefore {
		t.Fatalf("Cayley's log went from %d to %d entries: the rejected batch reached ApplyDeltas", logBefore, got)
	}
	apply(t, s, &Batch{
		Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}}, {ID: "person/b", Type: "Person", Properties: Props{"name": "b"}}},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}, {EdgeKey: EdgeKey{From: "person/b", Label: "leads", To: "team/t"}}},
	})
	verify := func(s *Bolt) {
		t.Helper()
		want := map[ID]string{"person/a": "memberOf(person/a,team/t)", "person/b": "leads(person/b,team/t)"}
		for id, edge := range want {
			p, err := s.Edges(t.Context(), EdgeQuery{Nodes: []ID{id}})
			if err != nil || len(p.Edges) != 1 || p.Edges[0].ID != edge {
				t.Errorf("edges of %s = %v (%v), want exactly %s", id, edgeIDs(p), err, edge)
			}
		}
		p, _ := s.Edges(t.Context(), EdgeQuery{Nodes: []ID{"team/t"}, Direction: In})
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
	apply(t, s, &Batch{
		Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: Props{"name": "t"}}},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
	})
	// Corrupt the edge summary so the next commit's hook fails after
	// Cayley has buffered its own index entries.
	err := s.db.DB().Update(func(tx *bolt.Tx) error {
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
	_, err = s.Apply(t.Context(), &Batch{
		Nodes:       []NodeInput{{ID: "person/c", Type: "Person", Properties: Props{"name": "c"}}, {ID: "team/u", Type: "Team", Properties: Props{"name": "u"}}},
		Edges:       []EdgeInput{{EdgeKey: EdgeKey{From: "person/c", Label: "memberOf", To: "team/u"}}},
		DeleteEdges: []EdgeRef{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
	})
	if err == nil || !strings.Contains(err.Error(), "would go negative") {
		t.Fatalf("Apply = %v, want the counter failure", err)
	}
	if _, err := s.Repair(t.Context()); err != nil {
		t.Fatal(err)
	}
	apply(t, s, &Batch{
		Nodes: []NodeInput{{ID: "person/d", Type: "Person", Properties: Props{"name": "d"}}},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/d", Label: "memberOf", To: "team/t"}}},
	})
	p, err := s.Edges(t.Context(), EdgeQuery{Nodes: []ID{"team/t"}, Direction: In})
	if got := edgeIDs(p); err != nil || len(got) != 2 || got[0] != "memberOf(person/a,team/t)" || got[1] != "memberOf(person/d,team/t)" {
		t.Errorf("in-edges of team/t = %v (%v), want a's and d's", got, err)
	}
	for _, id := range []ID{"person/c", "team/u"} {
		if _, err := s.Node(t.Context(), id); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s from the failed commit: %v", id, err)
		}
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
}

func edgeIDs(p *EdgePage) []string {
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
	b := func() *Batch {
		return &Batch{
			Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: Props{"name": "t"}}},
			Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}}},
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
	apply(t, s, &Batch{DeleteNodes: []NodeRef{{ID: "person/a"}, {ID: "team/t"}}})
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
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "service/s", Type: "Service", Properties: Props{"name": "s", "tier": 0}}}})
	before := cayleyLog(t, s)
	for i := range 3000 {
		apply(t, s, &Batch{Nodes: []NodeInput{{ID: "service/s", Type: "Service", Properties: Props{"name": "s", "tier": i % 4, "description": fmt.Sprint(i)}}}})
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
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}}, {ID: "team/t", Type: "Team", Properties: Props{"name": "t"}}}})
	e := EdgeKey{From: "person/a", Label: "memberOf", To: "team/t"}
	for range 500 {
		apply(t, s, &Batch{Edges: []EdgeInput{{EdgeKey: e}}})
		apply(t, s, &Batch{DeleteEdges: []EdgeRef{{EdgeKey: e}}})
	}
	apply(t, s, &Batch{Edges: []EdgeInput{{EdgeKey: e, Properties: Props{"role": "lead"}}}})
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

func exportString(t testing.TB, s Store) string {
	t.Helper()
	var b strings.Builder
	if _, err := Export(t.Context(), s, &b, NDJSON); err != nil {
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
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "store locked") || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second Open = %v, want a lock error naming the holder", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second Open took %v, want under 2s", d)
	}
}

// quad.Time hashes without sub-second precision: values 0.3 s apart merged.
func TestSubsecondTimesStayDistinct(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	t1 := time.Date(2026, 1, 2, 12, 0, 0, 100_000_000, time.UTC)
	t2 := t1.Add(300 * time.Millisecond)
	apply(t, s, &Batch{Restore: true, Nodes: []NodeInput{
		{ID: "doc/a", Type: "Document", Properties: Props{"title": t1.Format(time.RFC3339Nano)}, CreatedAt: t1, UpdatedAt: t1},
		{ID: "doc/b", Type: "Document", Properties: Props{"title": t2.Format(time.RFC3339Nano)}, CreatedAt: t2, UpdatedAt: t2},
	}})
	nodes, _ := s.Nodes(t.Context(), []ID{"doc/a", "doc/b"})
	for i, want := range []time.Time{t1, t2} {
		if n := nodes[i]; !n.CreatedAt.Equal(want) || n.Properties["title"] != want.Format(time.RFC3339Nano) {
			t.Errorf("%s: createdAt %v, title %v; want %v", n.ID, n.CreatedAt, n.Properties["title"], want)
		}
	}
	if got := NormalizeTime(time.Date(2026, 1, 2, 12, 0, 0, 123_456_789, time.FixedZone("x", 3600))); !got.Equal(time.Date(2026, 1, 2, 11, 0, 0, 123_456_000, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("NormalizeTime = %v", got)
	}
}

func TestModelMismatchRefused(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "topic/a", Type: "Topic", Properties: Props{"name": "a"}}}})
	s.Close()
	small := `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"Thing":{"x-lore-node":{},"type":"object"}}}`
	m, err := loadModelString(small)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(t.Context(), Config{Path: dir, Model: m})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "node type Topic") {
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
	apply(t, s, &Batch{Nodes: append(topics("a", 250), NodeInput{ID: "team/t", Type: "Team", Properties: Props{"name": "t"}})})
	var b Batch
	for i := range 250 {
		b.Nodes = append(b.Nodes, NodeInput{ID: ID(fmt.Sprintf("person/p%03d", i)), Type: "Person", Properties: Props{"name": fmt.Sprintf("p%03d", i), "role": fmt.Sprintf("p%03d", i)}})
		b.Edges = append(b.Edges, EdgeInput{EdgeKey: EdgeKey{From: ID(fmt.Sprintf("person/p%03d", i)), Label: "memberOf", To: "team/t"}})
	}
	apply(t, s, &b)
	// Page through the in-edges of team/t while edges are added: no
	// duplicate, no gap among the edges that existed throughout.
	seen := map[string]bool{}
	q := EdgeQuery{Nodes: []ID{"team/t"}, Direction: In, Page: Page{Limit: 40}}
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
		id := ID(fmt.Sprintf("person/late%d", i))
		apply(t, s, &Batch{Nodes: []NodeInput{{ID: id, Type: "Person", Properties: Props{"name": "late"}}}, Edges: []EdgeInput{{EdgeKey: EdgeKey{From: id, Label: "leads", To: "team/t"}}}})
	}
	for i := range 250 {
		if id := fmt.Sprintf("memberOf(person/p%03d,team/t)", i); !seen[id] {
			t.Errorf("edge %s missed", id)
		}
	}
	// Node pages by type and index lookups page without gaps too.
	var ids []ID
	p := Page{Limit: 33}
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
	var looked []ID
	iq := IndexQuery{Type: "Person", Property: "role", Min: "p100", Max: "p199", Page: Page{Limit: 7}}
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
	apply(t, s, &Batch{Nodes: []NodeInput{
		{ID: "adr/1", Type: "Decision", Properties: Props{"title": "a", "status": "accepted", "date": "2020-01-01", "number": 1}},
		{ID: "adr/2", Type: "Decision", Properties: Props{"title": "b", "status": "superseded", "date": "2021-06-01", "number": 2}},
		{ID: "adr/3", Type: "Decision", Properties: Props{"title": "c", "status": "accepted", "date": "2022-03-01", "number": 10}},
	}})
	for _, tt := range []struct {
		q    IndexQuery
		want string
	}{
		{IndexQuery{Property: "status", Eq: "accepted"}, "adr/1 adr/3"},
		{IndexQuery{Property: "number", Min: 2}, "adr/2 adr/3"},
		{IndexQuery{Property: "number", Min: 1, MinExclusive: true, Max: 10, MaxExclusive: true}, "adr/2"},
		{IndexQuery{Property: "number", Max: 2}, "adr/1 adr/2"},
		{IndexQuery{Property: "date", Min: "2021-01-01", Max: "2021-12-31"}, "adr/2"},
		{IndexQuery{Property: "number", Eq: 10}, "adr/3"},
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
	if _, err := s.Lookup(t.Context(), IndexQuery{Type: "Decision", Property: "context", Eq: "x"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("lookup on an unindexed property: %v", err)
	}
}

func loadModelString(s string) (*schema.Model, error) { return schema.Load([]byte(s)) }

// A bulk load defers its index entries; they are flushed in key order as
// they pile up and at the end, and a load that dies leaves a store whose
// indexes Open rebuilds.
func TestBulkLoadDefersIndexes(t *testing.T) {
	deferFrom(t, 0)
	old := deferFlush
	deferFlush = 700
	t.Cleanup(func() { deferFlush = old })
	var data strings.Builder
	for i := range 1500 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	for i := 1; i < 1500; i++ {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d","kind":"guide"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i-1)
	}
	verify := func(s *Bolt) {
		t.Helper()
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("check: %v %v", err, r.Problems)
		}
		res, err := Search(t.Context(), s, SearchQuery{Text: "topic number 1234"}, Limits{})
		if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t1234" {
			t.Errorf("search after the bulk load: %+v, %v", res, err)
		}
		n, _ := s.Node(t.Context(), "topic/t7")
		if len(n.Edges) != 1 || n.Edges[0].Direction != In || n.Edges[0].Count != 1 {
			t.Errorf("edge counts of topic/t7: %+v", n.Edges)
		}
	}

	s := openTest(t, t.TempDir(), Config{})
	if _, err := Import(t.Context(), s, strings.NewReader(data.String()), ImportOptions{BatchSize: 200}); err != nil {
		t.Fatal(err)
	}
	verify(s)

	// A load that dies before its final flush.
	dir := t.TempDir()
	s = openTest(t, dir, Config{})
	end, ok := s.beginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	_ = end // never called: the process "dies"
	dec := &ndjsonDecoder{lr: &lineReader{r: bufio.NewReader(strings.NewReader(data.String()))}}
	b := &Batch{}
	for {
		el, err := dec.next()
		if err != nil {
			break
		}
		if el.node != nil {
			b.Nodes = append(b.Nodes, *el.node)
		} else {
			b.Edges = append(b.Edges, *el.edge)
		}
		if b.Len() == 500 {
			apply(t, s, b)
			b = &Batch{}
		}
	}
	apply(t, s, b)
	s.deferred = nil // what a dead process leaves: entries never written
	s.Close()
	verify(openTest(t, dir, Config{}))
}

// Edge summaries collected by a bulk load build up across many deferred
// flushes: every node gains in- and out-edges in batches far apart, and
// each flush must add to what the one before wrote.
func TestBulkLoadSummariesAcrossFlushes(t *testing.T) {
	deferFrom(t, 0)
	old := deferFlush
	deferFlush = 300
	t.Cleanup(func() { deferFlush = old })
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
	s := openTest(t, t.TempDir(), Config{})
	if _, err := Import(t.Context(), s, strings.NewReader(data.String()), ImportOptions{BatchSize: 100}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	res, err := Search(t.Context(), s, SearchQuery{Text: "final 17"}, Limits{})
	if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t17" {
		t.Errorf("search for a renamed topic: %+v, %v", res, err)
	}
	if res, err := Search(t.Context(), s, SearchQuery{Text: "renamed"}, Limits{}); err != nil || len(res.Hits) != 0 {
		t.Errorf("search for a name no longer held: %d hits, %v", len(res.Hits), err)
	}
	for id, want := range map[ID]EdgeCount{
		"topic/t5": {Label: "about", Direction: In, Count: 3 * docs / topics},
		"doc/d5":   {Label: "about", Direction: Out, Count: 3},
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
			apply(t, s, &Batch{
				Nodes: []NodeInput{
					{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}},
					{ID: "person/b", Type: "Person", Properties: Props{"name": "b"}},
					{ID: "team/core", Type: "Team", Properties: Props{"name": "core"}},
					{ID: "service/api", Type: "Service", Properties: Props{"name": "api"}},
				},
				Edges: []EdgeInput{
					{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/core"}},
					{EdgeKey: EdgeKey{From: "person/b", Label: "memberOf", To: "team/core"}},
					{EdgeKey: EdgeKey{From: "team/core", Label: "owns", To: "service/api"}},
				},
			})
			want, err := s.Node(t.Context(), "team/core")
			if err != nil || len(want.Edges) != 2 {
				t.Fatalf("team/core: %+v %v", want, err)
			}
			// Rewrite the records and bDeg as the old layout kept them.
			err = s.db.DB().Update(func(tx *bolt.Tx) error {
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
					e := edgeKeyFromBytes(k)
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
			_ = s.db.DB().View(func(tx *bolt.Tx) error {
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
	deferFrom(t, 0)
	s := openTest(t, t.TempDir(), Config{})
	end, ok := s.beginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	for _, name := range []string{"alpha", "beta", "alpha"} {
		apply(t, s, &Batch{Nodes: []NodeInput{{ID: "topic/a", Type: "Topic", Properties: Props{"name": name}}}})
	}
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	res, err := Search(t.Context(), s, SearchQuery{Text: "alpha"}, Limits{})
	if err != nil || len(res.Hits) != 1 {
		t.Errorf("search for alpha: %+v, %v", res, err)
	}
}

// valueData loads 3,000 nodes and 3,000 keyed edges by import, then one
// node and edge by the one-batch path, and returns the values Cayley holds.
func valueData(t *testing.T, s *Bolt) []quad.Value {
	t.Helper()
	var data strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&data, `{"kind":"node","id":"entity/e%d","type":"Entity","properties":{"name":"e%d","entityType":"thing"}}`+"\n", i, i)
	}
	for i := range 3000 {
		fmt.Fprintf(&data, `{"kind":"edge","from":"entity/e%d","label":"relation","to":"entity/e%d","key":"rel_%d"}`+"\n", i, (i*7+1)%3000, i%50)
	}
	if _, err := Import(t.Context(), s, strings.NewReader(data.String()), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	apply(t, s, &Batch{
		Nodes: []NodeInput{{ID: "topic/new", Type: "Topic", Properties: Props{"name": "new"}}},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "entity/e1", Label: "relation", To: "entity/e2", Key: "brand_new"}}},
	})
	var vals []quad.Value
	for i := range 3000 {
		vals = append(vals, nodeIRI(ID(fmt.Sprintf("entity/e%d", i))))
	}
	for i := range 50 {
		vals = append(vals, keyIRI(fmt.Sprintf("rel_%d", i)))
	}
	return append(vals, nodeIRI("topic/new"), keyIRI("brand_new"), predType, typeIRI("Entity"), typeIRI("Topic"), labelIRI("relation"))
}

// checkValueLayout fails unless Cayley's values are where store layout 4
// keeps them: the ID and reference count of each value under its hash in
// bValueIDs and bValueRefs, nothing else there, and no value bucket of the
// old layout left.
func checkValueLayout(t *testing.T, s *Bolt, vals []quad.Value) {
	t.Helper()
	want := map[string]bool{}
	for _, v := range vals {
		h := refs.HashOf(v)
		want[string(h[:])] = true
	}
	err := s.read(func(tx *bolt.Tx) error {
		if err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if cayleyValueBucket(name) {
				t.Errorf("value bucket %q of the old layout is still in the store", name)
			}
			return nil
		}); err != nil {
			return err
		}
		for _, name := range [][]byte{bValueIDs, bValueRefs} {
			got := map[string]bool{}
			if err := tx.Bucket(name).ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil }); err != nil {
				return err
			}
			if !maps.Equal(got, want) {
				t.Errorf("bucket %q holds %d keys; the %d values hash to %d, and they differ", name, len(got), len(vals), len(want))
			}
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
	page, err := s.Edges(t.Context(), EdgeQuery{Nodes: []ID{"entity/e1"}})
	if err != nil || len(page.Edges) != 2 {
		t.Errorf("entity/e1 has out-edges %+v (%v), want 2 (summary %+v)", page, err, n.Edges)
	}
}

// Cayley's values live in two buckets (see hookKV), and nowhere else.
func TestCayleyValuesLiveInTwoBuckets(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	checkValueLayout(t, s, valueData(t, s))
}

// The adapter maps only keys that start with their bucket's hash bytes,
// as Cayley's do; any other is refused, never stored where another key
// might meet it.
func TestValueKeyMapping(t *testing.T) {
	h := refs.HashOf(quad.IRI("n:topic/x"))
	got, err := physical(hkv.Key{{'v', h[0], h[1]}, h[:]})
	if err != nil || !bytes.Equal(got[0], bValueIDs) || !bytes.Equal(got[1], h[:]) {
		t.Errorf("value ID key maps to %q, %v", got, err)
	}
	got, err = physical(hkv.Key{{'n', h[0], h[1]}, h[:]})
	if err != nil || !bytes.Equal(got[0], bValueRefs) {
		t.Errorf("reference count key maps to %q, %v", got, err)
	}
	if _, err := physical(hkv.Key{{'v', h[0] + 1, h[1]}, h[:]}); err == nil {
		t.Error("a key in a bucket its hash does not name was mapped")
	}
	if got, err := physical(hkv.Key{[]byte("log"), []byte{1}}); err != nil || string(got[0]) != "log" {
		t.Errorf("a log key maps to %q, %v", got, err)
	}
}

// Opening a store of layout 3 moves its values out of Cayley's 131,072
// buckets, in several transactions; a store whose move was interrupted
// (some buckets moved, the version not yet changed) finishes it. Either
// way the graph reads back the same.
func TestOpenMovesValuesOutOfOldBuckets(t *testing.T) {
	for _, half := range []bool{false, true} {
		t.Run(fmt.Sprintf("interrupted=%v", half), func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, Config{})
			vals := valueData(t, s)
			before := exportString(t, s)
			// Put the values back where layout 3 kept them: all of them, or,
			// as a move that stopped half-way, those whose hash starts with
			// an even byte.
			err := s.db.DB().Update(func(tx *bolt.Tx) error {
				for _, name := range [][]byte{bValueIDs, bValueRefs} {
					b := tx.Bucket(name)
					var keys [][]byte
					_ = b.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
					for _, k := range keys {
						if half && k[0]%2 == 1 {
							continue
						}
						old, err := tx.CreateBucketIfNotExists([]byte{name[0], k[0], k[1]})
						if err != nil {
							return err
						}
						if err := old.Put(k, bytes.Clone(b.Get(k))); err != nil {
							return err
						}
						if err := b.Delete(k); err != nil {
							return err
						}
					}
					if !half {
						if err := tx.DeleteBucket(name); err != nil {
							return err
						}
					}
				}
				return tx.Bucket(bMeta).Put([]byte("version"), u64(3))
			})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()

			old := valueMergeChunk
			valueMergeChunk = 500 // several transactions
			t.Cleanup(func() { valueMergeChunk = old })
			s = openTest(t, dir, Config{})
			checkValueLayout(t, s, vals)
			if after := exportString(t, s); after != before {
				t.Error("the graph exports differently after the move")
			}
		})
	}
}

// deferFrom makes bulk loads defer index entries once they have written n
// elements, for the test.
func deferFrom(t *testing.T, n int) {
	old := deferAfter
	deferAfter = n
	t.Cleanup(func() { deferAfter = old })
}

// A bulk load writes each commit's index entries with it until it has
// written deferAfter elements, and defers them from then on: the batches
// committed before are searchable while the load runs, the later ones once
// it ends; and the indexes and summaries are whole at the end.
func TestBulkLoadDefersPastThreshold(t *testing.T) {
	deferFrom(t, 250)
	var data strings.Builder
	for i := range 100 { // 300 elements, then 100 edges: batches of 100 pass 250 at the third
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc number %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i)
	}
	for i := range 100 { // each topic's second edge comes after the threshold
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, (i+1)%100)
	}
	s := openTest(t, t.TempDir(), Config{})
	found := func(id ID, text string) bool {
		t.Helper()
		res, err := Search(t.Context(), s, SearchQuery{Text: text}, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return len(res.Hits) > 0 && res.Hits[0].Node.ID == id
	}
	var during []bool // after each batch: topic/t5 (batch 1) found, doc/d80 (batch 3) found
	progress := func(ImportStats) {
		during = append(during, found("topic/t5", "topic number 5"), found("doc/d80", "doc number 80"))
	}
	if _, err := Import(t.Context(), s, strings.NewReader(data.String()), ImportOptions{BatchSize: 100, Progress: progress}); err != nil {
		t.Fatal(err)
	}
	if want := []bool{true, false, true, false, true, false, true, false}; !slices.Equal(during, want) {
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

// An import that tunes the collector sets its percent as it grows, and
// puts the caller's back when it returns.
func TestImportTunesGC(t *testing.T) {
	old := largeImport
	largeImport = 150
	t.Cleanup(func() { largeImport = old })
	gcPercent := func() int {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p
	}
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	var data strings.Builder
	for i := range 300 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t%d"}}`+"\n", i, i)
	}
	var seen []int
	s := openTest(t, t.TempDir(), Config{})
	opt := ImportOptions{BatchSize: 100, TuneGC: true, Progress: func(ImportStats) { seen = append(seen, gcPercent()) }}
	if _, err := Import(t.Context(), s, strings.NewReader(data.String()), opt); err != nil {
		t.Fatal(err)
	}
	if want := []int{200, ImportGCPercent, ImportGCPercent}; !slices.Equal(seen, want) {
		t.Errorf("collector percent after each batch: %v, want %v", seen, want)
	}
	if p := gcPercent(); p != 123 {
		t.Errorf("after the import: %d, want the caller's 123", p)
	}
}

// An import at the default batch size starts with small batches and
// doubles them; one with a batch size given keeps it.
func TestImportRampsBatches(t *testing.T) {
	var data strings.Builder
	n := DefaultImportBatch/rampSteps*3 + 100 // the first two batches, and part of the third
	for i := range n {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t%d"}}`+"\n", i, i)
	}
	sizes := func(opt ImportOptions) []int {
		s := openTest(t, t.TempDir(), Config{})
		if _, err := Import(t.Context(), s, strings.NewReader(data.String()), opt); err != nil {
			t.Fatal(err)
		}
		changes, err := s.Since(t.Context(), 0, MaxPageSize)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, c := range changes {
			out = append(out, len(c.Nodes))
		}
		return out
	}
	first := DefaultImportBatch / rampSteps
	if got, want := sizes(ImportOptions{}), []int{first, 2 * first, 100}; !slices.Equal(got, want) {
		t.Errorf("batches at the default size: %v, want %v", got, want)
	}
	if got, want := sizes(ImportOptions{BatchSize: first}), []int{first, first, first, 100}; !slices.Equal(got, want) {
		t.Errorf("batches of %d: %v, want %v", first, got, want)
	}
}

// The last batch of a bulk load writes the deferred index entries and
// clears the store's mark, so the load needs no transaction of its own
// after it, and the next Open has nothing to rebuild.
func TestBulkLoadLastBatchWritesDeferred(t *testing.T) {
	deferFrom(t, 0)
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	var data strings.Builder
	for i := range 300 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	st, err := Import(t.Context(), s, strings.NewReader(data.String()), ImportOptions{BatchSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	var marked bool
	s.read(func(tx *bolt.Tx) error { marked = tx.Bucket(bMeta).Get(metaDeferred) != nil; return nil })
	if marked {
		t.Error("the store is still marked deferred after the load")
	}
	if st.Batches != 3 {
		t.Errorf("%d batches, want 3", st.Batches)
	}
	res, err := Search(t.Context(), s, SearchQuery{Text: "topic number 42"}, Limits{})
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
	deferFrom(t, 0)
	var data strings.Builder
	for i := range 100 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic number %d"}}`+"\n", i, i)
	}
	for i := range 100 {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d"}}`+"\n", i, i)
		fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i)
	}
	for _, tc := range []struct{ name, tail string }{
		// 300 elements in batches of 100: the input ends with a full
		// batch, and the flush after it writes the deferred entries.
		{"flush", ""},
		// One more element: a last batch of one, which carries them.
		{"last batch", `{"kind":"node","id":"topic/last","type":"Topic","properties":{"name":"last"}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, t.TempDir(), Config{})
			batches := 0
			progress := func(ImportStats) {
				if batches++; batches == 1 {
					// Between commits: a summary the load must add to
					// cannot be read, so writing the summaries fails.
					err := s.db.DB().Update(func(tx *bolt.Tx) error { return tx.Bucket(bDeg).Put([]byte("topic/t5"), []byte{0xff}) })
					if err != nil {
						t.Fatal(err)
					}
				}
			}
			st, err := Import(t.Context(), s, strings.NewReader(data.String()+tc.tail), ImportOptions{BatchSize: 100, Progress: progress, Partial: true})
			if err == nil || !strings.Contains(err.Error(), `"topic/t5": edge summary does not decode`) {
				t.Fatalf("import over a corrupt summary: %v", err)
			}
			if want := int64(3); st.Batches != want {
				t.Errorf("%d batches committed, want %d", st.Batches, want)
			}
			res, err := Search(t.Context(), s, SearchQuery{Text: "topic number 42"}, Limits{})
			if err != nil || len(res.Hits) == 0 || res.Hits[0].Node.ID != "topic/t42" {
				t.Errorf("search for a node of a committed batch: %+v, %v", res, err)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check: %v %v", err, r.Problems)
			}
		})
	}
}

// A node's edge summary lives in its record: rewriting the record for a
// property change keeps it, and a batch that changes both the node and its
// edges writes the record once with both.
func TestSummaryFollowsRecordRewrites(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	edges := func(id ID) []EdgeCount {
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
	apply(t, s, &Batch{
		Nodes: []NodeInput{
			{ID: "person/a", Type: "Person", Properties: Props{"name": "a"}},
			{ID: "team/x", Type: "Team", Properties: Props{"name": "x"}},
			{ID: "team/y", Type: "Team", Properties: Props{"name": "y"}},
		},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/x"}}},
	})
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "renamed"}}}})
	if got, want := edges("person/a"), []EdgeCount{{Label: "memberOf", Direction: Out, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("after a property change: %+v, want %+v", got, want)
	}
	check("property change")
	apply(t, s, &Batch{
		Nodes: []NodeInput{{ID: "person/a", Type: "Person", Properties: Props{"name": "again"}}, {ID: "team/x", Type: "Team", Properties: Props{"name": "x2"}}},
		Edges: []EdgeInput{{EdgeKey: EdgeKey{From: "person/a", Label: "memberOf", To: "team/y"}}},
	})
	if got, want := edges("person/a"), []EdgeCount{{Label: "memberOf", Direction: Out, Count: 2}}; !slices.Equal(got, want) {
		t.Errorf("after a change of node and edges: %+v, want %+v", got, want)
	}
	if got, want := edges("team/x"), []EdgeCount{{Label: "memberOf", Direction: In, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("team/x after its own change: %+v, want %+v", got, want)
	}
	check("node and edges")
	apply(t, s, &Batch{DeleteNodes: []NodeRef{{ID: "team/x"}}})
	if got, want := edges("person/a"), []EdgeCount{{Label: "memberOf", Direction: Out, Count: 1}}; !slices.Equal(got, want) {
		t.Errorf("after deleting team/x: %+v, want %+v", got, want)
	}
	check("cascade")
}

// A commit whose Cayley part fails after Cayley began its transaction
// rolls back Lore's writes too, though they were written beside Cayley's:
// the rollback waits for them, and nothing of the batch remains.
func TestCommitFailingInCayleyWritesNothing(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &Batch{Nodes: []NodeInput{{ID: "topic/a", Type: "Topic", Properties: Props{"name": "a"}}}})
	before, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var nodes []NodeInput
	for i := range 500 {
		nodes = append(nodes, NodeInput{ID: ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: Props{"name": fmt.Sprintf("topic number %d", i)}})
	}
	b := &Batch{Nodes: nodes}
	s.wmu.Lock()
	var p *plan
	err = s.read(func(tx *bolt.Tx) error {
		var err error
		p, err = makePlan(t.Context(), s.model, &boltSnap{s: s, tx: tx}, b, now())
		return err
	})
	if err != nil {
		s.wmu.Unlock()
		t.Fatal(err)
	}
	p.quads()
	// A quad that exists already: Cayley refuses it in the middle of its
	// part, after Lore's writes have begun beside it.
	p.deltas = append(p.deltas, deltas(&plan{nodes: []nodeOp{{id: "topic/a", new: &nodeRec{Type: "Topic"}}}})...)
	err = s.commit(p, "", nil, now(), nil)
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
	if _, err := s.Node(t.Context(), "topic/t7"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a node of the failed commit: %v", err)
	}
	res, err := Search(t.Context(), s, SearchQuery{Text: "number"}, Limits{})
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
