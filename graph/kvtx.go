package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"

	hkv "github.com/hidal-go/hidalgo/kv"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"
)

// hookKV is the KV Cayley runs on. Read transactions are hidalgo's. Write
// transactions are Lore's own thin adapter over one *bolt.Tx (writeTx), so
// that Lore's records are written in the same bbolt transaction as
// Cayley's quads: Cayley's ApplyDeltas opens one write transaction and
// commits it, and just before that commit the pending hook writes Lore's
// keys. If the hook fails, the transaction rolls back and ApplyDeltas
// returns the error.
//
// Cayley's write path uses only Get, GetBatch, Put and Del on two-level keys
// (bucket, key); the adapter caches bucket handles, which matters because
// Cayley keeps up to 131,072 value buckets in bbolt's root.
//
// Cayley creates a value bucket when it first writes a value whose hash
// falls in it, in whatever order the values come. bbolt splits pages only
// at commit, so each creation inserts into one ever larger in-memory root
// page and moves everything after the insertion point: a load's first
// transactions spent a quarter of their time in that copy. A writer that
// knows which value buckets its transaction will write (valueBuckets)
// passes them to expectValues, and the adapter creates the missing ones
// first, in key order, where each insertion moves almost nothing.
type hookKV struct {
	*hbolt.DB
	mu   sync.Mutex
	hook func(tx *bolt.Tx) error
	// begin, if set, is called when the next write transaction begins,
	// before Cayley writes; the transaction waits for the function it
	// returns before it commits or rolls back.
	begin  func(tx *bolt.Tx) (wait func())
	expect []uint32 // value buckets the next write transaction will write, sorted
	// have marks the value buckets known to exist (bit vk of valueKey),
	// loaded from bbolt's root at the first expectValues.
	have *[valueKinds * 65536 / 64]uint64
	// absent, during a bulk load, answers lookups of keys the load never
	// wrote (see absentKeys).
	absent *absentKeys
}

const valueKinds = 2 // Cayley's 'n' (reference counts) and 'v' (value IDs) buckets

// valueKey packs a value bucket's three-byte name into an integer that
// sorts as the name does: 'n' before 'v', then the two hash bytes.
func valueKey(name []byte) (uint32, bool) {
	if len(name) != 3 || (name[0] != 'v' && name[0] != 'n') {
		return 0, false
	}
	return uint32(name[0])<<16 | uint32(name[1])<<8 | uint32(name[2]), true
}

// bit is a value key's place in hookKV.have.
func bit(vk uint32) uint32 {
	kind := uint32(0)
	if vk>>16 == 'v' {
		kind = 1
	}
	return kind<<16 | vk&0xFFFF
}

// valueBuckets returns the value buckets Cayley writes when it adds quads
// holding these values: for each value, the bucket of its ID and the bucket
// of its reference count, both chosen by the first two bytes of its hash.
// The result is sorted and has no repeats.
func valueBuckets(vals []quad.Value) []uint32 {
	var seen [valueKinds * 65536 / 64]uint64
	var out []uint32
	for _, v := range vals {
		h := refs.HashOf(v)
		i := uint32(h[0])<<8 | uint32(h[1])
		if seen[i/64]&(1<<(i%64)) != 0 {
			continue
		}
		seen[i/64] |= 1 << (i % 64)
		out = append(out, 'n'<<16|i, 'v'<<16|i)
	}
	slices.Sort(out)
	return out
}

// expectValues tells the adapter which value buckets the next write
// transaction writes (from valueBuckets).
func (k *hookKV) expectValues(vks []uint32) {
	k.mu.Lock()
	k.expect = vks
	k.mu.Unlock()
}

