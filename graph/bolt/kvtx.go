package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	hkv "github.com/hidal-go/hidalgo/kv"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// hookKV is the KV Cayley runs on. Write transactions are Lore's own thin
// adapter over one *bolt.Tx (writeTx), so that Lore's records are written
// in the same bbolt transaction as Cayley's quads: Cayley's ApplyDeltas
// opens one write transaction and commits it, and just before that commit
// the pending hook writes Lore's keys. If the hook fails, the transaction
// rolls back and ApplyDeltas returns the error. Read transactions are
// hidalgo's, behind the same key mapping (readTx).
//
// Cayley's write path uses only Get, GetBatch, Put and Del on two-level keys
// (bucket, key). The adapter maps one family of them to another layout
// (physical): Cayley spreads the IDs and reference counts of its values
// over 131,072 buckets, named 'v' or 'n' and the first two bytes of the
// value's hash. In bbolt every bucket is a key of the root bucket, opened
// by a search from the root, and each transaction that touches a small one
// rewrites it whole into the root's pages at commit. Lore keeps both in
// one bucket, "v", under the full hash (whose first two bytes named the
// bucket): the ID, then the count, each a uvarint as Cayley writes them
// (see valueRecord). An import of 10k nodes took 11% less time (0.494 ->
// 0.439 s) with the values in two buckets ("v" and "n", store layouts 4
// to 10), one of 100k 18% less (6.16 -> 5.04 s), and the store has no
// bucket per value prefix to open; one bucket (layout 11) saves a key and
// its element header per value, 3.6 MiB at 100k nodes of the benchmark
// graph.
type hookKV struct {
	*hbolt.DB
	mu   sync.Mutex
	hook func(tx *bbolt.Tx) error
	// hold makes the next write transaction's Commit hand the bbolt
	// transaction on, uncommitted, to the one after it (held), which
	// commits it: two ApplyDeltas calls then make one commit (see
	// Store.applyDeltas).
	hold bool
	held *bbolt.Tx
}

// holdNext makes the next write transaction's commit keep it open for the
// one after it.
func (k *hookKV) holdNext() {
	k.mu.Lock()
	k.hold = true
	k.mu.Unlock()
}

// dropHeld rolls back a transaction held for a next one that never took it.
func (k *hookKV) dropHeld() {
	k.mu.Lock()
	tx := k.held
	k.held, k.hold = nil, false
	k.mu.Unlock()
	if tx != nil {
		_ = tx.Rollback()
	}
}

// Where Lore keeps Cayley's value IDs and reference counts (see hookKV):
// bValues, since store layout 11; bValueRefs held the counts before.
var (
	bValues    = []byte("v")
	bValueRefs = []byte("n")
)

// cayleyValueBucket reports whether name is one of the buckets Cayley asks
// for a value's ID ('v') or reference count ('n') in: the letter and two
// bytes of the value's hash.
func cayleyValueBucket(name []byte) bool {
	return len(name) == 3 && (name[0] == 'v' || name[0] == 'n')
}

// physical maps a key as Cayley names it to where Lore keeps it: a key of
// a value bucket to the same key in bValues, and the part of its record
// it names ('v' the ID, 'n' the count; 0 for any other key). The key must
// start with the two hash bytes that named its bucket (it does: Cayley's
// keys are the whole hash), so that no two keys meet.
func physical(key hkv.Key) (hkv.Key, byte, error) {
	if len(key) != 2 || !cayleyValueBucket(key[0]) {
		return key, 0, nil
	}
	if len(key[1]) < 2 || key[1][0] != key[0][1] || key[1][1] != key[0][2] {
		return nil, 0, fmt.Errorf("cayley value key %x in bucket %q does not start with the bucket's hash bytes; Lore's adapter cannot map it", key[1], key[0])
	}
	return hkv.Key{bValues, key[1]}, key[0][0], nil
}

