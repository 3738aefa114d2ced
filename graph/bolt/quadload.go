package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	cgraph "github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A quadLoad writes Cayley's part of a bulk load itself, in Cayley's
// layout, instead of through Cayley's ApplyDeltas. A bulk load into an
// empty store only adds quads, and Cayley's writer spends most of its time
// finding out what a load already knows: it looks up each value's ID and
// reference count in bbolt, checks each new quad against its index and
// log, and reads each index entry before appending to it (at 100k nodes,
// its own work was 12.5 of a load's 32 s of CPU, in a profile of the
// benchmark graph's import). A quadLoad keeps every value the load has
// written in a map (the store held none when it began), with its ID and
// reference count, and the ID horizon and quad count. A commit writes
// each new value's primitive and each quad's into Cayley's log (whose
// keys, the IDs, only grow), and the horizon and count; the rest waits in
// memory until the load ends (materialize), when it is written in key
// order into buckets the load has not touched (or, in an all-or-nothing
// load, merged into the rewritten file: see sources), instead of at
// scattered places in every commit:
//
//   - each value's ID (bucket "v") and reference count ("n");
//   - the entries of Cayley's quad index, [O,P,S] (see oneQuadIndex):
//     each quad's ID under its object, predicate and subject.
//
// (At 100k nodes, leaving these out of the commits took the load from 20
// to 12 s.) These are the keys and values Cayley's writer would write, up
// to the order in which IDs are given out (values first, then quads, per
// commit, with Cayley; in order of first use here) and the timestamps:
// Cayley writes one into each primitive and never reads it, and a
// quadLoad leaves it out (ten of the 34 bytes of a quad's log entry);
// TestQuadLoadMatchesCayley compares the two, decoded. The quads of one
// commit are new: the planner adds a quad only for an element the store
// lacks, which Cayley's duplicate check would otherwise confirm.
//
// Until the load ends, Cayley's part of the store is incomplete, and
// Lore's meta says so (metaQuadsPending): if the process dies, the next
// Open rebuilds Cayley's part from the node and edge records
// (rebuildQuads). A commit that removes a quad goes to Cayley's
// ApplyDeltas: the quadLoad first writes what waits, and the rest of the
// load goes through Cayley. A commit that fails leaves the quadLoad as it
// was before it (undo).
type quadLoad struct {
	// values holds the load's values, numbered by valueKey in keys: a
	// value's hash, which names it in Cayley's buckets, is taken once,
	// when it is first seen (a hash per direction of every quad took 3.8 s
	// of a 1M-node load). Neither holds pointers (see idTable): as a map
	// from key to *loadValue they were two million objects at 1M nodes
	// for the collector to mark at every cycle.
	keys    *idTable
	values  []loadValue
	horizon uint64   // the last ID given out
	size    int64    // quads
	links   linkList // index entries not yet written
	commits uint64   // the commits written
	// materialized says that materialize has run: buckets "v", "n" and
	// "ops" hold some of what the load wrote.
	materialized bool
	// keptLog, in an all-or-nothing load that rewrites its file, holds
	// the log entries its commits would write, for the rewrite to merge
	// into the new file (see loadRest), or materialize to write; nil
	// otherwise, and the commits write them. Nothing reads Cayley's log
	// during a load (nor could Cayley use what it holds: the values' IDs
	// wait too), and should the load die, the next Open empties the store.
	// At 300,000 nodes, writing its 2.3 million entries through bbolt's
	// Put, one search from the root each, cost 1.9 s of CPU.
	keptLog *logRun
	// undo holds what the commit under way changed.
	undo struct {
		horizon uint64
		size    int64
		links   int
		log     logMark
		values  int      // how many values there were
		touched []int32  // the values it changed, by number
		refs    []uint64 // the touched values' counts before it
	}
}

// A logRun holds log entries in ID order, in blocks: each entry is its
// key (the ID, 8 bytes big-endian), its value's length as a uvarint, and
// its value.
type logRun struct {
	blocks [][]byte
}

const logBlock = 1 << 20

func (r *logRun) add(id uint64, prim []byte) {
	need := 8 + binary.MaxVarintLen64 + len(prim)
	if n := len(r.blocks); n == 0 || cap(r.blocks[n-1])-len(r.blocks[n-1]) < need {
		r.blocks = append(r.blocks, make([]byte, 0, max(logBlock, need)))
	}
	b := &r.blocks[len(r.blocks)-1]
	*b = binary.BigEndian.AppendUint64(*b, id)
	*b = binary.AppendUvarint(*b, uint64(len(prim)))
	*b = append(*b, prim...)
}