// createExpected creates, in key order, the expected value buckets that do
// not exist yet, and caches their handles in t.
func (k *hookKV) createExpected(t *writeTx) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	vks := k.expect
	k.expect = nil
	if len(vks) == 0 {
		return nil
	}
	if k.have == nil {
		k.have = new([valueKinds * 65536 / 64]uint64)
		c := t.tx.Cursor()
		for name, _ := c.Seek([]byte{'n'}); name != nil; name, _ = c.Next() {
			if vk, ok := valueKey(name); ok {
				b := bit(vk)
				k.have[b/64] |= 1 << (b % 64)
			} else if name[0] > 'v' {
				break
			}
		}
	}
	name := make([]byte, 3)
	for _, vk := range vks {
		if b := bit(vk); k.have[b/64]&(1<<(b%64)) != 0 {
			continue
		}
		name[0], name[1], name[2] = byte(vk>>16), byte(vk>>8), byte(vk)
		b, err := t.tx.CreateBucketIfNotExists(name) // a bit set late by a concurrent commit is harmless
		if err != nil {
			return fmt.Errorf("create value bucket %q: %w", name, err)
		}
		t.values[vk] = b
		t.created = append(t.created, vk)
	}
	return nil
}

// filterAbsent starts (on) or stops answering lookups of keys a bulk load
// never wrote from a filter (absentKeys). It is started when the load
// begins, before its first write.
func (k *hookKV) filterAbsent(on bool) {
	var a *absentKeys
	if on {
		_ = k.DB.DB().View(func(tx *bolt.Tx) error { a = newAbsentKeys(tx); return nil })
	}
	k.mu.Lock()
	k.absent = a
	k.mu.Unlock()
}

func (k *hookKV) setHook(f func(tx *bolt.Tx) error) {
	k.mu.Lock()
	k.hook = f
	k.mu.Unlock()
}

func (k *hookKV) setBegin(f func(tx *bolt.Tx) (wait func())) {
	k.mu.Lock()
	k.begin = f
	k.mu.Unlock()
}

func (k *hookKV) takeBegin() func(tx *bolt.Tx) (wait func()) {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.begin
	k.begin = nil
	return f
}

func (k *hookKV) takeHook() func(tx *bolt.Tx) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.hook
	k.hook = nil
	return f
}

func (k *hookKV) Tx(ctx context.Context, rw bool) (hkv.Tx, error) {
	if !rw {
		return k.DB.Tx(ctx, false)
	}
	tx, err := k.DB.DB().Begin(true)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	absent := k.absent
	k.mu.Unlock()
	t := &writeTx{tx: tx, kv: k, buckets: map[string]*bolt.Bucket{}, values: map[uint32]*bolt.Bucket{}, absent: absent}
	if err := k.createExpected(t); err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	if f := k.takeBegin(); f != nil {
		t.wait = f(tx)
	}
	return t, nil
}

func (k *hookKV) View(ctx context.Context, fn func(tx hkv.Tx) error) error {
	return hkv.View(ctx, k, fn)
}

func (k *hookKV) Update(ctx context.Context, fn func(tx hkv.Tx) error) error {
	return hkv.Update(ctx, k, fn)
}

// writeTx is a hidalgo write transaction over one *bolt.Tx.
type writeTx struct {
	tx      *bolt.Tx
	kv      *hookKV
	buckets map[string]*bolt.Bucket
	values  map[uint32]*bolt.Bucket // Cayley's value buckets, "v" or "n" and two hash bytes, by valueKey
	created []uint32                // value buckets this transaction created, for hookKV.have once it commits
	absent  *absentKeys
	wait    func() // see hookKV.begin
}

var errKeyDepth = errors.New("lore's KV adapter takes (bucket, key) keys only")

// fillPercent is how full bbolt packs the pages of buckets whose keys
// only grow (Cayley's primitive log, Lore's change log): appends never
// split a full page again, so fuller pages are free.
const appendFill = 0.95

