package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// A bulk load's in-edge entries wait until it ends (runSet), but a
// batch that removes edges, or whose planning reads in-edges (a node's
// delete), has them written first: nothing it removes comes back at the
// end, and a delete's cascade finds every edge.
func TestPendingInEdges(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c"), svc("service/d")},
		Edges: []graph.EdgeInput{dep("service/a", "service/b", ""), dep("service/c", "service/b", ""), dep("service/d", "service/b", "")}})
	if s.deferred.in.n != 3 {
		t.Fatalf("%d in-edge entries pending, want 3", s.deferred.in.n)
	}
	apply(t, s, &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "service/c", Label: "dependsOn", To: "service/b"}}}})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/e")}, Edges: []graph.EdgeInput{dep("service/e", "service/b", ""), dep("service/e", "service/a", "")}})
	if s.deferred.in.n != 2 {
		t.Fatalf("%d in-edge entries pending, want 2", s.deferred.in.n)
	}
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "service/b"}}})
	if err := end(); err != nil {
		t.Fatal(err)
	}
	checkEdgeCounts(t, s, map[graph.ID]int{"service/a": 1, "service/e": 1, "service/d": 0})
}

// checkEdgeCounts fails unless s checks clean and each node in want has
// that many edges by its summary.
func checkEdgeCounts(t *testing.T, s *Store, want map[graph.ID]int) {
	t.Helper()
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	for id, w := range want {
		n, err := s.Node(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, e := range n.Edges {
			got += int(e.Count)
		}
		if got != w {
			t.Errorf("%s has %d edges, want %d: %+v", id, got, w, n.Edges)
		}
	}
}

// A commit that fails during a bulk load takes with it the index entries,
// counts and in-edge entries it had set aside to write at the load's end:
// the batch applied again (short of a node and an edge), and the load
// ended, the store checks clean and counts each node and edge once.
func TestBulkLoadFailedCommitKeepsNoEntries(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	end, ok := s.BeginBulk()
	if !ok {
		t.Fatal("an empty store did not start a bulk load")
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c")},
		Edges: []graph.EdgeInput{dep("service/a", "service/b", ""), dep("service/c", "service/b", "")}})
	failing := &graph.Batch{Nodes: []graph.NodeInput{svc("service/d"), svc("service/e")},
		Edges:       []graph.EdgeInput{dep("service/d", "service/b", ""), dep("service/e", "service/d", "")},
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
	checkEdgeCounts(t, s, map[graph.ID]int{"service/b": 2, "service/d": 1, "service/a": 0})
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 4 || st.Edges != 2 {
		t.Fatalf("stats after the load: %d nodes, %d edges, want 4 and 2", st.Nodes, st.Edges)
	}
}

// TestWaitingEdgesMatchDirect is the oracle of an all-or-nothing bulk
// load's waiting edge records (see runSet): random graphs, with edges
// given again with other properties or the same, imported in small
// batches into an empty store, leave the same records, summaries and
// import counts as imported durably, a batch at a time, with nothing
// waiting; and the store checks clean.
func TestWaitingEdgesMatchDirect(t *testing.T) {
	kinds := []string{"sync", "async", "library", "data"}
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var b strings.Builder
			b.WriteString(randomLoad(rng))
			for range rng.IntN(120) { // edges again, some of them new
				fmt.Fprintf(&b, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d","properties":{"kind":%q}}`+"\n",
					rng.IntN(5), rng.IntN(5), kinds[rng.IntN(len(kinds))])
			}
			data, batch := b.String(), 1+rng.IntN(40)
			var dumps [2][]string
			var stats [2][4]int64
			for i, durable := range []bool{false, true} {
				s := openTest(t, t.TempDir(), Config{DeferAfter: -1, DeferFlush: 1 + rng.IntN(200)})
				st, err := graph.Import(t.Context(), s, strings.NewReader(data), graph.ImportOptions{BatchSize: batch, Durable: durable})
				if err != nil {
					t.Fatal(err)
				}
				stats[i] = [4]int64{st.Created, st.Updated, st.Unchanged, st.Duplicates}
				if r, err := s.Check(t.Context()); err != nil || !r.OK() {
					t.Fatalf("durable=%v: check: %v %v", durable, err, r.Problems)
				}
				dumps[i] = recordDump(t, s)
			}
			if stats[0] != stats[1] {
				t.Errorf("created, updated, unchanged, duplicates: %v in a bulk load, %v a batch at a time", stats[0], stats[1])
			}
			if !slices.Equal(dumps[0], dumps[1]) {
				t.Fatalf("bulk load (batches of %d) against a batch at a time:\n%s", batch, lineDiff(dumps[1], dumps[0]))
			}
		})
	}
}

