package bolt

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// The filter never calls a written key absent, calls most unwritten keys
// of Cayley's empty buckets absent, and leaves alone the buckets that held
// keys when it started and buckets that are not Cayley's.
func TestAbsentKeysNeverHidesAWrite(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	db := s.db.DB()
	if err := db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("sp"))
		if err != nil {
			return err
		}
		return b.Put([]byte("held before"), []byte{1})
	}); err != nil {
		t.Fatal(err)
	}
	var a *absentKeys
	_ = db.View(func(tx *bbolt.Tx) error { a = newAbsentKeys(tx); return nil })

	rng := rand.New(rand.NewPCG(3, 4))
	key := func(i uint64) []byte { return binary.BigEndian.AppendUint64(nil, i) }
	const n = 300_000 // past the first filter's capacity, so that it grows
	var written []uint64
	for range n {
		k := rng.Uint64()
		written = append(written, k)
		a.add(bValueIDs, key(k))
		a.add([]byte("ops"), key(k))
	}
	if len(a.blooms) < 2 {
		t.Fatalf("%d filters after %d keys: it never grew", len(a.blooms), 2*n)
	}
	for _, k := range written {
		if a.absent(bValueIDs, key(k)) || a.absent([]byte("ops"), key(k)) {
			t.Fatalf("key %x was written but is called absent", k)
		}
	}
	falsePos := 0
	for range n {
		k := rng.Uint64()
		if !a.absent([]byte("ops"), key(k)) {
			falsePos++
		}
	}
	if rate := float64(falsePos) / n; rate > 0.03 {
		t.Errorf("%.1f%% of unwritten keys may be present: the filter spares few lookups", 100*rate)
	}
	for _, k := range [][2]string{{"sp", "never written"}, {string(bNodes), "service/x"}, {"meta", "size"}} {
		if a.absent([]byte(k[0]), []byte(k[1])) {
			t.Errorf("bucket %q, key %q: called absent, but the bucket is not the filter's to answer for", k[0], k[1])
		}
	}
}

// A bulk load looks up the values and index entries it wrote in earlier
// batches (edges to nodes of an earlier batch, a node written again): the
// filter must send those lookups to bbolt, or Cayley would give a value a
// second ID and lose the edges that use the first.
func TestBulkLoadFindsWhatItWrote(t *testing.T) {
	var data strings.Builder
	for i := range 60 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", i, i)
	}
	for i := range 60 {
		fmt.Fprintf(&data, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d"}}`+"\n", i, i)
		for j := range 3 {
			fmt.Fprintf(&data, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, (i+j*7)%60)
		}
	}
	fmt.Fprintf(&data, `{"kind":"node","id":"topic/t0","type":"Topic","properties":{"name":"topic zero"}}`+"\n")
	s, err := Open(t.Context(), Config{Path: t.TempDir()}) // durable: a bulk load relaxes that while it runs
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 25}); err != nil {
		t.Fatal(err)
	}
	if s.kv.absent != nil {
		t.Error("the filter outlived the bulk load")
	}
	if db := s.db.DB(); db.NoGrowSync || db.NoSync {
		t.Error("the store still skips syncs: the bulk load did not restore them")
	}
	// Every topic has three edges in and every doc three out, through
	// Cayley's indexes; a doc's three are often split between batches.
	for _, end := range []struct {
		prefix string
		dir    graph.Direction
	}{{"topic/t", graph.In}, {"doc/d", graph.Out}} {
		for i := range 60 {
			id := graph.ID(fmt.Sprintf("%s%d", end.prefix, i))
			page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{id}, Direction: end.dir, Labels: []string{"about"}, Page: graph.Page{Limit: 100}})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Edges) != 3 {
				t.Fatalf("%s has %d %s-edges through Cayley, want 3", id, len(page.Edges), end.dir)
			}
		}
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 120 || st.Edges != 180 || st.Quads != 300 {
		t.Errorf("stats %+v, want 120 nodes, 180 edges, 300 quads", st)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}
