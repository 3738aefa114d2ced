package bolt

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortByKeyAgainstAStableSort sorts random keys, many sharing long
// prefixes, some equal, some ending where others go on (zero bytes
// included), and checks the order and the stability against
// slices.SortStableFunc.
func TestSortByKeyAgainstAStableSort(t *testing.T) {
	type elem struct {
		k   []byte
		ord int
	}
	rng := rand.New(rand.NewPCG(10, 21))
	alphabet := []byte{0, 1, 'a', 'b', 0xff}
	for round := range 300 {
		n := rng.IntN(3000)
		if round%10 == 0 {
			n = rng.IntN(20)
		}
		prefixes := []string{"", "package/p", "package/p1" + strings.Repeat("\x00", 9), strings.Repeat("x", 20)}
		// Every other round, keys made of long parts, none short: groups
		// of keys alike in their first eight bytes, and in the eight
		// after those, are sorted by radix again.
		long := round%2 == 1
		parts := [][]string{{"package/p123", "package/q123", "section/abcd"}, {"\x00label\x00x", "\x00label\x00y"}}
		a := make([]elem, n)
		for i := range a {
			var k []byte
			if long {
				k = []byte(parts[0][rng.IntN(3)] + parts[1][rng.IntN(2)])
				for range 8 + rng.IntN(8) {
					k = append(k, alphabet[rng.IntN(2+rng.IntN(len(alphabet)-1))])
				}
			} else {
				k = []byte(prefixes[rng.IntN(len(prefixes))])
				for range rng.IntN(1 + rng.IntN(24)) {
					k = append(k, alphabet[rng.IntN(len(alphabet))])
				}
			}
			if i > 0 && rng.IntN(8) == 0 {
				k = slices.Clone(a[rng.IntN(i)].k) // a key given again
			}
			a[i] = elem{k, i}
		}
		want := slices.Clone(a)
		slices.SortStableFunc(want, func(x, y elem) int { return bytes.Compare(x.k, y.k) })
		a = sortByKey(a, func(e *elem) []byte { return e.k })
		for i := range a {
			if !bytes.Equal(a[i].k, want[i].k) || a[i].ord != want[i].ord {
				t.Fatalf("round %d (%d keys): at %d got %q (#%d), want %q (#%d)", round, n, i, a[i].k, a[i].ord, want[i].k, want[i].ord)
			}
		}
	}
}
