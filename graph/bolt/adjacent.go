package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// The traversal primitives of graph's optional interfaces (Adjacency,
// DegreeCounter, AdjacentCounter). They read the edge records (a node's
// out-edges, keyed from, label, to, key) and the in-edge index (its
// in-edges, keyed to, label, from, key) in key order, and the edge
// summaries in the node records, never Cayley's quads: a node's edges of
// one label and direction are one seek and a scan of adjacent keys.

// Adjacent calls f for the edges of q.Nodes, in the order of Edges (after
// q.After's place, if set), without building an Edge for each: the only
// allocation per edge is the ID of the node at the other end (and the
// key, for a keyed edge).
func (s *Store) Adjacent(ctx context.Context, q graph.EdgeQuery, f func(int, graph.EdgeKey) bool) error {
	dir, err := graph.ParseDirection(string(q.Direction))
	if err != nil {
		return err
	}
	labels, err := graph.KnownLabels(s.Model(), q.Labels)
	if err != nil {
		return err
	}
	after, resume, err := graph.EdgeQueryPlace(q)
	if err != nil {
		return err
	}
	return s.read(func(tx *bbolt.Tx) error {
		// Only the buckets the query reads are opened.
		var out, in keyCursor
		if dir != graph.In {
			out = boltKeys{tx.Bucket(bEdges).Cursor()}
		}
		if dir != graph.Out {
			in = newPackedCursor(tx.Bucket(bIn))
		}
		var nodes *bbolt.Bucket
		if len(labels) > 2 {
			nodes = tx.Bucket(bNodes)
		}
		var prefix []byte
		var present []degEntry
		for i, node := range q.Nodes {
			if resume && i < after.Node {
				continue
			}
			if i%64 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			// With several labels, the node's summary says which of them
			// it has edges of: the others cost no seek.
			present = present[:0]
			if len(labels) > 2 {
				v := nodes.Get([]byte(node))
				if v == nil {
					continue
				}
				if present, err = appendDeg(present, v); err != nil {
					return corrupt(fmt.Sprintf("node %q", node), err)
				}
			}
			for _, label := range labels {
				for _, d := range [2]byte{'o', 'i'} {
					if d == 'o' && dir == graph.In || d == 'i' && dir == graph.Out {
						continue
					}
					if len(labels) > 2 && !slices.ContainsFunc(present, func(e degEntry) bool { return e.dir == d && e.label == label }) {
						continue
					}
					// At the node of q.After's place, its listings before the
					// place's are passed over, and its own starts after it.
					from := resume && i == after.Node
					if from && (label < after.Label || label == after.Label && d == 'o' && after.In) {
						continue
					}
					from = from && label == after.Label && (d == 'i') == after.In
					c := out
					if d == 'i' {
						c = in
					}
					prefix = append(append(append(append(prefix[:0], node...), 0), label...), 0)
					seek := prefix
					if from {
						seek = append(slices.Clip(prefix), after.Other...)
						if after.Key != "" {
							seek = append(append(seek, 0), after.Key...)
						}
					}
					for k := c.Seek(seek); k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
						other, key := splitAdjKey(k[len(prefix):])
						if from && (other < string(after.Other) || other == string(after.Other) && key <= after.Key) {
							continue // at or before the place
						}
						ek := graph.EdgeKey{From: node, Label: label, To: graph.ID(other), Key: key}
						if d == 'i' {
							if dir == graph.Both && other == string(node) {
								continue // a self-loop, listed among the out-edges
							}
							ek.From, ek.To = ek.To, ek.From
						}
						if !f(i, ek) {
							return nil
						}
					}
					if err := cursorErr(c); err != nil {
						return err
					}
				}
			}
		}
		return nil
	})
}

// appendDeg appends the entries of a node record's edge summary to es,
// without decoding the rest of the record.
func appendDeg(es []degEntry, rec []byte) ([]degEntry, error) {
	raw, err := recordDeg(rec)
	if err != nil {
		return nil, err
	}
	for len(raw) > 0 {
		dir := raw[0]
		l, n := binary.Uvarint(raw[1:])
		if n <= 0 || (dir != 'o' && dir != 'i') || uint64(len(raw)-1-n) < l {
			return nil, errBadDeg
		}
		raw = raw[1+n:]
		label := raw[:l]
		raw = raw[l:]
		c, n := binary.Uvarint(raw)
		if n <= 0 || c == 0 {
			return nil, errBadDeg
		}
		raw = raw[n:]
		es = append(es, degEntry{label: string(label), dir: dir, n: int64(c)})
	}
	return es, nil
}

// recordDeg returns the encoded edge summary inside a node record (a
// slice of it), nil for a record of the version that had none.
func recordDeg(b []byte) ([]byte, error) {
	if len(b) == 0 || !nodeVersionOK(b[0]) {
		return nil, errCorrupt
	}
	version := b[0]
	b = b[1:]
	n, k := binary.Uvarint(b) // the type
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, errCorrupt
	}
	b = b[k+int(n):]
	for range 3 { // created, updated, revision
		_, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errCorrupt
		}
		b = b[k:]
	}
	if version != nodeRecordVersion {
		return nil, nil
	}
	n, k = binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return nil, errCorrupt
	}
	return b[k : k+int(n)], nil
}

