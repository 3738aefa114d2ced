package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// TestWriteFileMatchesBbolt is writeFile's oracle: random databases
// (nested and empty buckets, values from none to several pages, keys up to
// a few KiB, enough keys for three levels), written out by
// writeFile, open in bbolt, pass its consistency check and hold what the
// source holds, sequences included; and the same random writes, applied
// to both, leave them equal and consistent again.
func TestWriteFileMatchesBbolt(t *testing.T) {
	for seed := range uint64(6) {
		pageSize := []int{4096, 16384}[seed%2]
		t.Run(fmt.Sprint(seed, "/", pageSize), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			dir := t.TempDir()
			src, err := bbolt.Open(filepath.Join(dir, "src"), 0o600, &bbolt.Options{PageSize: pageSize, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if err := src.Update(func(tx *bbolt.Tx) error { return fillRandom(rng, tx, seed == 0) }); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "built")
			if err := src.View(func(tx *bbolt.Tx) error { return writeFile(tx, path, pageSize, 0o600, fileMerge{}) }); err != nil {
				t.Fatal(err)
			}
			dst, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, FreelistType: bbolt.FreelistMapType})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			if dst.Info().PageSize != pageSize {
				t.Fatalf("page size %d, want %d", dst.Info().PageSize, pageSize)
			}
			compareDBs(t, "written", src, dst)
			if seed == 0 {
				_ = dst.View(func(tx *bbolt.Tx) error {
					if d := tx.Bucket([]byte("big")).Stats().Depth; d < 3 {
						t.Errorf("the big bucket is %d levels deep, want 3 or more", d)
					}
					return nil
				})
			}
			for round := range 2 {
				for _, db := range []*bbolt.DB{src, dst} {
					w := rand.New(rand.NewPCG(seed, uint64(round))) // the same writes on both
					if err := db.Update(func(tx *bbolt.Tx) error { return churn(w, tx) }); err != nil {
						t.Fatal(err)
					}
				}
				compareDBs(t, fmt.Sprintf("after writes %d", round), src, dst)
			}
		})
	}
}