// A logMark is how much a logRun held: blocks, and bytes of the last.
type logMark struct{ blocks, last int }

func (r *logRun) mark() logMark {
	if n := len(r.blocks); n > 0 {
		return logMark{n, len(r.blocks[n-1])}
	}
	return logMark{}
}

// truncate drops what was added since m.
func (r *logRun) truncate(m logMark) {
	clear(r.blocks[m.blocks:])
	r.blocks = r.blocks[:m.blocks]
	if m.blocks > 0 {
		r.blocks[m.blocks-1] = r.blocks[m.blocks-1][:m.last]
	}
}

// source returns the entries as pairs, in key order; their memory is r's.
func (r *logRun) source() pairSource {
	blocks := slices.Clone(r.blocks) // its blocks shrink as it reads
	return sourceFunc(func() (k, v []byte, ok bool) {
		for len(blocks) > 0 && len(blocks[0]) == 0 {
			blocks = blocks[1:]
		}
		if len(blocks) == 0 {
			return nil, nil, false
		}
		b := blocks[0]
		n, w := binary.Uvarint(b[8:])
		k, v = b[:8:8], b[8+w:8+w+int(n):8+w+int(n)]
		blocks[0] = b[8+w+int(n):]
		return k, v, true
	})
}

type loadValue struct {
	hash refs.ValueHash
	id   uint64
	refs uint64
	// touched is the number of the last commit that changed refs.
	touched uint64
	stored  bool   // its record is in bucket "v"
	written uint64 // the count its record there holds
}

// record appends v's value record (see valueRecord) to b.
func (v *loadValue) record(b []byte) []byte {
	return binary.AppendUvarint(binary.AppendUvarint(b, v.id), v.refs)
}

// A link is an entry of the [O,P,S] index: a quad's object, predicate and
// subject, and its ID.
type link [4]uint64

// A linkList holds links in blocks of linkBlock, in the order they were
// added, until sorted joins them. It was one slice: appending to it, which
// grows a large slice by a quarter at a time, copied and faulted in about
// five times its final size, 4.9 s of the CPU of a 1M-node load's commits
// (6.8 million links, 218 MB).
type linkList struct {
	blocks [][]link
	n      int
}

const linkBlock = 1 << 15 // 1 MiB

func (l *linkList) add(x link) {
	if k := len(l.blocks); k == 0 || len(l.blocks[k-1]) == cap(l.blocks[k-1]) {
		l.blocks = append(l.blocks, make([]link, 0, linkBlock))
	}
	b := &l.blocks[len(l.blocks)-1]
	*b = append(*b, x)
	l.n++
}

func (l *linkList) len() int { return l.n }

// held returns the bytes its blocks take.
func (l *linkList) held() int64 {
	var n int64
	for _, b := range l.blocks {
		n += int64(cap(b)) * int64(len(link{})) * 8
	}
	return n
}

// truncate drops every link after the first n.
func (l *linkList) truncate(n int) {
	for l.n > n {
		b := &l.blocks[len(l.blocks)-1]
		if drop := min(l.n-n, len(*b)); drop < len(*b) {
			*b = (*b)[:len(*b)-drop]
			l.n -= drop
		} else {
			l.n -= len(*b)
			l.blocks[len(l.blocks)-1] = nil
			l.blocks = l.blocks[:len(l.blocks)-1]
		}
	}
}

// sorted returns the links in one slice, sorted, which the list then
// holds in place of its blocks.
func (l *linkList) sorted() []link {
	var all []link
	if len(l.blocks) == 1 {
		all = l.blocks[0]
	} else if len(l.blocks) > 1 {
		all = make([]link, 0, l.n)
		for _, b := range l.blocks {
			all = append(all, b...)
		}
	}
	sortLinks(all)
	l.set(all)
	return all
}

// set makes links, which the list's caller has sorted or consumed from
// the front, all the list holds.
func (l *linkList) set(links []link) {
	l.blocks, l.n = nil, len(links)
	if len(links) > 0 {
		l.blocks = [][]link{links[:len(links):len(links)]}
	}
}