// A value record (bValues) holds a value's ID and its reference count as
// Cayley writes them, each a uvarint: the ID, or 0 while it has none (an
// ID is never 0), then the count, if it has one. Cayley writes a new
// value's ID before its count, and deletes its count before its ID, so
// both states between occur inside a transaction. A record of layouts 4 to
// 10 in bValues (an ID alone) is a record without a count.
func valueRecord(id, count []byte) []byte {
	if len(id) == 0 && len(count) == 0 {
		return nil
	}
	if len(id) == 0 {
		id = []byte{0}
	}
	return append(append(make([]byte, 0, len(id)+len(count)), id...), count...)
}

// valuePart returns the part of value record rec that part names ('v' or
// 'n'), nil if it has none; err if rec is malformed.
func valuePart(rec []byte, part byte) ([]byte, error) {
	if len(rec) == 0 {
		return nil, nil
	}
	id, n := binary.Uvarint(rec)
	if n <= 0 || n < len(rec) && !validUvarint(rec[n:]) {
		return nil, fmt.Errorf("cayley value record %x: %w", rec, errCorrupt)
	}
	switch {
	case part == 'v' && id != 0:
		return rec[:n], nil
	case part == 'n' && n < len(rec):
		return rec[n:], nil
	}
	return nil, nil
}

// validUvarint reports whether b is one uvarint and nothing more.
func validUvarint(b []byte) bool {
	_, n := binary.Uvarint(b)
	return n == len(b)
}

// withValuePart returns record rec with its part part set to val, or
// dropped if val is nil: nil if nothing is left.
func withValuePart(rec []byte, part byte, val []byte) ([]byte, error) {
	id, err := valuePart(rec, 'v')
	if err != nil {
		return nil, err
	}
	count, _ := valuePart(rec, 'n')
	if part == 'v' {
		id = val
	} else {
		count = val
	}
	if len(id) > 0 && !validUvarint(id) || len(count) > 0 && !validUvarint(count) {
		return nil, fmt.Errorf("cayley value part %c %x is not a uvarint; Lore's adapter cannot store it", part, val)
	}
	return valueRecord(id, count), nil
}

// combineValueBuckets moves the reference counts of store layouts 4 to 10
// (bValueRefs) into the value records of bValues, and drops bValueRefs,
// in tx.
func combineValueBuckets(tx *bbolt.Tx) error {
	refs := tx.Bucket(bValueRefs)
	if refs == nil {
		return nil
	}
	ids, err := tx.CreateBucketIfNotExists(bValues)
	if err != nil {
		return err
	}
	c := refs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		rec, err := withValuePart(ids.Get(k), 'n', v)
		if err != nil {
			return err
		}
		if err := ids.Put(bytes.Clone(k), rec); err != nil {
			return err
		}
	}
	return tx.DeleteBucket(bValueRefs)
}

