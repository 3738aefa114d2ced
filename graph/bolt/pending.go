package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"sync"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// Once a bulk load defers (see deferredIndexes), each commit's in-edge
// index entries wait in a runSet (deferredIndexes.in), and so do its edge
// records if the load is all or nothing (deferredIndexes.edges): they are
// written when the load ends, merged into key order (flushPending, or,
// in an all-or-nothing load, straight into the rewritten file: see
// loadRest), instead of at scattered places in every commit. At 100k nodes, the
// in-edge index's entries were half of the bbolt writes of a load's
// commits; at 1M nodes, every commit rewrote most pages of the growing
// edge bucket (a third of the load's time went into writing pages out).
//
// Until then, readers do not see the load's deferred part's in-edges, as
// they do not see its search and property index entries, nor the edges
// themselves if they wait too. In an all-or-nothing load that rewrites
// its file, node records wait as well (nodeRuns), and readers do not see
// them until it ends. Planning reads waiting edge and node records
// (edgeRuns.overlay, nodeRuns.overlay); the planning of a batch that reads a node's edges
// (a node's delete or re-type) and the commit of one that removes edges
// have them written first. A load that dies leaves the store marked
// deferred, and the next Open rebuilds the index from the edge records;
// edge records wait only in an all-or-nothing load, which the next Open
// undoes.

// A runSet holds sorted runs of key-value pairs, one per commit: each
// pair is its key's length (a uvarint), the key, the value's length and
// the value. Where runs share a key, the latest run's value stands.
type runSet struct {
	runs []run
	n    int // pairs held
}

type run struct {
	data []byte
	offs []uint32 // where each pair starts in data, if the run is searched
}

// A kv is a pair for a runSet.
type kv struct{ k, v []byte }

// add adds a commit's pairs as a run; offsets says to keep where each
// starts, for find. It sorts pairs, whose keys are distinct: a commit
// writes an edge once.
func (r *runSet) add(pairs []kv, offsets bool) {
	if len(pairs) == 0 {
		return
	}
	if !slices.IsSortedFunc(pairs, func(a, b kv) int { return bytes.Compare(a.k, b.k) }) {
		pairs = sortByKey(pairs, kvKey)
	}
	size := 0
	for _, p := range pairs {
		size += 2*binary.MaxVarintLen32 + len(p.k) + len(p.v)
	}
	var rn run
	rn.data = make([]byte, 0, size)
	if offsets {
		rn.offs = make([]uint32, 0, len(pairs))
	}
	for _, p := range pairs {
		if offsets {
			rn.offs = append(rn.offs, uint32(len(rn.data)))
		}
		rn.data = appendPair(rn.data, p.k, p.v)
	}
	r.n += len(pairs)
	r.runs = append(r.runs, rn)
}

// appendPair appends a pair to a run's data.
func appendPair(data, k, v []byte) []byte {
	data = binary.AppendUvarint(data, uint64(len(k)))
	data = append(data, k...)
	data = binary.AppendUvarint(data, uint64(len(v)))
	return append(data, v...)
}

// addData adds a run of n pairs made by appendPair, in key order, each
// key once.
func (r *runSet) addData(data []byte, n int) {
	if n > 0 {
		r.n += n
		r.runs = append(r.runs, run{data: data})
	}
}

// pair reads the pair at the start of data, and returns the rest.
func pair(data []byte) (k, v, rest []byte) {
	n, w := binary.Uvarint(data)
	k, data = data[w:w+int(n)], data[w+int(n):]
	n, w = binary.Uvarint(data)
	return k, data[w : w+int(n)], data[w+int(n):]
}

// size returns the bytes its runs take.
func (r *runSet) size() int64 {
	var n int64
	for _, rn := range r.runs {
		n += int64(cap(rn.data)) + 4*int64(cap(rn.offs))
	}
	return n
}

// truncate drops the runs after the first n.
func (r *runSet) truncate(n int) {
	for _, rn := range r.runs[n:] {
		for d := rn.data; len(d) > 0; r.n-- {
			_, _, d = pair(d)
		}
	}
	clear(r.runs[n:])
	r.runs = r.runs[:n]
}

