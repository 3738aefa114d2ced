package bolt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// spillInput is a random load whose nodes are written again with other
// properties (their index entries deleted, some of them waiting in the
// load's runs, some not), and whose edges are written again too.
func spillInput(rng *rand.Rand) string {
	var b strings.Builder
	b.WriteString(randomLoad(rng))
	nAgain := 1 + rng.IntN(8)
	for i := range nAgain {
		fmt.Fprintf(&b, `{"kind":"node","id":"entity/x%d","type":"Entity","properties":{"name":"loose %d","entityType":"kind%d"}}`+"\n", i, i, rng.IntN(3))
	}
	for range rng.IntN(3 * nAgain) {
		i := rng.IntN(nAgain)
		fmt.Fprintf(&b, `{"kind":"node","id":"entity/x%d","type":"Entity","properties":{"name":"loose %d","entityType":"kind%d"}}`+"\n", i, rng.IntN(3), rng.IntN(3))
	}
	kinds := []string{"sync", "async", "library", "data"}
	for range rng.IntN(12) { // edges written again, with other properties (randomLoad has 5 services or more)
		fmt.Fprintf(&b, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d","properties":{"kind":%q}}`+"\n", rng.IntN(5), rng.IntN(5), kinds[rng.IntN(4)])
	}
	return b.String()
}

// storeState is what a load left in a store, for comparing two loads:
// the hash of every bucket whose keys and values hold no times, the
// records without their times, Cayley's part decoded, and Lore's counts.
type storeState struct {
	buckets map[string][32]byte
	recs    []string
	cayley  []string
	counts  map[string]string
}

func stateOf(t *testing.T, s *Store) storeState {
	t.Helper()
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r)
	}
	st := storeState{buckets: dumpFile(t, s), recs: recordDump(t, s), cayley: cayleyDump(t, s), counts: map[string]string{}}
	for _, timed := range [][]byte{bNodes, bEdges, bLog, bMeta} {
		delete(st.buckets, string(timed))
	}
	_ = s.read(func(tx *bbolt.Tx) error {
		return tx.Bucket(bMeta).ForEach(func(k, v []byte) error {
			if bytes.HasPrefix(k, []byte("count/")) || bytes.HasPrefix(k, []byte(dfPrefix)) {
				st.counts[string(k)] = string(v)
			}
			for _, mark := range [][]byte{metaLoading, metaQuadsPending, metaDeferred} {
				if bytes.Equal(k, mark) {
					t.Errorf("the store is still marked %q", mark)
				}
			}
			return nil
		})
	})
	return st
}

func (st storeState) diff(other storeState) string {
	var out []string
	for name := range st.buckets {
		if st.buckets[name] != other.buckets[name] {
			out = append(out, fmt.Sprintf("bucket %q differs", name))
		}
	}
	if len(st.buckets) != len(other.buckets) {
		out = append(out, fmt.Sprintf("%d buckets against %d", len(st.buckets), len(other.buckets)))
	}
	if !slices.Equal(st.recs, other.recs) {
		out = append(out, "records:\n"+lineDiff(st.recs, other.recs))
	}
	if !slices.Equal(st.cayley, other.cayley) {
		out = append(out, "Cayley's part:\n"+lineDiff(st.cayley, other.cayley))
	}
	if !maps.Equal(st.counts, other.counts) {
		out = append(out, "the counts differ")
	}
	return strings.Join(out, "\n")
}

// A bulk load that holds more than its buffer writes what it holds into
// the file and goes on (spill): random loads, in small batches, deferring
// early and draining often, leave the same store with a buffer of a byte
// (a spill before nearly every batch) as with the default one (no spill at
// all), whether the load is all or nothing and rewrites its file, all or
// nothing and keeps it, or partial; and the spilling loads did spill.
func TestSpilledLoadMatchesHeldLoad(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 91))
		input := spillInput(rng)
		batch := 1 + rng.IntN(24)
		after, flush := 1+rng.IntN(30), 1+rng.IntN(60)
		for _, mode := range []string{"rewritten", "kept", "partial"} {
			var states [2]storeState
			for i, buffer := range []int64{0, 1} {
				s := openTest(t, t.TempDir(), Config{KeepLoadFile: mode == "kept", DeferAfter: after, DeferFlush: flush, LoadBuffer: buffer})
				opts := graph.ImportOptions{BatchSize: batch, Partial: mode == "partial"}
				if _, err := graph.Import(t.Context(), s, strings.NewReader(input), opts); err != nil {
					t.Fatalf("seed %d, %s, buffer %d: %v", seed, mode, buffer, err)
				}
				switch {
				case buffer == 0 && s.spills > 0:
					t.Fatalf("seed %d, %s: the default buffer spilled %d times", seed, mode, s.spills)
				case buffer == 1 && s.spills < 2:
					t.Fatalf("seed %d, %s: a buffer of a byte spilled %d times, in %d-element batches of %d lines",
						seed, mode, s.spills, batch, strings.Count(input, "\n"))
				}
				states[i] = stateOf(t, s)
			}
			if d := states[0].diff(states[1]); d != "" {
				t.Errorf("seed %d, %s: a load that spilled differs from one that held all:\n%s", seed, mode, d)
			}
		}
	}
}

