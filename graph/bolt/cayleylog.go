package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	hkv "github.com/hidal-go/hidalgo/kv"
	bbolt "go.etcd.io/bbolt"
)

// Cayley's primitive log (its values and quads, by ID) is kept in blocks
// (store layout 11): Cayley asks for key ID (eight bytes, big-endian) in
// bucket "log"; Lore keeps the primitives of logSpan consecutive IDs in one
// bbolt element of bucket bCayleyLog, under the first of those IDs (the
// block's base, as eight big-endian bytes), each as its offset from the
// base (a byte), its length (a uvarint) and its bytes, in order of ID.
//
// One element per primitive cost a 16-byte element header and an 8-byte
// key for some 16 bytes of primitive: at 100k nodes of the benchmark graph
// the log took 29.8 MiB (778,249 primitives); in blocks of 32, 14.3 MiB
// (in blocks of 64, 15.9: a 4 KiB page then holds three blocks and a gap;
// of 128, 23.7). A primitive is read with its block (Cayley reads one by
// ID when it resolves a value or checks a quad it writes; Lore's reads
// never do), and a write transaction edits a block in memory and writes it
// once, at its commit (see writeTx.logBlock). Nothing scans the log: Lore
// opens Cayley without its bloom filter, whose building was the one scan.
const logSpan = 32

// bCayleyLog holds Cayley's log in blocks; bucket "log" held it one
// primitive per key in store layouts 10 and before (see migrateLog).
var (
	bCayleyLog    = []byte("clog")
	bOldCayleyLog = []byte("log")
)

// logBase returns the base of the block that holds ID id.
func logBase(id uint64) uint64 { return id &^ (logSpan - 1) }

// logKey returns the bbolt key of the block of base base.
func logKey(base uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), base) }

// cayleyLogKey reports whether key is a key of Cayley's log as Cayley
// names it, and returns its ID.
func cayleyLogKey(key hkv.Key) (uint64, bool) {
	if len(key) != 2 || !bytes.Equal(key[0], bOldCayleyLog) || len(key[1]) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[1]), true
}

var errLogBlock = errors.New("malformed block of Cayley's log")

// eachLogEntry calls f with the offset and bytes of each entry of block,
// in order, until f returns false; it fails on a malformed block.
func eachLogEntry(block []byte, f func(off byte, val []byte) bool) error {
	last := -1
	for len(block) > 0 {
		off := block[0]
		n, w := binary.Uvarint(block[1:])
		if int(off) <= last || off >= logSpan || w <= 0 || n > uint64(len(block)-1-w) {
			return errLogBlock
		}
		last = int(off)
		val := block[1+w : 1+w+int(n)]
		block = block[1+w+int(n):]
		if !f(off, val) {
			return nil
		}
	}
	return nil
}

// logBlockGet returns the bytes of the entry at offset off of block, nil
// if it has none.
func logBlockGet(block []byte, off byte) ([]byte, error) {
	var out []byte
	err := eachLogEntry(block, func(o byte, val []byte) bool {
		if o >= off {
			if o == off {
				out = val
			}
			return false
		}
		return true
	})
	return out, err
}

// appendLogEntry appends an entry to a block.
func appendLogEntry(block []byte, off byte, val []byte) []byte {
	block = append(block, off)
	block = binary.AppendUvarint(block, uint64(len(val)))
	return append(block, val...)
}

// logBlockSet returns block with its entry at offset off set to val, or
// dropped if del, in memory of its own.
func logBlockSet(block []byte, off byte, val []byte, del bool) ([]byte, error) {
	out := make([]byte, 0, len(block)+len(val)+binary.MaxVarintLen64+1)
	done := del
	err := eachLogEntry(block, func(o byte, v []byte) bool {
		if !done && o >= off {
			out = appendLogEntry(out, off, val)
			done = true
		}
		if o != off {
			out = appendLogEntry(out, o, v)
		}
		return true
	})
	if !done {
		out = appendLogEntry(out, off, val)
	}
	return out, err
}

// A logEdit is a block of the log a write transaction changes: its bytes,
// in memory of its own, and the offset of its last entry (-1 if none), so
// that an append, the usual write, needs no decoding.
type logEdit struct {
	block []byte
	last  int
}

func newLogEdit(stored []byte) (*logEdit, error) {
	e := &logEdit{block: bytes.Clone(stored), last: -1}
	err := eachLogEntry(e.block, func(off byte, _ []byte) bool { e.last = int(off); return true })
	return e, err
}

// set sets or drops the entry at offset off.
func (e *logEdit) set(off byte, val []byte, del bool) error {
	if !del && int(off) > e.last {
		e.block, e.last = appendLogEntry(e.block, off, val), int(off)
		return nil
	}
	block, err := logBlockSet(e.block, off, val, del)
	if err != nil {
		return err
	}
	e.block, e.last = block, -1
	return eachLogEntry(e.block, func(o byte, _ []byte) bool { e.last = int(o); return true })
}