// find returns the value of key in the latest run that holds it. Each run
// must have its offsets.
func (r *runSet) find(key []byte) ([]byte, bool) {
	for i := len(r.runs) - 1; i >= 0; i-- {
		rn := r.runs[i]
		j := sort.Search(len(rn.offs), func(j int) bool {
			k, _, _ := pair(rn.data[rn.offs[j]:])
			return bytes.Compare(k, key) >= 0
		})
		if j < len(rn.offs) {
			if k, v, _ := pair(rn.data[rn.offs[j]:]); bytes.Equal(k, key) {
				return v, true
			}
		}
	}
	return nil, false
}

// A runCursor reads one run; age orders the runs' pairs of equal keys,
// the latest run's first.
type runCursor struct {
	rest, key, val []byte
	age            int
}

func (c *runCursor) next() bool {
	if len(c.rest) == 0 {
		return false
	}
	c.key, c.val, c.rest = pair(c.rest)
	return true
}

// A runMerge reads a runSet's pairs in key order, each key once, with the
// latest run's value. Its cursors play a tournament (a tree of losers):
// each pair read takes one comparison per level of the tree to find the
// next, where a heap took two (merging a 1M-node load's edge records and
// in-edge keys, some 115 runs each, took 1.3 s of CPU in the heap).
type runMerge struct {
	cur []*runCursor // by run; nil once read to its end
	// tree[1:] holds the loser of each match (an index into cur), the
	// leaves being cur's cursors at len(cur)+i; tree[0] the winner.
	tree []int
	last []byte
}

// merge returns the runs' pairs in key order. r must not change while it
// is read.
func (r *runSet) merge() *runMerge {
	k := len(r.runs)
	m := &runMerge{cur: make([]*runCursor, k), tree: make([]int, max(k, 1))}
	for i, rn := range r.runs {
		c := &runCursor{rest: rn.data, age: k - i}
		if c.next() {
			m.cur[i] = c
		}
	}
	if k == 0 {
		return m
	}
	// Play every match once, from the leaves up.
	win := make([]int, 2*k)
	for i := range k {
		win[k+i] = i
	}
	for n := k - 1; n >= 1; n-- {
		a, b := win[2*n], win[2*n+1]
		if m.less(b, a) {
			a, b = b, a
		}
		win[n], m.tree[n] = a, b
	}
	m.tree[0] = win[1]
	return m
}

// less reports whether cursor a's pair comes before b's: the smaller key,
// or of equal keys the later run's; a cursor at its end comes last.
func (m *runMerge) less(a, b int) bool {
	ca, cb := m.cur[a], m.cur[b]
	switch {
	case ca == nil:
		return false
	case cb == nil:
		return true
	}
	if c := bytes.Compare(ca.key, cb.key); c != 0 {
		return c < 0
	}
	return ca.age < cb.age
}

// next returns the next pair; its memory is the runs'.
func (m *runMerge) next() (k, v []byte, ok bool) {
	for len(m.cur) > 0 {
		w := m.tree[0]
		c := m.cur[w]
		if c == nil {
			return nil, nil, false // every cursor is at its end
		}
		k, v = c.key, c.val
		if !c.next() {
			m.cur[w] = nil
		}
		// Replay the winner's matches up to the root.
		for n := (w + len(m.cur)) / 2; n >= 1; n /= 2 {
			if m.less(m.tree[n], w) {
				m.tree[n], w = w, m.tree[n]
			}
		}
		m.tree[0] = w
		if m.last != nil && bytes.Equal(k, m.last) {
			continue // an earlier run's, which a later one replaced
		}
		m.last = k
		return k, v, true
	}
	return nil, nil, false
}

// write writes the runs into bucket in db, merged into key order,
// materializeChunk keys per transaction, and empties r. The caller has
// the store's writes to itself.
func (r *runSet) write(db *bbolt.DB, bucket []byte) error { return r.put(db, bucket, false) }

// writeFlagged is write for runs whose values start with a flag (runPut,
// runDel).
func (r *runSet) writeFlagged(db *bbolt.DB, bucket []byte) error { return r.put(db, bucket, true) }