var (
	cayleyMeta       = []byte("meta")
	cayleyHorizon    = []byte("horizon")
	cayleySize       = []byte("size")
	cayleyIndexesKey = []byte("indexes")
	cayleyOPS        = []byte("ops")
	// metaQuadsPending, in Lore's meta, marks a store whose Cayley part a
	// quadLoad has not finished writing (see quadLoad).
	metaQuadsPending = []byte("quads-pending")
)

// newQuadLoad returns a quadLoad for a bulk load into the store in tx, or
// nil if Cayley's part of the store is not empty (the map would not know
// its values) or does not have one quad index, [O,P,S].
func newQuadLoad(tx *bbolt.Tx) *quadLoad {
	for _, name := range [][]byte{bValues, bCayleyLog, bOPS} {
		b := tx.Bucket(name)
		if b == nil {
			return nil
		}
		if k, _ := b.Cursor().First(); k != nil {
			return nil
		}
	}
	meta := tx.Bucket(cayleyMeta)
	if meta == nil {
		return nil
	}
	var inds []ckv.QuadIndex
	if err := json.Unmarshal(meta.Get(cayleyIndexesKey), &inds); err != nil || len(inds) != 1 || !equalIndex(inds[0], opsIndex) {
		return nil
	}
	l := &quadLoad{keys: newIDTable()}
	if v := meta.Get(cayleyHorizon); len(v) == 8 {
		l.horizon = binary.LittleEndian.Uint64(v)
	}
	if v := meta.Get(cayleySize); len(v) == 8 {
		l.size = int64(binary.LittleEndian.Uint64(v))
	}
	return l
}

// addsOnly reports whether deltas only add quads.
func addsOnly(deltas []cgraph.Delta) bool {
	for _, d := range deltas {
		if d.Action != cgraph.Add {
			return false
		}
	}
	return true
}

// write writes the log entries of the quads deltas adds, and of their new
// values, into tx, and keeps the rest for materialize. Every delta adds.
// If tx does not commit, the caller calls rollback.
func (l *quadLoad) write(tx *bbolt.Tx, deltas []cgraph.Delta) error {
	l.commits++
	commit := l.commits
	u := &l.undo
	u.horizon, u.size, u.links = l.horizon, l.size, l.links.len()
	u.values, u.touched, u.refs = len(l.values), u.touched[:0], u.refs[:0]
	log := tx.Bucket(bCayleyLog)
	log.FillPercent = appendFill
	app := &logAppender{b: log}
	put := app.add
	if kept := l.keptLog; kept != nil {
		u.log = kept.mark()
		put = func(id uint64, prim []byte) error {
			kept.add(id, prim)
			return nil
		}
	}
	var p cproto.Primitive
	for _, d := range deltas {
		p = cproto.Primitive{}
		for _, dir := range quad.Directions {
			val := d.Quad.Get(dir)
			if val == nil {
				continue
			}
			n, added := l.keys.add(valueKey(val))
			if added {
				l.horizon++
				l.values = append(l.values, loadValue{hash: refs.HashOf(val), id: l.horizon})
			}
			v := &l.values[n]
			if added {
				b, err := pquads.MarshalValue(val)
				if err != nil {
					return fmt.Errorf("cayley value %v: %w", val, err)
				}
				prim, err := proto.Marshal(&cproto.Primitive{ID: v.id, Value: b})
				if err != nil {
					return err
				}
				if err := put(v.id, prim); err != nil {
					return err
				}
			}
			if v.touched != commit {
				u.touched, u.refs = append(u.touched, n), append(u.refs, v.refs)
				v.touched = commit
			}
			v.refs++
			p.SetDirection(dir, v.id)
		}
		l.horizon++
		p.ID = l.horizon
		if err := put(p.ID, appendLink(nil, &p)); err != nil {
			return err
		}
		l.links.add(link{p.Object, p.Predicate, p.Subject, p.ID})
	}
	if err := app.flush(); err != nil {
		return err
	}
	l.size += int64(len(deltas))
	return l.writeMeta(tx)
}

func (l *quadLoad) writeMeta(tx *bbolt.Tx) error {
	meta := tx.Bucket(cayleyMeta)
	if err := meta.Put(cayleyHorizon, binary.LittleEndian.AppendUint64(nil, l.horizon)); err != nil {
		return err
	}
	return meta.Put(cayleySize, binary.LittleEndian.AppendUint64(nil, uint64(l.size)))
}