// recordDump lists every node and edge record of s, all but their times.
func recordDump(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	err := s.read(func(tx *bbolt.Tx) error {
		err := tx.Bucket(bNodes).ForEach(func(k, v []byte) error {
			r, err := decodeNodeRec(v)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("node %s %s rev %d %s summary %x", k, r.Type, r.Rev, r.Props, r.Deg))
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bEdges).ForEach(func(k, v []byte) error {
			r, err := decodeEdgeRec(v)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("edge %v rev %d %s", graph.EdgeKeyFromBytes(k), r.Rev, r.Props))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Batches streamed into an all-or-nothing bulk load may remove edges whose
// records wait: their commit writes what waits first, and the batch after
// it, planned once that commit is done, finds the records it updates.
//
// ApplyStream plans a batch while the one before it commits, and planning
// reads edge records from its snapshot of the file and from the runs that
// wait. A commit that writes the runs into the file in between would hide
// them from it: so planning waits for a commit that removes edges. The
// hooks force that interleaving where the pipeline allows it: the commit's
// flush starts once the next batch's planning has its snapshot (or once
// planning waits for the commit), and planning reads once the flush is
// done. Without the wait, the batch after the delete finds no record of
// the edge it updates, and makes it anew.
func TestWaitingEdgesRemovedInAStream(t *testing.T) {
	var batches []*graph.Batch
	snapped, guarded, flushed := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var guard, flush sync.Once
	hooks := streamHooks{
		planning: func(b *graph.Batch) {
			if b == batches[3] {
				close(snapped)
				<-flushed
			}
		},
		waiting: func() { guard.Do(func() { close(guarded) }) },
		flush: func(do func() error) error {
			select {
			case <-snapped:
			case <-guarded:
			}
			defer flush.Do(func() { close(flushed) })
			return do()
		},
	}
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1, stream: hooks})
	done, ok, err := s.BeginLoad(true)
	if err != nil || !ok {
		t.Fatalf("an empty store did not start a load: %v", err)
	}
	if s.deferred.edges == nil {
		t.Fatal("the load's edge records do not wait")
	}
	batches = []*graph.Batch{
		{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c")},
			Edges: []graph.EdgeInput{dep("service/a", "service/b", ""), dep("service/a", "service/c", ""), dep("service/c", "service/b", "")}},
		{Edges: []graph.EdgeInput{dep("service/b", "service/c", "")}},
		{Edges: []graph.EdgeInput{dep("service/b", "service/a", "")},
			DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}}}},
		{Edges: []graph.EdgeInput{dep("service/a", "service/c", "sync"), dep("service/b", "service/c", "")}},
		{Edges: []graph.EdgeInput{dep("service/c", "service/b", "data")}},
	}
	for _, b := range batches {
		b.Op = "import"
	}
	var results []*graph.Result
	s.ApplyStream(graph.WithinLoad(t.Context()), streamOf(batches), func(_ *graph.StreamBatch, r *graph.Result, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, r)
		return true
	})
	if err := done(true); err != nil {
		t.Fatal(err)
	}
	if len(results) != len(batches) {
		t.Fatalf("%d results for %d batches", len(results), len(batches))
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	want := []string{
		"node service/a Service rev 1 {\"name\":\"service/a\"} summary 6f09646570656e64734f6e016909646570656e64734f6e01",
		"node service/b Service rev 1 {\"name\":\"service/b\"} summary 6f09646570656e64734f6e026909646570656e64734f6e01",
		"node service/c Service rev 1 {\"name\":\"service/c\"} summary 6f09646570656e64734f6e016909646570656e64734f6e02",
		"edge dependsOn(service/a,service/c) rev 2 {\"kind\":\"sync\"}",
		"edge dependsOn(service/b,service/a) rev 1 ",
		"edge dependsOn(service/b,service/c) rev 1 ",
		"edge dependsOn(service/c,service/b) rev 2 {\"kind\":\"data\"}",
	}
	if got := recordDump(t, s); !slices.Equal(got, want) {
		t.Fatalf("records after the load:\n%s", lineDiff(want, got))
	}
}