func (r *runSet) put(db *bbolt.DB, bucket []byte, flagged bool) error {
	if packedBucket(bucket) {
		return r.putPacked(db, bucket, flagged)
	}
	m := r.merge()
	k, v, ok := m.next()
	for ok {
		err := updateDB(db, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucket)
			b.FillPercent = appendFill
			for n := 0; n < materializeChunk && ok; n++ {
				// The runs' memory outlives the transaction.
				var err error
				switch {
				case !flagged:
					err = b.Put(k, v)
				case v[0] == runDel:
					err = b.Delete(k)
				default:
					err = b.Put(k, v[1:])
				}
				if err != nil {
					return err
				}
				k, v, ok = m.next()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	*r = runSet{}
	return nil
}

// putPacked is put for a packed index: its writes go into their groups'
// blocks a group at a time (packedMerge), in transactions of about
// materializeChunk keys.
func (r *runSet) putPacked(db *bbolt.DB, bucket []byte, flagged bool) error {
	m := r.merge()
	k, v, ok := m.next()
	for ok {
		err := updateDB(db, func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucket)
			b.FillPercent = randomFill
			var group []packedWrite
			for n := 0; ok && (n < materializeChunk || len(group) > 0); n++ {
				// The runs' memory outlives the transaction.
				if len(group) > 0 && !samePackGroup(group[0].key, k) {
					if err := packedMerge(b, group); err != nil {
						return err
					}
					group = group[:0]
					if n >= materializeChunk {
						break
					}
				}
				group = append(group, packedWrite{key: k, del: flagged && v[0] == runDel})
				k, v, ok = m.next()
			}
			return packedMerge(b, group)
		})
		if err != nil {
			return err
		}
	}
	*r = runSet{}
	return nil
}

// edgeRuns holds the edge records an all-or-nothing bulk load defers:
// planning looks up the records of its batch's edges (overlay) while the
// commit before it adds a run. Such a load reads only the edges its input
// gives again (the others are known absent), so the hashes of the keys
// held, which spare a lookup in each run for a key not held, are made at
// the first lookup and kept from then on: a load without such edges does
// without them (at 1M nodes, 5.6M hashes were some 2 s of CPU).
type edgeRuns struct {
	mu   sync.Mutex
	seed maphash.Seed
	has  map[uint64]struct{} // the hash of every key held, once a lookup made it; nil before
	set  runSet
}

func newEdgeRuns() *edgeRuns {
	return &edgeRuns{seed: maphash.MakeSeed()}
}

// add adds a commit's edge records (keys and encoded records) as a run.
func (e *edgeRuns) add(recs []kv) {
	if len(recs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.has != nil {
		for _, p := range recs {
			e.has[maphash.Bytes(e.seed, p.k)] = struct{}{}
		}
	}
	e.set.add(recs, true)
}

// hash makes has from the runs held. The caller holds mu.
func (e *edgeRuns) hash() {
	e.has = make(map[uint64]struct{}, e.set.n)
	for _, rn := range e.set.runs {
		for d := rn.data; len(d) > 0; {
			var k []byte
			k, _, d = pair(d)
			e.has[maphash.Bytes(e.seed, k)] = struct{}{}
		}
	}
}

// runs returns how many runs it holds, for truncate.
func (e *edgeRuns) runs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.set.runs)
}

func (e *edgeRuns) truncate(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set.truncate(n) // the hashes of its keys stay, and find nothing
}

// overlay replaces recs[i] with the record of keys[i] that waits, if one
// does: a waiting record is later than the store's.
func (e *edgeRuns) overlay(keys []graph.EdgeKey, recs []*edgeRec) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.set.n == 0 || len(keys) == 0 {
		return nil
	}
	if e.has == nil {
		e.hash()
	}
	for i, k := range keys {
		kb := k.Bytes()
		if _, ok := e.has[maphash.Bytes(e.seed, kb)]; !ok {
			continue
		}
		if v, ok := e.set.find(kb); ok {
			r, err := decodeEdgeRec(v)
			if err != nil {
				return corrupt(fmt.Sprintf("edge %v, waiting to be written", k), err)
			}
			recs[i] = r
		}
	}
	return nil
}

