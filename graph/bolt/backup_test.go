package bolt_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/graphtest"
)

// stormBatch is writer w's batch i: a new topic, an update of the
// writer's own shared topic, an edge from a new document to it, and from
// the fourth batch on, the delete of the topic of three batches before
// (and so of its edges).
func stormBatch(w, i int) *graph.Batch {
	b := &graph.Batch{Nodes: []graph.NodeInput{
		{ID: graph.ID(fmt.Sprintf("topic/w%d-%d", w, i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("w%d %d", w, i)}},
		{ID: graph.ID(fmt.Sprintf("topic/w%d-shared", w)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("w%d at %d", w, i)}},
		{ID: graph.ID(fmt.Sprintf("doc/w%d-%d", w, i)), Type: "Document", Properties: graph.Props{"title": fmt.Sprintf("doc %d", i)}},
	}, Edges: []graph.EdgeInput{
		{EdgeKey: graph.EdgeKey{From: graph.ID(fmt.Sprintf("doc/w%d-%d", w, i)), Label: "about", To: graph.ID(fmt.Sprintf("topic/w%d-%d", w, i))}},
		{EdgeKey: graph.EdgeKey{From: graph.ID(fmt.Sprintf("doc/w%d-%d", w, i)), Label: "about", To: graph.ID(fmt.Sprintf("topic/w%d-shared", w))}},
	}}
	if i >= 3 {
		b.DeleteNodes = []graph.NodeRef{{ID: graph.ID(fmt.Sprintf("topic/w%d-%d", w, i-3))}}
	}
	return b
}

// content is a store's export without timestamps, which a replay cannot
// reproduce: one line per element, with its properties and revision.
func content(t *testing.T, s graph.Store) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := graph.Export(t.Context(), s, &buf, graph.NDJSON); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "createdAt")
		delete(m, "updatedAt")
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
	}
	return out.String()
}

// TestBackupDuringWrites: a backup taken while four writers commit restores
// to a store that checks, holds the counts its manifest names, and equals
// the source at the backup's sequence number: the writers' batches with
// that number or less, replayed in order into a new store, give the same
// elements, properties and revisions.
func TestBackupDuringWrites(t *testing.T) {
	s := graphtest.New(t)
	const writers, batches = 4, 60
	var mu sync.Mutex
	applied := map[uint64]*graph.Batch{}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range batches {
				b := stormBatch(w, i)
				res, err := s.Apply(t.Context(), b)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				applied[res.Seq] = stormBatch(w, i)
				mu.Unlock()
			}
		})
	}
	// Back up once the storm is under way, while it goes on.
	for {
		ch := s.Changed()
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if st.LastSeq >= writers*batches/3 {
			break
		}
		<-ch
	}
	dest := filepath.Join(t.TempDir(), "backup")
	m, err := graph.WriteBackup(t.Context(), s, dest)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m.Seq == 0 || m.Seq >= writers*batches {
		t.Fatalf("backup at %d: not during the storm of %d batches", m.Seq, writers*batches)
	}

	restored := t.TempDir()
	if _, err := graph.InstallBackup(dest, restored); err != nil {
		t.Fatal(err)
	}
	r := graphtest.Open(t, restored, nil)
	graphtest.CheckOK(t, r)
	st, err := r.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Matches(st); err != nil {
		t.Error(err)
	}

	replay := graphtest.New(t)
	seqs := slices.Sorted(func(yield func(uint64) bool) {
		for q := range applied {
			if !yield(q) {
				return
			}
		}
	})
	for _, q := range seqs {
		if q > m.Seq {
			break
		}
		if _, err := replay.Apply(t.Context(), applied[q]); err != nil {
			t.Fatalf("replaying change %d: %v", q, err)
		}
	}
	if diff := cmp.Diff(content(t, replay), content(t, r)); diff != "" {
		t.Errorf("the restored store differs from the source at change %d (-replayed +restored):\n%s", m.Seq, diff)
	}

	// A damaged backup is refused, and so is a directory holding a store.
	if _, err := graph.InstallBackup(dest, restored); !errors.Is(err, graph.ErrConflict) {
		t.Errorf("restoring over a store: %v", err)
	}
	f := filepath.Join(dest, bolt.FileName)
	data, _ := os.ReadFile(f)
	data[len(data)/2] ^= 1
	os.WriteFile(f, data, 0o600)
	if _, err := graph.VerifyBackup(dest); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("a damaged backup: %v", err)
	}
	if _, err := graph.WriteBackup(t.Context(), s, dest); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a backup into an existing directory: %v", err)
	}
}