// mergeValueBuckets moves Cayley's values out of the value buckets of
// store layouts 3 and before into bValues' records (see hookKV), a
// few hundred thousand values per transaction, each taking whole buckets
// and deleting them. A crash between transactions leaves the rest in the
// old buckets, where the next open finds and moves them: the store's
// version changes only once none is left.
func mergeValueBuckets(db *bbolt.DB, chunk int) error {
	for {
		left := false
		err := updateDB(db, func(tx *bbolt.Tx) error {
			var names [][]byte
			c := tx.Cursor()
			for name, v := c.Seek([]byte{'n'}); name != nil && name[0] <= 'v'; name, v = c.Next() {
				if v == nil && cayleyValueBucket(name) { // a nil value: a bucket
					names = append(names, bytes.Clone(name))
				}
			}
			to, err := tx.CreateBucketIfNotExists(bValues)
			if err != nil {
				return err
			}
			moved := 0
			for i, name := range names {
				if moved >= chunk {
					left = i < len(names)
					break
				}
				from := tx.Bucket(name)
				err := from.ForEach(func(k, v []byte) error {
					key, part, err := physical(hkv.Key{name, k})
					if err != nil {
						return err
					}
					moved++
					rec, err := withValuePart(to.Get(key[1]), part, v)
					if err != nil {
						return err
					}
					return to.Put(bytes.Clone(key[1]), rec)
				})
				if err != nil {
					return err
				}
				if err := tx.DeleteBucket(name); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil || !left {
			return err
		}
	}
}

func (k *hookKV) setHook(f func(tx *bbolt.Tx) error) {
	k.mu.Lock()
	k.hook = f
	k.mu.Unlock()
}

func (k *hookKV) takeHook() func(tx *bbolt.Tx) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	f := k.hook
	k.hook = nil
	return f
}

func (k *hookKV) Tx(ctx context.Context, rw bool) (hkv.Tx, error) {
	if !rw {
		tx, err := k.DB.DB().Begin(false)
		if err != nil {
			return nil, err
		}
		return readTx{tx}, nil
	}
	k.mu.Lock()
	tx, hold := k.held, k.hold
	k.held, k.hold = nil, false
	k.mu.Unlock()
	if tx == nil {
		var err error
		if tx, err = k.DB.DB().Begin(true); err != nil {
			return nil, err
		}
	}
	t := &writeTx{tx: tx, kv: k, buckets: map[string]*bbolt.Bucket{}, hold: hold}
	return t, nil
}

func (k *hookKV) View(ctx context.Context, fn func(tx hkv.Tx) error) error {
	return hkv.View(ctx, k, fn)
}

func (k *hookKV) Update(ctx context.Context, fn func(tx hkv.Tx) error) error {
	return hkv.Update(ctx, k, fn)
}

// readTx is a hidalgo read transaction over one read-only *bolt.Tx, that
// finds keys where the adapter keeps them: values (physical), the log's
// blocks (bCayleyLog) and the quad index's (bOPS). Cayley scans only its
// log (for a bloom filter Lore turns off) and its quad indexes (for quad
// iterators Lore never uses), so Scan is refused rather than read from
// blocks as if they were keys.
type readTx struct{ tx *bbolt.Tx }

var errReadOnly = errors.New("a write in a read transaction of Lore's KV adapter")

func (t readTx) Get(ctx context.Context, key hkv.Key) (hkv.Value, error) {
	if len(key) != 2 {
		return nil, hkv.ErrNotFound
	}
	var v []byte
	var err error
	switch id, isLog := cayleyLogKey(key); {
	case isLog:
		if b := t.tx.Bucket(bCayleyLog); b != nil {
			v, err = logBlockGet(b.Get(logKey(logBase(id))), byte(id-logBase(id)))
		}
	case cayleyOPSKey(key):
		if b := t.tx.Bucket(bOPS); b != nil {
			v, err = opsGet(b, key[1])
		}
	default:
		var part byte
		if key, part, err = physical(key); err != nil {
			return nil, err
		}
		if b := t.tx.Bucket(key[0]); b != nil {
			v = b.Get(key[1])
		}
		if part != 0 && v != nil {
			v, err = valuePart(v, part)
		}
	}
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, hkv.ErrNotFound
	}
	return v[:len(v):len(v)], nil
}

func (t readTx) GetBatch(ctx context.Context, keys []hkv.Key) ([]hkv.Value, error) {
	return hkv.GetBatch(ctx, t, keys)
}

func (t readTx) Put(context.Context, hkv.Key, hkv.Value) error { return errReadOnly }
func (t readTx) Del(context.Context, hkv.Key) error            { return errReadOnly }

func (t readTx) Scan(context.Context, ...hkv.IteratorOption) hkv.Iterator {
	return errIterator{errors.New("a scan through Lore's KV adapter: not supported (it keeps Cayley's log and quad index in blocks)")}
}

func (t readTx) Commit(context.Context) error { return t.Close() }

func (t readTx) Close() error {
	if err := t.tx.Rollback(); err != nil && !errors.Is(err, bolterrors.ErrTxClosed) {
		return err
	}
	return nil
}

// writeTx is a hidalgo write transaction over one *bolt.Tx.
type writeTx struct {
	tx      *bbolt.Tx
	kv      *hookKV
	buckets map[string]*bbolt.Bucket
	hold    bool // Commit hands the transaction on (see hookKV.hold)
	handed  bool // it did
	// log holds the blocks of Cayley's log the transaction changes, by
	// base, written at its commit (see bCayleyLog).
	log map[uint64]*logEdit
}

// logBlock returns the block of base base as the transaction has it.
func (t *writeTx) logBlock(base uint64, create bool) (*logEdit, error) {
	if e, ok := t.log[base]; ok {
		return e, nil
	}
	b, err := t.bucket(bCayleyLog, create)
	if err != nil || b == nil {
		return nil, err
	}
	e, err := newLogEdit(b.Get(logKey(base)))
	if err != nil {
		return nil, corrupt(fmt.Sprintf("log block %d", base), err)
	}
	if t.log == nil {
		t.log = map[uint64]*logEdit{}
	}
	t.log[base] = e
	return e, nil
}

// flushLog writes the blocks of the log the transaction changed.
func (t *writeTx) flushLog() error {
	if len(t.log) == 0 {
		return nil
	}
	b, err := t.bucket(bCayleyLog, true)
	if err != nil {
		return err
	}
	err = flushLogEdits(b, t.log)
	t.log = nil
	return err
}

var errKeyDepth = errors.New("lore's KV adapter takes (bucket, key) keys only")

// fillPercent is how full bbolt packs the pages of buckets whose keys
// only grow (Cayley's primitive log, Lore's change log): appends never
// split a full page again, so fuller pages are free.
const appendFill = 0.95

func (t *writeTx) bucket(name []byte, create bool) (*bbolt.Bucket, error) {
	if b, ok := t.buckets[string(name)]; ok {
		return b, nil
	}
	var b *bbolt.Bucket
	var err error
	if create {
		b, err = t.tx.CreateBucketIfNotExists(name)
	} else {
		b = t.tx.Bucket(name)
	}
	if b == nil || err != nil {
		return nil, err
	}
	if bytes.Equal(name, bCayleyLog) || bytes.Equal(name, bLog) {
		b.FillPercent = appendFill
	}
	t.buckets[string(name)] = b
	return b, nil
}

func (t *writeTx) Get(ctx context.Context, key hkv.Key) (hkv.Value, error) {
	if len(key) != 2 {
		return nil, hkv.ErrNotFound
	}
	if id, ok := cayleyLogKey(key); ok {
		// The block as this transaction changed it, or as stored: a
		// read alone takes no edit, which the commit would write back.
		var block []byte
		if e, ok := t.log[logBase(id)]; ok {
			block = e.block
		} else if b, err := t.bucket(bCayleyLog, false); err != nil {
			return nil, err
		} else if b != nil {
			block = b.Get(logKey(logBase(id)))
		}
		v, err := logBlockGet(block, byte(id-logBase(id)))
		if err != nil {
			return nil, corrupt(fmt.Sprintf("log block %d", logBase(id)), err)
		}
		if v == nil {
			return nil, hkv.ErrNotFound
		}
		return v[:len(v):len(v)], nil
	}
	if cayleyOPSKey(key) {
		b, err := t.bucket(bOPS, false)
		if err != nil || b == nil {
			return nil, cmp.Or(err, hkv.ErrNotFound)
		}
		v, err := opsGet(b, key[1])
		if err == nil && v == nil {
			err = hkv.ErrNotFound
		}
		return v, err
	}
	key, part, err := physical(key)
	if err != nil {
		return nil, err
	}
	b, err := t.bucket(key[0], false)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, hkv.ErrNotFound
	}
	v := b.Get(key[1])
	if part != 0 && v != nil {
		if v, err = valuePart(v, part); err != nil {
			return nil, err
		}
	}
	if v == nil {
		return nil, hkv.ErrNotFound
	}
	return v, nil
}