// flushLogEdits writes the blocks edited into b, in key order: a block
// left empty is deleted.
func flushLogEdits(b *bbolt.Bucket, edits map[uint64]*logEdit) error {
	bases := make([]uint64, 0, len(edits))
	for base := range edits {
		bases = append(bases, base)
	}
	slices.Sort(bases)
	for _, base := range bases {
		var err error
		if e := edits[base]; len(e.block) == 0 {
			err = b.Delete(logKey(base))
		} else {
			err = b.Put(logKey(base), e.block)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// A logAppender writes primitives of increasing IDs into the log's blocks
// in b, a block at a time (a bulk load's, see quadLoad): the first block
// it touches may hold entries already.
type logAppender struct {
	b    *bbolt.Bucket
	base uint64
	edit *logEdit
}

func (a *logAppender) add(id uint64, prim []byte) error {
	base := logBase(id)
	if a.edit == nil || base != a.base {
		if err := a.flush(); err != nil {
			return err
		}
		e, err := newLogEdit(a.b.Get(logKey(base)))
		if err != nil {
			return corrupt(fmt.Sprintf("log block %d", base), err)
		}
		a.base, a.edit = base, e
	}
	return a.edit.set(byte(id-base), prim, false)
}

// flush writes the block under way.
func (a *logAppender) flush() error {
	if a.edit == nil {
		return nil
	}
	err := a.b.Put(logKey(a.base), a.edit.block)
	a.edit = nil
	return err
}

// logBlocks returns the pairs of src (a log's entries by ID, as eight
// big-endian bytes, in order) as the blocks that hold them, in order.
func logBlocks(src pairSource) pairSource {
	var mem slab
	k, v, ok := src.next()
	return sourceFunc(func() ([]byte, []byte, bool) {
		if !ok {
			return nil, nil, false
		}
		base := logBase(binary.BigEndian.Uint64(k))
		var block []byte
		for ok && len(k) == 8 && logBase(binary.BigEndian.Uint64(k)) == base {
			block = appendLogEntry(block, byte(binary.BigEndian.Uint64(k)-base), v)
			k, v, ok = src.next()
		}
		out := mem.take(len(block))
		copy(out, block)
		return logKey(base), out, true
	})
}

// eachLogPrimitive calls f with the ID and bytes of each primitive of the
// log in b, in order of ID.
func eachLogPrimitive(b *bbolt.Bucket, f func(id uint64, prim []byte) error) error {
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return corrupt(fmt.Sprintf("log block %x", k), errLogBlock)
		}
		base := binary.BigEndian.Uint64(k)
		var ferr error
		err := eachLogEntry(v, func(off byte, prim []byte) bool {
			ferr = f(base+uint64(off), prim)
			return ferr == nil
		})
		if err != nil {
			return corrupt(fmt.Sprintf("log block %d", base), err)
		}
		return ferr
	})
}

// migrateLog moves Cayley's log of store layouts 10 and before (one key
// per primitive, in bucket "log") into blocks, chunk primitives per
// transaction (see moveOut).
func migrateLog(db *bbolt.DB, chunk int) error {
	return moveOut(db, bOldCayleyLog, func(tx *bbolt.Tx, c *bbolt.Cursor) ([][]byte, bool, error) {
		blocks, err := tx.CreateBucketIfNotExists(bCayleyLog)
		if err != nil {
			return nil, false, err
		}
		blocks.FillPercent = appendFill
		a := &logAppender{b: blocks}
		var moved [][]byte
		k, v := c.First()
		for ; k != nil && len(moved) < chunk; k, v = c.Next() {
			if len(k) != 8 {
				return nil, false, corrupt(fmt.Sprintf("Cayley's log key %x", k), errLogBlock)
			}
			if err := a.add(binary.BigEndian.Uint64(k), v); err != nil {
				return nil, false, err
			}
			moved = append(moved, bytes.Clone(k))
		}
		return moved, k == nil, a.flush()
	})
}

// moveOut moves the keys of bucket old, where an older store layout kept
// them, from the front, a transaction at a time: move moves keys from the
// cursor's first one on (about a chunk of them) into their new place, and
// returns them and whether it reached the end; what it moved is deleted
// from old, or old is dropped at the end. A crash between transactions
// leaves the rest in old, where the next Open finds and moves it: the
// store's version changes only once old is gone.
func moveOut(db *bbolt.DB, old []byte, move func(tx *bbolt.Tx, c *bbolt.Cursor) (moved [][]byte, end bool, err error)) error {
	for {
		left := false
		err := updateDB(db, func(tx *bbolt.Tx) error {
			b := tx.Bucket(old)
			if b == nil {
				return nil
			}
			moved, end, err := move(tx, b.Cursor())
			if err != nil {
				return err
			}
			if end {
				return tx.DeleteBucket(old)
			}
			left = true
			for _, k := range moved {
				if err := b.Delete(k); err != nil {
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
