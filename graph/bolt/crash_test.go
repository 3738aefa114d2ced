package bolt

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// snapshotCommits copies the files of the store in dir after each commit
// into its file (see crashPoints), while no other write can begin: each
// copy is the store a process leaves that dies right after that commit.
// It returns the copies' directories, in order, once the test is done
// with the store.
func snapshotCommits(t *testing.T, dir string) func() []string {
	t.Helper()
	var (
		mu    sync.Mutex
		snaps []string
	)
	base := t.TempDir()
	hook := func(db *bbolt.DB) {
		if filepath.Dir(db.Path()) != dir {
			return // another test's store
		}
		tx, err := db.Begin(true) // the copy is of one commit's file
		if err != nil {
			t.Errorf("holding the store's writes for a copy: %v", err)
			return
		}
		defer tx.Rollback()
		mu.Lock()
		defer mu.Unlock()
		to := filepath.Join(base, fmt.Sprint(len(snaps)))
		if err := copyDir(dir, to); err != nil {
			t.Errorf("copying the store after a commit: %v", err)
			return
		}
		snaps = append(snaps, to)
	}
	crashPoints.Store(&hook)
	stop := func() []string {
		crashPoints.Store(nil)
		mu.Lock()
		defer mu.Unlock()
		return snaps
	}
	t.Cleanup(func() { stop() })
	return stop
}

// copyDir copies the regular files of dir into a new directory to.
func copyDir(dir, to string) error {
	if err := os.Mkdir(to, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// prefixStates writes the lines of an import file one at a time into a
// store through Apply, and returns what the store holds before the first
// and after each (records without their times, and Cayley's part
// decoded), mapped to the numbers of lines that leave it.
func prefixStates(t *testing.T, input string) (states map[string][]int, lines int) {
	t.Helper()
	s := openTest(t, t.TempDir(), Config{})
	states = map[string][]int{}
	note := func(i int) {
		k := stateKey(t, s)
		states[k] = append(states[k], i)
	}
	note(0)
	for line := range strings.Lines(input) {
		lines++
		var b graph.Batch
		addLine(t, &b, line)
		apply(t, s, &b)
		note(lines)
	}
	return states, lines
}

// A process may die after any commit of a bulk load: between its batches,
// or at any step of its end (writing what waited, folding the summaries,
// rewriting the file). Random loads, all or nothing (rewriting the file or
// keeping it) or partial, holding what waits or spilling it before nearly
// every batch, are copied after every commit into their file; each copy,
// opened as the next process would open it, checks, takes a write, and
// holds what the lines written one at a time leave: for an all-or-nothing
// load, none of them or all; for a partial one, a prefix of them, never
// shorter than at an earlier commit.
func TestBulkLoadDiesAtEveryCommit(t *testing.T) {
	first, seeds := uint64(0), uint64(4)
	if testing.Short() || raceDetector {
		first, seeds = 1, 2 // one, of the smaller inputs (seed 0 has 1,200 commits)
	}
	for seed := first; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 4242))
		input := spillInput(rng)
		states, lines := prefixStates(t, input)
		batch := 1 + rng.IntN(40)
		after, flush := 1+rng.IntN(30), 1+rng.IntN(60)
		crashEveryCommit(t, fmt.Sprintf("seed %d", seed), Config{DeferAfter: after, DeferFlush: flush}, states, lines,
			func(name string, s *Store, partial bool) {
				opts := graph.ImportOptions{BatchSize: batch, Partial: partial}
				if _, err := graph.Import(t.Context(), s, strings.NewReader(input), opts); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			})
	}
}

// crashEveryCommit runs load into new stores opened with cfg, each way a
// load can go: all or nothing rewriting its file or keeping it, or
// partial; holding what waits for its end or spilling it before nearly
// every batch. It copies each store after every commit (snapshotCommits),
// then checks the copies and the finished store against states, the
// states of the load's input after 0 to total steps (checkCrashCopies).
func crashEveryCommit(t *testing.T, prefix string, cfg Config, states map[string][]int, total int, load func(name string, s *Store, partial bool)) {
	t.Helper()
	for _, mode := range []string{"rewritten", "kept", "partial"} {
		for _, buffer := range []int64{0, 1} {
			name := fmt.Sprintf("%s, %s, buffer %d", prefix, mode, buffer)
			dir := t.TempDir()
			cfg.KeepLoadFile, cfg.LoadBuffer = mode == "kept", buffer
			s := openTest(t, dir, cfg)
			stop := snapshotCommits(t, dir)
			load(name, s, mode == "partial")
			snaps := stop()
			s.Close()
			if len(snaps) < 3 {
				t.Fatalf("%s: %d commits seen", name, len(snaps))
			}
			checkCrashCopies(t, name, snaps, states, total, mode != "partial")
			if got := reopenCrashed(t, dir); states[got] == nil || states[got][len(states[got])-1] != total {
				t.Fatalf("%s: the finished load does not hold all of its input", name)
			}
		}
	}
}

