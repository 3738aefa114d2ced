package bolt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// A streamGen makes random batches for the default model, each against
// what the batches before it that a store took left: nodes created and
// written again, edges created and deleted, nodes deleted with their
// edges, and re-types that their edges allow or forbid.
type streamGen struct {
	rng       *rand.Rand
	nodes     map[graph.ID]string // ID -> type
	edges     map[graph.EdgeKey]bool
	next      *graph.Batch // the batch made last, which took effect unless refused
	nextNodes map[graph.ID]string
	nextEdges map[graph.EdgeKey]bool
	nIDs      int
}

func newStreamGen(rng *rand.Rand) *streamGen {
	return &streamGen{rng: rng, nodes: map[graph.ID]string{}, edges: map[graph.EdgeKey]bool{}, nIDs: 4 + rng.IntN(16)}
}

// node returns a node input of type typ.
func nodeOf(id graph.ID, typ string) graph.NodeInput {
	switch typ {
	case "Entity":
		return graph.NodeInput{ID: id, Type: typ, Properties: graph.Props{"name": string(id), "entityType": "kind0"}}
	case "Topic":
		return graph.NodeInput{ID: id, Type: typ, Properties: graph.Props{"name": string(id)}}
	case "Document":
		return graph.NodeInput{ID: id, Type: typ, Properties: graph.Props{"title": string(id)}}
	}
	return svc(string(id))
}

// ofType returns the IDs of the nodes of type typ in nodes, in order.
func ofType(nodes map[graph.ID]string, typ string) []graph.ID {
	var ids []graph.ID
	for id, t := range nodes {
		if t == typ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (g *streamGen) pick(ids []graph.ID) (graph.ID, bool) {
	if len(ids) == 0 {
		return "", false
	}
	return ids[g.rng.IntN(len(ids))], true
}

// batch makes the next batch; took says whether the store took the one
// before it.
func (g *streamGen) batch(took bool) *graph.Batch {
	if took && g.next != nil {
		g.nodes, g.edges = g.nextNodes, g.nextEdges
	}
	g.nextNodes, g.nextEdges = maps.Clone(g.nodes), maps.Clone(g.edges)
	rng, b := g.rng, &graph.Batch{Op: "import"}
	g.next = b
	create := func(id graph.ID, typ string) {
		if _, ok := g.nextNodes[id]; !ok && !slices.ContainsFunc(b.Nodes, func(n graph.NodeInput) bool { return n.ID == id }) {
			b.Nodes = append(b.Nodes, nodeOf(id, typ))
			g.nextNodes[id] = typ
		}
	}
	// Bring back some nodes, deleted or never made.
	for range rng.IntN(4) {
		typ := []string{"Service", "Entity", "Topic", "Document"}[rng.IntN(4)]
		create(graph.ID(fmt.Sprintf("%s/n%d", typ, rng.IntN(g.nIDs))), typ)
	}
	live := func(typ string) []graph.ID { return ofType(g.nextNodes, typ) }
	for range rng.IntN(12) {
		var k graph.EdgeKey
		var ok1, ok2 bool
		switch rng.IntN(3) {
		case 0:
			k.Label = "dependsOn"
			k.From, ok1 = g.pick(live("Service"))
			k.To, ok2 = g.pick(live("Service"))
		case 1:
			k.Label, k.Key = "relation", fmt.Sprintf("k%d", rng.IntN(2))
			k.From, ok1 = g.pick(live("Entity"))
			k.To, ok2 = g.pick(live("Entity"))
		default:
			k.Label = "about"
			k.From, ok1 = g.pick(live("Document"))
			to := "Topic"
			if rng.IntN(3) == 0 {
				to = "Service"
			}
			k.To, ok2 = g.pick(live(to))
		}
		if ok1 && ok2 && !slices.ContainsFunc(b.Edges, func(e graph.EdgeInput) bool { return e.EdgeKey == k }) {
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: k})
			g.nextEdges[k] = true
		}
	}
	made := slices.SortedFunc(maps.Keys(g.edges), func(a, b graph.EdgeKey) int { return cmp.Compare(a.String(), b.String()) })
	switch rng.IntN(8) {
	case 0, 1, 2: // delete edges
		for range 1 + rng.IntN(4) {
			if len(made) == 0 {
				break
			}
			k := made[rng.IntN(len(made))]
			if g.nextEdges[k] && !slices.ContainsFunc(b.Edges, func(e graph.EdgeInput) bool { return e.EdgeKey == k }) {
				b.DeleteEdges = append(b.DeleteEdges, graph.EdgeRef{EdgeKey: k})
				delete(g.nextEdges, k)
			}
		}
	case 3: // delete a node, and its edges
		id, ok := g.pick(slices.Sorted(maps.Keys(g.nodes)))
		if !ok {
			break
		}
		b = &graph.Batch{Op: "import", DeleteNodes: []graph.NodeRef{{ID: id}}}
		g.next, g.nextNodes, g.nextEdges = b, maps.Clone(g.nodes), maps.Clone(g.edges)
		delete(g.nextNodes, id)
		maps.DeleteFunc(g.nextEdges, func(k graph.EdgeKey, _ bool) bool { return k.From == id || k.To == id })
	case 4: // re-type a service, which its dependsOn edges may forbid, or a topic, which about edges allow
		id, ok := g.pick(ofType(g.nodes, "Service"))
		typ := "Entity"
		if rng.IntN(2) == 0 {
			id, ok = g.pick(ofType(g.nodes, "Topic"))
			typ = "Service"
		}
		if !ok {
			break
		}
		b = &graph.Batch{Op: "import", Retype: true, Nodes: []graph.NodeInput{nodeOf(id, typ)}}
		g.next, g.nextNodes, g.nextEdges = b, maps.Clone(g.nodes), maps.Clone(g.edges)
		g.nextNodes[id] = typ
	}
	return b
}

