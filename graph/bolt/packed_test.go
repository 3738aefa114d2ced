package bolt

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

var packedSeed = flag.Uint64("lore.packed.seed", 0, "seed of TestPackedBlocksAgainstASortedSet (0: from the clock)")

// inBlockKey makes an in-edge index key: to NUL label NUL from NUL key.
func inBlockKey(to, label, from, key string) []byte {
	return []byte(to + "\x00" + label + "\x00" + from + "\x00" + key)
}

// checkInBlocks checks the layout of the blocks in b: each decodes, holds
// keys of one group, within the limits, after the keys of the block before
// it; and returns every key, in order.
func checkInBlocks(t *testing.T, b *bbolt.Bucket) [][]byte {
	t.Helper()
	var all [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		keys, err := decodePacked(nil, k, v)
		if err != nil {
			t.Fatalf("block %q: %v", k, err)
		}
		if len(keys) > packKeys || len(keys) > 1 && len(v) > packBytes {
			t.Fatalf("block %q holds %d keys in %d bytes", k, len(keys), len(v))
		}
		g := packGroupLen(k)
		for _, key := range keys {
			if !bytes.HasPrefix(key, k[:g]) {
				t.Fatalf("block %q holds %q, of another group", k, key)
			}
		}
		if len(all) > 0 && bytes.Compare(keys[0], all[len(all)-1]) <= 0 {
			t.Fatalf("block %q starts at or before %q, the end of the block before it", k, all[len(all)-1])
		}
		all = append(all, keys...)
	}
	return all
}

// The in-edge index's blocks hold what a sorted set of its keys would,
// through random inserts and deletes (splitting blocks, emptying them,
// moving a group's first key), sorted batches merged into a group, a
// repacking of them all, and seeks to
// random places: in a group, between groups, inside a block, past the end.
//
// So do the type index's blocks, whose keys (type NUL ID) have one NUL,
// and the search index's, of two shapes (tokenKey, impKey).
func TestPackedBlocksAgainstASortedSet(t *testing.T) {
	seed := *packedSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d: rerun with go test -run TestPackedBlocksAgainstASortedSet ./graph/bolt -lore.packed.seed %d", seed, seed)
	for _, index := range []string{"in-edge", "type", "search"} {
		t.Run(index+" index", func(t *testing.T) { testPackedAgainstSortedSet(t, seed, index) })
	}
}