// held returns the bytes of what the load keeps back that materialize
// writes and lets go: index entries (a link is four IDs) and log entries.
// Not its values, which it keeps until the load ends.
func (l *quadLoad) held() int64 {
	n := l.links.held()
	if l.keptLog != nil {
		for _, b := range l.keptLog.blocks {
			n += int64(cap(b))
		}
	}
	return n
}

// rollback undoes what the last write changed, whose transaction did not
// commit.
func (l *quadLoad) rollback() {
	u := &l.undo
	for i, n := range u.touched {
		if int(n) < u.values {
			l.values[n].refs = u.refs[i]
			l.values[n].touched = 0
		}
	}
	l.keys.truncate(u.values)
	l.values = l.values[:u.values]
	l.horizon, l.size = u.horizon, u.size
	l.links.truncate(u.links)
	if l.keptLog != nil {
		l.keptLog.truncate(u.log)
	}
	u.touched, u.refs = u.touched[:0], u.refs[:0]
}

// materializeChunk is how many keys materialize (and runSet.write) write
// per transaction. bbolt keeps a transaction's pages in memory until it
// commits, and the last leaf holds every key appended to it until then, in
// one slice that grows by a quarter at a time: 64 MiB of in-edge keys (1.6
// million) in one transaction spent 30 of the 57 s the rewrite of a 1M-node
// load took (when it went through bbolt's Put) copying that slice as it
// grew.
const materializeChunk = 1 << 16

// materialize writes what the load kept back (see quadLoad) into db, in
// key order, a chunk per transaction, and clears metaQuadsPending in the
// last. The caller has the store's writes to itself (rw's write side, or
// no one else has the store). The quadLoad may go on: what it kept back
// from now on is written by the next materialize.
func (l *quadLoad) materialize(db *bbolt.DB) error {
	l.materialized = true
	if l.keptLog != nil {
		src := l.keptLog.source()
		for more := true; more; {
			err := updateDB(db, func(tx *bbolt.Tx) error {
				log := tx.Bucket(bCayleyLog)
				log.FillPercent = appendFill
				app := &logAppender{b: log}
				for range materializeChunk {
					k, v, ok := src.next()
					if more = ok; !ok {
						break
					}
					if err := app.add(binary.BigEndian.Uint64(k), v); err != nil {
						return err
					}
				}
				return app.flush()
			})
			if err != nil {
				return err
			}
		}
		l.keptLog.truncate(logMark{})
	}
	vals := l.sortedValues(func(v *loadValue) bool { return !v.stored || v.written != v.refs })
	for len(vals) > 0 {
		n := min(len(vals), materializeChunk)
		chunk := vals[:n]
		err := updateDB(db, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bValues)
			b.FillPercent = appendFill
			for _, v := range chunk {
				if err := b.Put(bytes.Clone(v.hash[:]), v.record(nil)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, v := range chunk {
			v.stored, v.written = true, v.refs
		}
		vals = vals[n:]
	}
	links := l.links.sorted()
	// An earlier materialize may have written some of the keys; if none
	// did, each key's list is new (at 1M nodes, looking them up took 2.2 s).
	var earlier bool
	_ = db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bOPS).Cursor().First()
		earlier = k != nil
		return nil
	})
	for {
		n := 0
		err := updateDB(db, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bOPS)
			b.FillPercent = appendFill
			// Without earlier keys, a group's entries are written as
			// blocks at once (see bOPS); a group a chunk splits gets a
			// block of its own on each side.
			var group []byte
			var es []opsEntry
			flush := func() error {
				if len(es) == 0 {
					return nil
				}
				err := encodeOPSBlocks(group, es, b.Put)
				es = es[:0]
				return err
			}
			for n < len(links) && n < materializeChunk {
				j := n + 1
				for j < len(links) && [3]uint64(links[j][:3]) == [3]uint64(links[n][:3]) {
					j++
				}
				key := make([]byte, 0, opsKeyLen)
				for _, x := range links[n][:3] {
					key = binary.BigEndian.AppendUint64(key, x)
				}
				var val []byte
				if earlier {
					old, err := opsGet(b, key)
					if err != nil {
						return err
					}
					val = bytes.Clone(old)
				}
				for _, ln := range links[n:j] {
					val = binary.AppendUvarint(val, ln[3])
				}
				if earlier {
					if err := opsSet(b, key, val); err != nil {
						return err
					}
				} else {
					if len(es) > 0 && !bytes.Equal(group, key[:opsGroupLen]) {
						if err := flush(); err != nil {
							return err
						}
					}
					group = key[:opsGroupLen]
					es = append(es, opsEntry{s: links[n][2], list: val})
				}
				n = j
			}
			if err := flush(); err != nil {
				return err
			}
			if n == len(links) {
				return tx.Bucket(bMeta).Delete(metaQuadsPending)
			}
			return nil
		})
		if err != nil {
			return err
		}
		links = links[n:]
		l.links.set(links)
		if len(links) == 0 {
			return nil
		}
	}
}