// nodeRuns holds the node records an all-or-nothing bulk load that
// rewrites its file defers, each after a flag (runPut) as indexRuns keeps
// them, with each node's type by ID: planning looks up the types of its
// batch's endpoints (overlayTypes), and the records of the nodes its batch
// gives again (overlay). The load's end merges them into the rewritten
// file, under what the last fold of the edge summaries writes (see
// loadRest). Written in each commit instead, they were spread over the
// whole of the node bucket, so that each of a 1M-node load's node batches
// rewrote most of its pages.
type nodeRuns struct {
	mu sync.Mutex
	// The type of every node held: by the node's number in ids, the
	// type's in names (no pointers per node: see idTable).
	ids   *idTable
	types []int32
	names nameTable
	set   runSet
}

func newNodeRuns() *nodeRuns {
	return &nodeRuns{ids: newIDTable()}
}

// setType records that node id, held, is of type typ.
func (n *nodeRuns) setType(id, typ string) {
	t := n.names.number(typ)
	node, added := n.ids.add(id)
	if added {
		n.types = append(n.types, t)
	} else {
		n.types[node] = t
	}
}

// typeOf returns the type of node id, if it is held.
func (n *nodeRuns) typeOf(id string) (string, bool) {
	node, ok := n.ids.find(id)
	if !ok {
		return "", false
	}
	return n.names.names[n.types[node]], true
}

// add adds a commit's node records (IDs and flagged encoded records, of
// the given types) as a run.
func (n *nodeRuns) add(recs []kv, types []string) {
	if len(recs) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, p := range recs {
		n.setType(string(p.k), types[i])
	}
	n.set.add(recs, true)
}

// runs returns how many runs it holds, for truncate.
func (n *nodeRuns) runs() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.set.runs)
}

// truncate drops the runs after the first k, and the types of the nodes
// only they held.
func (n *nodeRuns) truncate(k int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if k == len(n.set.runs) {
		return
	}
	n.set.truncate(k)
	n.ids, n.types = newIDTable(), nil
	for _, rn := range n.set.runs {
		for d := rn.data; len(d) > 0; {
			var id, v []byte
			id, v, d = pair(d)
			// The records are the commits' own encoding: a type that does
			// not decode leaves the node to the file, where Check finds it.
			if t, err := decodeNodeType(v[1:]); err == nil {
				n.setType(string(id), t)
			}
		}
	}
}

// overlay replaces recs[i] with the record of ids[i] that waits, if one
// does: a waiting record is later than the store's.
func (n *nodeRuns) overlay(ids []graph.ID, recs []*nodeRec) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, id := range ids {
		if _, ok := n.typeOf(string(id)); !ok {
			continue
		}
		if v, ok := n.set.find([]byte(id)); ok {
			r, err := decodeNodeRec(v[1:])
			if err != nil {
				return corrupt(fmt.Sprintf("node %q, waiting to be written", id), err)
			}
			recs[i] = r
		}
	}
	return nil
}

// overlayTypes replaces types[i] with the type of the node ids[i] that
// waits, if one does.
func (n *nodeRuns) overlayTypes(ids []graph.ID, types []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ids.len() == 0 {
		return
	}
	for i, id := range ids {
		if t, ok := n.typeOf(string(id)); ok {
			types[i] = t
		}
	}
}

// flushPending writes a bulk load's waiting edge records and in-edge
// entries (see runSet), and empties them. The caller holds wmu, and no
// commit's preparation, nor any planning, is under way.
func (s *Store) flushPending() error {
	d := s.deferred
	if d == nil || !d.waits() {
		return nil
	}
	s.rw.Lock()
	defer s.rw.Unlock()
	return writeWaiting(s.db.DB(), d.nodes, d.edges, &d.in, d.df)
}

// waits reports whether anything the load holds for its end waits to be
// written (see writeWaiting).
func (d *deferredIndexes) waits() bool {
	return d.in.n > 0 || d.edges != nil && d.edges.runs() > 0 || d.nodes != nil && d.nodes.runs() > 0 || d.df.held()
}

