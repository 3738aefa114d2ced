package graph

import (
	"math/rand/v2"
	"testing"
)

// A lineTable answers as a map from hash to first line does, through its
// growth from empty, with hashes that share their low bits (long probe
// runs), lines of 0, and lines set again.
func TestLineTableAgainstAMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 3))
		var tab lineTable
		want := map[uint64]int64{}
		var keys []uint64
		for line := range int64(1 + rng.IntN(30000)) {
			var h uint64
			switch rng.IntN(4) {
			case 0:
				if len(keys) > 0 {
					h = keys[rng.IntN(len(keys))]
					break
				}
				fallthrough
			case 1:
				h = rng.Uint64()
			case 2:
				h = uint64(rng.IntN(64)) << 40 // the same low bits
			default:
				h = uint64(rng.IntN(8))
			}
			if got := tab.has(h); got != (want[h] != 0) {
				t.Fatalf("seed %d: has(%#x) = %v", seed, h, got)
			}
			if rng.IntN(10) == 0 { // a stub: line 0, over any line
				tab.set(h, 0)
				if want[h] == 0 {
					keys = append(keys, h)
				}
				want[h] = 1
				continue
			}
			first, again := tab.see(h, line)
			w, had := want[h]
			if again != had || had && first != w-1 {
				t.Fatalf("seed %d: see(%#x, %d) = %d, %v; want %d, %v", seed, h, line, first, again, w-1, had)
			}
			if !had {
				want[h] = line + 1
				keys = append(keys, h)
			}
		}
		if tab.n != len(want) {
			t.Fatalf("seed %d: %d held, want %d", seed, tab.n, len(want))
		}
		for h, w := range want {
			if first, again := tab.see(h, -5); !again || first != w-1 {
				t.Fatalf("seed %d: see(%#x) at the end = %d, %v; want %d", seed, h, first, again, w-1)
			}
		}
	}
}
