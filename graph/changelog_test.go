package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

func topic(i int) graph.NodeInput {
	return graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprint(i)}}
}

func TestSubscribeDeliversEverythingInOrder(t *testing.T) {
	dir := t.TempDir()
	s := graphtest.Open(t, dir, nil)
	for i := range 3 {
		mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(i)}})
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, errf := graph.Subscribe(ctx, s, 1) // history after seq 1, then live
	const writers, each = 4, 150
	done := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range each {
				if _, err := s.Apply(context.Background(), &graph.Batch{Nodes: []graph.NodeInput{topic(1000 + w*each + i)}}); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	want := uint64(2)
	last := uint64(3 + writers*each)
	timeout := time.After(time.Minute)
	for want <= last {
		select {
		case c, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed at %d: %v", want, errf())
			}
			if c.Seq != want {
				t.Fatalf("got entry %d, want %d (a gap or reordering)", c.Seq, want)
			}
			want++
		case <-timeout:
			t.Fatalf("stalled waiting for entry %d", want)
		}
	}
	for range writers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	for range ch {
	}
	if err := errf(); err != nil {
		t.Errorf("after cancel: %v", err)
	}

	// Across a restart: a subscriber resuming from its last seq misses nothing.
	s.Close()
	s = graphtest.Open(t, dir, nil)
	mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(9999)}})
	ctx2, cancel2 := context.WithCancel(t.Context())
	defer cancel2()
	ch2, _ := graph.Subscribe(ctx2, s, last)
	select {
	case c := <-ch2:
		if c.Seq != last+1 || c.Nodes[0].ID != "topic/t9999" {
			t.Errorf("after restart got %+v", c)
		}
	case <-time.After(time.Minute):
		t.Fatal("no entry after restart")
	}
}

func TestSubscribeStopsWhenStoreCloses(t *testing.T) {
	s := graphtest.New(t)
	ch, errf := graph.Subscribe(t.Context(), s, 0)
	s.Close()
	for range ch {
	}
	if err := errf(); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("subscription error = %v, want ErrClosed", err)
	}
}

// docAbout writes n topics and a document about each of them in one batch:
// an entry of n+1 nodes and n edges.
func docAbout(t testing.TB, s graph.Store, doc string, n int) *graph.Result {
	t.Helper()
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(doc), Type: "Document", Properties: graph.Props{"title": doc}}}}
	for i := range n {
		tp := topic(i)
		tp.ID = graph.ID(fmt.Sprintf("%s-topic/t%d", doc, i))
		b.Nodes = append(b.Nodes, tp)
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(doc), Label: "about", To: tp.ID}})
	}
	return mustApply(t, s, b)
}

// entry reads one log entry through ReadLog.
func entry(t *testing.T, s graph.Store, seq uint64) *graph.LogEntry {
	t.Helper()
	var got *graph.LogEntry
	err := graph.ReadLog(t.Context(), s, seq-1, func(e *graph.LogEntry) (bool, error) {
		got = e
		return false, nil
	})
	if err != nil || got == nil || got.Seq != seq {
		t.Fatalf("ReadLog after %d: %v, %+v", seq-1, err, got)
	}
	return got
}

