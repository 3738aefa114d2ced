package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"
)

// Five of Lore's indexes hold their keys packed in blocks: the in-edge
// index (bIn: to NUL label NUL from NUL key, see inKey), the degree index
// (bDegIdx: type NUL label NUL dir count ID, see degIdxKey) and the
// property index (bProp: type NUL property NUL value ID, see propKeys)
// since store layout 9, the type index (bType: type NUL ID) since 10, and
// the search index (bTok: see tokenKey) since 11.
// A bbolt key is the first logical key of its block, and its value
// encodes the block's other keys, in order, each after the one before it
// as the length of the prefix they share (a uvarint), the length of the
// rest (a uvarint) and the rest. A block never holds keys of two groups (a
// group is the keys that share the prefix up to their second NUL: a node's
// in-edges of one label; a type's nodes by their count of one label, by
// one property, or all of them; the postings of the tokens that start
// with the same two bytes, in one of two orders), holds at most packKeys keys, and its value is at most packBytes long (a
// key longer than that is a block of its own, with an empty value).
//
// One key per bbolt element cost a 16-byte element header and the whole
// key, its group's prefix included, for every entry: at 100k nodes of the
// benchmark graph, the in-edge index took 31.3 MiB (578,241 keys), a fifth
// of the store, the degree index 17.9 MiB (320,799) and the property index
// 9.9 MiB (191,900); packed, 9.0 MiB (119,250 blocks), 1.4 MiB (5,023) and
// 2.3 MiB (4,653). An index of layout 8 (every block of one key, with an
// empty value) is one of layout 9 too.
//
// The blocks of a group cover its keys in order, and the blocks of the
// bucket cover the whole index in order, so a reader seeking a group's
// first key lands on its first block: a scan of a node's in-edges of one
// label is one seek, as before, then a decoding of each block in turn
// (packedCursor). A write reads and rewrites the one block its key belongs
// in (packedInsert, packedDelete); the rewrite that ends a load packs the
// whole index anew (packer), and the flush of a load's waiting keys and a
// rebuild write a group's keys at once (packedMerge), in full blocks.
const (
	packKeys  = 64
	packBytes = 512
)

// packGroupLen returns the length of k's group prefix: up to its second
// NUL, or to its first if it has only one, or 0 if it has none. Each
// packed index's keys have one shape: two NULs or more (the in-edge,
// degree and property indexes), or one (the type index: type NUL ID).
func packGroupLen(k []byte) int {
	i := bytes.IndexByte(k, 0)
	if i < 0 {
		return 0
	}
	j := bytes.IndexByte(k[i+1:], 0)
	if j < 0 {
		return i + 1
	}
	return i + j + 2
}

// samePackGroup reports whether a key that starts with first's group prefix
// could be at or after target: whether target starts with that prefix.
func samePackGroup(first, target []byte) bool {
	g := packGroupLen(first)
	return g > 0 && bytes.HasPrefix(target, first[:g])
}

// appendPackedKey appends key, which follows prev, to a block's value.
func appendPackedKey(v, prev, key []byte) []byte {
	s := 0
	for s < len(prev) && s < len(key) && prev[s] == key[s] {
		s++
	}
	v = binary.AppendUvarint(v, uint64(s))
	v = binary.AppendUvarint(v, uint64(len(key)-s))
	return append(v, key[s:]...)
}

// errPackedBlock is the error a malformed block decodes to.
var errPackedBlock = errors.New("malformed block of a packed index")

// decodePacked returns the keys of the block whose first key is first
// and whose value is v, appended to dst, in memory of their own (not
// first's, nor v's). It checks that the keys increase and stay in first's
// group, and that each shares with the key before it all the prefix they
// share (as appendPackedKey writes them).
func decodePacked(dst [][]byte, first, v []byte) ([][]byte, error) {
	return decodePackedIn(dst, first, v, nil)
}

