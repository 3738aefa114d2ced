package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// Each node's edge summary, how many edges of each label start and end at
// it, is kept in its record (nodeRec.Deg). Reading a node is then one
// lookup whatever its degree. The write path counts changes per node,
// direction and label under degKey, and folds them into the records as it
// commits (foldDeg).
//
// A bulk load defers its counts: it sums the changes of the commits that
// defer their index entries in memory, by node, in a degTally, and its
// last commit folds them into the records in one pass (or, in a load that
// rewrites its file, the rewrite as it begins: see loadRest.fold). The
// edges of a load touch nodes all over the store, so folding them at
// every commit would rewrite every page of records each time. Until then bDeg holds one key,
// degTallyKey, which tells readers (IncidentLabels) that the records'
// summaries are behind; it is empty otherwise. An interrupted load leaves
// the store marked, and Open rebuilds the summaries from the edge records.
//
// (Loads used to stage the sums in bDeg at each flush of the deferred
// entries, a node's summary per key. That cost a 300,000-node load a
// tenth of its CPU time, each edge counted under two degKeys through three
// maps and each flush reading and rewriting bDeg; and a staged sum could
// not go below zero, so a load that deleted edges its first commits had
// folded into the records failed.)

// degTallyKey is bDeg's one key while a load keeps its summaries in a
// degTally: no node ID holds a NUL.
var degTallyKey = []byte("\x00tally")

// markTally marks bDeg in tx: the summaries are in a load's degTally.
func markTally(tx *bbolt.Tx) error { return tx.Bucket(bDeg).Put(degTallyKey, nil) }

// A degTally sums a load's summary changes by node. It holds no pointers
// but its labels' (see idTable): a node's entries are a chain in ents.
type degTally struct {
	ids    *idTable
	first  []int32 // by node number: its first entry in ents, -1 if none
	ents   []tallyEntry
	labels nameTable
}

// A tallyEntry is one line of a node's tally.
type tallyEntry struct {
	n     int64
	next  int32 // the node's next entry in ents, -1 after its last
	label int32
	dir   byte
}

func newDegTally() *degTally {
	return &degTally{ids: newIDTable()}
}

// add adds n to the count of id's edges of label in direction dir.
func (t *degTally) add(id graph.ID, dir byte, label string, n int64) {
	l := t.labels.number(label)
	node, added := t.ids.add(string(id))
	if added {
		t.first = append(t.first, -1)
	}
	for e := t.first[node]; e >= 0; e = t.ents[e].next {
		if t.ents[e].label == l && t.ents[e].dir == dir {
			t.ents[e].n += n
			return
		}
	}
	t.ents = append(t.ents, tallyEntry{n: n, next: t.first[node], label: l, dir: dir})
	t.first[node] = int32(len(t.ents) - 1)
}

// forget drops what t holds of node id, which a commit deletes: its record
// goes, and its summary with it.
func (t *degTally) forget(id graph.ID) {
	if node, ok := t.ids.find(string(id)); ok {
		t.first[node] = -1
	}
}

// addEdge adds n edges k to the summaries of its two ends.
func (t *degTally) addEdge(k graph.EdgeKey, n int64) {
	t.add(k.From, 'o', k.Label, n)
	t.add(k.To, 'i', k.Label, n)
}

// entries appends the entries of the node numbered node to dst.
func (t *degTally) entries(node int32, dst []degEntry) []degEntry {
	for e := t.first[node]; e >= 0; e = t.ents[e].next {
		te := &t.ents[e]
		dst = append(dst, degEntry{label: t.labels.names[te.label], dir: te.dir, n: te.n})
	}
	return dst
}

// drain returns what t holds by node ID, and empties t.
func (t *degTally) drain() map[graph.ID][]degEntry {
	by := map[graph.ID][]degEntry{}
	for node := range int32(t.ids.len()) {
		if t.first[node] >= 0 {
			by[graph.ID(t.ids.id(node))] = t.entries(node, nil)
		}
	}
	*t = *newDegTally()
	return by
}