// sources returns what the load kept back as pairs for writeFile to merge
// into a new file of the store, in place of materialize's writes: the
// values' records ("v": IDs and reference counts), and the [O,P,S] index's
// entries ("ops"), each in key order. It returns nil if an earlier
// materialize wrote some of them: an ops entry is then a list to append
// to. Lore's metaQuadsPending is the caller's to leave out. The pairs are
// made as writeFile reads them.
func (l *quadLoad) sources() map[string]pairSource {
	if l.materialized {
		return nil
	}
	vals := l.sortedValues(nil)
	links := l.links.sorted()
	var vmem slab
	i := 0
	values := sourceFunc(func() (k, v []byte, ok bool) {
		if i == len(vals) {
			return nil, nil, false
		}
		lv := vals[i]
		i++
		k = vmem.take(len(lv.hash))
		copy(k, lv.hash[:])
		return k, lv.record(vmem.take(2 * binary.MaxVarintLen64)[:0]), true
	})
	var mem slab
	ops := sourceFunc(func() (k, v []byte, ok bool) {
		if len(links) == 0 {
			return nil, nil, false
		}
		j := 1
		for j < len(links) && [3]uint64(links[j][:3]) == [3]uint64(links[0][:3]) {
			j++
		}
		k = mem.take(24)[:0]
		for _, x := range links[0][:3] {
			k = binary.BigEndian.AppendUint64(k, x)
		}
		v = mem.take(j * binary.MaxVarintLen64)[:0]
		for _, ln := range links[:j] {
			v = binary.AppendUvarint(v, ln[3])
		}
		links = links[j:]
		return k, v, true
	})
	return map[string]pairSource{
		string(bValues): values,
		string(bOPS):    opsBlocks(ops),
	}
}

// sortedValues returns the values keep selects (every one, if keep is
// nil) in the order of their hashes: the key order of Cayley's value
// buckets.
func (l *quadLoad) sortedValues(keep func(*loadValue) bool) []*loadValue {
	vals := make([]*loadValue, 0, len(l.values))
	for i := range l.values {
		if v := &l.values[i]; keep == nil || keep(v) {
			vals = append(vals, v)
		}
	}
	slices.SortFunc(vals, func(a, b *loadValue) int { return bytes.Compare(a.hash[:], b.hash[:]) })
	return vals
}

// valueKey keys a value in quadLoad.keys: an IRI (every value of Lore's
// quads) by itself, without the copy its String makes; any other value by
// its String, which is what Cayley hashes, after a NUL that starts none of
// Lore's IRIs.
func valueKey(v quad.Value) string {
	if iri, ok := v.(quad.IRI); ok {
		return string(iri)
	}
	return "\x00" + v.String()
}

// sortLinks sorts index entries into the [O,P,S] index's key order, then
// by quad ID.
func sortLinks(links []link) {
	slices.SortFunc(links, func(a, b link) int {
		for i := range a {
			if c := cmp.Compare(a[i], b[i]); c != 0 {
				return c
			}
		}
		return 0
	})
}

// A sourceFunc is a pairSource.
type sourceFunc func() (k, v []byte, ok bool)

func (f sourceFunc) next() (k, v []byte, ok bool) { return f() }

// lazySource is the pairSource that build returns (none, if nil), made
// when it is first read: build may wait for work under way meanwhile.
func lazySource(build func() pairSource) pairSource {
	var p pairSource
	made := false
	return sourceFunc(func() (k, v []byte, ok bool) {
		if !made {
			p, made = build(), true
		}
		if p == nil {
			return nil, nil, false
		}
		return p.next()
	})
}

// A slab hands out byte slices carved from larger blocks, never reused:
// one allocation per 64 KiB rather than one per slice.
type slab struct{ block []byte }