func (t *writeTx) GetBatch(ctx context.Context, keys []hkv.Key) ([]hkv.Value, error) {
	return hkv.GetBatch(ctx, t, keys)
}

func (t *writeTx) Put(ctx context.Context, key hkv.Key, val hkv.Value) error {
	if len(key) != 2 {
		return fmt.Errorf("put %q: %w", key, errKeyDepth)
	}
	if id, ok := cayleyLogKey(key); ok {
		e, err := t.logBlock(logBase(id), true)
		if err != nil {
			return err
		}
		return e.set(byte(id-logBase(id)), val, false)
	}
	if cayleyOPSKey(key) {
		b, err := t.bucket(bOPS, true)
		if err != nil {
			return err
		}
		if val == nil {
			val = []byte{}
		}
		return opsSet(b, key[1], val)
	}
	for _, m := range []struct{ cayley, lore []byte }{{bOldCayleyLog, bCayleyLog}, {cayleyOPS, bOPS}} {
		if bytes.Equal(key[0], m.cayley) {
			if len(key[1]) != 0 || len(val) != 0 {
				return fmt.Errorf("cayley key %x in bucket %q: Lore's adapter cannot store it", key[1], m.cayley)
			}
			_, err := t.bucket(m.lore, true) // creating the bucket was the point
			return err
		}
	}
	key, part, err := physical(key)
	if err != nil {
		return err
	}
	b, err := t.bucket(key[0], true)
	if err != nil {
		return err
	}
	if len(key[1]) == 0 && len(val) == 0 {
		return nil // creating the bucket was the point
	}
	if part != 0 {
		return t.putValuePart(b, key[1], part, val)
	}
	if val == nil {
		val = []byte{}
	}
	return b.Put(key[1], val)
}