func (t *writeTx) bucket(name []byte, create bool) (*bolt.Bucket, error) {
	// Cayley's value buckets are most of the lookups: an integer key
	// spares hashing a string for each.
	vk, isValue := valueKey(name)
	if isValue {
		if b, ok := t.values[vk]; ok {
			return b, nil
		}
	} else if b, ok := t.buckets[string(name)]; ok {
		return b, nil
	}
	var b *bolt.Bucket
	var err error
	if create {
		b, err = t.tx.CreateBucketIfNotExists(name)
	} else {
		b = t.tx.Bucket(name)
	}
	if b == nil || err != nil {
		return nil, err
	}
	if isValue {
		t.values[vk] = b
		if create {
			t.created = append(t.created, vk) // or found: marking it is right either way
		}
		return b, nil
	}
	if string(name) == "log" || string(name) == string(bLog) {
		b.FillPercent = appendFill
	}
	t.buckets[string(name)] = b
	return b, nil
}

func (t *writeTx) Get(ctx context.Context, key hkv.Key) (hkv.Value, error) {
	if len(key) != 2 || t.absent != nil && t.absent.absent(key[0], key[1]) {
		return nil, hkv.ErrNotFound
	}
	b, err := t.bucket(key[0], false)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, hkv.ErrNotFound
	}
	v := b.Get(key[1])
	if v == nil {
		return nil, hkv.ErrNotFound
	}
	return v, nil
}

func (t *writeTx) GetBatch(ctx context.Context, keys []hkv.Key) ([]hkv.Value, error) {
	vals := make([]hkv.Value, len(keys))
	for i, k := range keys {
		v, err := t.Get(ctx, k)
		if err != nil && !errors.Is(err, hkv.ErrNotFound) {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

func (t *writeTx) Put(ctx context.Context, key hkv.Key, val hkv.Value) error {
	if len(key) != 2 {
		return fmt.Errorf("put %q: %w", key, errKeyDepth)
	}
	b, err := t.bucket(key[0], true)
	if err != nil {
		return err
	}
	if len(key[1]) == 0 && len(val) == 0 {
		return nil // creating the bucket was the point
	}
	if val == nil {
		val = []byte{}
	}
	if t.absent != nil {
		t.absent.add(key[0], key[1]) // before the write: a failed Put leaves a harmless false positive
	}
	return b.Put(key[1], val)
}

func (t *writeTx) Del(ctx context.Context, key hkv.Key) error {
	if len(key) != 2 {
		return fmt.Errorf("delete %q: %w", key, errKeyDepth)
	}
	b, err := t.bucket(key[0], false)
	if b == nil || err != nil {
		return err
	}
	return b.Delete(key[1])
}

// Scan is not used by Cayley's write path; it fails loudly if that changes.
func (t *writeTx) Scan(ctx context.Context, opts ...hkv.IteratorOption) hkv.Iterator {
	return errIterator{errors.New("scan inside a write transaction is not supported by Lore's KV adapter")}
}

func (t *writeTx) Commit(ctx context.Context) error {
	var err error
	if f := t.kv.takeHook(); f != nil {
		err = f(t.tx)
	}
	if t.wait != nil {
		t.wait() // the commit, or the rollback, has the transaction to itself
	}
	if err != nil {
		_ = t.tx.Rollback()
		return err
	}
	if err := t.tx.Commit(); err != nil {
		return err
	}
	t.kv.mu.Lock()
	if h := t.kv.have; h != nil {
		for _, vk := range t.created {
			b := bit(vk)
			h[b/64] |= 1 << (b % 64)
		}
	}
	t.kv.mu.Unlock()
	return nil
}

func (t *writeTx) Close() error {
	if t.wait != nil {
		t.wait() // the rollback has the transaction to itself
	}
	if err := t.tx.Rollback(); err != nil && !errors.Is(err, bolt.ErrTxClosed) {
		return err
	}
	return nil
}

type errIterator struct{ err error }

func (it errIterator) Next(context.Context) bool { return false }
func (it errIterator) Err() error                { return it.err }
func (it errIterator) Close() error              { return nil }
func (it errIterator) Reset()                    {}
func (it errIterator) Key() hkv.Key              { return nil }
func (it errIterator) Val() hkv.Value            { return nil }
