package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"syscall"
	"unsafe"

	bbolt "go.etcd.io/bbolt"
)

// writeFile writes every bucket in tx, nested ones included, into a new
// bbolt file at path, in bbolt's own layout (version 2), with pageSize
// pages: each B-tree is built bottom-up, its leaves filled to the brim in
// key order, then the branch pages above them, and the file is written
// front to back in one pass, then synced. It holds what a copy through
// bbolt's Put in key order would (the rewrite's way before it), without a
// search from the root and a page split per key: the rewrite at the end
// of a bulk load took 26-30 s of CPU that way at 1M nodes, and 2.45 s at
// 100k against 0.42 s now.
//
// The file's layout: meta pages 0 and 1 (transactions 0 and 1, as bbolt
// makes a new file), an empty freelist at page 2, then each bucket's pages
// as its keys come, a nested bucket's before the leaf that names it, and
// the root bucket's last. Every page below the high-water mark is in use,
// so the free list is empty. bbolt's layout is native-endian, as bbolt
// writes it.
//
// m adds to what tx holds, and takes away (see fileMerge); the zero
// fileMerge writes tx as it is.
func writeFile(tx *bbolt.Tx, path string, pageSize int, mode os.FileMode, m fileMerge) (err error) {
	if pageSize < 1024 || pageSize > 1<<16 {
		return fmt.Errorf("page size %d", pageSize)
	}
	f, direct, err := openDirect(path, mode, pageSize)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	aw := newAheadWriter(f, 4<<20, direct)
	defer aw.Close() // on an early return; a second Close does nothing
	w := &pageWriter{w: aw, size: pageSize, next: 3}
	// Pages 0 to 2 are written last, in place.
	if _, err := w.w.Write(make([]byte, 3*pageSize)); err != nil {
		return err
	}
	// The root bucket names the others in key order, wherever their
	// pages are: the late ones are written after the rest.
	type named struct{ name, hdr []byte }
	var buckets []named
	var packed []*packedKeys // the packed indexes' keys as they were
	for _, late := range []bool{false, true} {
		err = tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			if m.late[string(name)] != late {
				return nil
			}
			src, flagged, only := m.into[string(name)], m.flagged[string(name)], false
			if packedBucket(name) {
				// A packed index is packed anew, its keys and the writes to
				// merge into it in full blocks (see packKeys).
				old := newPackedKeys(b)
				packed = append(packed, old)
				src, flagged, only = newPacker(&unionKeys{a: old, b: src, flagged: flagged}), false, true
			}
			hdr, err := w.bucket(b, src, flagged, m.drop[string(name)], only)
			if err != nil {
				return err
			}
			buckets = append(buckets, named{name, hdr})
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, old := range packed {
		if old.err != nil {
			return old.err
		}
	}
	if m.err != nil {
		if err := m.err(); err != nil {
			return err
		}
	}
	slices.SortFunc(buckets, func(a, b named) int { return bytes.Compare(a.name, b.name) })
	root := w.tree()
	for _, b := range buckets {
		if err := root.add(bucketLeafFlag, b.name, b.hdr); err != nil {
			return err
		}
	}
	rootID, err := root.finish()
	if err != nil {
		return err
	}
	if err := aw.Close(); err != nil {
		return err
	}
	head := alignedBytes(3 * pageSize)
	for txid := range uint64(2) {
		writeMeta(head[txid*uint64(pageSize):], pageSize, rootID, w.next, txid)
	}
	fl := head[2*pageSize:]
	binary.NativeEndian.PutUint64(fl, metaFreelistPage)
	binary.NativeEndian.PutUint16(fl[8:], freelistPageFlag)
	if _, err := f.WriteAt(head, 0); err != nil {
		return err
	}
	return f.Sync()
}

// A fileMerge says what writeFile writes beside a transaction's buckets:
// pairs to merge into top-level buckets, in key order, where a pair's value
// stands over the bucket's own for the same key (into), and keys of
// top-level buckets to leave out (drop). The values of a bucket's pairs
// start with a flag if flagged says so: runPut for a value that stands,
// runDel for a key to leave out.
type fileMerge struct {
	into    map[string]pairSource
	flagged map[string]bool
	drop    map[string]map[string]bool
	// late names the top-level buckets to write after the others, whose
	// sources may wait for work done meanwhile.
	late map[string]bool
	// err, if set, is called once every bucket is written: an error it
	// returns (a source that failed) is writeFile's, and the file is not
	// finished.
	err func() error
}

// A pairSource gives key-value pairs in key order, each key once; a pair's
// memory must stay as it is until writeFile returns (or at least until
// the page holding it is written).
type pairSource interface {
	next() (k, v []byte, ok bool)
}

// bbolt's layout (go.etcd.io/bbolt/internal/common).
const (
	pageHeaderSize   = 16 // id uint64, flags uint16, count uint16, overflow uint32
	elementSize      = 16 // leaf: flags, pos, ksize, vsize uint32; branch: pos, ksize uint32, pgid uint64
	bucketHeaderSize = 16 // root pgid uint64, sequence uint64
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	metaFreelistPage = 2
	maxPageElements  = 1<<16 - 1 // a page's count is a uint16
)

// writeMeta writes meta page txid (0 or 1) into p.
func writeMeta(p []byte, pageSize int, root, pgid, txid uint64) {
	ne := binary.NativeEndian
	ne.PutUint64(p, txid) // the page's ID
	ne.PutUint16(p[8:], metaPageFlag)
	m := p[pageHeaderSize:]
	ne.PutUint32(m[0:], boltMagic)
	ne.PutUint32(m[4:], boltVersion)
	ne.PutUint32(m[8:], uint32(pageSize))
	ne.PutUint32(m[12:], 0)    // flags
	ne.PutUint64(m[16:], root) // the root bucket: its root page
	ne.PutUint64(m[24:], 0)    // and its sequence
	ne.PutUint64(m[32:], metaFreelistPage)
	ne.PutUint64(m[40:], pgid) // the high-water mark
	ne.PutUint64(m[48:], txid)
	h := fnv.New64a()
	h.Write(m[:56])
	ne.PutUint64(m[56:], h.Sum64())
}

// A pageWriter writes pages one after another.
type pageWriter struct {
	w    io.Writer
	size int    // bytes per page
	next uint64 // the next page's ID
	page []byte // scratch
}

// write writes a page of the given kind holding count elements, body
// being what follows its header, with overflow pages as body needs, and
// returns its ID.
func (w *pageWriter) write(flags uint16, count int, body []byte) (uint64, error) {
	pages := (pageHeaderSize + len(body) + w.size - 1) / w.size
	if cap(w.page) < pages*w.size {
		w.page = make([]byte, pages*w.size)
	}
	p := w.page[:pages*w.size]
	clear(p[pageHeaderSize+len(body):])
	id := w.next
	ne := binary.NativeEndian
	ne.PutUint64(p, id)
	ne.PutUint16(p[8:], flags)
	ne.PutUint16(p[10:], uint16(count))
	ne.PutUint32(p[12:], uint32(pages-1))
	copy(p[pageHeaderSize:], body)
	if _, err := w.w.Write(p); err != nil {
		return 0, err
	}
	w.next += uint64(pages)
	return id, nil
}

// bucket writes the pages of b, with src's pairs merged in (their values
// flagged, if flagged: see fileMerge) and the keys drop names left out,
// and returns its header, as the value of the leaf that names it. src and
// drop apply to b's own keys only, not to its nested buckets'.
func (w *pageWriter) bucket(b *bbolt.Bucket, src pairSource, flagged bool, drop map[string]bool, only bool) ([]byte, error) {
	t := w.tree()
	cur := b.Cursor()
	k, v := cur.First()
	if only {
		k = nil // src holds all of it
	}
	var sk, sv []byte
	more := src != nil
	if more {
		sk, sv, more = src.next()
	}
	for k != nil || more {
		order := -1 // the bucket's key comes first; 1: the source's; 0: the same key
		if k == nil {
			order = 1
		} else if more {
			order = bytes.Compare(k, sk)
		}
		var err error
		if order < 0 {
			err = w.add(t, b, k, v, drop)
			k, v = cur.Next()
		} else {
			if order == 0 {
				if v == nil {
					return nil, fmt.Errorf("key %q names a nested bucket and a pair to merge", k)
				}
				k, v = cur.Next() // the source's value stands
			}
			switch {
			case drop[string(sk)]:
			case !flagged:
				err = t.add(0, sk, sv)
			case len(sv) == 0:
				err = fmt.Errorf("key %q to merge has no flag", sk)
			case sv[0] != runDel:
				err = t.add(0, sk, sv[1:])
			}
			sk, sv, more = src.next()
		}
		if err != nil {
			return nil, err
		}
	}
	root, err := t.finish()
	if err != nil {
		return nil, err
	}
	hdr := make([]byte, bucketHeaderSize)
	binary.NativeEndian.PutUint64(hdr, root)
	binary.NativeEndian.PutUint64(hdr[8:], b.Sequence())
	return hdr, nil
}

// add adds b's key k, with its value v (nil for a nested bucket), to t,
// unless drop names it.
func (w *pageWriter) add(t *treeBuilder, b *bbolt.Bucket, k, v []byte, drop map[string]bool) error {
	if drop[string(k)] {
		return nil
	}
	if v != nil {
		return t.add(0, k, v)
	}
	hdr, err := w.bucket(b.Bucket(k), nil, false, nil, false)
	if err != nil {
		return err
	}
	return t.add(bucketLeafFlag, k, hdr)
}

// A treeBuilder builds one B-tree from its keys in order: leaves as they
// fill, and the branch levels above them when it finishes. The keys and
// values it is given must stay as they are until the leaf holding them is
// written (bbolt's, in the source transaction, do).
type treeBuilder struct {
	w      *pageWriter
	leaf   []leafElem
	used   int       // bytes the leaf's page needs so far
	leaves []pageRef // every leaf written: its first key and ID
	body   []byte    // scratch
}

type leafElem struct {
	flags uint32
	k, v  []byte
}

type pageRef struct {
	key []byte
	id  uint64
}

func (w *pageWriter) tree() *treeBuilder { return &treeBuilder{w: w, used: pageHeaderSize} }

// add adds the next key, greater than the last.
func (t *treeBuilder) add(flags uint32, k, v []byte) error {
	if len(k) == 0 || len(k) > bbolt.MaxKeySize || len(v) > bbolt.MaxValueSize {
		return fmt.Errorf("a key of %d bytes with a value of %d bytes", len(k), len(v))
	}
	need := elementSize + len(k) + len(v)
	if len(t.leaf) > 0 && (t.used+need > t.w.size || len(t.leaf) == maxPageElements) {
		if err := t.writeLeaf(); err != nil {
			return err
		}
	}
	t.leaf = append(t.leaf, leafElem{flags, k, v})
	t.used += need
	return nil
}

func (t *treeBuilder) writeLeaf() error {
	n := len(t.leaf)
	body := t.body[:0]
	body = append(body, make([]byte, n*elementSize)...)
	ne := binary.NativeEndian
	for i, e := range t.leaf {
		el := body[i*elementSize:]
		ne.PutUint32(el[0:], e.flags)
		ne.PutUint32(el[4:], uint32(len(body)-i*elementSize)) // from the element to its key
		ne.PutUint32(el[8:], uint32(len(e.k)))
		ne.PutUint32(el[12:], uint32(len(e.v)))
		body = append(body, e.k...)
		body = append(body, e.v...)
	}
	t.body = body
	id, err := t.w.write(leafPageFlag, n, body)
	if err != nil {
		return err
	}
	var first []byte
	if n > 0 {
		// A copy: the source's memory need only last until its page is
		// written.
		first = bytes.Clone(t.leaf[0].k)
	}
	t.leaves = append(t.leaves, pageRef{first, id})
	clear(t.leaf) // the source's memory
	t.leaf, t.used = t.leaf[:0], pageHeaderSize
	return nil
}

// finish writes what is left and the branch levels, and returns the
// root page's ID. A tree without keys is one empty leaf.
func (t *treeBuilder) finish() (uint64, error) {
	if len(t.leaf) > 0 || len(t.leaves) == 0 {
		if err := t.writeLeaf(); err != nil {
			return 0, err
		}
	}
	level := t.leaves
	for len(level) > 1 {
		var up []pageRef
		for _, n := range branchSizes(level, t.w.size) {
			id, err := t.writeBranch(level[:n])
			if err != nil {
				return 0, err
			}
			up = append(up, pageRef{level[0].key, id})
			level = level[n:]
		}
		level = up
	}
	return level[0].id, nil
}

// branchSizes splits the pages of a level, two or more, into the branch
// pages above them: as many to a page as fit, but never one alone, which
// bbolt does not allow below the root (a page may overflow instead).
func branchSizes(level []pageRef, pageSize int) []int {
	var sizes []int
	for i := 0; i < len(level); {
		n, used := 0, pageHeaderSize
		for i+n < len(level) && n < maxPageElements && (n < 2 || used+elementSize+len(level[i+n].key) <= pageSize) {
			used += elementSize + len(level[i+n].key)
			n++
		}
		sizes = append(sizes, n)
		i += n
	}
	if k := len(sizes); k > 1 && sizes[k-1] == 1 {
		if sizes[k-2] > 2 {
			sizes[k-2]--
			sizes[k-1]++
		} else {
			sizes[k-2]++
			sizes = sizes[:k-1]
		}
	}
	return sizes
}

func (t *treeBuilder) writeBranch(children []pageRef) (uint64, error) {
	n := len(children)
	body := t.body[:0]
	body = append(body, make([]byte, n*elementSize)...)
	ne := binary.NativeEndian
	for i, c := range children {
		el := body[i*elementSize:]
		ne.PutUint32(el[0:], uint32(len(body)-i*elementSize))
		ne.PutUint32(el[4:], uint32(len(c.key)))
		ne.PutUint64(el[8:], c.id)
		body = append(body, c.key...)
	}
	t.body = body
	return t.w.write(branchPageFlag, n, body)
}

// An aheadWriter writes to a file on a goroutine of its own, a buffer at a
// time, while its caller fills the next buffer: the rewrite of a 300,000-node
// load spent 1.8 of its 3 s in the write system calls, which now run beside
// the building of the pages. A write that fails makes the next Write, and
// Close, return its error. Its buffers are aligned for O_DIRECT (see
// openDirect); if the file was opened so and a write is refused as
// invalid, it turns O_DIRECT off and writes again.
type aheadWriter struct {
	buf    []byte
	full   chan []byte // buffers to write, in order
	free   chan []byte // buffers written
	done   chan error  // the first error, once full is closed and drained
	failed atomic.Pointer[error]
	closed bool
	err    error
}

func newAheadWriter(f io.Writer, size int, direct bool) *aheadWriter {
	w := &aheadWriter{full: make(chan []byte, 1), free: make(chan []byte, 2), done: make(chan error, 1)}
	w.buf = alignedBytes(size)[:0]
	w.free <- alignedBytes(size)[:0]
	go func() {
		var err error
		for b := range w.full {
			if err == nil {
				var n int
				n, err = f.Write(b)
				if of, ok := f.(*os.File); ok && direct && errors.Is(err, syscall.EINVAL) {
					direct = false
					if err = undirect(of); err == nil {
						_, err = f.Write(b[n:])
					}
				}
				if err != nil {
					w.failed.Store(&err)
				}
			}
			w.free <- b[:0]
		}
		w.done <- err
	}()
	return w
}

// directAlign is the alignment O_DIRECT asks of memory, offsets and
// lengths: a page of memory, the largest logical block of common disks.
const directAlign = 4096

// alignedBytes returns n bytes at an address that is a multiple of
// directAlign.
func alignedBytes(n int) []byte {
	b := make([]byte, n+directAlign)
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(b))) & (directAlign - 1))
	return b[off : off+n : off+n]
}

func (w *aheadWriter) Write(p []byte) (int, error) {
	if e := w.failed.Load(); e != nil {
		return 0, *e
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(w.buf[len(w.buf):cap(w.buf)], p)
		w.buf, p = w.buf[:len(w.buf)+k], p[k:]
		if len(w.buf) == cap(w.buf) {
			w.full <- w.buf
			w.buf = <-w.free
		}
	}
	return n, nil
}

// Close writes what is buffered, waits for every write, and returns the
// first error.
func (w *aheadWriter) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	if len(w.buf) > 0 {
		w.full <- w.buf
	}
	close(w.full)
	w.err = <-w.done
	return w.err
}