// fillRandom fills tx with random buckets; big adds one of 20,000 keys,
// three levels deep once written out with 4 KiB pages.
func fillRandom(rng *rand.Rand, tx *bbolt.Tx, big bool) error {
	key := func(n int) []byte {
		k := make([]byte, n)
		for i := range k {
			k[i] = byte(rng.IntN(256))
		}
		return k
	}
	var fill func(b *bbolt.Bucket, depth int) error
	fill = func(b *bbolt.Bucket, depth int) error {
		if err := b.SetSequence(rng.Uint64N(1000)); err != nil {
			return err
		}
		for range rng.IntN(400) {
			var v []byte
			switch rng.IntN(10) {
			case 0:
				v = []byte{}
			case 1:
				v = bytes.Repeat(key(16), 300+rng.IntN(4500)) // overflow pages
			default:
				v = key(rng.IntN(200))
			}
			kn := 1 + rng.IntN(40)
			if rng.IntN(50) == 0 {
				kn = 1000 + rng.IntN(3000)
			}
			if err := b.Put(key(kn), v); err != nil {
				return err
			}
		}
		if depth < 2 {
			for range rng.IntN(3) {
				nb, err := b.CreateBucketIfNotExists(key(1 + rng.IntN(10)))
				if err != nil {
					return err
				}
				if err := fill(nb, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for i := range 2 + rng.IntN(5) {
		b, err := tx.CreateBucket(fmt.Appendf(nil, "bucket%d", i))
		if err != nil {
			return err
		}
		if i == 1 {
			continue // empty
		}
		if err := fill(b, 0); err != nil {
			return err
		}
	}
	if big {
		b, err := tx.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		b.FillPercent = 0.3 // many pages
		for i := range 20000 {
			if err := b.Put(fmt.Appendf(nil, "%08d-%x", i*7919%20000, i), fmt.Appendf(nil, "v%d", i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// churn applies random writes to every bucket of tx: deletes, updates,
// new keys, a nested bucket made and one deleted.
func churn(rng *rand.Rand, tx *bbolt.Tx) error {
	var names [][]byte
	_ = tx.ForEach(func(name []byte, _ *bbolt.Bucket) error { names = append(names, name); return nil })
	for _, name := range names {
		b := tx.Bucket(name)
		var keys, nested [][]byte
		_ = b.ForEach(func(k, v []byte) error {
			if v == nil {
				nested = append(nested, k)
			} else {
				keys = append(keys, k)
			}
			return nil
		})
		for _, k := range keys {
			switch rng.IntN(4) {
			case 0:
				if err := b.Delete(k); err != nil {
					return err
				}
			case 1:
				if err := b.Put(k, bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(300))); err != nil {
					return err
				}
			}
		}
		for range rng.IntN(300) {
			if err := b.Put(fmt.Appendf(nil, "new-%d", rng.IntN(1<<20)), []byte("n")); err != nil {
				return err
			}
		}
		if len(nested) > 0 && rng.IntN(2) == 0 {
			if err := b.DeleteBucket(nested[rng.IntN(len(nested))]); err != nil {
				return err
			}
		}
		nb, err := b.CreateBucketIfNotExists([]byte("made-later"))
		if err != nil {
			return err
		}
		if err := nb.Put([]byte("k"), []byte("v")); err != nil {
			return err
		}
	}
	return nil
}

// compareDBs fails unless a and b hold the same buckets, keys, values and
// sequences, and b passes bbolt's consistency check.
func compareDBs(t *testing.T, when string, a, b *bbolt.DB) {
	t.Helper()
	dumps := make([][]string, 2)
	for i, db := range []*bbolt.DB{a, b} {
		err := db.View(func(tx *bbolt.Tx) error {
			if i == 1 {
				for err := range tx.Check() {
					return fmt.Errorf("check: %w", err)
				}
			}
			var walk func(path string, b *bbolt.Bucket) error
			walk = func(path string, b *bbolt.Bucket) error {
				dumps[i] = append(dumps[i], fmt.Sprintf("bucket %s seq %d", path, b.Sequence()))
				return b.ForEach(func(k, v []byte) error {
					if v == nil {
						return walk(fmt.Sprintf("%s/%x", path, k), b.Bucket(k))
					}
					dumps[i] = append(dumps[i], fmt.Sprintf("%s %x=%x", path, k, v))
					return nil
				})
			}
			return tx.ForEach(func(name []byte, b *bbolt.Bucket) error { return walk(string(name), b) })
		})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
	}
	if !slices.Equal(dumps[0], dumps[1]) {
		t.Fatalf("%s: the databases differ (%d and %d lines)", when, len(dumps[0]), len(dumps[1]))
	}
}

// bbolt requires every branch page to have two children or more (its
// rebalance asserts it). A bucket whose leaves come to one more than a
// branch page holds would leave the last branch page with one; writeFile
// moves one over. With 4 KiB pages, 8-byte keys and values, a leaf holds
// 127 keys and a branch 170 children: 127*170+1 keys make 171 leaves.
func TestWriteFileBranchesHaveTwoChildren(t *testing.T) {
	dir := t.TempDir()
	src, err := bbolt.Open(filepath.Join(dir, "src"), 0o600, &bbolt.Options{PageSize: 4096, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	err = src.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 127*170 + 1 {
			if err := b.Put(fmt.Appendf(nil, "%08d", i), []byte("12345678")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "built")
	if err := src.View(func(tx *bbolt.Tx) error { return writeFile(tx, path, 4096, 0o600, fileMerge{}) }); err != nil {
		t.Fatal(err)
	}
	dst, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	_ = dst.View(func(tx *bbolt.Tx) error {
		leaves, branches := 0, 0
		for id := range int(tx.Size()) / 4096 {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				t.Fatalf("page %d: %v", id, err)
			}
			switch p.Type {
			case "leaf":
				leaves++
			case "branch":
				branches++
				if p.Count < 2 {
					t.Errorf("branch page %d has %d child", id, p.Count)
				}
			}
		}
		if leaves != 172 || branches != 3 { // the root bucket's leaf too
			t.Errorf("%d leaves and %d branches, want 172 and 3", leaves, branches)
		}
		return nil
	})
	compareDBs(t, "written", src, dst)
}

// TestWriteFileMerges checks writeFile's merge against bbolt: random
// databases written out with random pairs merged into their top-level
// buckets (new keys, and keys the bucket holds, whose value the pair's
// replaces; in some buckets, pairs flagged to put or delete their keys)
// and random keys dropped (the bucket's or a pair's, nested
// buckets included), and with random buckets written after the others
// (fileMerge.late), hold what the same puts and deletes give through
// bbolt, and pass its check.
func TestWriteFileMerges(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			dir := t.TempDir()
			src, err := bbolt.Open(filepath.Join(dir, "src"), 0o600, &bbolt.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if err := src.Update(func(tx *bbolt.Tx) error { return fillRandom(rng, tx, false) }); err != nil {
				t.Fatal(err)
			}
			m := fileMerge{into: map[string]pairSource{}, flagged: map[string]bool{}, drop: map[string]map[string]bool{}, late: map[string]bool{}}
			puts := map[string][]kv{}
			err = src.View(func(tx *bbolt.Tx) error {
				return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
					m.late[string(name)] = rng.IntN(3) == 0
					if rng.IntN(4) == 0 {
						return nil // left as it is
					}
					var held, nested [][]byte
					_ = b.ForEach(func(k, v []byte) error {
						if v == nil {
							nested = append(nested, bytes.Clone(k))
						} else {
							held = append(held, bytes.Clone(k))
						}
						return nil
					})
					byKey := map[string][]byte{}
					for _, k := range held {
						if rng.IntN(3) == 0 {
							byKey[string(k)] = fmt.Appendf(nil, "replaced %d", rng.IntN(1000))
						}
					}
					for range rng.IntN(300) {
						k := make([]byte, 1+rng.IntN(12))
						for i := range k {
							k[i] = byte(rng.IntN(256))
						}
						if b.Bucket(k) == nil {
							byKey[string(k)] = bytes.Repeat([]byte{byte(rng.IntN(256))}, rng.IntN(3)*rng.IntN(3000))
						}
					}
					var pairs []kv
					for k, v := range byKey {
						pairs = append(pairs, kv{[]byte(k), v})
					}
					slices.SortFunc(pairs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
					if rng.IntN(2) == 0 { // some of its pairs delete their keys
						m.flagged[string(name)] = true
						for i := range pairs {
							if rng.IntN(4) == 0 {
								pairs[i].v = []byte{runDel}
							} else {
								pairs[i].v = append([]byte{runPut}, pairs[i].v...)
							}
						}
					}
					puts[string(name)] = pairs
					m.into[string(name)] = &sliceSource{pairs: pairs}
					drop := map[string]bool{}
					for _, set := range [][][]byte{held, nested} {
						for _, k := range set {
							if rng.IntN(5) == 0 {
								drop[string(k)] = true
							}
						}
					}
					for _, p := range pairs {
						if rng.IntN(7) == 0 {
							drop[string(p.k)] = true
						}
					}
					m.drop[string(name)] = drop
					return nil
				})
			})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "built")
			if err := src.View(func(tx *bbolt.Tx) error { return writeFile(tx, path, 4096, 0o600, m) }); err != nil {
				t.Fatal(err)
			}
			// The same through bbolt, into the source.
			err = src.Update(func(tx *bbolt.Tx) error {
				for name, pairs := range puts {
					b := tx.Bucket([]byte(name))
					for _, p := range pairs {
						var err error
						switch {
						case !m.flagged[name]:
							err = b.Put(p.k, p.v)
						case p.v[0] == runDel:
							err = b.Delete(p.k)
						default:
							err = b.Put(p.k, p.v[1:])
						}
						if err != nil {
							return err
						}
					}
					for k := range m.drop[name] {
						if b.Bucket([]byte(k)) != nil {
							if err := b.DeleteBucket([]byte(k)); err != nil {
								return err
							}
						} else if err := b.Delete([]byte(k)); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			dst, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			defer dst.Close()
			compareDBs(t, "merged", src, dst)
		})
	}
}

// writeFile stops on an error its fileMerge reports once the buckets are
// written (a source that failed), before the file is finished.
func TestWriteFileStopsOnFailedSource(t *testing.T) {
	dir := t.TempDir()
	src, err := bbolt.Open(filepath.Join(dir, "src"), 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Update(func(tx *bbolt.Tx) error { return fillRandom(rand.New(rand.NewPCG(1, 2)), tx, false) }); err != nil {
		t.Fatal(err)
	}
	failed := errors.New("the fold failed")
	path := filepath.Join(dir, "built")
	err = src.View(func(tx *bbolt.Tx) error {
		return writeFile(tx, path, 4096, 0o600, fileMerge{err: func() error { return failed }})
	})
	if !errors.Is(err, failed) {
		t.Fatalf("writeFile with a failed source: %v, want %v", err, failed)
	}
	if _, err := bbolt.Open(path, 0o600, &bbolt.Options{NoSync: true, Timeout: time.Second}); err == nil {
		t.Fatal("the unfinished file opens")
	}
}

// A sliceSource is a pairSource over pairs in key order.
type sliceSource struct{ pairs []kv }

func (s *sliceSource) next() (k, v []byte, ok bool) {
	if len(s.pairs) == 0 {
		return nil, nil, false
	}
	p := s.pairs[0]
	s.pairs = s.pairs[1:]
	return p.k, p.v, true
}

// An aheadWriter writes what it is given, in order, whatever the sizes of
// the writes against its buffers'.
func TestAheadWriterWritesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 50 {
		var sink bytes.Buffer
		w := newAheadWriter(&sink, 1+rng.IntN(64), false)
		var want []byte
		for range rng.IntN(40) {
			p := make([]byte, rng.IntN(200))
			for i := range p {
				p[i] = byte(rng.IntN(256))
			}
			if n, err := w.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
			want = append(want, p...)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sink.Bytes(), want) {
			t.Fatalf("wrote %d bytes, want %d (or other bytes)", sink.Len(), len(want))
		}
	}
}

// failAfter fails every write once n bytes are written.
type failAfter struct{ n int }

var errDiskFull = errors.New("no space left on device")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return f.n, errDiskFull
	}
	f.n -= len(p)
	return len(p), nil
}

// A write that fails makes the writes after it, and Close, fail with its
// error.
func TestAheadWriterReportsFailure(t *testing.T) {
	w := newAheadWriter(&failAfter{n: 100}, 64, false)
	var err error
	for i := 0; i < 1000 && err == nil; i++ {
		_, err = w.Write(make([]byte, 64))
	}
	if !errors.Is(err, errDiskFull) {
		t.Errorf("Write after the failure: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("Close: %v", err)
	}
	if err := w.Close(); !errors.Is(err, errDiskFull) {
		t.Errorf("second Close: %v", err)
	}
}
