package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Each node's edge summary, how many edges of each label start and end at
// it, is one bDeg entry keyed by the node ID. Reading a node is then two
// lookups, its record and its summary, whatever its degree. The write path
// counts changes per node, direction and label under degKey, and folds
// them into the summaries as it commits.

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
func edgeCounts(es []degEntry) []EdgeCount {
	out := make([]EdgeCount, len(es))
	for i, e := range es {
		dir := In
		if e.dir == 'o' {
			dir = Out
		}
		out[i] = EdgeCount{Label: e.label, Direction: dir, Count: e.n}
	}
	return out
}

// splitDegKey splits a degKey into the node ID, the direction and the label.
func splitDegKey(k string) (ID, byte, string) {
	i := strings.IndexByte(k, 0)
	return ID(k[:i]), k[i+1], k[i+2:]
}

// foldDeg applies counter deltas keyed by degKey to the summaries in tx,
// and returns the writes that store the new summaries. It visits the nodes
// in key order, so a large fold reads bDeg's pages in order.
func foldDeg(tx *bolt.Tx, deltas map[string]int64) ([]kvOp, error) {
	keys := make([]string, 0, len(deltas))
	for k, n := range deltas {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // a degKey starts with the node ID and a NUL: one node's keys are adjacent
	b := tx.Bucket(bDeg)
	var ops []kvOp
	for i := 0; i < len(keys); {
		id, _, _ := splitDegKey(keys[i])
		cur, err := decodeDeg(b.Get([]byte(id)))
		if err != nil {
			return nil, corrupt(fmt.Sprintf("node %q", id), err)
		}
		for ; i < len(keys); i++ {
			kid, dir, label := splitDegKey(keys[i])
			if kid != id {
				break
			}
			j := slices.IndexFunc(cur, func(e degEntry) bool { return e.label == label && e.dir == dir })
			if j < 0 {
				cur, j = append(cur, degEntry{label: label, dir: dir}), len(cur)
			}
			if cur[j].n += deltas[keys[i]]; cur[j].n < 0 {
				return nil, fmt.Errorf("the %s-edge count of %q for %q would go negative: run lore check", dirName(dir), label, id)
			}
		}
		if v := encodeDeg(cur); v != nil {
			ops = append(ops, kvOp{bucket: bDeg, key: []byte(id), val: v})
		} else {
			ops = append(ops, kvOp{bucket: bDeg, key: []byte(id), del: true})
		}
	}
	return ops, nil
}

func dirName(dir byte) string {
	if dir == 'o' {
		return "out"
	}
	return "in"
}

// summaries groups counts keyed by degKey into encoded summaries by node ID.
func summaries(counts map[string]int64) map[string][]byte {
	byNode := map[ID][]degEntry{}
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