// writeWaiting writes a load's waiting node and edge records (nodes and
// edges may be nil), in-edge entries and search term counts (df may be
// nil) into db, and empties them. The caller has the store's writes to
// itself.
func writeWaiting(db *bbolt.DB, nodes *nodeRuns, edges *edgeRuns, in *runSet, df *dfCounts) error {
	if err := df.write(db); err != nil {
		return err
	}
	if nodes != nil && nodes.set.n > 0 {
		nodes.mu.Lock()
		err := nodes.set.writeFlagged(db, bNodes)
		if err == nil {
			nodes.ids, nodes.types = newIDTable(), nil
		}
		nodes.mu.Unlock()
		if err != nil {
			return fmt.Errorf("writing the load's node records: %w", err)
		}
	}
	if edges != nil && edges.set.n > 0 {
		edges.mu.Lock()
		err := edges.set.write(db, bEdges)
		if err == nil {
			edges.has = nil // made again at the next lookup
		}
		edges.mu.Unlock()
		if err != nil {
			return fmt.Errorf("writing the load's edge records: %w", err)
		}
	}
	if err := in.write(db, bIn); err != nil {
		return fmt.Errorf("writing the load's in-edge index: %w", err)
	}
	return nil
}

// hashedKey is about what edgeRuns.has spends on a key, once made: 8 bytes
// and its control byte in a table up to 7/8 full, which doubles as it
// grows.
const hashedKey = 16

// held returns the bytes of what a bulk load holds in memory to write at
// its end, which spill writes: its waiting node records (with their types
// by ID), edge records (with the hashes of their keys) and in-edge entries, its index runs, and what its
// quadLoad keeps back of Cayley's index and log. Not the rest the load
// keeps until its end: its tally of edge summaries, its quadLoad's values
// (which the load looks up until it ends), and its deferred entries not
// yet drained, which DeferFlush bounds. The caller holds wmu, and no
// commit is under way.
func (s *Store) held() int64 {
	d := s.deferred
	n := d.in.size() + d.df.size()
	if d.nodes != nil {
		d.nodes.mu.Lock()
		n += d.nodes.set.size() + d.nodes.ids.size() + 4*int64(cap(d.nodes.types))
		d.nodes.mu.Unlock()
	}
	if d.edges != nil {
		d.edges.mu.Lock()
		n += d.edges.set.size() + hashedKey*int64(len(d.edges.has))
		d.edges.mu.Unlock()
	}
	if d.idx != nil {
		for b := range d.idx.sets {
			n += d.idx.sets[b].size()
		}
	}
	if s.qload != nil {
		n += s.qload.held()
	}
	return n
}

// spill writes what a bulk load holds for its end (see held) into the
// file, if it holds more than Config.LoadBuffer, as a load that keeps its
// file would write it at its end (flushPending, indexRuns.write,
// quadLoad.materialize), and lets it go: the load goes on from an empty
// hold. It holds rw's write side while it writes; the caller holds wmu,
// and no commit nor planning is under way (planning reads waiting edge
// records from the runs, and would miss those that moved into the file).
//
// An all-or-nothing load that spills is still undone whole if it fails
// (undoLoad empties the store); its end merges into the new file only
// what it held since the last spill, and the file holds the rest. Cayley's
// part of any bulk load is marked pending again afterwards (materialize
// clears the mark), as the quadLoad goes on keeping some back.
func (s *Store) spill() error {
	if s.deferred == nil || s.loadBuffer < 0 || s.held() <= s.loadBuffer {
		return nil
	}
	d, db := s.deferred, s.db.DB()
	s.rw.Lock()
	defer s.rw.Unlock()
	if err := writeWaiting(db, d.nodes, d.edges, &d.in, d.df); err != nil {
		return err
	}
	if d.idx != nil {
		if err := d.idx.write(db); err != nil {
			return err
		}
	}
	if s.qload != nil {
		if err := s.qload.materialize(db); err != nil {
			return fmt.Errorf("writing Cayley's part of the load: %w", err)
		}
		err := updateDB(db, func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(metaQuadsPending, []byte{1}) })
		if err != nil {
			return err
		}
	}
	s.spills++
	return nil
}

// removesEdges reports whether a plan removes an edge.
func removesEdges(p *graph.Plan) bool {
	for _, op := range p.Edges {
		if op.New == nil {
			return true
		}
	}
	return false
}

// indexBuckets are the buckets of the index entries a bulk load defers in
// chunks (deferredIndexes.add), and of what its last fold of the edge
// summaries writes (node records and degree index keys, see foldTally), in
// the order indexRuns keeps them.
var indexBuckets = [...][]byte{bType, bProp, bTok, bDegIdx, bNodes}