// plainStream makes n random batches with a streamGen, each written into a
// new plain store as it is made, and returns the store, the batches and
// the indexes of those it refused, as invalid: no more than a quarter.
func plainStream(t *testing.T, rng *rand.Rand, n int) (*Store, []*graph.Batch, []int) {
	t.Helper()
	gen := newStreamGen(rng)
	plain := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	var stream []*graph.Batch
	var refused []int
	took := true
	for i := range n {
		b := gen.batch(took)
		for b.Len() == 0 { // which Apply refuses, and a stream skips
			b = gen.batch(false)
		}
		stream = append(stream, b)
		_, err := plain.Apply(t.Context(), b)
		if err != nil && testing.Verbose() {
			t.Logf("plain refused batch %d: %v", i, err)
		}
		if took = err == nil; !took {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("batch %d: %v", i, err)
			}
			refused = append(refused, i)
		}
	}
	if len(refused) > len(stream)/4 {
		t.Fatalf("%d of %d batches refused: the stream tests too little", len(refused), len(stream))
	}
	return plain, stream, refused
}

// TestTallyLoadMatchesApplies is the oracle of bulk loads that delete and
// re-type (the degTally among them): random batches written by plain
// Applies into one store, and as a bulk load into another (all or nothing,
// rewriting its file or keeping it, or partial), with frequent drains, must
// be refused alike and leave the same records and summaries, degree index
// and counts, both passing Check.
func TestTallyLoadMatchesApplies(t *testing.T) {
	seeds := uint64(40)
	if raceDetector {
		seeds = 10 // the slowest test of the package under the race detector, at 26 s
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 31))
		plain, stream, wantRefused := plainStream(t, rng, 10+rng.IntN(50))

		for _, v := range []struct {
			name string
			keep bool // the load keeps its file (no indexRuns)
			bulk bool // a partial bulk load (BeginBulk), not an all-or-nothing one
		}{{"load", false, false}, {"load keeping its file", true, false}, {"partial bulk load", false, true}} {
			loaded := openTest(t, t.TempDir(), Config{DeferAfter: rng.IntN(20), DeferFlush: 1 + rng.IntN(40), KeepLoadFile: v.keep})
			ctx, done := beginStreamLoad(t, loaded, v.bulk)
			if (loaded.deferred.idx != nil) != (!v.keep && !v.bulk) {
				t.Fatalf("%s: index runs %v", v.name, loaded.deferred.idx != nil)
			}
			var refused []int
			i := 0
			loaded.ApplyStream(ctx, streamOf(stream), func(_ *graph.StreamBatch, _ *graph.Result, err error) bool {
				if err != nil {
					if testing.Verbose() {
						t.Logf("seed %d, %s: refused batch %d: %v", seed, v.name, i, err)
					}
					refused = append(refused, i)
				}
				i++
				return true
			})
			if err := done(); err != nil {
				t.Fatalf("seed %d, %s: ending the load: %v", seed, v.name, err)
			}
			if !slices.Equal(refused, wantRefused) {
				t.Fatalf("seed %d, %s: refused batches %v, plain writes %v", seed, v.name, refused, wantRefused)
			}
			for _, s := range []*Store{plain, loaded} {
				if r, err := s.Check(t.Context()); err != nil || !r.OK() {
					t.Fatalf("seed %d, %s: check: %v %v", seed, v.name, err, r)
				}
			}
			if want, got := recordDump(t, plain), recordDump(t, loaded); !slices.Equal(want, got) {
				t.Fatalf("seed %d, %s: records:\n%s", seed, v.name, lineDiff(want, got))
			}
			if want, got := bucketDump(t, plain, bDegIdx), bucketDump(t, loaded, bDegIdx); !maps.Equal(want, got) {
				t.Fatalf("seed %d, %s: the degree indexes differ", seed, v.name)
			}
			if want, got := bucketDump(t, plain, bDeg), bucketDump(t, loaded, bDeg); len(want)+len(got) != 0 {
				t.Fatalf("seed %d, %s: summaries left staged: %d and %d", seed, v.name, len(want), len(got))
			}
			notCount := func(k, _ string) bool { return !strings.HasPrefix(k, "count/") }
			want, got := bucketDump(t, plain, bMeta), bucketDump(t, loaded, bMeta)
			maps.DeleteFunc(want, notCount)
			maps.DeleteFunc(got, notCount)
			if !maps.Equal(want, got) {
				t.Fatalf("seed %d, %s: counts %v, want %v", seed, v.name, got, want)
			}
		}
	}
}