// checkCrashCopies opens each copy of a store that a load left after one
// of its commits (snaps, in order), and requires it to hold one of the
// states (see prefixStates) of the load's input: for a load that is all or
// nothing, that of none of the input's steps or of all (total); otherwise,
// that of some prefix, never shorter than an earlier copy's. For a sample
// of the copies, a copy of the store left after each commit of their next
// Open (which mends them) must open to the same state.
func checkCrashCopies(t *testing.T, name string, snaps []string, states map[string][]int, total int, allOrNothing bool) {
	t.Helper()
	last := 0
	every := max(1, len(snaps)/4) // the copies whose next Open dies in turn
	for i, snap := range snaps {
		again := snap + "-again"
		if i%every == 0 || i == len(snaps)-1 {
			if err := copyDir(snap, again); err != nil {
				t.Fatal(err)
			}
		}
		got := reopenCrashed(t, snap)
		if i%every == 0 || i == len(snaps)-1 {
			// The next process may die too, while its Open mends the
			// store: the one after it finds the same.
			stop := snapshotCommits(t, again)
			openTest(t, again, Config{}).Close()
			for j, re := range stop() {
				if got2 := reopenCrashed(t, re); got2 != got {
					t.Fatalf("%s: after commit %d of %d, and commit %d of the next Open, the store holds another state:\n%s",
						name, i+1, len(snaps), j+1, lineDiff(strings.Split(got, "\n"), strings.Split(got2, "\n")))
				}
				_ = os.RemoveAll(re)
			}
			_ = os.RemoveAll(again)
		}
		_ = os.RemoveAll(snap) // thousands of copies would fill a small disk
		at, ok := states[got]
		if !ok {
			t.Fatalf("%s: after commit %d of %d, the store holds what no prefix of the input leaves:\n%s",
				name, i+1, len(snaps), got)
		}
		switch {
		case allOrNothing && at[0] != 0 && at[len(at)-1] != total:
			t.Fatalf("%s: after commit %d of %d, an all-or-nothing load left %v of %d steps", name, i+1, len(snaps), at, total)
		case !allOrNothing && at[len(at)-1] < last:
			t.Fatalf("%s: after commit %d of %d, the store holds %v steps, %d after an earlier commit", name, i+1, len(snaps), at, last)
		}
		if !allOrNothing {
			last = max(last, at[0])
		}
	}
}

// stateKey is what s holds, as prefixStates keys it.
func stateKey(t *testing.T, s *Store) string {
	t.Helper()
	return strings.Join(recordDump(t, s), "\n") + "\n--\n" + strings.Join(cayleyDump(t, s), "\n")
}

// A process may also die after any commit of a load whose batches delete
// and re-type (random streams, as TestTallyLoadMatchesApplies writes them):
// each copy holds the state of none or all of the batches (all or nothing)
// or of a growing prefix of them (partial), as plain writes leave it.
func TestStreamedLoadDiesAtEveryCommit(t *testing.T) {
	seeds := uint64(6)
	if testing.Short() || raceDetector {
		seeds = 1
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 5151))
		_, stream, refused := plainStream(t, rng, 10+rng.IntN(40))
		// The states a plain store passes through.
		plain := openTest(t, t.TempDir(), Config{})
		states := map[string][]int{stateKey(t, plain): {0}}
		for i, b := range stream {
			if _, err := plain.Apply(t.Context(), b); (err == nil) == slices.Contains(refused, i) {
				t.Fatalf("seed %d: batch %d: %v, refused before: %v", seed, i, err, slices.Contains(refused, i))
			}
			k := stateKey(t, plain)
			states[k] = append(states[k], i+1)
		}
		after, flush := rng.IntN(20), 1+rng.IntN(40)
		crashEveryCommit(t, fmt.Sprintf("seed %d", seed), Config{DeferAfter: after, DeferFlush: flush}, states, len(stream),
			func(name string, s *Store, partial bool) {
				ctx, done := beginStreamLoad(t, s, partial)
				i := 0
				s.ApplyStream(ctx, streamOf(stream), func(_ *graph.StreamBatch, _ *graph.Result, err error) bool {
					if (err != nil) != slices.Contains(refused, i) {
						t.Errorf("%s: batch %d: %v", name, i, err)
					}
					i++
					return true
				})
				if err := done(); err != nil {
					t.Fatalf("%s: ending the load: %v", name, err)
				}
			})
	}
}