// recordDegree sums the counts of a node record's edge summary with the
// given labels (sorted) in direction dir, without decoding the rest of the
// record or building a string per entry.
func recordDegree(rec []byte, labels []string, dir graph.Direction) (int64, error) {
	raw, err := recordDeg(rec)
	if err != nil {
		return 0, err
	}
	var n int64
	for len(raw) > 0 {
		d := raw[0]
		l, k := binary.Uvarint(raw[1:])
		if k <= 0 || (d != 'o' && d != 'i') || uint64(len(raw)-1-k) < l {
			return 0, errBadDeg
		}
		raw = raw[1+k:]
		label := raw[:l]
		raw = raw[l:]
		c, k := binary.Uvarint(raw)
		if k <= 0 || c == 0 {
			return 0, errBadDeg
		}
		raw = raw[k:]
		if d == 'o' && dir == graph.In || d == 'i' && dir == graph.Out {
			continue
		}
		if hasLabel(labels, label) {
			n += int64(c)
		}
	}
	return n, nil
}

// hasLabel reports whether labels (sorted) hold label.
func hasLabel(labels []string, label []byte) bool {
	lo, hi := 0, len(labels)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if labels[m] < string(label) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(labels) && labels[lo] == string(label)
}

// Degrees returns the degree of each node from its edge summary: one
// record read per node, whatever its degree.
func (s *Store) Degrees(ctx context.Context, ids []graph.ID, labels []string, dir graph.Direction) ([]int64, error) {
	dir, err := graph.ParseDirection(string(dir))
	if err != nil {
		return nil, err
	}
	if labels, err = graph.KnownLabels(s.Model(), labels); err != nil {
		return nil, err
	}
	out := make([]int64, len(ids))
	err = s.read(func(tx *bbolt.Tx) error {
		nodes := tx.Bucket(bNodes)
		for i, id := range ids {
			v := nodes.Get([]byte(id))
			if v == nil {
				continue
			}
			var err error
			if out[i], err = recordDegree(v, labels, dir); err != nil {
				return corrupt(fmt.Sprintf("node %q", id), err)
			}
		}
		return nil
	})
	return out, err
}

// CountAdjacent counts the nodes adjacent to id. When the edge summary
// proves the count (the edges asked for are of one label that is not
// keyed, in one direction, so no two lead to the same node), it is the
// summary's count, less a self-loop; otherwise it reads the keys of the
// edges asked for (never their records), and counts distinct other ends.
func (s *Store) CountAdjacent(ctx context.Context, id graph.ID, labels []string, dir graph.Direction, maxWork int) (n, work int, complete bool, err error) {
	if err := id.Check(); err != nil {
		return 0, 0, false, err
	}
	dir, err = graph.ParseDirection(string(dir))
	if err != nil {
		return 0, 0, false, err
	}
	if labels, err = graph.KnownLabels(s.Model(), labels); err != nil {
		return 0, 0, false, err
	}
	err = s.read(func(tx *bbolt.Tx) error {
		work = 1
		v := tx.Bucket(bNodes).Get([]byte(id))
		if v == nil {
			complete = true
			return nil
		}
		all, err := appendDeg(nil, v)
		if err != nil {
			return corrupt(fmt.Sprintf("node %q", id), err)
		}
		var streams []degEntry // the summary's entries asked for
		for _, e := range all {
			if e.dir == 'o' && dir == graph.In || e.dir == 'i' && dir == graph.Out {
				continue
			}
			if _, ok := slices.BinarySearch(labels, e.label); ok {
				streams = append(streams, e)
			}
		}
		if len(streams) == 0 {
			complete = true
			return nil
		}
		if et, _ := s.Model().Edge(streams[0].label); len(streams) == 1 && !et.Keyed {
			// One edge per other end; a self-loop counts in both
			// directions, so only a node with edges of the label both
			// ways can have one.
			n = int(streams[0].n)
			if slices.ContainsFunc(all, func(e degEntry) bool { return e.label == streams[0].label && e.dir != streams[0].dir }) {
				work++
				if tx.Bucket(bEdges).Get(graph.EdgeKey{From: id, Label: streams[0].label, To: id}.Bytes()) != nil {
					n--
				}
			}
			complete = true
			return nil
		}
		// Read the keys. One stream lists its other ends in order, so a
		// change of other end is a new node; several need a set.
		var set map[string]struct{}
		if len(streams) > 1 {
			set = make(map[string]struct{})
		}
		var prefix []byte
		for _, e := range streams {
			var c keyCursor = boltKeys{tx.Bucket(bEdges).Cursor()}
			if e.dir == 'i' {
				c = newPackedCursor(tx.Bucket(bIn))
			}
			prefix = append(append(append(append(prefix[:0], id...), 0), e.label...), 0)
			var last []byte
			for k := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
				if work >= maxWork {
					return nil
				}
				if work++; work%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				other := k[len(prefix):]
				if i := bytes.IndexByte(other, 0); i >= 0 {
					other = other[:i]
				}
				switch {
				case string(other) == string(id):
				case set != nil:
					if _, ok := set[string(other)]; !ok {
						set[string(other)] = struct{}{}
					}
				case !bytes.Equal(other, last):
					n++
				}
				last = append(last[:0], other...) // k's memory may be the cursor's
			}
			if err := cursorErr(c); err != nil {
				return err
			}
		}
		if set != nil {
			n = len(set)
		}
		complete = true
		return nil
	})
	return n, work, complete, err
}

// NodeTypes returns the type of each node, "" for a missing one, reading
// only the head of its record.
func (s *Store) NodeTypes(ctx context.Context, ids []graph.ID) ([]string, error) {
	var out []string
	err := s.read(func(tx *bbolt.Tx) error {
		var err error
		out, err = (&boltSnap{s: s, tx: tx}).NodeTypes(ctx, ids)
		return err
	})
	return out, err
}
