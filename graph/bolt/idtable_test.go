package bolt

import (
	"fmt"
	"github.com/lore-dev/lore/graph"
	"math/rand/v2"
	"testing"
)

// An idTable numbers IDs as a map from ID to the count of IDs before it
// would, through its growth from empty and truncations, with IDs that share long prefixes,
// differ in one byte, or are empty; and gives each number's ID back.
func TestIDTableAgainstAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tab, want := newIDTable(), map[string]int32{}
		var order []string
		n := 1 + rng.IntN(20000)
		for range n {
			if rng.IntN(2000) == 0 { // a failed commit's numbers dropped
				k := rng.IntN(len(order) + 1)
				tab.truncate(k)
				for _, id := range order[k:] {
					delete(want, id)
				}
				order = order[:k]
			}
			var id string
			switch rng.IntN(4) {
			case 0: // one met before
				if len(order) > 0 {
					id = order[rng.IntN(len(order))]
					break
				}
				fallthrough
			case 1:
				id = fmt.Sprintf("package/p%d", rng.IntN(n))
			case 2:
				id = string(rune('a' + rng.IntN(3)))
				if rng.IntN(50) == 0 {
					id = ""
				}
			default:
				id = fmt.Sprintf("maintainer/m%d/%x", rng.IntN(50), rng.Uint32()%64)
			}
			if _, ok := tab.find(id); ok != (want[id] != 0) {
				t.Fatalf("seed %d: find(%q) = %v before its add, want %v", seed, id, ok, want[id] != 0)
			}
			got, added := tab.add(id)
			w, had := want[id]
			if !had {
				w = int32(len(order)) + 1
				want[id] = w
				order = append(order, id)
			}
			if got != w-1 || added == had {
				t.Fatalf("seed %d: add(%q) = %d, %v; want %d, %v", seed, id, got, added, w-1, !had)
			}
		}
		if tab.len() != len(order) {
			t.Fatalf("seed %d: len %d, want %d", seed, tab.len(), len(order))
		}
		for i, id := range order {
			if got := string(tab.id(int32(i))); got != id {
				t.Fatalf("seed %d: id(%d) = %q, want %q", seed, i, got, id)
			}
			if got, ok := tab.find(id); !ok || got != int32(i) {
				t.Fatalf("seed %d: find(%q) = %d, %v; want %d", seed, id, got, ok, i)
			}
		}
		for range 100 {
			id := fmt.Sprintf("absent/%d", rng.Uint64())
			if _, ok := tab.find(id); ok {
				t.Fatalf("seed %d: find(%q) found an ID never added", seed, id)
			}
		}
	}
}

// A degTally sums as a map of maps would, through adds, forgets and adds
// again after a forget; drain returns the sums and empties it.
func TestDegTallyAgainstAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 11))
		tally := newDegTally()
		type line struct {
			label string
			dir   byte
		}
		want := map[string]map[line]int64{}
		for range 5000 {
			id := fmt.Sprintf("n%d", rng.IntN(300))
			if rng.IntN(20) == 0 {
				tally.forget(graph.ID(id))
				delete(want, id)
				continue
			}
			l := line{[]string{"dependsOn", "maintainedBy", "in"}[rng.IntN(3)], "oi"[rng.IntN(2)]}
			n := int64(rng.IntN(5) - 1)
			tally.add(graph.ID(id), l.dir, l.label, n)
			if want[id] == nil {
				want[id] = map[line]int64{}
			}
			want[id][l] += n
		}
		got := tally.drain()
		if len(got) != len(want) {
			t.Fatalf("seed %d: %d nodes, want %d", seed, len(got), len(want))
		}
		for id, es := range got {
			w := want[string(id)]
			if len(es) != len(w) {
				t.Fatalf("seed %d: node %s: %v, want %v", seed, id, es, w)
			}
			for _, e := range es {
				if n, ok := w[line{e.label, e.dir}]; !ok || n != e.n {
					t.Fatalf("seed %d: node %s: %v, want %v", seed, id, es, w)
				}
			}
		}
		if again := tally.drain(); len(again) != 0 {
			t.Fatalf("seed %d: a drained tally holds %v", seed, again)
		}
	}
}
