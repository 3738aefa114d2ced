package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"

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
// Cayley keeps some 130,000 value buckets in bbolt's root.
type hookKV struct {
	*hbolt.DB
	mu   sync.Mutex
	hook func(tx *bolt.Tx) error
}

func (k *hookKV) setHook(f func(tx *bolt.Tx) error) {
	k.mu.Lock()
	k.hook = f
	k.mu.Unlock()
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
	return &writeTx{tx: tx, kv: k, buckets: map[string]*bolt.Bucket{}, values: map[uint32]*bolt.Bucket{}}, nil
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
	values  map[uint32]*bolt.Bucket // Cayley's value buckets, "v" or "n" and two hash bytes, by those three bytes
}

var errKeyDepth = errors.New("lore's KV adapter takes (bucket, key) keys only")

// fillPercent is how full bbolt packs the pages of buckets whose keys
// only grow (Cayley's primitive log, Lore's change log): appends never
// split a full page again, so fuller pages are free.
const appendFill = 0.95

func (t *writeTx) bucket(name []byte, create bool) (*bolt.Bucket, error) {
	// Cayley's value buckets are most of the lookups: an integer key
	// spares hashing a string for each.
	var vk uint32
	isValue := len(name) == 3 && (name[0] == 'v' || name[0] == 'n')
	if isValue {
		vk = uint32(name[0])<<16 | uint32(name[1])<<8 | uint32(name[2])
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
		return b, nil
	}
	if string(name) == "log" || string(name) == string(bLog) {
		b.FillPercent = appendFill
	}
	t.buckets[string(name)] = b
	return b, nil
}

func (t *writeTx) Get(ctx context.Context, key hkv.Key) (hkv.Value, error) {
	if len(key) != 2 {
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
	if f := t.kv.takeHook(); f != nil {
		if err := f(t.tx); err != nil {
			_ = t.tx.Rollback()
			return err
		}
	}
	return t.tx.Commit()
}

func (t *writeTx) Close() error {
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
