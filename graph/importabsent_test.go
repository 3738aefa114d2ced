package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// randomImport returns an input of random node and edge lines over a few
// packages, so that keys come again within a batch and in later ones, some
// lines merge, and some edges name packages that only a later line gives
// (or none: a stub stands for them).
func randomImport(rng *rand.Rand) string {
	var b strings.Builder
	pkgs := 5 + rng.IntN(30)
	for range 20 + rng.IntN(200) {
		merge := ""
		if rng.IntN(5) == 0 {
			merge = `,"merge":true`
		}
		if rng.IntN(3) == 0 {
			fmt.Fprintf(&b, `{"kind":"node","id":"pkg/p%d","type":"Package","properties":{"version":"%d"}%s}`+"\n", rng.IntN(pkgs), rng.IntN(4), merge)
			continue
		}
		props := ""
		if rng.IntN(2) == 0 {
			props = fmt.Sprintf(`,"properties":{"range":"^%d"}`, rng.IntN(3))
		}
		fmt.Fprintf(&b, `{"kind":"edge","from":"pkg/p%d","label":"dependsOn","to":"pkg/p%d"%s%s}`+"\n", rng.IntN(pkgs), rng.IntN(pkgs+3), props, merge)
	}
	return b.String()
}

// An import into an empty store reads no record of a key it meets for the
// first time (the store cannot hold one), and writes what an import that
// reads every record writes: a partial import, which commits batch by
// batch and never assumes the store empty. Random inputs repeat keys in
// and across batches of random sizes, merge some lines, and make stubs.
func TestImportIntoEmptyStoreSkipsAbsentRecords(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d: rerun with go test -run TestImportIntoEmptyStoreSkipsAbsentRecords ./graph -lore.oracle.seed %d", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	m, err := schema.Load([]byte(pkgModel))
	if err != nil {
		t.Fatal(err)
	}
	trials := 40
	if testing.Short() {
		trials = 10
	}
	for i := range trials {
		data := randomImport(rng)
		opt := graph.ImportOptions{BatchSize: 1 + rng.IntN(40), FirstBatch: 1 + rng.IntN(10), Dangling: graph.DanglingStub}
		load := pkgStore(t)
		if i%4 == 3 {
			// Lore's schema on PostgreSQL plans a load's batches its own
			// way (see postgres.loadSnap).
			pg, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.NewDatabase(t), Model: m})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { pg.Close() })
			load = pg
		}
		got, err := graph.Import(t.Context(), load, strings.NewReader(data), opt)
		if err != nil {
			t.Fatalf("trial %d: import into an empty store: %v\n%s", i, err, data)
		}
		opt.Partial = true
		partial := pkgStore(t)
		want, err := graph.Import(t.Context(), partial, strings.NewReader(data), opt)
		if err != nil {
			t.Fatalf("trial %d: partial import: %v", i, err)
		}
		counts := func(st *graph.ImportStats) string {
			return fmt.Sprintf("%d created, %d updated, %d unchanged, %d duplicates, %d stubs, %d batches",
				st.Created, st.Updated, st.Unchanged, st.Duplicates, st.Stubs, st.Batches)
		}
		if counts(got) != counts(want) {
			t.Errorf("trial %d: import into an empty store: %s; partial import: %s\n%s", i, counts(got), counts(want), data)
		}
		if diff := cmp.Diff(dump(t, partial), dump(t, load)); diff != "" {
			t.Fatalf("trial %d: the stores differ (-partial +load):\n%s\n%s", i, diff, data)
		}
		checkOK(t, load)
	}
}

// absentCounter applies batches one by one (it is no Pipeliner) and counts
// their elements known to be absent and the others.
type absentCounter struct {
	graph.Store
	al              graph.AtomicLoader
	absent, present int
}

func (s *absentCounter) BeginLoad(fast bool) (func(bool) error, bool, error) {
	return s.al.BeginLoad(fast)
}

func (s *absentCounter) Apply(ctx context.Context, b *graph.Batch) (*graph.Result, error) {
	nodes, edges := graph.Absent(b)
	for _, a := range append(nodes, edges...) {
		if a {
			s.absent++
		} else {
			s.present++
		}
	}
	return s.Store.Apply(ctx, b)
}

// Which elements an import knows to be absent: in a load into an empty
// store, every line whose key the input did not hold before, and no stub
// nor line given again; in a store that holds data, or a partial import,
// none.
func TestImportAbsentElements(t *testing.T) {
	const data = `{"kind":"node","id":"pkg/a","type":"Package","properties":{}}
{"kind":"node","id":"pkg/b","type":"Package","properties":{}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b"}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/c"}
{"kind":"node","id":"pkg/a","type":"Package","properties":{"version":"2"}}
{"kind":"node","id":"pkg/c","type":"Package","properties":{}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b","properties":{"range":"^1"}}
{"kind":"node","id":"pkg/d","type":"Package","properties":{}}
`
	for _, tc := range []struct {
		name            string
		partial, filled bool
		absent, present int
	}{
		// Absent: a, b, a->b, a->c, d. Present: pkg/c's stub (made with
		// the batch of a->c), pkg/a again (the batch ends before it),
		// pkg/c (after its stub), a->b again.
		{name: "load", absent: 5, present: 4},
		{name: "partial", partial: true, present: 9},
		{name: "filled", filled: true, present: 18}, // read twice: checked, then written
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := pkgStore(t)
			if tc.filled {
				importWith(t, s, `{"kind":"node","id":"pkg/z","type":"Package","properties":{}}`+"\n", graph.ImportOptions{})
			}
			c := &absentCounter{Store: s, al: s.(graph.AtomicLoader)}
			st, err := graph.Import(t.Context(), c, strings.NewReader(data), graph.ImportOptions{Partial: tc.partial, Dangling: graph.DanglingStub})
			if err != nil {
				t.Fatal(err)
			}
			if c.absent != tc.absent || c.present != tc.present {
				t.Errorf("%d elements known absent and %d not, want %d and %d", c.absent, c.present, tc.absent, tc.present)
			}
			if st.Batches != 2 || st.Created != 6 || st.Updated != 3 || st.Stubs != 1 {
				t.Errorf("%d batches, %d created, %d updated, %d stubs; want 2 batches (the first ends before pkg/a comes again), 6 created, 3 updated, 1 stub",
					st.Batches, st.Created, st.Updated, st.Stubs)
			}
		})
	}
}