// beginStreamLoad starts a bulk load into the empty store s, partial or
// all or nothing, and returns the context its stream runs under and the
// function that ends it (successfully, if all or nothing).
func beginStreamLoad(t *testing.T, s *Store, partial bool) (context.Context, func() error) {
	t.Helper()
	if partial {
		end, ok := s.BeginBulk()
		if !ok {
			t.Fatal("an empty store did not start a bulk load")
		}
		return t.Context(), end
	}
	end, ok, err := s.BeginLoad(true)
	if err != nil || !ok {
		t.Fatalf("an empty store did not start a load: %v", err)
	}
	return graph.WithinLoad(t.Context()), func() error { return end(true) }
}

// streamOf returns a closed channel of the batches, the last marked last.
func streamOf(batches []*graph.Batch) <-chan *graph.StreamBatch {
	ch := make(chan *graph.StreamBatch, len(batches))
	for i, b := range batches {
		ch <- &graph.StreamBatch{Batch: b, Last: i == len(batches)-1}
	}
	close(ch)
	return ch
}

// bucketDump returns a bucket's pairs.
func bucketDump(t *testing.T, s *Store, name []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := s.read(func(tx *bbolt.Tx) error {
		return tx.Bucket(name).ForEach(func(k, v []byte) error {
			out[string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// lore.deg marked outside a load, as a load that died leaves it until Open
// rebuilds: IncidentLabels does not answer from the records' summaries,
// Check reports the mark, and Repair clears it.
func TestTallyMarkOutsideALoad(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b")}, Edges: []graph.EdgeInput{dep("service/a", "service/b", "")}})
	labels := func() (out []string, ok bool) {
		t.Helper()
		err := s.read(func(tx *bbolt.Tx) error {
			var err error
			out, _, ok, err = (&boltSnap{s: s, tx: tx}).IncidentLabels(t.Context(), "service/a")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, ok
	}
	if out, ok := labels(); !ok || !slices.Equal(out, []string{"dependsOn"}) {
		t.Fatalf("labels before the mark: %v %v", out, ok)
	}
	if err := s.db.DB().Update(markTally); err != nil {
		t.Fatal(err)
	}
	if out, ok := labels(); ok {
		t.Errorf("labels from the summaries while lore.deg is marked: %v", out)
	}
	r, err := s.Check(t.Context())
	if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), "bulk load that did not finish") {
		t.Errorf("check of a marked lore.deg: %v %v", err, r)
	}
	if r, err := s.Repair(t.Context()); err != nil || !r.OK() {
		t.Fatalf("repair: %v %v", err, r)
	}
	if got := bucketDump(t, s, bDeg); len(got) != 0 {
		t.Errorf("lore.deg after the repair: %v", got)
	}
	if out, ok := labels(); !ok || !slices.Equal(out, []string{"dependsOn"}) {
		t.Errorf("labels after the repair: %v %v", out, ok)
	}
}

// teamStream returns random batches over people and teams (memberOf and
// leads edges), none of which the stream generator's batches touch, with
// whether a store that holds only them takes each: people and teams made
// and made again, edges made and deleted, people and teams deleted.
func teamStream(t *testing.T, rng *rand.Rand, s *Store) ([]*graph.Batch, []bool) {
	nodes := map[graph.ID]string{}
	edges := map[graph.EdgeKey]bool{}
	var out []*graph.Batch
	var took []bool
	for range 10 + rng.IntN(30) {
		b := &graph.Batch{}
		next, nextEdges := maps.Clone(nodes), maps.Clone(edges)
		for range rng.IntN(4) {
			typ := []string{"Person", "Team"}[rng.IntN(2)]
			id := graph.ID(fmt.Sprintf("%s/m%d", strings.ToLower(typ), rng.IntN(8)))
			if !slices.ContainsFunc(b.Nodes, func(n graph.NodeInput) bool { return n.ID == id }) {
				if _, ok := next[id]; !ok {
					b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: typ, Properties: graph.Props{"name": string(id)}})
					next[id] = typ
				}
			}
		}
		people, teams := ofType(next, "Person"), ofType(next, "Team")
		for range rng.IntN(6) {
			if len(people) == 0 || len(teams) == 0 {
				break
			}
			k := graph.EdgeKey{From: people[rng.IntN(len(people))], Label: []string{"memberOf", "leads"}[rng.IntN(2)], To: teams[rng.IntN(len(teams))]}
			if !slices.ContainsFunc(b.Edges, func(e graph.EdgeInput) bool { return e.EdgeKey == k }) {
				b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: k})
				nextEdges[k] = true
			}
		}
		switch rng.IntN(4) {
		case 0:
			for k := range edges {
				if rng.IntN(3) == 0 && !slices.ContainsFunc(b.Edges, func(e graph.EdgeInput) bool { return e.EdgeKey == k }) {
					b.DeleteEdges = append(b.DeleteEdges, graph.EdgeRef{EdgeKey: k})
					delete(nextEdges, k)
				}
			}
		case 1:
			if ids := slices.Sorted(maps.Keys(nodes)); len(ids) > 0 {
				id := ids[rng.IntN(len(ids))]
				b = &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: id}}}
				next, nextEdges = maps.Clone(nodes), maps.Clone(edges)
				delete(next, id)
				maps.DeleteFunc(nextEdges, func(k graph.EdgeKey, _ bool) bool { return k.From == id || k.To == id })
			}
		}
		if b.Len() == 0 {
			continue
		}
		b.Op = "write"
		_, err := s.Apply(t.Context(), b)
		if err == nil {
			nodes, edges = next, nextEdges
		}
		out, took = append(out, b), append(took, err == nil)
	}
	return out, took
}