// reopenCrashed opens the store a dead process left in dir, checks it, and
// returns what it holds as prefixStates keys it; then it writes into it and
// checks it again.
func reopenCrashed(t *testing.T, dir string) string {
	t.Helper()
	s := openTest(t, dir, Config{})
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("%s: check after reopening: %v %v", dir, err, r.Problems)
	}
	got := stateKey(t, s)
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "topic/after", Type: "Topic", Properties: graph.Props{"name": "after the crash"}},
			{ID: "doc/after", Type: "Document", Properties: graph.Props{"title": "after the crash"}},
		},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "doc/after", Label: "about", To: "topic/after"}}},
	})
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("%s: check after a write into the reopened store: %v %v", dir, err, r.Problems)
	}
	s.Close()
	return got
}

// Cayley's Init writes its version and its list of quad indexes in two
// transactions. A store whose list is missing (a process died between
// them) gets Lore's one index at the next Open if Cayley's part is empty,
// and is rebuilt from the records if it holds quads, which Cayley would
// otherwise have written on in its legacy layout: either way it checks and
// keeps what it held, and a bulk load can write Cayley's part again.
func TestCayleyInitCutShort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	input := randomLoad(rng)
	for _, held := range []bool{false, true} {
		dir := t.TempDir()
		s := openTest(t, dir, Config{})
		if held {
			for line := range strings.Lines(input) {
				var b graph.Batch
				addLine(t, &b, line)
				apply(t, s, &b)
			}
		}
		want := stateKey(t, s)
		s.Close()
		db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bbolt.Tx) error {
			if _, err := tx.CreateBucketIfNotExists([]byte("sp")); err != nil { // as Init made it
				return err
			}
			if held { // Cayley's legacy layout: its index entries in "s" and "o", none in [O,P,S]
				if err := tx.DeleteBucket(bOPS); err != nil {
					return err
				}
				if _, err := tx.CreateBucket(bOPS); err != nil {
					return err
				}
				for _, name := range []string{"s", "o"} {
					b, err := tx.CreateBucket([]byte(name))
					if err != nil {
						return err
					}
					if err := b.Put(make([]byte, 8), []byte{1}); err != nil {
						return err
					}
				}
			}
			return tx.Bucket(cayleyMeta).Delete(cayleyIndexesKey)
		})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()

		s = openTest(t, dir, Config{})
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("held %v: check: %v %v", held, err, r.Problems)
		}
		if got := stateKey(t, s); got != want {
			t.Fatalf("held %v: after the Open:\n%s", held, lineDiff(strings.Split(want, "\n"), strings.Split(got, "\n")))
		}
		_ = s.read(func(tx *bbolt.Tx) error {
			if list := string(tx.Bucket(cayleyMeta).Get(cayleyIndexesKey)); list != `[{"dirs":"AwIB","unique":false}]` {
				t.Errorf("held %v: Cayley's quad indexes: %s", held, list)
			}
			for _, name := range []string{"sp", "s", "o"} {
				if tx.Bucket([]byte(name)) != nil {
					t.Errorf("held %v: bucket %q is left", held, name)
				}
			}
			if tx.Bucket(bMeta).Get(metaQuadsPending) != nil {
				t.Errorf("held %v: still marked for a rebuild", held)
			}
			return nil
		})
		if !held {
			_ = s.read(func(tx *bbolt.Tx) error {
				if newQuadLoad(tx) == nil {
					t.Error("a bulk load into the store would write Cayley's part through Cayley")
				}
				return nil
			})
		}
	}
}