// svc is a service node named after its ID.
func svc(id string) graph.NodeInput {
	return graph.NodeInput{ID: graph.ID(id), Type: "Service", Properties: graph.Props{"name": id}}
}

// dep is a dependsOn edge, of the given kind unless kind is "".
func dep(from, to, kind string) graph.EdgeInput {
	e := graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(from), Label: "dependsOn", To: graph.ID(to)}}
	if kind != "" {
		e.Properties = graph.Props{"kind": kind}
	}
	return e
}

// BenchmarkRunMerge merges a load's edge records as a rewrite does: 600
// runs (one per commit) of 1,000 random edge keys each, spread over the
// whole key space.
func BenchmarkRunMerge(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	var set runSet
	for range 600 {
		pairs := make([]kv, 1000)
		for i := range pairs {
			k := graph.EdgeKey{From: graph.ID(fmt.Sprintf("package/p%d", rng.IntN(1000000))), Label: "dependsOn", To: graph.ID(fmt.Sprintf("package/p%d", rng.IntN(1000000)))}
			pairs[i] = kv{k.Bytes(), []byte("\x02\xb8\xe0\xf4\xbb\x99\xee\xb0\x06\x00\x01")}
		}
		slices.SortFunc(pairs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
		pairs = slices.CompactFunc(pairs, func(a, b kv) bool { return bytes.Equal(a.k, b.k) })
		set.add(pairs, false)
	}
	b.ResetTimer()
	for b.Loop() {
		m := set.merge()
		for _, _, ok := m.next(); ok; _, _, ok = m.next() {
		}
	}
}

// The node records a load holds back (nodeRuns) read as a map of runs
// does, the latest run's record standing: by ID (overlay) and by type
// (overlayTypes), as runs are added and dropped again (truncate, after a
// failed commit).
func TestNodeRunsAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	for round := range 50 {
		n := newNodeRuns()
		var model []map[graph.ID]*nodeRec // one map per run, in order
		ids := make([]graph.ID, 40)
		for i := range ids {
			ids[i] = graph.ID(fmt.Sprintf("t/n%d", i))
		}
		for range 30 {
			if len(model) > 0 && rng.IntN(4) == 0 {
				k := rng.IntN(len(model) + 1)
				n.truncate(k)
				model = model[:k]
			} else {
				run := map[graph.ID]*nodeRec{}
				var pairs []kv
				var types []string
				for range 1 + rng.IntN(10) {
					id := ids[rng.IntN(len(ids))]
					if run[id] != nil {
						continue // a commit writes a node once
					}
					rec := &nodeRec{NodeRecord: graph.NodeRecord{Type: fmt.Sprintf("T%d", rng.IntN(3)), Rev: int64(1 + rng.IntN(100)), Props: []byte(`{"a":1}`)}}
					run[id] = rec
					pairs = append(pairs, kv{[]byte(id), append([]byte{runPut}, rec.encode()...)})
					types = append(types, rec.Type)
				}
				n.add(pairs, types)
				model = append(model, run)
			}
			recs := make([]*nodeRec, len(ids))
			if err := n.overlay(ids, recs); err != nil {
				t.Fatal(err)
			}
			types := make([]string, len(ids))
			n.overlayTypes(ids, types)
			for i, id := range ids {
				var want *nodeRec
				for _, run := range model {
					if r := run[id]; r != nil {
						want = r
					}
				}
				switch {
				case want == nil && (recs[i] != nil || types[i] != ""):
					t.Fatalf("round %d: %s is in no run, yet reads as %+v, type %q", round, id, recs[i], types[i])
				case want != nil && (recs[i] == nil || recs[i].Rev != want.Rev || recs[i].Type != want.Type || types[i] != want.Type):
					t.Fatalf("round %d: %s reads as %+v, type %q; want %+v", round, id, recs[i], types[i], want)
				}
			}
		}
	}
}