// Other writers may commit while a partial bulk load streams its batches
// (BeginBulk does not shut them out), deletes among their writes: the
// store then holds what the load and the writers would each have left
// alone, as two plain stores hold it, and passes Check.
func TestPartialBulkLoadWithAnotherWriter(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 41))
		plainLoad, stream, _ := plainStream(t, rng, 10+rng.IntN(40))
		plainTeams := openTest(t, t.TempDir(), Config{DeferAfter: -1})
		teams, teamsTook := teamStream(t, rng, plainTeams)

		s := openTest(t, t.TempDir(), Config{DeferAfter: rng.IntN(20), DeferFlush: 1 + rng.IntN(40)})
		end, ok := s.BeginBulk()
		if !ok {
			t.Fatal("an empty store did not start a bulk load")
		}
		var wg sync.WaitGroup
		wg.Go(func() {
			for i, b := range teams {
				if _, err := s.Apply(t.Context(), b); (err == nil) != teamsTook[i] {
					t.Errorf("seed %d: the writer's batch %d: %v, want taken %v", seed, i, err, teamsTook[i])
				}
			}
		})
		ch := make(chan *graph.StreamBatch)
		go func() {
			defer close(ch)
			for i, b := range stream {
				ch <- &graph.StreamBatch{Batch: b, Last: i == len(stream)-1}
			}
		}()
		s.ApplyStream(t.Context(), ch, func(*graph.StreamBatch, *graph.Result, error) bool { return true })
		wg.Wait()
		if err := end(); err != nil {
			t.Fatalf("seed %d: ending the load: %v", seed, err)
		}
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("seed %d: check: %v %v", seed, err, r)
		}
		want := slices.Sorted(slices.Values(append(recordDump(t, plainLoad), recordDump(t, plainTeams)...)))
		if got := slices.Sorted(slices.Values(recordDump(t, s))); !slices.Equal(want, got) {
			t.Fatalf("seed %d: records:\n%s", seed, lineDiff(want, got))
		}
		wantIdx := bucketDump(t, plainLoad, bDegIdx)
		maps.Copy(wantIdx, bucketDump(t, plainTeams, bDegIdx))
		if !maps.Equal(wantIdx, bucketDump(t, s, bDegIdx)) {
			t.Fatalf("seed %d: the degree index differs", seed)
		}
	}
}

