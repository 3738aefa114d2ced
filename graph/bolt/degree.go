package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
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
// A bulk load defers its counts, and writes them at each deferred flush
// into bDeg, one entry per node keyed by its ID, instead of into the
// records: a flush comes every few hundred thousand entries, and the edges
// of a load touch nodes all over the store, so writing records would
// rewrite every page of them at each (stageDeg). Its last commit folds
// bDeg into the records in one pass, and empties it. bDeg is empty
// otherwise; an interrupted load leaves the store marked, and Open
// rebuilds the summaries from the edge records.

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
func encodeDeg(es []degEntry) []byte {
	slices.SortFunc(es, degCmp)
	var out []byte
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

// stageDeg adds counter deltas keyed by degKey to the summaries a bulk load
// stages in bDeg, and returns the writes that store them. It visits the
// nodes in key order, so a large flush reads bDeg's pages in order.
func stageDeg(tx *bbolt.Tx, deltas map[string]int64) ([]kvOp, error) {
	ids, by := groupDeg(deltas)
	b := tx.Bucket(bDeg)
	var ops []kvOp
	for _, id := range ids {
		cur, err := decodeDeg(b.Get([]byte(id)))
		if err != nil {
			return nil, corrupt(fmt.Sprintf("staged edge summary of node %q", id), err)
		}
		if cur, err = addDeg(id, cur, by[id]); err != nil {
			return nil, err
		}
		if v := encodeDeg(cur); v != nil {
			ops = append(ops, kvOp{bucket: bDeg, key: []byte(id), val: v})
		} else {
			ops = append(ops, kvOp{bucket: bDeg, key: []byte(id), del: true})
		}
	}
	return ops, nil
}

// foldDeg adds counter deltas keyed by degKey to the summaries of the node
// records in tx, and appends to ops the writes of the records it changes
// and of their degree index keys. recs are the records the commit writes anyway,
// each holding its committed summary: theirs are updated in place. The
// deltas of the nodes in gone, which the commit deletes, are dropped (and
// their index keys left to goneDegIdxOps). retyped maps the nodes the
// commit re-types to their old types: their index keys move to the new
// type. With staged, the summaries in bDeg are added too, and bDeg is
// emptied.
func foldDeg(ops []kvOp, tx *bbolt.Tx, deltas map[string]int64, recs map[graph.ID]*nodeRec, gone map[graph.ID]bool, retyped map[graph.ID]string, staged bool) ([]kvOp, error) {
	ids, by := groupDeg(deltas)
	if staged {
		c := tx.Bucket(bDeg).Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			es, err := decodeDeg(v)
			if err != nil {
				return nil, corrupt(fmt.Sprintf("staged edge summary of node %q", k), err)
			}
			id := graph.ID(k)
			if _, ok := by[id]; !ok {
				ids = append(ids, id)
			}
			by[id] = append(by[id], es...)
		}
		slices.Sort(ids)
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
		cur, err := decodeDeg(rec.Deg)
		if err != nil {
			return nil, corrupt(fmt.Sprintf("edge summary of node %q", id), err)
		}
		old := slices.Clone(cur) // addDeg changes cur's entries
		if cur, err = addDeg(id, cur, by[id]); err != nil {
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