// putValuePart sets part part of the value record at hash in b to val, or
// drops it if val is nil; a record left empty is deleted.
func (t *writeTx) putValuePart(b *bbolt.Bucket, hash []byte, part byte, val []byte) error {
	if part == 'v' && val != nil {
		if id, n := binary.Uvarint(val); id == 0 || n != len(val) {
			return fmt.Errorf("cayley value ID %x: not a uvarint above 0; Lore's adapter cannot store it", val)
		}
	}
	rec, err := withValuePart(b.Get(hash), part, val)
	if err != nil {
		return err
	}
	if rec == nil {
		return b.Delete(hash)
	}
	return b.Put(hash, rec)
}

func (t *writeTx) Del(ctx context.Context, key hkv.Key) error {
	if len(key) != 2 {
		return fmt.Errorf("delete %q: %w", key, errKeyDepth)
	}
	if id, ok := cayleyLogKey(key); ok {
		e, err := t.logBlock(logBase(id), false)
		if e == nil || err != nil {
			return err
		}
		return e.set(byte(id-logBase(id)), nil, true)
	}
	if cayleyOPSKey(key) {
		b, err := t.bucket(bOPS, false)
		if b == nil || err != nil {
			return err
		}
		return opsSet(b, key[1], nil)
	}
	key, part, err := physical(key)
	if err != nil {
		return err
	}
	b, err := t.bucket(key[0], false)
	if b == nil || err != nil {
		return err
	}
	if part != 0 {
		return t.putValuePart(b, key[1], part, nil)
	}
	return b.Delete(key[1])
}

func (t *writeTx) Scan(ctx context.Context, opts ...hkv.IteratorOption) hkv.Iterator {
	return errIterator{errors.New("scan inside a write transaction is not supported by Lore's KV adapter")}
}

func (t *writeTx) Commit(ctx context.Context) error {
	if err := t.flushLog(); err != nil {
		_ = t.tx.Rollback()
		return err
	}
	if t.hold {
		t.kv.mu.Lock()
		t.kv.held = t.tx
		t.kv.mu.Unlock()
		t.handed = true
		return nil
	}
	var err error
	if f := t.kv.takeHook(); f != nil {
		err = f(t.tx)
	}
	if err != nil {
		_ = t.tx.Rollback()
		return err
	}
	db := t.tx.DB()
	if err := t.tx.Commit(); err != nil {
		return err
	}
	committed(db)
	return nil
}

func (t *writeTx) Close() error {
	if t.handed {
		return nil // the next write transaction has it
	}
	if err := t.tx.Rollback(); err != nil && !errors.Is(err, bolterrors.ErrTxClosed) {
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