// decodePackedIn is decodePacked with the keys' memory from mem, if
// not nil.
func decodePackedIn(dst [][]byte, first, v []byte, from *slab) ([][]byte, error) {
	g := packGroupLen(first)
	if g == 0 || len(v) > packBytes {
		return dst, errPackedBlock
	}
	// One pass to size the keys' memory, and check the lengths. The
	// limits bound the memory a damaged block can ask for.
	size, n := len(first), 1
	prev := len(first)
	for rest := v; len(rest) > 0; n++ {
		if n == packKeys {
			return dst, errPackedBlock
		}
		s, w1 := binary.Uvarint(rest)
		if w1 <= 0 {
			return dst, errPackedBlock
		}
		l, w2 := binary.Uvarint(rest[w1:])
		if w2 <= 0 || s > uint64(prev) || s < uint64(g) || l == 0 || l > uint64(len(rest)-w1-w2) {
			return dst, errPackedBlock
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
			return dst, errPackedBlock // not after last, or not the prefix they share
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

// encodePacked cuts keys (sorted, distinct, of one group) into blocks,
// and calls put with each block's first key and value, in order. The
// values are in memory of their own.
func encodePacked(keys [][]byte, put func(k, v []byte) error) error {
	for len(keys) > 0 {
		var v []byte
		n := 1
		for ; n < len(keys) && n < packKeys; n++ {
			w := appendPackedKey(v, keys[n-1], keys[n])
			if len(w) > packBytes {
				break
			}
			v = w
		}
		if v == nil {
			v = []byte{} // as writeOp writes an empty value: not nil
		}
		if err := put(keys[0], v); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// packedCursor reads a packed index in key order, a logical key at a
// time, decoding each block's keys as it reaches them into one buffer: a
// key it returns is valid until the next call, and a caller that keeps
// one copies it. A block that does not decode ends the scan, and err says
// so.
type packedCursor struct {
	c      *bbolt.Cursor
	key    []byte // the current key
	rest   []byte // the current block's keys after it, encoded
	g      int    // the length of the current block's group prefix
	bk, bv []byte // the current block, as bbolt holds it
	i      int    // the current key's place in it
	err    error
}

func newPackedCursor(b *bbolt.Bucket) *packedCursor { return &packedCursor{c: b.Cursor()} }

// load starts at the block at k, v, and returns its first key (nil at the
// end of the bucket, or if the block is malformed).
func (ic *packedCursor) load(k, v []byte) []byte {
	if k == nil {
		ic.key, ic.rest = nil, nil
		return nil
	}
	if ic.g = packGroupLen(k); ic.g == 0 || len(v) > packBytes {
		return ic.fail(k)
	}
	ic.key, ic.rest = append(ic.key[:0], k...), v
	ic.bk, ic.bv, ic.i = k, v, 0
	return ic.key
}

func (ic *packedCursor) fail(k []byte) []byte {
	ic.err = corrupt(fmt.Sprintf("index block %q", k), errPackedBlock)
	ic.key, ic.rest = nil, nil
	return nil
}

// step decodes the current block's next key into ic.key; it returns
// false, with ic.err set, if the block is malformed.
func (ic *packedCursor) step() bool {
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
	ic.i++
	return true
}

// at starts at the block at k, v, and steps to its key i, or to its last
// if i is negative.
func (ic *packedCursor) at(k, v []byte, i int) []byte {
	if ic.load(k, v) == nil {
		return nil
	}
	for (i < 0 || ic.i < i) && len(ic.rest) > 0 {
		if !ic.step() {
			return ic.fail(k)
		}
	}
	return ic.key
}

// Last returns the index's last key, or nil if it is empty.
func (ic *packedCursor) Last() []byte {
	k, v := ic.c.Last()
	return ic.at(k, v, -1)
}

// Prev returns the key before the current one, or nil.
func (ic *packedCursor) Prev() []byte {
	if ic.key == nil {
		return nil
	}
	if ic.i > 0 {
		return ic.at(ic.bk, ic.bv, ic.i-1)
	}
	k, v := ic.c.Prev()
	return ic.at(k, v, -1)
}

// First returns the index's first key, or nil if it is empty.
func (ic *packedCursor) First() []byte { return ic.load(ic.c.First()) }

// Seek returns the first key at or after target, or nil.
func (ic *packedCursor) Seek(target []byte) []byte {
	k, v := ic.c.Seek(target)
	if k != nil && bytes.Equal(k, target) || len(target) == packGroupLen(target) {
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
	if samePackGroup(pk, target) {
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
func (ic *packedCursor) Next() []byte {
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

// packedBlockOf finds the block of b that holds, or would hold, key x: its
// first key and its keys (nil if x's group has no block at or before x),
// and the first key of the block after it, if that one is of x's group.
func packedBlockOf(b *bbolt.Bucket, x []byte) (first []byte, keys [][]byte, next []byte, nextKeys [][]byte, err error) {
	c := b.Cursor()
	k, v := c.Seek(x)
	decode := func(k, v []byte) ([]byte, [][]byte, error) {
		ks, err := decodePacked(nil, k, v)
		if err != nil {
			return nil, nil, corrupt(fmt.Sprintf("index block %q", k), err)
		}
		return ks[0], ks, nil
	}
	if k != nil && bytes.Equal(k, x) {
		first, keys, err = decode(k, v)
		return first, keys, nil, nil, err
	}
	if k != nil && samePackGroup(k, x) {
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
	if pk != nil && samePackGroup(pk, x) {
		first, keys, err = decode(pk, pv)
	}
	return first, keys, next, nextKeys, err
}

// putPacked replaces the blocks of b under the keys of old (first keys)
// with keys (sorted, of one group), cut into blocks.
func putPacked(b *bbolt.Bucket, old [][]byte, keys [][]byte) error {
	for _, k := range old {
		if k != nil {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
	}
	// bbolt keeps the values it is given until the commit: encodePacked
	// makes each anew.
	return encodePacked(keys, b.Put)
}

// packedInsert adds key x (with a group: two NULs) to the packed index in b.
func packedInsert(b *bbolt.Bucket, x []byte) error {
	if packGroupLen(x) == 0 {
		return fmt.Errorf("index key %q has no group", x)
	}
	_, keys, next, nextKeys, err := packedBlockOf(b, x)
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
		return putPacked(b, nil, slices.Insert(keys, i, x))
	case next != nil && len(nextKeys) < packKeys:
		// Before the group's first block: x becomes its first key.
		return putPacked(b, [][]byte{next}, append([][]byte{x}, nextKeys...))
	default:
		return b.Put(x, []byte{}) // as writeOp writes an empty value: not nil
	}
}

// packedInsertRun adds keys xs (sorted; some of them, at least the first)
// to the packed index in b, and returns how many it added: those that go
// into the block that holds xs[0]'s place, decoded and written once, or
// xs[0] alone. A commit's writes to an index come sorted, and many go into
// one block: at 100k nodes of the benchmark graph, the search index keys
// of a load's first batch cost 1.1 s of CPU a key at a time, 0.17 s so.
func packedInsertRun(b *bbolt.Bucket, xs [][]byte) (int, error) {
	_, keys, _, _, err := packedBlockOf(b, xs[0])
	if err != nil || keys == nil {
		return 1, cmp.Or(err, packedInsert(b, xs[0]))
	}
	// The block's keys end before the next block, if it is of its group,
	// or with the group.
	c := b.Cursor()
	c.Seek(keys[0])
	next, _ := c.Next()
	n := 1
	for n < len(xs) && samePackGroup(keys[0], xs[n]) && (next == nil || bytes.Compare(xs[n], next) < 0) {
		n++
	}
	all := make([][]byte, 0, len(keys)+n)
	i := 0
	for _, x := range xs[:n] {
		for i < len(keys) && bytes.Compare(keys[i], x) < 0 {
			all = append(all, keys[i])
			i++
		}
		if i < len(keys) && bytes.Equal(keys[i], x) || len(all) > 0 && bytes.Equal(all[len(all)-1], x) {
			continue
		}
		all = append(all, bytes.Clone(x))
	}
	all = append(all, keys[i:]...)
	// The first key stays: the block is written anew under it.
	return n, putPacked(b, nil, all)
}

// packedDelete removes key x from the index in b, if it holds it.
func packedDelete(b *bbolt.Bucket, x []byte) error {
	first, keys, _, _, err := packedBlockOf(b, x)
	if err != nil || keys == nil {
		return err
	}
	i, found := slices.BinarySearchFunc(keys, x, bytes.Compare)
	if !found {
		return nil
	}
	if i == 0 {
		// The block goes under its second key, if it has one.
		return putPacked(b, [][]byte{first}, keys[1:])
	}
	return putPacked(b, nil, slices.Delete(keys, i, i+1))
}

// packer is a pairSource of blocks: it packs the keys of src (sorted,
// each once; values ignored) into full blocks.
type packer struct {
	src  pairSource
	k    []byte // the key src gave last, not yet packed
	done bool
	mem  slab
}

func newPacker(src pairSource) *packer { return &packer{src: src} }

func (p *packer) next() (k, v []byte, ok bool) {
	if p.k == nil && !p.done {
		if p.k, _, ok = p.src.next(); !ok {
			p.k, p.done = nil, true
		}
	}
	if p.k == nil {
		return nil, nil, false
	}
	first := p.k
	g := packGroupLen(first)
	prev := first
	var buf []byte
	n := 1
	for {
		key, _, ok := p.src.next()
		if !ok {
			p.k, p.done = nil, true
			break
		}
		if n >= packKeys || g == 0 || !bytes.HasPrefix(key, first[:g]) {
			p.k = key
			break
		}
		w := appendPackedKey(buf, prev, key)
		if len(w) > packBytes {
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

// packedKeys is a pairSource of the keys of the packed index in b, one at a
// time (values empty), each in memory that stays as it is (see
// pairSource). A block that does not decode ends it, and err says so.
type packedKeys struct {
	c       *bbolt.Cursor
	keys    [][]byte // the current block's keys not given yet
	mem     slab
	started bool
	err     error
}

func newPackedKeys(b *bbolt.Bucket) *packedKeys { return &packedKeys{c: b.Cursor()} }

func (s *packedKeys) next() (k, v []byte, ok bool) {
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
		if s.keys, err = decodePackedIn(s.keys[:0], bk, bv, &s.mem); err != nil {
			s.err = corrupt(fmt.Sprintf("index block %q", bk), err)
			s.keys = nil
			return nil, nil, false
		}
	}
	k, s.keys = s.keys[0], s.keys[1:]
	return k, nil, true
}

// unionKeys is a pairSource of the keys of a and b (each sorted, each key
// once), in order, each once; values are dropped. If flagged, b's values
// start with a flag, and a key of b flagged runDel is left out, from a as
// well.
type unionKeys struct {
	a, b     pairSource
	flagged  bool
	ak, bk   []byte
	bv       []byte
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
			u.bk, u.bv, u.bok = u.b.next()
		}
	}
	for {
		del := false
		switch {
		case !u.aok && !u.bok:
			return nil, nil, false
		case !u.bok || u.aok && bytes.Compare(u.ak, u.bk) < 0:
			k = u.ak
			u.ak, _, u.aok = u.a.next()
		case !u.aok || bytes.Compare(u.bk, u.ak) < 0:
			k, del = u.bk, u.flagged && (len(u.bv) == 0 || u.bv[0] == runDel)
			u.bk, u.bv, u.bok = u.b.next()
		default: // the same key in both: b's write stands
			k, del = u.ak, u.flagged && (len(u.bv) == 0 || u.bv[0] == runDel)
			u.ak, _, u.aok = u.a.next()
			u.bk, u.bv, u.bok = u.b.next()
		}
		if !del {
			return k, nil, true
		}
	}
}

// A keyCursor reads keys in order: a bucket's (boltKeys) or a packed
// index's logical keys (packedCursor).
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

// cursorErr returns the error that ended c's scan, if c is an packedCursor.
func cursorErr(c keyCursor) error {
	if ic, ok := c.(*packedCursor); ok && ic != nil {
		return ic.err
	}
	return nil
}

// A packedWrite is a put or a delete of a key of a packed index.
type packedWrite struct {
	key []byte
	del bool
}

// packedMerge applies ws (sorted by key, each key once, all of one group)
// to the index in b: the group's blocks are read, and written anew with
// the writes, in full blocks. A sorted stream of writes is applied a group
// at a time this way, rather than a key at a time (packedInsert,
// packedDelete), which decodes and writes a block for each.
func packedMerge(b *bbolt.Bucket, ws []packedWrite) error {
	if len(ws) == 0 {
		return nil
	}
	g := packGroupLen(ws[0].key)
	if g == 0 {
		return fmt.Errorf("index key %q has no group", ws[0].key)
	}
	prefix := ws[0].key[:g]
	var old, held [][]byte // the group's blocks, by first key; its keys
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var err error
		n := len(held)
		if held, err = decodePacked(held, k, v); err != nil {
			return corrupt(fmt.Sprintf("index block %q", k), err)
		}
		old = append(old, held[n])
	}
	all := make([][]byte, 0, len(held)+len(ws))
	for i, j := 0, 0; i < len(held) || j < len(ws); {
		switch {
		case j == len(ws) || i < len(held) && bytes.Compare(held[i], ws[j].key) < 0:
			all = append(all, held[i])
			i++
		case i < len(held) && bytes.Equal(held[i], ws[j].key):
			if !ws[j].del {
				all = append(all, held[i])
			}
			i, j = i+1, j+1
		default:
			if !ws[j].del {
				all = append(all, bytes.Clone(ws[j].key))
			}
			j++
		}
	}
	return putPacked(b, old, all)
}

// packedBucket reports whether the bucket named name is a packed index.
func packedBucket(name []byte) bool {
	return bytes.Equal(name, bIn) || bytes.Equal(name, bDegIdx) || bytes.Equal(name, bProp) || bytes.Equal(name, bType) || bytes.Equal(name, bTok)
}
