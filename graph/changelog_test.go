package graph_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

func topic(i int) graph.NodeInput {
	return graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%d", i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprint(i)}}
}

func TestChangeLog(t *testing.T) {
	dir := t.TempDir()
	s := graphtest.Open(t, dir, nil)
	ctx := t.Context()
	for i := range 5 {
		if r := mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(i)}}); r.Seq != uint64(i+1) {
			t.Fatalf("batch %d got seq %d", i, r.Seq)
		}
	}
	// A rejected batch records nothing.
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/bad", Type: "Topic"}}}); err == nil {
		t.Fatal("invalid batch accepted")
	}
	all, err := s.Since(ctx, 0, 100)
	if err != nil || len(all) != 5 {
		t.Fatalf("Since(0) = %d entries, %v; want 5", len(all), err)
	}
	for i, c := range all {
		if c.Seq != uint64(i+1) || c.Op != "write" || c.Nodes[0].ID != graph.ID(fmt.Sprintf("topic/t%d", i)) || c.Nodes[0].Action != graph.Created {
			t.Errorf("entry %d = %+v", i, c)
		}
		if i > 0 && c.Time.Before(all[i-1].Time) {
			t.Errorf("entry %d's time %v precedes the previous %v", i, c.Time, all[i-1].Time)
		}
	}
	page, _ := s.Since(ctx, 2, 2)
	if len(page) != 2 || page[0].Seq != 3 || page[1].Seq != 4 {
		t.Errorf("Since(2, 2) = %+v", page)
	}
	// The sequence survives a restart and continues without reuse.
	s.Close()
	s = graphtest.Open(t, dir, nil)
	if r := mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(5)}}); r.Seq != 6 {
		t.Errorf("first seq after reopening = %d, want 6", r.Seq)
	}
	if st, _ := s.Stats(ctx); st.LastSeq != 6 {
		t.Errorf("LastSeq = %d", st.LastSeq)
	}
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
