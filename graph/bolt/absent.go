package bolt

import (
	"bytes"
	"hash/maphash"
	"math/bits"

	bbolt "go.etcd.io/bbolt"
)

// Cayley looks up every key it is about to write: the ID of each value it
// adds, the value's reference count, and, before appending to it, each
// index entry its quads extend. In a bulk load into an empty store almost
// all of these keys are new, and each lookup still searches bbolt from the
// root (at 10k nodes, the lookups of the later batches took a sixth of the
// load's time; Cayley's own bloom filter would spare them, but it is
// rebuilt by scanning every quad at each open, so Lore turns it off).
//
// absentKeys knows which keys a bulk load has written to Cayley's buckets
// that held nothing when the load began: a key of such a bucket that is not
// in its filter was never written, so it is absent without a lookup. Every
// write of Cayley's goes through writeTx.Put, which adds the key first; a
// key the filter holds (a false positive, or a key written by a transaction
// that rolled back, or one deleted since) is looked up as before, so the
// filter can make a lookup cheaper but never change its answer.
type absentKeys struct {
	seed   maphash.Seed
	filled map[string]bool // Cayley's buckets that held keys when the load began: always looked up
	blooms []*bloom        // each twice the capacity of the one before; keys go to the last
}

// cayleyBucket reports whether a bucket is one of Cayley's: where Lore
// keeps its value IDs and reference counts (see hookKV), or a quad index
// (named by the direction prefixes of its keys: "sp", "ops"). Only these
// are filtered.
func cayleyBucket(name []byte) bool {
	if bytes.Equal(name, bValueIDs) || bytes.Equal(name, bValueRefs) {
		return true
	}
	if len(name) == 0 || len(name) > 4 {
		return false
	}
	for _, c := range name {
		switch c {
		case 's', 'p', 'o', 'c':
		default:
			return false
		}
	}
	return true
}

// newAbsentKeys starts a filter for the store in tx: the Cayley buckets
// that hold keys now are left out of it.
func newAbsentKeys(tx *bbolt.Tx) *absentKeys {
	a := &absentKeys{seed: maphash.MakeSeed(), filled: map[string]bool{}, blooms: []*bloom{newBloom(1 << 16)}}
	_ = tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		if cayleyBucket(name) {
			if k, _ := b.Cursor().First(); k != nil {
				a.filled[string(name)] = true
			}
		}
		return nil
	})
	return a
}

func (a *absentKeys) hash(bucket, key []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(a.seed)
	h.Write(bucket)
	h.WriteByte(0)
	h.Write(key)
	return h.Sum64()
}

// add records a key written to a bucket.
func (a *absentKeys) add(bucket, key []byte) {
	if !cayleyBucket(bucket) || a.filled[string(bucket)] {
		return
	}
	last := a.blooms[len(a.blooms)-1]
	if last.n >= last.capacity {
		last = newBloom(2 * last.capacity)
		a.blooms = append(a.blooms, last)
	}
	last.add(a.hash(bucket, key))
}

// absent reports whether a key is certainly not in its bucket.
func (a *absentKeys) absent(bucket, key []byte) bool {
	if !cayleyBucket(bucket) || a.filled[string(bucket)] {
		return false
	}
	h := a.hash(bucket, key)
	for _, b := range a.blooms {
		if b.has(h) {
			return false
		}
	}
	return true
}

// A bloom filter of 64-bit hashes: bloomBits bits and bloomProbes probes
// per key, about 1% false positives at capacity.
type bloom struct {
	bits        []uint64
	mask        uint64
	n, capacity int
}

const (
	bloomBits   = 10 // per key of capacity
	bloomProbes = 7
)

func newBloom(capacity int) *bloom {
	m := uint64(1) << bits.Len64(uint64(capacity*bloomBits-1)) // a power of two
	return &bloom{bits: make([]uint64, m/64), mask: m - 1, capacity: capacity}
}

// Probe i of hash h is bit lo+i*hi of the filter (double hashing on the
// two halves of h; hi is odd so that the probes differ).
func (b *bloom) add(h uint64) {
	lo, hi := h, h>>32|h<<32|1
	for i := range uint64(bloomProbes) {
		j := (lo + i*hi) & b.mask
		b.bits[j/64] |= 1 << (j % 64)
	}
	b.n++
}

func (b *bloom) has(h uint64) bool {
	lo, hi := h, h>>32|h<<32|1
	for i := range uint64(bloomProbes) {
		j := (lo + i*hi) & b.mask
		if b.bits[j/64]&(1<<(j%64)) == 0 {
			return false
		}
	}
	return true
}