// indexBucket returns the place of bucket in indexBuckets, or -1.
func indexBucket(bucket []byte) int {
	return slices.IndexFunc(indexBuckets[:], func(b []byte) bool { return bytes.Equal(b, bucket) })
}

// The flag that starts a value in an indexRuns run: the pair puts its
// value, or deletes its key.
const (
	runPut byte = 0
	runDel byte = 1
)

// indexRuns holds, in an all-or-nothing bulk load that rewrites its file,
// the type, property and search index entries each drain of the deferred
// entries would write, and the node records and degree index keys of its
// last fold of the edge summaries (foldTally, as the rewrite begins): a run
// per bucket and drain (or fold), each value after a flag (runPut, runDel). They are merged into the
// rewritten file (loadRest), not written into the old one. In a 1M-node
// load, each of the ten commits that drained wrote 510,000 to 600,000
// entries, most of them spread over the whole of the three index buckets,
// so each rewrote most of their pages (0.9 to 6.5 s, growing with them);
// the last fold rewrote every node record and wrote 3.2 million degree
// index keys in one transaction. No planning reads them: the load's
// batches read node records, but the last fold comes after the last one.
type indexRuns struct {
	sets [len(indexBuckets)]runSet
}

// add adds one drain's writes (buckets of indexBuckets), chunk by
// chunk in the order they were made: the last write of each key stands.
func (x *indexRuns) add(chunks [][]kvOp) {
	var by [len(indexBuckets)][]kv
	var n [len(indexBuckets)]int
	bucketOf := func(op *kvOp) int {
		if b := indexBucket(op.bucket); b >= 0 {
			return b
		}
		panic(fmt.Sprintf("bolt: a deferred write to bucket %q", op.bucket))
	}
	for _, c := range chunks {
		for i := range c {
			n[bucketOf(&c[i])]++
		}
	}
	for b := range by {
		by[b] = make([]kv, 0, n[b])
	}
	var mem slab
	put, del := []byte{runPut}, []byte{runDel} // shared: runSet.add copies values
	for _, c := range chunks {
		for i := range c {
			op := &c[i]
			v := del
			switch {
			case op.del:
			case len(op.val) == 0:
				v = put
			default:
				v = append(mem.take(1 + len(op.val))[:0], runPut)
				v = append(v, op.val...)
			}
			b := bucketOf(op)
			by[b] = append(by[b], kv{op.key, v})
		}
	}
	for b, ws := range by {
		ws = sortByKey(ws, kvKey) // stable: the writes of a key stay in order
		pairs := make([]kv, 0, len(ws))
		for i, w := range ws {
			if i+1 < len(ws) && bytes.Equal(ws[i+1].k, w.k) {
				continue // a later write of the key stands
			}
			pairs = append(pairs, w)
		}
		x.sets[b].add(pairs, false)
	}
}

func (x *indexRuns) mark() (m [len(indexBuckets)]int) {
	for b := range x.sets {
		m[b] = len(x.sets[b].runs)
	}
	return m
}

// truncate drops the runs added since m.
func (x *indexRuns) truncate(m [len(indexBuckets)]int) {
	for b := range x.sets {
		x.sets[b].truncate(m[b])
	}
}

// write writes the runs into db, as the drains would have, and empties x.
// The caller has the store's writes to itself.
func (x *indexRuns) write(db *bbolt.DB) error {
	for b := range x.sets {
		if err := x.sets[b].writeFlagged(db, indexBuckets[b]); err != nil {
			return fmt.Errorf("writing the load's index entries: %w", err)
		}
	}
	return nil
}

// dfCounts holds what an all-or-nothing load that rewrites its file
// changes of the search index's term counts (dfKey), by how much: a term
// count per token and type, a million of them at 1M nodes of the benchmark
// graph (each package's name is a token of its own), which each node
// batch's commit read and wrote all over Lore's meta bucket. A commit adds
// its changes once it has committed (commitPlan.df); the load's end
// merges them into the new file (source), or writes them (write). Nothing
// reads them meanwhile but searches, which see the counts of the commits
// before the load held them back.
type dfCounts struct {
	// The changes by key: keys numbers them, by holds them by number. A
	// change that comes to zero stays, at zero; nonzero counts those that
	// do not. No pointers (see idTable): at 1M nodes, a map of them held
	// 800,000 strings for the collector to mark at every cycle.
	keys    *idTable
	by      []int64
	nonzero int
}