// TestEdgeRunsAgainstAMap adds random runs of edge records, truncates some,
// and looks keys up at random moments (so that the hashes of the keys held
// are made before some adds and after others), against a map of runs.
func TestEdgeRunsAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 19))
	keys := make([]graph.EdgeKey, 40)
	for i := range keys {
		keys[i] = graph.EdgeKey{From: graph.ID(fmt.Sprintf("t/n%d", i%7)), Label: "l", To: graph.ID(fmt.Sprintf("t/n%d", i))}
	}
	for round := range 50 {
		e := newEdgeRuns()
		var model []map[graph.EdgeKey]int64 // one map of revs per run, in order
		for range 30 {
			switch r := rng.IntN(6); {
			case len(model) > 0 && r == 0:
				k := rng.IntN(len(model) + 1)
				e.truncate(k)
				model = model[:k]
			case r <= 2:
				run := map[graph.EdgeKey]int64{}
				var pairs []kv
				for range 1 + rng.IntN(10) {
					k := keys[rng.IntN(len(keys))]
					if run[k] != 0 {
						continue // a commit writes an edge once
					}
					rev := int64(1 + rng.IntN(100))
					run[k] = rev
					pairs = append(pairs, kv{k.Bytes(), encodeEdge(&edgeRec{Created: 1, Updated: 2, Rev: rev})})
				}
				e.add(pairs)
				model = append(model, run)
			default:
				some := make([]graph.EdgeKey, 0, len(keys))
				for _, k := range keys {
					if rng.IntN(2) == 0 {
						some = append(some, k)
					}
				}
				recs := make([]*edgeRec, len(some))
				if err := e.overlay(some, recs); err != nil {
					t.Fatal(err)
				}
				for i, k := range some {
					var want int64
					for _, run := range model {
						if rev := run[k]; rev != 0 {
							want = rev
						}
					}
					switch {
					case want == 0 && recs[i] != nil:
						t.Fatalf("round %d: %v is in no run, yet reads as %+v", round, k, recs[i])
					case want != 0 && (recs[i] == nil || recs[i].Rev != want):
						t.Fatalf("round %d: %v reads as %+v; want rev %d", round, k, recs[i], want)
					}
				}
			}
		}
	}
}

// TestDFCountsSize adds random changes to search term counts (some coming
// to zero, some zero already) and checks what it says it holds against a
// map of the changes: whether it holds any, and a size at least the bytes
// of their keys and counts.
func TestDFCountsSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 20))
	c := newDFCounts()
	sums := map[string]int64{}
	for range 2000 {
		changes := map[string]int64{}
		for range rng.IntN(5) {
			changes[fmt.Sprintf("df/t%d", rng.IntN(30))] = int64(rng.IntN(5) - 2)
		}
		c.add(changes)
		held, least := false, int64(0)
		for k, n := range changes {
			sums[k] += n
		}
		for k, n := range sums {
			held = held || n != 0
			least += int64(len(k)) + 8
		}
		if c.held() != held {
			t.Fatalf("held() = %v, want %v (sums %v)", c.held(), held, sums)
		}
		if got := c.size(); got < least || got > 16*least+64<<10 {
			t.Fatalf("size %d for %d keys of %d bytes with their counts", got, len(sums), least)
		}
	}
}