// foldTally (a rewriting load's fold) writes what foldDeg (every other
// fold) writes: random records with random summaries, under random
// tallies that add and take away edges, give runs in strict key order
// holding foldDeg's record writes and degree index puts and deletes.
func TestFoldTallyMatchesFoldDeg(t *testing.T) {
	db, err := bbolt.Open(t.TempDir()+"/db", 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	types, labels := []string{"Document", "Person", "Topic"}, []string{"about", "cites", "wrote"}
	multi := 0 // folds that wrote more than one run of records
	defer func() {
		if multi == 0 {
			t.Errorf("no fold wrote its records in more than one run")
		}
	}()
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var ids []graph.ID
		err := db.Update(func(tx *bbolt.Tx) error {
			_ = tx.DeleteBucket(bNodes)
			b, err := tx.CreateBucket(bNodes)
			if err != nil {
				return err
			}
			for i := range 1 + rng.IntN(300) {
				id := graph.ID(fmt.Sprintf("n/%d", rng.IntN(100000)))
				if b.Get([]byte(id)) != nil {
					continue
				}
				ids = append(ids, id)
				var es []degEntry
				for range rng.IntN(4) {
					es = append(es, degEntry{label: labels[rng.IntN(3)], dir: "oi"[rng.IntN(2)], n: int64(1 + rng.IntN(4))})
				}
				es = slices.CompactFunc(slices.SortedFunc(slices.Values(es), degCmp), func(a, b degEntry) bool { return degCmp(a, b) == 0 })
				rec := nodeRec{NodeRecord: graph.NodeRecord{Type: types[rng.IntN(3)], Created: int64(i), Updated: int64(2 * i), Rev: 1, Props: []byte(`{"i":` + fmt.Sprint(i) + `,"pad":"` + strings.Repeat("x", rng.IntN(3)*rng.IntN(100)) + `"}`)}, Deg: encodeDeg(es)}
				if err := b.Put([]byte(id), rec.encode()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The same random tally twice: each fold empties its own.
		tallies := [2]*degTally{newDegTally(), newDegTally()}
		_ = db.View(func(tx *bbolt.Tx) error {
			for _, id := range ids {
				if rng.IntN(3) == 0 {
					continue
				}
				rec, _ := decodeNodeRec(tx.Bucket(bNodes).Get([]byte(id)))
				es, _ := decodeDeg(rec.Deg)
				for range 1 + rng.IntN(3) {
					n := int64(1 + rng.IntN(5))
					e := degEntry{label: labels[rng.IntN(3)], dir: "oi"[rng.IntN(2)]}
					if j := slices.IndexFunc(es, func(x degEntry) bool { return x.label == e.label && x.dir == e.dir }); j >= 0 && es[j].n > 0 && rng.IntN(2) == 0 {
						n = -int64(1 + rng.IntN(int(es[j].n))) // takes some or all away
						es[j].n += n
					}
					for _, tl := range tallies {
						tl.add(id, e.dir, e.label, n)
					}
				}
			}
			return nil
		})
		want := map[string]map[string]string{string(bNodes): {}, string(bDegIdx): {}}
		var nodeRuns []foldRun
		var degIdx []byte
		var nDegIdx int
		err = db.View(func(tx *bbolt.Tx) error {
			ops, err := foldDeg(nil, tx, nil, nil, nil, nil, tallies[0])
			if err != nil {
				return err
			}
			for _, op := range ops {
				if op.key == nil {
					continue // bDeg's clearing
				}
				v := string(runPut) + string(op.val)
				if op.del {
					v = string(runDel)
				}
				want[string(op.bucket)][string(op.key)] = v
			}
			nodeRuns, degIdx, nDegIdx, err = foldTally(tx, tallies[1], nil)
			return err
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(nodeRuns) > 1 {
			multi++
		}
		// The runs of records in order are one run of them all.
		var nodes []byte
		nNodes := 0
		for _, r := range nodeRuns {
			if r.n == 0 {
				t.Fatalf("seed %d: an empty run of records", seed)
			}
			nodes = append(nodes, r.data...)
			nNodes += r.n
		}
		for _, r := range []struct {
			bucket []byte
			data   []byte
			n      int
		}{{bNodes, nodes, nNodes}, {bDegIdx, degIdx, nDegIdx}} {
			got := map[string]string{}
			var last []byte
			for d := r.data; len(d) > 0; {
				var k, v []byte
				k, v, d = pair(d)
				if last != nil && strings.Compare(string(last), string(k)) >= 0 {
					t.Fatalf("seed %d, %s: key %q after %q", seed, r.bucket, k, last)
				}
				last = k
				got[string(k)] = string(v)
			}
			if len(got) != r.n {
				t.Errorf("seed %d, %s: %d pairs, said %d", seed, r.bucket, len(got), r.n)
			}
			if !maps.Equal(got, want[string(r.bucket)]) {
				t.Errorf("seed %d, %s: foldTally wrote %d pairs, foldDeg %d, not the same", seed, r.bucket, len(got), len(want[string(r.bucket)]))
			}
		}
	}
}
