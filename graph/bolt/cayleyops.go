package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	hkv "github.com/hidal-go/hidalgo/kv"
	bbolt "go.etcd.io/bbolt"
)

// Cayley's one quad index, [O,P,S], is kept in blocks (store layout 11).
// Cayley asks for key object, predicate, subject (three IDs of eight
// big-endian bytes) in bucket "ops", whose value lists the IDs of the
// quads with them (uvarints). Lore keeps the entries of one object and
// predicate (a group) in blocks of up to opsBlockKeys entries and about
// opsBlockBytes: a block's bbolt key is its first entry's key, and its
// value that entry's list (its length, a uvarint, and its bytes), then
// each next entry's subject less the one before it, its list's length and
// its list (uvarints, and bytes). The blocks of a group cover its entries
// in order, so the block that holds a key, or would, is the last one of
// its group whose key is at or before it.
//
// One element per entry cost a 16-byte header and a 24-byte key for some
// 3 bytes of list: at 100k nodes of the benchmark graph the index took
// 28.5 MiB (678,241 entries, 112,845 groups); in blocks, 8.1 MiB. Cayley
// reads the index by key (to find the quad it deletes, or one it would
// add twice) and scans it only for its quad iterators, which Lore never
// uses (its traversals read Lore's own indexes); readTx refuses a scan.
const (
	opsKeyLen     = 24
	opsGroupLen   = 16
	opsBlockKeys  = 64
	opsBlockBytes = 512
)

// bOPS holds the index in blocks; bucket "ops" (cayleyOPS) held it an
// entry per key in store layouts 10 and before (see migrateOPS).
var bOPS = []byte("opsb")

// cayleyOPSKey reports whether key is a key of Cayley's [O,P,S] index as
// Cayley names it.
func cayleyOPSKey(key hkv.Key) bool {
	return len(key) == 2 && bytes.Equal(key[0], cayleyOPS) && len(key[1]) == opsKeyLen
}

// An opsEntry is one entry of a block: its subject, and its list.
type opsEntry struct {
	s    uint64
	list []byte
}

var errOPSBlock = errors.New("malformed block of Cayley's quad index")

// decodeOPSBlock returns the entries of the block at first, v, in memory
// of their own.
func decodeOPSBlock(first, v []byte) ([]opsEntry, error) {
	if len(first) != opsKeyLen {
		return nil, errOPSBlock
	}
	v = bytes.Clone(v)
	s := binary.BigEndian.Uint64(first[opsGroupLen:])
	var out []opsEntry
	for i := 0; len(v) > 0 || i == 0; i++ {
		if i > 0 {
			d, w := binary.Uvarint(v)
			if w <= 0 || d == 0 || s+d < s {
				return nil, errOPSBlock
			}
			s, v = s+d, v[w:]
		}
		n, w := binary.Uvarint(v)
		if w <= 0 || n > uint64(len(v)-w) {
			return nil, errOPSBlock
		}
		out = append(out, opsEntry{s: s, list: v[w : w+int(n) : w+int(n)]})
		v = v[w+int(n):]
	}
	return out, nil
}

// encodeOPSBlocks cuts the entries of group group (sorted by subject, at
// least one) into blocks, and calls put with each block's key and value,
// in order, in memory of their own.
func encodeOPSBlocks(group []byte, es []opsEntry, put func(k, v []byte) error) error {
	for len(es) > 0 {
		key := binary.BigEndian.AppendUint64(append(make([]byte, 0, opsKeyLen), group...), es[0].s)
		v := binary.AppendUvarint(nil, uint64(len(es[0].list)))
		v = append(v, es[0].list...)
		n := 1
		for ; n < len(es) && n < opsBlockKeys; n++ {
			w := binary.AppendUvarint(v, es[n].s-es[n-1].s)
			w = binary.AppendUvarint(w, uint64(len(es[n].list)))
			w = append(w, es[n].list...)
			if len(w) > opsBlockBytes {
				break
			}
			v = w
		}
		if err := put(key, v); err != nil {
			return err
		}
		es = es[n:]
	}
	return nil
}

// opsBlockOf returns the block of b that holds key k, or would: its key
// and entries, or nil if k's group has no block at or before k.
func opsBlockOf(b *bbolt.Bucket, k []byte) ([]byte, []opsEntry, error) {
	c := b.Cursor()
	bk, bv := c.Seek(k)
	if bk == nil || !bytes.Equal(bk, k) {
		if bk == nil {
			bk, bv = c.Last()
		} else {
			bk, bv = c.Prev()
		}
	}
	if bk == nil || len(bk) != opsKeyLen || !bytes.Equal(bk[:opsGroupLen], k[:opsGroupLen]) {
		return nil, nil, nil
	}
	es, err := decodeOPSBlock(bk, bv)
	if err != nil {
		return nil, nil, corrupt(fmt.Sprintf("quad index block %x", bk), err)
	}
	return bytes.Clone(bk), es, nil
}