// TestDFCountsAgainstGets checks the counts a load's held changes come to
// against the counts in the file read one by one: random counts in the
// file (some of keys the load changes, some not, and other meta keys
// around them) and random changes.
func TestDFCountsAgainstGets(t *testing.T) {
	db, err := bbolt.Open(t.TempDir()+"/db", 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(11, 22))
	for round := range 40 {
		stored := map[string]int64{}
		err := db.Update(func(tx *bbolt.Tx) error {
			_ = tx.DeleteBucket(bMeta)
			meta, err := tx.CreateBucket(bMeta)
			if err != nil {
				return err
			}
			for _, k := range []string{"count/node/T", "dd", "loading", "de"} {
				if err := meta.Put([]byte(k), u64(7)); err != nil {
					return err
				}
			}
			for range rng.IntN(400) {
				k := fmt.Sprintf("%st%d\x00T%d", dfPrefix, rng.IntN(300), rng.IntN(2))
				stored[k] = int64(1 + rng.IntN(9))
				if err := meta.Put([]byte(k), u64(uint64(stored[k]))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Changes that leave each count at 0 to 10 (one below zero in
		// every fifth round), added in two parts.
		c := newDFCounts()
		changes, later := map[string]int64{}, map[string]int64{}
		for range rng.IntN(300) {
			k := fmt.Sprintf("%st%d\x00T%d", dfPrefix, rng.IntN(300), rng.IntN(2))
			d := int64(rng.IntN(11)) - stored[k]
			changes[k] = d - 3
			later[k] = 3
		}
		if round%5 == 4 {
			for k := range later {
				later[k] -= stored[k] + 11
				break
			}
		}
		c.add(changes)
		c.add(later)
		want := map[string]int64{}
		for k, n := range changes {
			if n += later[k]; n == 0 {
				continue // no change: nothing to write
			}
			if n += stored[k]; n >= 0 {
				want[k] = n
			} else {
				want = nil // some count goes negative: counts must refuse
				break
			}
		}
		var got []kv
		err = db.View(func(tx *bbolt.Tx) (err error) { got, err = c.counts(tx); return err })
		if want == nil {
			if err == nil {
				t.Fatalf("round %d: a count below zero was not refused", round)
			}
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %d counts, want %d", round, len(got), len(want))
		}
		for i, p := range got {
			if i > 0 && bytes.Compare(got[i-1].k, p.k) >= 0 {
				t.Fatalf("round %d: %q after %q", round, p.k, got[i-1].k)
			}
			n, ok := want[string(p.k)]
			switch {
			case !ok:
				t.Fatalf("round %d: a count of %q, which the load did not change", round, p.k)
			case n == 0 && !bytes.Equal(p.v, []byte{runDel}):
				t.Fatalf("round %d: %q comes to zero, yet is %v", round, p.k, p.v)
			case n != 0 && (len(p.v) != 9 || p.v[0] != runPut || int64(binary.BigEndian.Uint64(p.v[1:])) != n):
				t.Fatalf("round %d: %q is %v, want %d", round, p.k, p.v, n)
			}
		}
	}
}

// TestRunMergeAgainstAMap merges random runs (1 to 40 of them, some empty,
// keys shared between runs) and checks the pairs against a map of each
// key's latest value: every key once, in key order.
func TestRunMergeAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 23))
	for round := range 300 {
		var set runSet
		latest := map[string]string{}
		for r := range rng.IntN(41) {
			run := map[string]string{}
			for range rng.IntN(30) {
				k := fmt.Sprintf("k%03d", rng.IntN(200))
				run[k] = fmt.Sprintf("r%d", r)
			}
			var pairs []kv
			for k, v := range run {
				pairs = append(pairs, kv{[]byte(k), []byte(v)})
				latest[k] = v
			}
			set.add(pairs, false) // sorts them
		}
		m := set.merge()
		var last string
		n := 0
		for k, v, ok := m.next(); ok; k, v, ok = m.next() {
			if n > 0 && string(k) <= last {
				t.Fatalf("round %d: %q after %q", round, k, last)
			}
			if want := latest[string(k)]; string(v) != want {
				t.Fatalf("round %d: %q is %q, want %q", round, k, v, want)
			}
			last = string(k)
			n++
		}
		if n != len(latest) {
			t.Fatalf("round %d: %d pairs, want %d", round, n, len(latest))
		}
	}
}