// A degEntry is one line of a summary: dir is 'o' (out) or 'i' (in).
type degEntry struct {
	label string
	dir   byte
	n     int64
}

// degCmp orders a summary as get_node shows it: by label, out before in.
func degCmp(a, b degEntry) int {
	if c := strings.Compare(a.label, b.label); c != 0 {
		return c
	}
	return int(b.dir) - int(a.dir) // 'o' > 'i'
}

// encodeDeg encodes a summary: per entry its direction, the label's length
// and bytes, and the count, as uvarints. Zero counts are dropped; an empty
// summary encodes as nil.
func encodeDeg(es []degEntry) []byte { return appendSummary(nil, es) }

// appendSummary appends the encoding of es to out (nil if es counts nothing
// and out is nil). It sorts es.
func appendSummary(out []byte, es []degEntry) []byte {
	slices.SortFunc(es, degCmp)
	for _, e := range es {
		if e.n == 0 {
			continue
		}
		out = append(out, e.dir)
		out = binary.AppendUvarint(out, uint64(len(e.label)))
		out = append(out, e.label...)
		out = binary.AppendUvarint(out, uint64(e.n))
	}
	return out
}

var errBadDeg = errors.New("edge summary does not decode")

func decodeDeg(v []byte) ([]degEntry, error) {
	var es []degEntry
	for len(v) > 0 {
		dir := v[0]
		l, n := binary.Uvarint(v[1:])
		if n <= 0 || (dir != 'o' && dir != 'i') || uint64(len(v)-1-n) < l {
			return nil, errBadDeg
		}
		v = v[1+n:]
		label := string(v[:l])
		v = v[l:]
		c, n := binary.Uvarint(v)
		if n <= 0 || c == 0 {
			return nil, errBadDeg
		}
		v = v[n:]
		es = append(es, degEntry{label: label, dir: dir, n: int64(c)})
	}
	return es, nil
}

// edgeCounts turns a summary into a node's Edges.
func edgeCounts(es []degEntry) []graph.EdgeCount {
	out := make([]graph.EdgeCount, len(es))
	for i, e := range es {
		dir := graph.In
		if e.dir == 'o' {
			dir = graph.Out
		}
		out[i] = graph.EdgeCount{Label: e.label, Direction: dir, Count: e.n}
	}
	return out
}

// splitDegKey splits a degKey into the node ID, the direction and the label.
func splitDegKey(k string) (graph.ID, byte, string) {
	i := strings.IndexByte(k, 0)
	return graph.ID(k[:i]), k[i+1], k[i+2:]
}

// foldDeg adds counter deltas keyed by degKey to the summaries of the node
// records in tx, and appends to ops the writes of the records it changes
// and of their degree index keys. recs are the records the commit writes anyway,
// each holding its committed summary: theirs are updated in place. The
// deltas of the nodes in gone, which the commit deletes, are dropped (and
// their index keys left to goneDegIdxOps). retyped maps the nodes the
// commit re-types to their old types: their index keys move to the new
// type. With a tally (a bulk load's last fold), its sums are added too,
// it is emptied, and so is bDeg.
func foldDeg(ops []kvOp, tx *bbolt.Tx, deltas map[string]int64, recs map[graph.ID]*nodeRec, gone map[graph.ID]bool, retyped map[graph.ID]string, tally *degTally) ([]kvOp, error) {
	ids, by := groupDeg(deltas)
	if tally != nil {
		for id, es := range by {
			for _, e := range es {
				tally.add(id, e.dir, e.label, e.n)
			}
		}
		by = tally.drain()
		ids = slices.Sorted(maps.Keys(by))
		ops = append(ops, kvOp{bucket: bDeg, del: true})
	}
	// A node writes its record and a degree index key per summary entry
	// (a delete too, where one changes): room for them at once, as a
	// load's last fold writes them for every node (at 1M nodes, growing
	// the slice a quarter at a time was 8.6 of its 15.7 s).
	entries := 0
	for _, id := range ids {
		entries += len(by[id])
	}
	ops = slices.Grow(ops, len(ids)+2*entries)
	nodes := tx.Bucket(bNodes)
	for _, id := range ids {
		if gone[id] {
			continue
		}
		rec, write := recs[id], false
		if rec == nil {
			v := nodes.Get([]byte(id))
			if v == nil {
				return nil, fmt.Errorf("edges counted for node %q, which does not exist: run lore check", id)
			}
			var err error
			if rec, err = decodeNodeRec(v); err != nil {
				return nil, corrupt(fmt.Sprintf("node %q", id), err)
			}
			write = true
		}
		old, cur, err := foldSummary(id, rec.Deg, by[id], nil)
		if err != nil {
			return nil, err
		}
		rec.Deg = encodeDeg(cur)
		oldType := rec.Type
		if t, ok := retyped[id]; ok {
			oldType = t
		}
		ops = append(ops, degIdxOps(id, oldType, old, rec.Type, cur)...)
		if write {
			ops = append(ops, kvOp{bucket: bNodes, key: []byte(id), val: rec.encode()})
		}
	}
	// A re-typed node whose summary does not change moves its keys.
	for id, oldType := range retyped {
		if _, ok := by[id]; ok || gone[id] || recs[id] == nil {
			continue
		}
		es, err := decodeDeg(recs[id].Deg)
		if err != nil {
			return nil, corrupt(fmt.Sprintf("edge summary of node %q", id), err)
		}
		ops = append(ops, degIdxOps(id, oldType, es, recs[id].Type, es)...)
	}
	return ops, nil
}

