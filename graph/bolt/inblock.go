package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"
)

// The in-edge index (bIn) holds one logical key per edge, inKey: to NUL
// label NUL from NUL key. Since store layout 9 it holds them in blocks: a
// bbolt key is the first logical key of its block, and its value encodes
// the block's other keys, in order, each after the one before it as the
// length of the prefix they share (a uvarint), the length of the rest (a
// uvarint) and the rest. A block never holds keys of two groups (a group
// is the keys of one node and label: to NUL label NUL), holds at most
// inBlockKeys keys, and its value is at most inBlockBytes long (a key
// longer than that is a block of its own, with an empty value).
//
// One key per bbolt element cost a 16-byte element header and the whole
// key, to and label included, for every edge: at 100k nodes of the
// benchmark graph (578,241 edges), the index took 31.3 MiB, a fifth of the
// store; packed, 9.0 MiB (119,250 blocks). A layout-8 index (every block of one key,
// with an empty value) is a layout-9 index too.
//
// The blocks of a group cover its keys in order, and the blocks of the
// bucket cover the whole index in order, so a reader seeking a group's
// first key lands on its first block: a scan of a node's in-edges of one
// label is one seek, as before, then a decoding of each block in turn
// (inCursor). A write reads and rewrites the one block its key belongs in
// (inInsert, inDelete); the rewrite that ends a load packs the whole
// index anew (inPacker), and the flush of a load's waiting keys and a
// rebuild write a group's keys at once (inMerge), in full blocks.
const (
	inBlockKeys  = 64
	inBlockBytes = 512
)

// inGroupLen returns the length of k's group prefix, to NUL label NUL, or
// 0 if k has fewer than two NULs.
func inGroupLen(k []byte) int {
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return 0
	}
	j := bytes.IndexByte(k[i+1:], 0)
	if j < 0 {
		return 0
	}
	return i + j + 2
}

// sameInGroup reports whether a key that starts with first's group prefix
// could be at or after target: whether target starts with that prefix.
func sameInGroup(first, target []byte) bool {
	g := inGroupLen(first)
	return g > 0 && bytes.HasPrefix(target, first[:g])
}

// appendInKey appends key, which follows prev, to a block's value.
func appendInKey(v, prev, key []byte) []byte {
	s := 0
	for s < len(prev) && s < len(key) && prev[s] == key[s] {
		s++
	}
	v = binary.AppendUvarint(v, uint64(s))
	v = binary.AppendUvarint(v, uint64(len(key)-s))
	return append(v, key[s:]...)
}

// errInBlock is the error a malformed block decodes to.
var errInBlock = errors.New("malformed block of the in-edge index")

// decodeInBlock returns the keys of the block whose first key is first
// and whose value is v, appended to dst, in memory of their own (not
// first's, nor v's). It checks that the keys increase and stay in first's
// group, and that each shares with the key before it all the prefix they
// share (as appendInKey writes them).
func decodeInBlock(dst [][]byte, first, v []byte) ([][]byte, error) {
	return decodeInBlockIn(dst, first, v, nil)
}

// decodeInBlockIn is decodeInBlock with the keys' memory from mem, if
// not nil.
func decodeInBlockIn(dst [][]byte, first, v []byte, from *slab) ([][]byte, error) {
	g := inGroupLen(first)
	if g == 0 || len(v) > inBlockBytes {
		return dst, errInBlock
	}
	// One pass to size the keys' memory, and check the lengths. The
	// limits bound the memory a damaged block can ask for.
	size, n := len(first), 1
	prev := len(first)
	for rest := v; len(rest) > 0; n++ {
		if n == inBlockKeys {
			return dst, errInBlock
		}
		s, w1 := binary.Uvarint(rest)
		if w1 <= 0 {
			return dst, errInBlock
		}
		l, w2 := binary.Uvarint(rest[w1:])
		if w2 <= 0 || s > uint64(prev) || s < uint64(g) || l == 0 || l > uint64(len(rest)-w1-w2) {
			return dst, errInBlock
		}
		prev = int(s + l)
		size += prev
		rest = rest[w1+w2+int(l):]
	}
	var buf []byte
	if from != nil {
		buf = from.take(size)[:0]
	} else {
		buf = make([]byte, 0, size)
	}
	mem := append(buf, first...)
	dst = slices.Grow(dst, n)
	dst = append(dst, mem[:len(first):len(first)])
	last := dst[len(dst)-1]
	for rest := v; len(rest) > 0; {
		s, w1 := binary.Uvarint(rest)
		l, w2 := binary.Uvarint(rest[w1:])
		suffix := rest[w1+w2 : w1+w2+int(l)]
		if int(s) < len(last) && suffix[0] <= last[s] {
			return dst, errInBlock // not after last, or not the prefix they share
		}
		start := len(mem)
		mem = append(mem, last[:s]...)
		mem = append(mem, suffix...)
		key := mem[start:len(mem):len(mem)]
		dst = append(dst, key)
		last = key
		rest = rest[w1+w2+int(l):]
	}
	return dst, nil
}