// opsGet returns the list of key k, or nil.
func opsGet(b *bbolt.Bucket, k []byte) ([]byte, error) {
	_, es, err := opsBlockOf(b, k)
	s := binary.BigEndian.Uint64(k[opsGroupLen:])
	for _, e := range es {
		if e.s == s {
			return e.list, nil
		}
	}
	return nil, err
}

// opsSet sets the list of key k to list, or drops k if list is nil,
// rewriting the block that holds it.
func opsSet(b *bbolt.Bucket, k, list []byte) error {
	bk, es, err := opsBlockOf(b, k)
	if err != nil {
		return err
	}
	s := binary.BigEndian.Uint64(k[opsGroupLen:])
	i := 0
	for i < len(es) && es[i].s < s {
		i++
	}
	switch {
	case i < len(es) && es[i].s == s && list == nil:
		es = append(es[:i], es[i+1:]...)
	case i < len(es) && es[i].s == s:
		es[i].list = bytes.Clone(list)
	case list == nil:
		return nil
	default:
		es = append(es[:i], append([]opsEntry{{s: s, list: bytes.Clone(list)}}, es[i:]...)...)
	}
	if bk != nil {
		if err := b.Delete(bk); err != nil {
			return err
		}
	}
	if len(es) == 0 {
		return nil
	}
	return encodeOPSBlocks(k[:opsGroupLen], es, b.Put)
}

// opsBlocks returns the pairs of src (the index's entries, by key, in
// order, each key opsKeyLen bytes long) as the blocks that hold them, in
// order.
func opsBlocks(src pairSource) pairSource {
	k, v, ok := src.next()
	var pending [][2][]byte // blocks made, not yet returned
	return sourceFunc(func() ([]byte, []byte, bool) {
		for len(pending) == 0 {
			if !ok {
				return nil, nil, false
			}
			group := bytes.Clone(k[:opsGroupLen])
			var es []opsEntry
			for ok && len(k) == opsKeyLen && bytes.Equal(k[:opsGroupLen], group) {
				es = append(es, opsEntry{s: binary.BigEndian.Uint64(k[opsGroupLen:]), list: bytes.Clone(v)})
				k, v, ok = src.next()
			}
			_ = encodeOPSBlocks(group, es, func(k, v []byte) error {
				pending = append(pending, [2][]byte{k, v})
				return nil
			})
		}
		p := pending[0]
		pending = pending[1:]
		return p[0], p[1], true
	})
}

// migrateOPS moves Cayley's [O,P,S] index of store layouts 10 and before
// (an entry per key, in bucket "ops") into blocks, about chunk entries per
// transaction, a group at a time (see moveOut).
func migrateOPS(db *bbolt.DB, chunk int) error {
	return moveOut(db, cayleyOPS, func(tx *bbolt.Tx, c *bbolt.Cursor) ([][]byte, bool, error) {
		blocks, err := tx.CreateBucketIfNotExists(bOPS)
		if err != nil {
			return nil, false, err
		}
		var moved [][]byte
		k, v := c.First()
		for k != nil && len(moved) < chunk {
			if len(k) != opsKeyLen {
				return nil, false, corrupt(fmt.Sprintf("quad index key %x", k), errOPSBlock)
			}
			group := bytes.Clone(k[:opsGroupLen])
			var es []opsEntry
			for ; len(k) == opsKeyLen && bytes.Equal(k[:opsGroupLen], group); k, v = c.Next() {
				es = append(es, opsEntry{s: binary.BigEndian.Uint64(k[opsGroupLen:]), list: bytes.Clone(v)})
				moved = append(moved, bytes.Clone(k))
			}
			if err := encodeOPSBlocks(group, es, blocks.Put); err != nil {
				return nil, false, err
			}
		}
		return moved, k == nil, nil
	})
}

// eachOPSEntry calls f with each entry of the index in b, in key order.
func eachOPSEntry(b *bbolt.Bucket, f func(key, list []byte) error) error {
	return b.ForEach(func(bk, bv []byte) error {
		es, err := decodeOPSBlock(bk, bv)
		if err != nil {
			return corrupt(fmt.Sprintf("quad index block %x", bk), err)
		}
		for _, e := range es {
			if err := f(binary.BigEndian.AppendUint64(bytes.Clone(bk[:opsGroupLen]), e.s), e.list); err != nil {
				return err
			}
		}
		return nil
	})
}