// foldSummary adds counts to node id's encoded summary deg, and returns
// the summary before and after; the one after is made in dst's memory.
func foldSummary(id graph.ID, deg []byte, add, dst []degEntry) (old, cur []degEntry, err error) {
	if old, err = decodeDeg(deg); err != nil {
		return nil, nil, corrupt(fmt.Sprintf("edge summary of node %q", id), err)
	}
	cur, err = addDeg(id, append(dst[:0], old...), add) // addDeg changes the entries: not old's
	return old, cur, err
}

// A nodeSource reads node records in key order from a bucket's cursor
// and, over them, from the merged runs of a nodeRuns (m, may be nil).
type nodeSource struct {
	c    *bbolt.Cursor
	m    *runMerge
	k, v []byte // the merge's next pair
	ok   bool   // whether it has one
}

// get returns id's key and record, or nils if neither holds it. Its ids
// must come in key order.
func (s *nodeSource) get(id []byte) (k, v []byte) {
	for s.ok && bytes.Compare(s.k, id) < 0 {
		s.k, s.v, s.ok = s.m.next()
	}
	if s.ok && bytes.Equal(s.k, id) {
		return s.k, s.v[1:] // after its flag: a nodeRuns puts, never deletes
	}
	if k, v := s.c.Seek(id); bytes.Equal(k, id) {
		return k, v
	}
	return nil, nil
}