// TestLogEntryParts: an entry read in parts, each within a budget, from
// offset 0 and then from each part's next, lists every element exactly
// once and in order; the parts say which elements they hold; a decoded
// change cut in memory (Change.Cut) gives the same parts.
func TestLogEntryParts(t *testing.T) {
	s := graphtest.New(t)
	r := docAbout(t, s, "doc/big", 300) // 301 nodes, 300 edges: compressed in the log
	e := entry(t, s, r.Seq)
	whole, err := e.Decode(0, -1)
	if err != nil || whole.Part != nil || whole.Truncated || len(whole.Nodes) != 301 || len(whole.Edges) != 300 {
		t.Fatalf("whole: %v, part %+v, %d nodes, %d edges", err, whole.Part, len(whole.Nodes), len(whole.Edges))
	}
	if c, err := e.DecodeWhole(1 << 20); err != nil || c == nil || len(c.Nodes)+len(c.Edges) != 601 {
		t.Fatalf("DecodeWhole with room: %v %v", c, err)
	}
	if c, err := e.DecodeWhole(2000); err != nil || c != nil {
		t.Fatalf("DecodeWhole without room: %v %v, want nil", c, err)
	}
	for _, budget := range []int{0, 1, 100, 2000, 7919} {
		var nodes []graph.NodeChange
		var edges []graph.EdgeChange
		offset, parts := 0, 0
		for {
			c, err := e.Decode(offset, budget)
			if err != nil {
				t.Fatalf("budget %d, offset %d: %v", budget, offset, err)
			}
			cut, err := whole.Cut(offset, budget)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, cut); diff != "" {
				t.Fatalf("budget %d, offset %d: Decode and Cut differ (-decode +cut):\n%s", budget, offset, diff)
			}
			if c.Part == nil || c.Part.NodeCount != 301 || c.Part.EdgeCount != 300 || c.Part.Offset != offset || c.Seq != r.Seq || c.Op != "write" {
				t.Fatalf("budget %d, offset %d: %+v, part %+v", budget, offset, c, c.Part)
			}
			data, _ := json.Marshal(c)
			var back graph.Change
			if err := json.Unmarshal(data, &back); err != nil || !cmp.Equal(&back, c) {
				t.Fatalf("the part does not round-trip through JSON: %s", data)
			}
			nodes, edges = append(nodes, c.Nodes...), append(edges, c.Edges...)
			listed := len(c.Nodes) + len(c.Edges)
			if budget < 100 {
				if listed != 0 || !c.Truncated || c.Part.Next != offset {
					t.Fatalf("budget %d: %d listed, truncated %v, next %d", budget, listed, c.Truncated, c.Part.Next)
				}
				break // nothing fits: the caller must give more room
			}
			if listed == 0 {
				t.Fatalf("budget %d, offset %d: no progress", budget, offset)
			}
			parts++
			if !c.Truncated {
				if c.Part.Next != 0 || offset+listed != 601 {
					t.Fatalf("last part: next %d, offset %d + %d listed", c.Part.Next, offset, listed)
				}
				break
			}
			if c.Part.Next != offset+listed {
				t.Fatalf("next %d, want %d", c.Part.Next, offset+listed)
			}
			offset = c.Part.Next
		}
		if budget < 100 {
			continue
		}
		if !cmp.Equal(nodes, whole.Nodes) || !cmp.Equal(edges, whole.Edges) {
			t.Errorf("budget %d: the %d parts do not add up to the entry", budget, parts)
		}
		t.Logf("budget %d: %d parts", budget, parts)
	}
	if _, err := e.Decode(601, 1000); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("offset past the end: %v, want ErrInvalid", err)
	}
	if c, err := e.Decode(600, 1000); err != nil || len(c.Edges) != 1 || c.Truncated || c.Part.Offset != 600 {
		t.Errorf("the last element alone: %+v, %v", c, err)
	}
}

// onlyStore hides what a store has beyond graph.Store.
type onlyStore struct{ graph.Store }

// TestReadLogBounds: ReadLog starts after seq and never wraps: after the
// largest sequence number there is nothing. ReadLogNewest goes backwards.
// A store with nothing beyond graph.Store is read through Since, alike.
func TestReadLogBounds(t *testing.T) {
	b := graphtest.New(t)
	for i := range 5 {
		mustApply(t, b, &graph.Batch{Nodes: []graph.NodeInput{topic(i)}})
	}
	for _, s := range []graph.Store{b, onlyStore{b}} {
		readLogBounds(t, s)
	}
}

func readLogBounds(t *testing.T, s graph.Store) {
	seqs := func(read func(fn func(*graph.LogEntry) (bool, error)) error) []uint64 {
		var out []uint64
		if err := read(func(e *graph.LogEntry) (bool, error) { out = append(out, e.Seq); return true, nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, tc := range []struct {
		after uint64
		want  []uint64
	}{{0, []uint64{1, 2, 3, 4, 5}}, {3, []uint64{4, 5}}, {5, nil}, {1<<64 - 1, nil}, {1<<64 - 2, nil}} {
		got := seqs(func(fn func(*graph.LogEntry) (bool, error)) error { return graph.ReadLog(t.Context(), s, tc.after, fn) })
		if !cmp.Equal(got, tc.want) {
			t.Errorf("ReadLog after %d: %v, want %v", tc.after, got, tc.want)
		}
	}
	got := seqs(func(fn func(*graph.LogEntry) (bool, error)) error { return graph.ReadLogNewest(t.Context(), s, fn) })
	if !cmp.Equal(got, []uint64{5, 4, 3, 2, 1}) {
		t.Errorf("ReadLogNewest: %v", got)
	}
}

// panickyStore is the real store whose Since panics past a sequence
// number, as a broken store might.
type panickyStore struct {
	graph.Store
	after uint64
}

func (s panickyStore) Since(ctx context.Context, seq uint64, limit int) ([]graph.Change, error) {
	if seq >= s.after {
		panic("broken store")
	}
	return s.Store.Since(ctx, seq, limit)
}

// TestSubscribeSurvivesPanic: a panic while Subscribe reads the log (in
// its own goroutine, which nothing above could recover) stops delivery
// with an error that says so, after every entry before it; the process
// lives on.
func TestSubscribeSurvivesPanic(t *testing.T) {
	s := graphtest.New(t)
	for i := range 4 {
		mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(i)}})
	}
	ch, errf := graph.Subscribe(t.Context(), panickyStore{s, 2}, 0)
	var seqs []uint64
	for c := range ch {
		seqs = append(seqs, c.Seq)
	}
	if !cmp.Equal(seqs, []uint64{1, 2}) {
		t.Errorf("delivered %v before the panic, want [1 2]", seqs)
	}
	if err := errf(); err == nil || !strings.Contains(err.Error(), "panicked: broken store") || !strings.Contains(err.Error(), "goroutine") {
		t.Errorf("err = %v, want the panic with its stack", err)
	}
}