func testPackedAgainstSortedSet(t *testing.T, seed uint64, index string) {
	rng := rand.New(rand.NewPCG(seed, 99))
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "in.bolt"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	randKey := func() []byte {
		// Few groups, so that blocks fill and split; IDs of unequal
		// length, so that shared prefixes vary; some keyed edges.
		key := ""
		if rng.IntN(4) == 0 {
			key = fmt.Sprint("k", rng.IntN(3))
		}
		from := fmt.Sprint("node/", rng.IntN(400)*rng.IntN(400))
		if rng.IntN(4) == 0 {
			from += fmt.Sprintf("-%x", rng.Uint64()) // long: blocks fill by bytes
		}
		switch index {
		case "type":
			return append([]byte(fmt.Sprint("n", rng.IntN(3), "\x00")), from...) // typeKey
		case "search": // weights of every byte, NUL and 255 among them
			tok, typ, w := fmt.Sprint("t", rng.IntN(3)), fmt.Sprint("T", rng.IntN(2)), byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				return impKey(tok, w, graph.ID(from), typ)
			}
			return tokenKey(tok, typ, graph.ID(from), w)
		}
		return inBlockKey(fmt.Sprint("n", rng.IntN(3)), []string{"a", "ab", "b"}[rng.IntN(3)], from, key)
	}
	var want [][]byte // the sorted set
	has := func(k []byte) (int, bool) { return slices.BinarySearchFunc(want, k, bytes.Compare) }
	for round := range 30 {
		err := db.Update(func(tx *bbolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists(bIn)
			if err != nil {
				return err
			}
			for range 1 + rng.IntN(300) {
				var k []byte
				if len(want) > 0 && rng.IntN(3) == 0 {
					k = bytes.Clone(want[rng.IntN(len(want))])
				} else {
					k = randKey()
				}
				if rng.IntN(20) == 0 {
					// A sorted batch of writes of k's group, as a flush of a
					// load's waiting entries makes them: puts and deletes,
					// of keys held and not.
					g := k[:packGroupLen(k)]
					var batch []packedWrite
					for range rng.IntN(150) {
						r := randKey()
						if i, _ := has(g); rng.IntN(2) == 0 && i < len(want) && bytes.HasPrefix(want[i], g) {
							r = want[i+rng.IntN(min(8, len(want)-i))] // one held, maybe
						}
						batch = append(batch, packedWrite{key: append(bytes.Clone(g), r[packGroupLen(r):]...), del: rng.IntN(3) == 0})
					}
					slices.SortStableFunc(batch, func(a, b packedWrite) int { return bytes.Compare(a.key, b.key) })
					batch = slices.CompactFunc(batch, func(a, b packedWrite) bool { return bytes.Equal(a.key, b.key) })
					if err := packedMerge(b, batch); err != nil {
						return err
					}
					for _, w := range batch {
						switch i, found := has(w.key); {
						case w.del && found:
							want = slices.Delete(want, i, i+1)
						case !w.del && !found:
							want = slices.Insert(want, i, w.key)
						}
					}
					continue
				}
				if rng.IntN(20) == 0 {
					// A sorted run of inserts into any groups, some keys
					// twice or held, as a commit's writes come
					// (packedInsertRun, from writeOps).
					run := [][]byte{k}
					for range rng.IntN(100) {
						r := randKey()
						if len(want) > 0 && rng.IntN(3) == 0 {
							r = bytes.Clone(want[rng.IntN(len(want))])
						}
						run = append(run, r)
					}
					slices.SortFunc(run, bytes.Compare)
					for rest := run; len(rest) > 0; {
						n, err := packedInsertRun(b, rest)
						if err != nil {
							return err
						}
						if n < 1 || n > len(rest) {
							t.Fatalf("packedInsertRun took %d of %d keys", n, len(rest))
						}
						rest = rest[n:]
					}
					for _, r := range run {
						if i, found := has(r); !found {
							want = slices.Insert(want, i, r)
						}
					}
					continue
				}
				i, found := has(k)
				if rng.IntN(3) == 0 {
					if err := packedDelete(b, k); err != nil {
						return err
					}
					if found {
						want = slices.Delete(want, i, i+1)
					}
					continue
				}
				if err := packedInsert(b, k); err != nil {
					return err
				}
				if !found {
					want = slices.Insert(want, i, k)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if round%10 == 9 {
			// Pack every key anew, as a rewrite of the file does.
			err = db.Update(func(tx *bbolt.Tx) error {
				src := newPackedKeys(tx.Bucket(bIn))
				var blocks [][2][]byte
				p := newPacker(&unionKeys{a: src})
				for k, v, ok := p.next(); ok; k, v, ok = p.next() {
					blocks = append(blocks, [2][]byte{bytes.Clone(k), bytes.Clone(v)})
				}
				if src.err != nil {
					return src.err
				}
				if err := tx.DeleteBucket(bIn); err != nil {
					return err
				}
				b, err := tx.CreateBucket(bIn)
				if err != nil {
					return err
				}
				for _, kv := range blocks {
					if err := b.Put(kv[0], kv[1]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		err = db.View(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bIn)
			if got := checkInBlocks(t, b); !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("round %d: the blocks hold %q, want %q", round, got, want)
			}
			ic := newPackedCursor(b)
			var got [][]byte
			for k := ic.First(); k != nil; k = ic.Next() {
				got = append(got, bytes.Clone(k)) // the cursor's buffer
			}
			if ic.err != nil || !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("round %d: a scan reads %q (%v), want %q", round, got, ic.err, want)
			}
			for range 200 {
				var target []byte
				switch rng.IntN(4) {
				case 0:
					target = randKey()
				case 1:
					g := randKey()
					target = g[:packGroupLen(g)] // a node's in-edges of a label
				case 2:
					target = []byte(fmt.Sprint("n", rng.IntN(4))) // a node's prefix, no label
					if rng.IntN(2) == 0 {
						target = append(target, 0) // and its NUL: a type's prefix in the type index
					}
				default:
					if len(want) == 0 {
						continue
					}
					target = want[rng.IntN(len(want))]
				}
				i, _ := has(target)
				ic := newPackedCursor(b)
				k := ic.Seek(target)
				for j := i; j < min(i+70, len(want)); j++ {
					if !bytes.Equal(k, want[j]) {
						t.Fatalf("round %d: seek %q, then %d steps: %q, want %q", round, target, j-i, k, want[j])
					}
					k = ic.Next()
				}
				if i+70 >= len(want) && k != nil {
					t.Fatalf("round %d: seek %q: %q after the last key", round, target, k)
				}
				// And back: the keys before target's place, from the last
				// one before it (Last if it is past every key).
				ic = newPackedCursor(b)
				if k = ic.Seek(target); k == nil {
					k = ic.Last()
				} else {
					k = ic.Prev()
				}
				for j := i - 1; j >= max(i-70, 0); j-- {
					if !bytes.Equal(k, want[j]) {
						t.Fatalf("round %d: seek %q, then %d steps back: %q, want %q", round, target, i-j, k, want[j])
					}
					k = ic.Prev()
				}
				if i-70 <= 0 && k != nil {
					t.Fatalf("round %d: seek %q: %q before the first key", round, target, k)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A block that does not decode is refused, and reads nothing: it comes
// from a damaged file, and must not crash a reader.
func FuzzPackedBlock(f *testing.F) {
	first := inBlockKey("n1", "a", "node/1", "")
	var v []byte
	prev := first
	for _, k := range [][]byte{inBlockKey("n1", "a", "node/12", ""), inBlockKey("n1", "a", "node/2", "k"), inBlockKey("n1", "a", "other", "")} {
		v = appendPackedKey(v, prev, k)
		prev = k
	}
	f.Add(first, v)
	f.Add(first, []byte{})
	f.Add([]byte("no group"), []byte{1, 2, 3})
	// A type index block (type NUL ID).
	typed := []byte("Service\x00service/a")
	f.Add(typed, appendPackedKey(appendPackedKey(nil, typed, []byte("Service\x00service/ab")), []byte("Service\x00service/ab"), []byte("Service\x00service/b")))
	// Search index blocks: postings by weight, and by token.
	imp := impKey("parser", 255, "doc/a", "Document")
	f.Add(imp, appendPackedKey(nil, imp, impKey("parser", 3, "doc/a", "Document")))
	tok := tokenKey("parser", "Document", "doc/a", 0)
	f.Add(tok, appendPackedKey(nil, tok, tokenKey("parser", "Document", "doc/ab", 3)))
	f.Add(first, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, first, v []byte) {
		keys, err := decodePacked(nil, first, v)
		// A cursor decodes the block a key at a time: it reads the same
		// keys, and fails where decodePacked does.
		ic := &packedCursor{}
		var stepped [][]byte
		ok := true
		if k := ic.load(first, v); k == nil {
			ok = false
		} else {
			stepped = append(stepped, bytes.Clone(k))
			for len(ic.rest) > 0 {
				if ok = ic.step(); !ok {
					break
				}
				stepped = append(stepped, bytes.Clone(ic.key))
			}
		}
		if ok && len(stepped) > packKeys {
			ok = false // decodePacked counts keys; a cursor does not need to
		}
		if ok != (err == nil) || ok && !slices.EqualFunc(stepped, keys, bytes.Equal) {
			t.Fatalf("%q, %x: decoded %q (%v), stepped through %q (%v)", first, v, keys, err, stepped, ok)
		}
		if err != nil {
			return
		}
		g := packGroupLen(first)
		for i, k := range keys {
			if !bytes.HasPrefix(k, first[:g]) || i > 0 && bytes.Compare(keys[i-1], k) >= 0 {
				t.Fatalf("decoded %q from %q, %x", keys, first, v)
			}
		}
		// What decodes encodes into blocks that decode to the same keys.
		var again [][]byte
		err = encodePacked(keys, func(k, v []byte) error {
			ks, err := decodePacked(nil, k, v)
			if len(v) > packBytes && len(ks) > 1 {
				t.Fatalf("a block of %d keys in %d bytes", len(ks), len(v))
			}
			again = append(again, ks...)
			return err
		})
		if err != nil || !slices.EqualFunc(again, keys, bytes.Equal) {
			t.Fatalf("%q, %x: %q encodes to blocks of %q (%v)", first, v, keys, again, err)
		}
	})
}