// A bulk load that is not all or nothing, whose process dies after its
// last batch commits but before its end writes what waits (its in-edge
// entries), leaves its store marked: the next Open rebuilds the in-edge
// index, and the store checks. (The last commit used to clear the mark.)
func TestBulkLoadDiesAfterItsLastCommit(t *testing.T) {
	dieAfterStream(t, Config{DeferAfter: -1, LoadBuffer: -1}, func(s *Store) {
		if s.spills != 0 || s.deferred.in.n == 0 {
			t.Fatalf("the load spilled %d times, and %d in-edge entries wait", s.spills, s.deferred.in.n)
		}
	})
}

// A partial bulk load that spilled and then died leaves its store marked:
// Cayley's part waits again after the spill (the quadLoad keeps the next
// batches' index entries back), so the next Open rebuilds it from the
// records, and the store checks.
func TestPartialLoadDiesAfterSpill(t *testing.T) {
	dieAfterStream(t, Config{DeferAfter: -1, LoadBuffer: 1}, func(s *Store) {
		if s.spills == 0 || s.qload == nil || s.qload.links.len() == 0 {
			t.Fatalf("the load spilled %d times, and keeps back %d index entries", s.spills, s.qload.links.len())
		}
	})
}

// dieAfterStream streams a random load, in batches, into a bulk load
// that is not all or nothing, in a store opened with cfg; calls dying;
// and then leaves the load as a process that dies leaves it. It checks
// the store when it is opened again, and compares its Cayley part with
// that of a load through Cayley.
func dieAfterStream(t *testing.T, cfg Config, dying func(*Store)) {
	data := randomLoad(rand.New(rand.NewPCG(8, 8)))
	dir := t.TempDir()
	s := openTest(t, dir, cfg)
	if _, ok := s.BeginBulk(); !ok { // its end is never called
		t.Fatal("an empty store did not start a bulk load")
	}
	var failed error
	s.ApplyStream(t.Context(), streamOf(lineBatches(t, data, 30)), func(_ *graph.StreamBatch, _ *graph.Result, err error) bool {
		failed = err
		return err == nil
	})
	if failed != nil {
		t.Fatal(failed)
	}
	dying(s)
	s.deferred, s.qload = nil, nil // what a dead process leaves
	s.Close()
	s = openTest(t, dir, Config{})
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check after reopening: %v %v", err, r.Problems)
	}
	ref := openTest(t, t.TempDir(), Config{cayleyLoads: true})
	if _, err := graph.Import(t.Context(), ref, strings.NewReader(data), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if want, got := cayleyDump(t, ref), cayleyDump(t, s); !slices.Equal(want, got) {
		t.Fatalf("Cayley's part after the reopen:\n%s", lineDiff(want, got))
	}
}

// lineBatches splits an import file's lines into batches of up to size
// elements, each element once per batch (a batch may not write one twice).
func lineBatches(t *testing.T, data string, size int) []*graph.Batch {
	t.Helper()
	var out []*graph.Batch
	b := &graph.Batch{}
	inBatch := map[string]bool{}
	for line := range strings.Lines(data) {
		var el struct{ ID, From, Label, To, Key string }
		if err := json.Unmarshal([]byte(line), &el); err != nil {
			t.Fatal(err)
		}
		key := el.ID + "|" + el.From + "|" + el.Label + "|" + el.To + "|" + el.Key
		if inBatch[key] || b.Len() == size {
			out = append(out, b)
			b, inBatch = &graph.Batch{}, map[string]bool{}
		}
		inBatch[key] = true
		addLine(t, b, line)
	}
	return append(out, b)
}