func newDFCounts() *dfCounts { return &dfCounts{keys: newIDTable()} }

// add adds a commit's changes.
func (c *dfCounts) add(changes map[string]int64) {
	for k, n := range changes {
		i, added := c.keys.add(k)
		if added {
			c.by = append(c.by, 0)
		}
		was := c.by[i]
		c.by[i] += n
		switch {
		case was == 0 && c.by[i] != 0:
			c.nonzero++
		case was != 0 && c.by[i] == 0:
			c.nonzero--
		}
	}
}

// held reports whether it holds a change.
func (c *dfCounts) held() bool { return c != nil && c.nonzero > 0 }

// size returns the bytes it holds.
func (c *dfCounts) size() int64 {
	if c == nil {
		return 0
	}
	return c.keys.size() + 8*int64(cap(c.by))
}

// counts returns the counts as they are to be, in key order: the counts
// in tx, changed. Each value is flagged: runPut and the count, or runDel
// for a count that comes to zero.
func (c *dfCounts) counts(tx *bbolt.Tx) ([]kv, error) {
	type count struct {
		k []byte // in c's memory
		n int64
	}
	all := make([]count, 0, c.nonzero)
	for i, n := range c.by {
		if n != 0 {
			all = append(all, count{c.keys.id(int32(i)), n})
		}
	}
	all = sortByKey(all, func(c *count) []byte { return c.k })
	// The counts in tx, read in key order beside them: a seek only where
	// tx holds keys before the next count's (a load's first batches may
	// have written some; at 1M nodes, a Get per count took 1 s).
	cur := tx.Bucket(bMeta).Cursor()
	mk, mv := cur.Seek([]byte(dfPrefix))
	out := make([]kv, 0, len(all))
	var mem slab
	for _, e := range all {
		k := e.k // read only, as long as c holds it
		if mk != nil && bytes.Compare(mk, k) < 0 {
			mk, mv = cur.Seek(k)
		}
		n := e.n
		if mk != nil && bytes.Equal(mk, k) && len(mv) == 8 {
			n += int64(binary.BigEndian.Uint64(mv))
		}
		switch {
		case n < 0:
			return nil, fmt.Errorf("counter %q in %s would go negative: run lore check", e.k, bMeta)
		case n == 0:
			out = append(out, kv{k, []byte{runDel}})
		default:
			v := mem.take(9)
			v[0] = runPut
			binary.BigEndian.PutUint64(v[1:], uint64(n))
			out = append(out, kv{k, v})
		}
	}
	return out, nil
}

// source returns the counts as they are to be (see counts) as a flagged
// source for writeFile.
func (c *dfCounts) source(db *bbolt.DB) (pairSource, error) {
	var counts []kv // their memory is their own, not the transaction's
	if err := db.View(func(tx *bbolt.Tx) (err error) { counts, err = c.counts(tx); return err }); err != nil {
		return nil, err
	}
	return sourceFunc(func() (k, v []byte, ok bool) {
		if len(counts) == 0 {
			return nil, nil, false
		}
		p := counts[0]
		counts = counts[1:]
		return p.k, p.v, true
	}), nil
}

// write writes the counts into db, materializeChunk per transaction, and
// empties c. The caller has the store's writes to itself.
func (c *dfCounts) write(db *bbolt.DB) error {
	if !c.held() {
		return nil
	}
	var counts []kv
	if err := db.View(func(tx *bbolt.Tx) (err error) { counts, err = c.counts(tx); return err }); err != nil {
		return err
	}
	for len(counts) > 0 {
		chunk := counts[:min(len(counts), materializeChunk)]
		counts = counts[len(chunk):]
		err := updateDB(db, func(tx *bbolt.Tx) error {
			meta := tx.Bucket(bMeta)
			for _, p := range chunk {
				var err error
				if p.v[0] == runDel {
					err = meta.Delete(p.k)
				} else {
					err = meta.Put(p.k, p.v[1:])
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("writing the load's search term counts: %w", err)
		}
	}
	*c = *newDFCounts()
	return nil
}
