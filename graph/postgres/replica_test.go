package postgres_test

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

func topic(id, name string) graph.NodeInput {
	return graph.NodeInput{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": name}}
}

// TestReplicaTailsTheLog: two Stores on one database, as two replicas: a
// write through one wakes the other's Changed, and its Since lists it,
// within 1 s, in order, for every write.
func TestReplicaTailsTheLog(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := open(t, url), open(t, url)
	ctx := t.Context()
	for i := range 20 {
		ch := b.Changed()
		res, err := a.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic(fmt.Sprintf("topic/r%02d", i), "r")}})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		select {
		case <-ch:
		case <-time.After(time.Second):
			t.Fatalf("write %d (seq %d) through A did not wake B's Changed within 1 s", i, res.Seq)
		}
		if i == 0 {
			t.Logf("B woke %v after A's Apply returned", time.Since(start))
		}
		chs, err := b.Since(ctx, res.Seq-1, 10)
		if err != nil || len(chs) != 1 || chs[0].Seq != res.Seq || chs[0].Nodes[0].ID != graph.ID(fmt.Sprintf("topic/r%02d", i)) {
			t.Fatalf("B's Since(%d): %+v %v", res.Seq-1, chs, err)
		}
	}
}

// TestConcurrentWritersAcrossReplicas: 4 writers × 250 writes spread over
// two Stores on one database all land, each with its own sequence number,
// and the change log is gapless; 200 compare-and-swap increments of one
// property from the two Stores end at exactly 200, the losers told
// ErrConflict.
func TestConcurrentWritersAcrossReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	stores := []graph.Store{open(t, url), open(t, url)}
	ctx := t.Context()
	const writers, writes = 4, 250
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		s := stores[w%2]
		wg.Go(func() {
			for i := range writes {
				if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic(fmt.Sprintf("topic/w%d-%03d", w, i), "w")}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st, err := stores[1].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != writers*writes || st.LastSeq != writers*writes {
		t.Fatalf("%d nodes, last seq %d; want %d of each", st.Nodes, st.LastSeq, writers*writes)
	}
	var seq uint64
	for seq < st.LastSeq {
		chs, err := stores[0].Since(ctx, seq, graph.MaxPageSize)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range chs {
			if c.Seq != seq+1 {
				t.Fatalf("the log goes from %d to %d", seq, c.Seq)
			}
			seq = c.Seq
		}
	}

	// Compare-and-swap increments.
	if _, err := stores[0].Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/counter", Type: "Topic", Properties: graph.Props{"name": "0"}}}}); err != nil {
		t.Fatal(err)
	}
	const increments, clients = 200, 8
	var next, conflicts atomic.Int64
	errs = make(chan error, clients)
	for c := range clients {
		s := stores[c%2]
		wg.Go(func() {
			for next.Add(1) <= increments {
				for {
					n, err := s.Node(ctx, "topic/counter")
					if err != nil {
						errs <- err
						return
					}
					v, _ := strconv.Atoi(n.Properties["name"].(string))
					in := graph.NodeInput{ID: "topic/counter", Type: "Topic", Properties: graph.Props{"name": strconv.Itoa(v + 1)}, ExpectedRevision: &n.Revision}
					_, err = s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{in}})
					if errors.Is(err, graph.ErrConflict) {
						conflicts.Add(1)
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n, err := stores[1].Node(ctx, "topic/counter")
	if err != nil {
		t.Fatal(err)
	}
	if n.Properties["name"] != strconv.Itoa(increments) || n.Revision != increments+1 {
		t.Fatalf("counter %v at revision %d; want %d at %d", n.Properties["name"], n.Revision, increments, increments+1)
	}
	if conflicts.Load() == 0 {
		t.Error("no increment lost a race: the test did not exercise the conflict")
	}
	t.Logf("%d increments, %d conflicts told to the losers", increments, conflicts.Load())
}

// TestChangedPollsWithoutNotification: a commit whose notification never
// came (written here straight into the log, with no NOTIFY) still wakes
// Changed, by the poll of the log, within PollMax.
func TestChangedPollsWithoutNotification(t *testing.T) {
	url := pgtest.NewDatabase(t)
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url, PollMin: 20 * time.Millisecond, PollMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ch := s.Changed()
	data := graph.EncodeChange(&graph.Change{Seq: 1, Time: time.Now().UTC(), Op: "write", Nodes: []graph.NodeChange{{ID: "topic/x", Type: "Topic", Action: graph.Created, Revision: 1}}})
	if _, err := s.Pool().Exec(t.Context(), `INSERT INTO lore_changes (seq, data) VALUES (1, $1)`, data); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatal("Changed did not wake within 1 s for a commit without a notification")
	}
	if chs, err := s.Since(t.Context(), 0, 10); err != nil || len(chs) != 1 || chs[0].Nodes[0].ID != "topic/x" {
		t.Fatalf("Since: %+v %v", chs, err)
	}
}