// foldTally is foldDeg for a load that rewrites its file (loadRest.fold):
// it folds the tally t into the node records in tx, and returns what that
// writes, each a run of flagged pairs (runPut, runDel) made by appendPair
// in key order, with its number of pairs: the records it changes, and the
// degree index keys they move. The records are read in key order and
// written whole, never decoded, and the index keys are sorted by type,
// label, direction, count and ID before they are made, straight into
// their run. At 300,000 nodes, foldDeg's way (a kvOp per write, copied
// and sorted again into a run) cost 2.25 s of CPU; at 1M nodes,
// sorting made keys took 2.9 s, and making pairs to copy into runs 1.9 s.
// A node's record is the one in waiting, if it holds one (its flagged
// runs, latest first, as nodeRuns keeps them; may be nil), else tx's.
//
// The records go into runs of their own, one after another in key order:
// when the one being written is full, the next is made as large as the
// records so far say the rest will take, and a tenth more. (Growing one
// run instead copied it over and over: the records of the first types in
// key order can be smaller than the rest, and at 1M nodes the copies and
// their fresh memory cost 2.3 s of CPU.)
func foldTally(tx *bbolt.Tx, t *degTally, waiting *runSet) (nodes []foldRun, degIdx []byte, nDegIdx int, err error) {
	// The nodes with their counts, in key order: no map lookup per node.
	type tallied struct {
		id   []byte // in t's memory
		node int32
	}
	byID := make([]tallied, 0, t.ids.len())
	for node := range int32(t.ids.len()) {
		if t.first[node] >= 0 {
			byID = append(byID, tallied{t.ids.id(node), node})
		}
	}
	entries := len(t.ents)
	byID = sortByKey(byID, func(t *tallied) []byte { return t.id })
	// A degree index key to write: its prefix (type, label, direction) by
	// number, in prefixes (by rank, once they are ranked), its count, and
	// its node's place in byID, which is in key order. No pointers: at 1M
	// nodes, sorting 3 million keys that held their IDs took 2.9 s.
	type idxKey struct {
		n      int64
		node   int
		prefix int32
		del    bool
	}
	// A load into an empty store puts one key per entry and deletes none.
	keys := make([]idxKey, 0, entries+entries/8)
	type prefix struct {
		typ, label string
		dir        byte
	}
	var prefixes []prefix
	prefixOf := map[prefix]int32{}
	types := map[string]string{}
	var run foldRun     // the run of records being written
	written := 0        // the bytes of the records written
	var rec, deg []byte // scratch: a record, after its flag; a summary
	var sum []degEntry  // scratch: a summary
	recs := nodeSource{c: tx.Bucket(bNodes).Cursor()}
	if waiting != nil && waiting.n > 0 {
		recs.m = waiting.merge()
		recs.k, recs.v, recs.ok = recs.m.next()
	}
	var add []degEntry // scratch: a node's tally
	for node, tn := range byID {
		id := tn.id
		k, v := recs.get(id)
		if k == nil {
			return nil, nil, 0, fmt.Errorf("edges counted for node %q, which does not exist: run lore check", id)
		}
		view, err := parseNodeRec(v)
		if err != nil {
			return nil, nil, 0, corrupt(fmt.Sprintf("node %q", id), err)
		}
		add = t.entries(tn.node, add[:0])
		old, cur, err := foldSummary(graph.ID(id), view.deg, add, sum)
		if err != nil {
			return nil, nil, 0, err
		}
		typ, ok := types[string(view.typ)]
		if !ok {
			typ = string(view.typ)
			types[typ] = typ
		}
		// The keys of the entries whose count changes (degIdxOps).
		for i, es := range [2][]degEntry{old, cur} {
			for _, e := range es {
				if e.n == 0 || slices.Contains([2][]degEntry{cur, old}[i], e) {
					continue
				}
				p := prefix{typ, e.label, e.dir}
				pi, ok := prefixOf[p]
				if !ok {
					pi = int32(len(prefixes))
					prefixOf[p] = pi
					prefixes = append(prefixes, p)
				}
				keys = append(keys, idxKey{e.n, node, pi, i == 0})
			}
		}
		r := nodeRec{NodeRecord: graph.NodeRecord{Type: typ, Created: view.created, Updated: view.updated, Rev: view.rev, Props: view.props}}
		deg = appendSummary(deg[:0], cur)
		r.Deg, sum = deg, cur
		rec = r.appendTo(append(rec[:0], runPut))
		if need := 2*binary.MaxVarintLen32 + len(k) + len(rec); cap(run.data)-len(run.data) < need {
			if run.n > 0 {
				nodes = append(nodes, run)
			}
			// Room for every record left at the size of those so far,
			// and a tenth more.
			est := (written + need) * (len(byID) - node) / (node + 1)
			run = foldRun{data: make([]byte, 0, max(est+est/10, need))}
		}
		before := len(run.data)
		run.data = appendPair(run.data, k, rec)
		written += len(run.data) - before
		run.n++
	}
	if run.n > 0 {
		nodes = append(nodes, run)
	}
	// Order the prefixes as their bytes are ordered, then the keys.
	made := make([][]byte, len(prefixes))
	for i, p := range prefixes {
		made[i] = degIdxPrefix(p.typ, p.label, p.dir)
	}
	slices.SortFunc(made, bytes.Compare)
	rank := make([]int32, len(prefixes))
	for i, p := range prefixes {
		r, _ := slices.BinarySearchFunc(made, degIdxPrefix(p.typ, p.label, p.dir), bytes.Compare)
		rank[i] = int32(r)
	}
	size := 0
	for i := range keys {
		keys[i].prefix = rank[keys[i].prefix]
		size += 2 + len(made[keys[i].prefix]) + 8 + len(byID[keys[i].node].id) + binary.MaxVarintLen32
	}
	// By prefix, count and node. They come in node order, so a stable
	// sort by prefix and count does it: by radix, of the two as one number
	// (comparing them took 0.56 s of a 1M-node load's fold).
	order := make([]radixItem, len(keys))
	byRadix := len(keys) < math.MaxInt32 && len(prefixes) < 1<<15
	for i, k := range keys {
		if k.n < 0 || k.n >= 1<<48 {
			byRadix = false
			break
		}
		order[i] = radixItem{p: uint64(k.prefix)<<48 | uint64(k.n), i: int32(i)}
	}
	if byRadix {
		radixSort(order, make([]radixItem, len(order)))
	} else {
		slices.SortFunc(keys, func(a, b idxKey) int {
			if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
				return c
			}
			if c := cmp.Compare(a.n, b.n); c != 0 {
				return c
			}
			return cmp.Compare(a.node, b.node)
		})
		for i := range order {
			order[i].i = int32(i)
		}
	}
	degIdx = make([]byte, 0, size)
	put, del := []byte{runPut}, []byte{runDel}
	var key []byte // scratch
	for _, it := range order {
		k := keys[it.i]
		key = append(key[:0], made[k.prefix]...)
		key = binary.BigEndian.AppendUint64(key, uint64(k.n))
		key = append(key, byID[k.node].id...)
		if k.del {
			degIdx = appendPair(degIdx, key, del)
		} else {
			degIdx = appendPair(degIdx, key, put)
		}
	}
	*t = *newDegTally()
	return nodes, degIdx, len(keys), nil
}