// encodeInBlocks cuts keys (sorted, distinct, of one group) into blocks,
// and calls put with each block's first key and value, in order. The
// values are in memory of their own.
func encodeInBlocks(keys [][]byte, put func(k, v []byte) error) error {
	for len(keys) > 0 {
		var v []byte
		n := 1
		for ; n < len(keys) && n < inBlockKeys; n++ {
			w := appendInKey(v, keys[n-1], keys[n])
			if len(w) > inBlockBytes {
				break
			}
			v = w
		}
		if err := put(keys[0], v); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// inCursor reads the in-edge index in key order, a logical key at a
// time, decoding each block's keys as it reaches them into one buffer: a
// key it returns is valid until the next call, and a caller that keeps
// one copies it. A block that does not decode ends the scan, and err says
// so.
type inCursor struct {
	c    *bbolt.Cursor
	key  []byte // the current key
	rest []byte // the current block's keys after it, encoded
	g    int    // the length of the current block's group prefix
	err  error
}

func newInCursor(b *bbolt.Bucket) *inCursor { return &inCursor{c: b.Cursor()} }

// load starts at the block at k, v, and returns its first key (nil at the
// end of the bucket, or if the block is malformed).
func (ic *inCursor) load(k, v []byte) []byte {
	if k == nil {
		ic.key, ic.rest = nil, nil
		return nil
	}
	if ic.g = inGroupLen(k); ic.g == 0 || len(v) > inBlockBytes {
		return ic.fail(k)
	}
	ic.key, ic.rest = append(ic.key[:0], k...), v
	return ic.key
}

func (ic *inCursor) fail(k []byte) []byte {
	ic.err = corrupt(fmt.Sprintf("in-edge index block %q", k), errInBlock)
	ic.key, ic.rest = nil, nil
	return nil
}

// step decodes the current block's next key into ic.key; it returns
// false, with ic.err set, if the block is malformed.
func (ic *inCursor) step() bool {
	s, w1 := binary.Uvarint(ic.rest)
	if w1 <= 0 {
		return false
	}
	l, w2 := binary.Uvarint(ic.rest[w1:])
	if w2 <= 0 || s > uint64(len(ic.key)) || s < uint64(ic.g) || l == 0 || l > uint64(len(ic.rest)-w1-w2) {
		return false
	}
	suffix := ic.rest[w1+w2 : w1+w2+int(l)]
	// The key must follow the one before: it extends it, or it has a
	// greater byte where they part (and s is all they share).
	if int(s) < len(ic.key) && suffix[0] <= ic.key[s] {
		return false
	}
	ic.key = append(ic.key[:s], suffix...)
	ic.rest = ic.rest[w1+w2+int(l):]
	return true
}

// First returns the index's first key, or nil if it is empty.
func (ic *inCursor) First() []byte { return ic.load(ic.c.First()) }

// Seek returns the first key at or after target, or nil.
func (ic *inCursor) Seek(target []byte) []byte {
	k, v := ic.c.Seek(target)
	if k != nil && bytes.Equal(k, target) || len(target) == inGroupLen(target) {
		// A block starts at target; or target is a group's prefix, so the
		// block at or after it starts the group, and the one before it
		// holds another group's keys, which are all before target.
		return ic.load(k, v)
	}
	// The block before may hold target's place, if it is of target's group.
	var pk, pv []byte
	if k == nil {
		pk, pv = ic.c.Last()
	} else {
		pk, pv = ic.c.Prev()
	}
	if pk == nil {
		return ic.load(ic.c.Seek(target)) // k starts the bucket
	}
	if sameInGroup(pk, target) {
		for key := ic.load(pk, pv); key != nil; {
			if bytes.Compare(key, target) >= 0 {
				return key
			}
			if len(ic.rest) == 0 {
				break
			}
			if !ic.step() {
				return ic.fail(pk)
			}
			key = ic.key
		}
		if ic.err != nil {
			return nil
		}
	}
	// The cursor is at the block before k: Next goes back to it.
	return ic.load(ic.c.Next())
}

// Next returns the key after the current one, or nil.
func (ic *inCursor) Next() []byte {
	if ic.key == nil {
		return nil
	}
	if len(ic.rest) > 0 {
		if !ic.step() {
			return ic.fail(ic.key)
		}
		return ic.key
	}
	return ic.load(ic.c.Next())
}

// inBlockOf finds the block of b that holds, or would hold, key x: its
// first key and its keys (nil if x's group has no block at or before x),
// and the first key of the block after it, if that one is of x's group.
func inBlockOf(b *bbolt.Bucket, x []byte) (first []byte, keys [][]byte, next []byte, nextKeys [][]byte, err error) {
	c := b.Cursor()
	k, v := c.Seek(x)
	decode := func(k, v []byte) ([]byte, [][]byte, error) {
		ks, err := decodeInBlock(nil, k, v)
		if err != nil {
			return nil, nil, corrupt(fmt.Sprintf("in-edge index block %q", k), err)
		}
		return ks[0], ks, nil
	}
	if k != nil && bytes.Equal(k, x) {
		first, keys, err = decode(k, v)
		return first, keys, nil, nil, err
	}
	if k != nil && sameInGroup(k, x) {
		if next, nextKeys, err = decode(k, v); err != nil {
			return nil, nil, nil, nil, err
		}
	}
	var pk, pv []byte
	if k == nil {
		pk, pv = c.Last()
	} else {
		pk, pv = c.Prev()
	}
	if pk != nil && sameInGroup(pk, x) {
		first, keys, err = decode(pk, pv)
	}
	return first, keys, next, nextKeys, err
}

// putInBlocks replaces the blocks of b under the keys of old (first keys)
// with keys (sorted, of one group), cut into blocks.
func putInBlocks(b *bbolt.Bucket, old [][]byte, keys [][]byte) error {
	for _, k := range old {
		if k != nil {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	// bbolt keeps the slices it is given until the commit: the keys are
	// the blocks' own memory, and encodeInBlocks makes each value anew.
	return encodeInBlocks(keys, b.Put)
}

// inInsert adds key x (a valid in-edge index key) to the index in b.
func inInsert(b *bbolt.Bucket, x []byte) error {
	if inGroupLen(x) == 0 {
		return fmt.Errorf("in-edge index key %q has no group", x)
	}
	_, keys, next, nextKeys, err := inBlockOf(b, x)
	if err != nil {
		return err
	}
	x = bytes.Clone(x)
	switch {
	case keys != nil:
		i, found := slices.BinarySearchFunc(keys, x, bytes.Compare)
		if found {
			return nil
		}
		// Into the block that holds x's place: the first key stays.
		return putInBlocks(b, nil, slices.Insert(keys, i, x))
	case next != nil && len(nextKeys) < inBlockKeys:
		// Before the group's first block: x becomes its first key.
		return putInBlocks(b, [][]byte{next}, append([][]byte{x}, nextKeys...))
	default:
		return b.Put(x, nil)
	}
}

// inDelete removes key x from the index in b, if it holds it.
func inDelete(b *bbolt.Bucket, x []byte) error {
	first, keys, _, _, err := inBlockOf(b, x)
	if err != nil || keys == nil {
		return err
	}
	i, found := slices.BinarySearchFunc(keys, x, bytes.Compare)
	if !found {
		return nil
	}
	if i == 0 {
		// The block goes under its second key, if it has one.
		return putInBlocks(b, [][]byte{first}, keys[1:])
	}
	return putInBlocks(b, nil, slices.Delete(keys, i, i+1))
}

// inPacker is a pairSource of blocks: it packs the keys of src (sorted,
// each once; values ignored) into full blocks.
type inPacker struct {
	src  pairSource
	k    []byte // the key src gave last, not yet packed
	done bool
	mem  slab
}

func packIn(src pairSource) *inPacker { return &inPacker{src: src} }

func (p *inPacker) next() (k, v []byte, ok bool) {
	if p.k == nil && !p.done {
		if p.k, _, ok = p.src.next(); !ok {
			p.k, p.done = nil, true
		}
	}
	if p.k == nil {
		return nil, nil, false
	}
	first := p.k
	g := inGroupLen(first)
	prev := first
	var buf []byte
	n := 1
	for {
		key, _, ok := p.src.next()
		if !ok {
			p.k, p.done = nil, true
			break
		}
		if n >= inBlockKeys || g == 0 || !bytes.HasPrefix(key, first[:g]) {
			p.k = key
			break
		}
		w := appendInKey(buf, prev, key)
		if len(w) > inBlockBytes {
			p.k = key
			break
		}
		buf, prev = w, key
		n++
	}
	if len(buf) == 0 {
		return first, nil, true
	}
	// The value's memory must stay until the file is written.
	return first, append(p.mem.take(len(buf))[:0], buf...), true
}

// inKeys is a pairSource of the keys of the in-edge index in b, one at a
// time (values empty), each in memory that stays as it is (see
// pairSource). A block that does not decode ends it, and err says so.
type inKeys struct {
	c       *bbolt.Cursor
	keys    [][]byte // the current block's keys not given yet
	mem     slab
	started bool
	err     error
}

func newInKeys(b *bbolt.Bucket) *inKeys { return &inKeys{c: b.Cursor()} }

func (s *inKeys) next() (k, v []byte, ok bool) {
	for len(s.keys) == 0 {
		var bk, bv []byte
		if !s.started {
			s.started = true
			bk, bv = s.c.First()
		} else {
			bk, bv = s.c.Next()
		}
		if bk == nil || s.err != nil {
			return nil, nil, false
		}
		var err error
		if s.keys, err = decodeInBlockIn(s.keys[:0], bk, bv, &s.mem); err != nil {
			s.err = corrupt(fmt.Sprintf("in-edge index block %q", bk), err)
			s.keys = nil
			return nil, nil, false
		}
	}
	k, s.keys = s.keys[0], s.keys[1:]
	return k, nil, true
}

// unionKeys is a pairSource of the keys of a and b (each sorted, each key
// once), in order, each once; values are dropped.
type unionKeys struct {
	a, b     pairSource
	ak, bk   []byte
	aok, bok bool
	primed   bool
}

func (u *unionKeys) next() (k, v []byte, ok bool) {
	if !u.primed {
		u.primed = true
		if u.a != nil {
			u.ak, _, u.aok = u.a.next()
		}
		if u.b != nil {
			u.bk, _, u.bok = u.b.next()
		}
	}
	switch {
	case !u.aok && !u.bok:
		return nil, nil, false
	case !u.bok || u.aok && bytes.Compare(u.ak, u.bk) < 0:
		k = u.ak
		u.ak, _, u.aok = u.a.next()
	case !u.aok || bytes.Compare(u.bk, u.ak) < 0:
		k = u.bk
		u.bk, _, u.bok = u.b.next()
	default: // the same key in both
		k = u.ak
		u.ak, _, u.aok = u.a.next()
		u.bk, _, u.bok = u.b.next()
	}
	return k, nil, true
}

// A keyCursor reads keys in order: a bucket's (boltKeys) or the in-edge
// index's logical keys (inCursor).
type keyCursor interface {
	Seek(target []byte) []byte
	Next() []byte
}

// boltKeys is a keyCursor over a bbolt cursor's keys.
type boltKeys struct{ c *bbolt.Cursor }

func (b boltKeys) Seek(target []byte) []byte {
	k, _ := b.c.Seek(target)
	return k
}

func (b boltKeys) Next() []byte {
	k, _ := b.c.Next()
	return k
}

// cursorErr returns the error that ended c's scan, if c is an inCursor.
func cursorErr(c keyCursor) error {
	if ic, ok := c.(*inCursor); ok && ic != nil {
		return ic.err
	}
	return nil
}

// inMerge adds keys (sorted, distinct, all of one group) to the index in
// b: the group's blocks are read, and written anew with them, in full
// blocks. A sorted stream of keys is added a group at a time this way,
// rather than a key at a time (inInsert), which decodes and writes a
// block for each.
func inMerge(b *bbolt.Bucket, keys [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	g := inGroupLen(keys[0])
	if g == 0 {
		return fmt.Errorf("in-edge index key %q has no group", keys[0])
	}
	prefix := keys[0][:g]
	var old, held [][]byte // the group's blocks, by first key; its keys
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var err error
		n := len(held)
		if held, err = decodeInBlock(held, k, v); err != nil {
			return corrupt(fmt.Sprintf("in-edge index block %q", k), err)
		}
		old = append(old, held[n])
	}
	all := make([][]byte, 0, len(held)+len(keys))
	for i, j := 0, 0; i < len(held) || j < len(keys); {
		switch {
		case j == len(keys) || i < len(held) && bytes.Compare(held[i], keys[j]) < 0:
			all = append(all, held[i])
			i++
		case i == len(held) || bytes.Compare(keys[j], held[i]) < 0:
			all = append(all, bytes.Clone(keys[j]))
			j++
		default:
			all = append(all, held[i])
			i, j = i+1, j+1
		}
	}
	return putInBlocks(b, old, all)
}