// take returns n bytes, to append to from their start or to fill.
func (s *slab) take(n int) []byte {
	if cap(s.block)-len(s.block) < n {
		s.block = make([]byte, 0, max(n, 64<<10))
	}
	start := len(s.block)
	s.block = s.block[:start+n]
	return s.block[start : start+n : start+n]
}

// oneQuadIndex keeps one of Cayley's two quad indexes, [O,P,S], and drops
// [S,P], in a store that has both (every store Cayley initialised: they
// are its defaults). Lore reads neither to answer a query: out-edges and
// in-edges come from its own records and in-edge index. Cayley reads its
// indexes only to check that a quad it adds is new, or that one it
// removes exists, and [O,P,S] names a quad's IDs but its label, so the
// check reads a list of one quad (or one per key of a keyed edge); with
// [S,P] as well it also decoded every quad of the subject's predicate, and
// each commit that gave a node an out-edge rewrote that whole list. [S,P]
// was 12 of 229 MiB of a store of the 100k-node benchmark graph. A store
// with other indexes (not Cayley's defaults) is left as it is.
func oneQuadIndex(tx *bbolt.Tx) error {
	meta := tx.Bucket(cayleyMeta)
	if meta == nil {
		return nil
	}
	var inds []ckv.QuadIndex
	if err := json.Unmarshal(meta.Get(cayleyIndexesKey), &inds); err != nil {
		return nil // Cayley's own legacy default; left alone
	}
	sp := ckv.QuadIndex{Dirs: []quad.Direction{quad.Subject, quad.Predicate}}
	if len(inds) != 2 || !equalIndex(inds[0], sp) || !equalIndex(inds[1], opsIndex) {
		return nil
	}
	if err := tx.DeleteBucket([]byte("sp")); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return err
	}
	data, err := json.Marshal([]ckv.QuadIndex{opsIndex})
	if err != nil {
		return err
	}
	return meta.Put(cayleyIndexesKey, data)
}

// finishCayleyInit finishes an initialisation of Cayley's part that a
// process did not live to finish. Cayley's kv.Init writes its version and
// its list of quad indexes in two transactions; a store left between them
// has a version, so Init leaves it alone, and no list, so Cayley reads it
// as its legacy layout, with indexes on [S] and on [O] in buckets Init
// never made, and a bulk load cannot write Cayley's part itself (see
// quadLoad). Lore's Cayley part always has the list. Without one, the part
// holds no quads, and gets Lore's one index; if it holds some (written in
// that legacy layout by a Lore that did not mend it), Lore's meta marks it
// for the Open under way to rebuild from the records (metaQuadsPending).
func finishCayleyInit(tx *bbolt.Tx) error {
	meta := tx.Bucket(cayleyMeta)
	if meta == nil || meta.Get(cayleyIndexesKey) != nil {
		return nil
	}
	if log := tx.Bucket(bCayleyLog); log != nil {
		if k, _ := log.Cursor().First(); k != nil {
			lore, err := tx.CreateBucketIfNotExists(bMeta)
			if err != nil {
				return err
			}
			return lore.Put(metaQuadsPending, []byte{1})
		}
	}
	if err := tx.DeleteBucket([]byte("sp")); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return err
	}
	if _, err := tx.CreateBucketIfNotExists(bOPS); err != nil {
		return err
	}
	data, err := json.Marshal([]ckv.QuadIndex{opsIndex})
	if err != nil {
		return err
	}
	return meta.Put(cayleyIndexesKey, data)
}

// opsIndex is the quad index Lore keeps of Cayley's defaults.
var opsIndex = ckv.QuadIndex{Dirs: []quad.Direction{quad.Object, quad.Predicate, quad.Subject}}

func equalIndex(a, b ckv.QuadIndex) bool {
	return a.Unique == b.Unique && slices.Equal(a.Dirs, b.Dirs)
}

// appendLink appends the encoding of a quad's primitive without a
// timestamp, as proto.Marshal writes it (fields in order, zero fields
// left out), without its reflection.
func appendLink(b []byte, p *cproto.Primitive) []byte {
	for _, f := range [...]struct {
		num protowire.Number
		v   uint64
	}{{1, p.ID}, {2, p.Subject}, {3, p.Predicate}, {4, p.Object}, {5, p.Label}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, f.v)
		}
	}
	return b
}