// A foldRun is a run of node records foldTally writes: pairs made by
// appendPair in key order, and their number.
type foldRun struct {
	data []byte
	n    int
}

// groupDeg groups deltas keyed by degKey by node, and returns the nodes in
// key order.
func groupDeg(deltas map[string]int64) ([]graph.ID, map[graph.ID][]degEntry) {
	by := map[graph.ID][]degEntry{}
	var ids []graph.ID
	for k, n := range deltas {
		if n == 0 {
			continue
		}
		id, dir, label := splitDegKey(k)
		if _, ok := by[id]; !ok {
			ids = append(ids, id)
		}
		by[id] = append(by[id], degEntry{label: label, dir: dir, n: n})
	}
	slices.Sort(ids)
	return ids, by
}

// addDeg adds counts to a node's summary.
func addDeg(id graph.ID, cur, add []degEntry) ([]degEntry, error) {
	for _, a := range add {
		j := slices.IndexFunc(cur, func(e degEntry) bool { return e.label == a.label && e.dir == a.dir })
		if j < 0 {
			cur, j = append(cur, degEntry{label: a.label, dir: a.dir}), len(cur)
		}
		if cur[j].n += a.n; cur[j].n < 0 {
			return nil, fmt.Errorf("the %s-edge count of %q for %q would go negative: run lore check", dirName(a.dir), a.label, id)
		}
	}
	return cur, nil
}

func dirName(dir byte) string {
	if dir == 'o' {
		return "out"
	}
	return "in"
}

// summaries groups counts keyed by degKey into encoded summaries by node ID.
func summaries(counts map[string]int64) map[string][]byte {
	byNode := map[graph.ID][]degEntry{}
	for k, n := range counts {
		id, dir, label := splitDegKey(k)
		byNode[id] = append(byNode[id], degEntry{label: label, dir: dir, n: n})
	}
	out := make(map[string][]byte, len(byNode))
	for id, es := range byNode {
		if v := encodeDeg(es); v != nil {
			out[string(id)] = v
		}
	}
	return out
}
