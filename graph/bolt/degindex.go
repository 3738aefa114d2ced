package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// The degree index (bDegIdx) holds one key per node, label and direction
// whose edge summary counts a nonzero number of edges:
//
//	type NUL label NUL dir count(8 bytes, big-endian) ID -> ""
//
// so a type's nodes are ordered by that count, then by ID; the keys are
// packed in blocks (see packKeys), those of one type, label and
// direction apart from the others. The commit that
// changes a summary changes its keys (foldDeg); a node's delete or re-type
// removes or moves them (degIdxOps). A bulk load writes them when it folds
// its tallied summaries into the records; rebuildDerived writes them all.

// degIdxPrefix is the prefix of the keys of one type, label and direction.
func degIdxPrefix(typ, label string, dir byte) []byte {
	k := make([]byte, 0, len(typ)+len(label)+3)
	k = append(k, typ...)
	k = append(k, 0)
	k = append(k, label...)
	return append(k, 0, dir)
}

func degIdxKey(typ, label string, dir byte, n int64, id graph.ID) []byte {
	k := degIdxPrefix(typ, label, dir)
	k = binary.BigEndian.AppendUint64(k, uint64(n))
	return append(k, id...)
}

// degIdxKeys returns the degree index keys of a node of type typ with
// summary es.
func degIdxKeys(typ string, id graph.ID, es []degEntry) [][]byte {
	out := make([][]byte, 0, len(es))
	for _, e := range es {
		if e.n > 0 {
			out = append(out, degIdxKey(typ, e.label, e.dir, e.n, id))
		}
	}
	return out
}

// degIdxOps returns the writes that move a node's degree index keys from
// its old summary under oldType to its new one under newType: a delete of
// each old key that is not a new one, a put of each new key that was not
// an old one (so that no key is written twice in one commit).
func degIdxOps(id graph.ID, oldType string, old []degEntry, newType string, cur []degEntry) []kvOp {
	was, now := degIdxKeys(oldType, id, old), degIdxKeys(newType, id, cur)
	var ops []kvOp
	for _, k := range diffKeys(was, now) {
		ops = append(ops, kvOp{bucket: bDegIdx, key: k, del: true})
	}
	for _, k := range diffKeys(now, was) {
		ops = append(ops, kvOp{bucket: bDegIdx, key: k})
	}
	return ops
}

// goneDegIdxOps returns the deletes of the degree index keys of the nodes
// a commit deletes, from their committed records in tx.
func goneDegIdxOps(tx *bbolt.Tx, gone map[graph.ID]bool) ([]kvOp, error) {
	nodes := tx.Bucket(bNodes)
	var ops []kvOp
	for id := range gone {
		v := nodes.Get([]byte(id))
		if v == nil {
			continue
		}
		rec, err := decodeNodeRec(v)
		if err != nil {
			return nil, corrupt(fmt.Sprintf("node %q", id), err)
		}
		es, err := decodeDeg(rec.Deg)
		if err != nil {
			return nil, corrupt(fmt.Sprintf("edge summary of node %q", id), err)
		}
		ops = append(ops, degIdxOps(id, rec.Type, es, "", nil)...)
	}
	return ops, nil
}

// RankByDegree reads a page of the degree index (see graph.DegreeRanker).
// Highest first, it visits the counts from the top, and reads each count's
// keys forward, so that ties come by ID: two seeks per count it visits.
func (s *Store) RankByDegree(ctx context.Context, q graph.DegreeQuery) ([]graph.DegreeEntry, error) {
	if _, err := graph.KnownType(s.Model(), q.Type); err != nil {
		return nil, err
	}
	if _, ok := s.Model().Edge(q.Label); !ok {
		return nil, fmt.Errorf("unknown edge label %q: %w", q.Label, graph.ErrInvalid)
	}
	var dir byte
	switch q.Direction {
	case graph.Out:
		dir = 'o'
	case graph.In:
		dir = 'i'
	default:
		return nil, fmt.Errorf("a degree index is by direction out or in, not %q: %w", q.Direction, graph.ErrInvalid)
	}
	lo, hi := max(q.Min, 1), q.Max
	if hi <= 0 {
		hi = math.MaxInt64
	}
	limit := graph.Page{Limit: q.Limit}.Size()
	prefix := degIdxPrefix(q.Type, q.Label, dir)
	out := []graph.DegreeEntry{}
	err := s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bDegIdx))
		// group reads the keys of count n after ID after (from the first
		// with after ""), until the page is full.
		group := func(n int64, after graph.ID) {
			start := degIdxKey(q.Type, q.Label, dir, n, after)
			k := c.Seek(start)
			if after != "" && bytes.Equal(k, start) {
				k = c.Next()
			}
			for ; k != nil && len(out) < limit && bytes.HasPrefix(k, prefix) && len(k) >= len(prefix)+8; k = c.Next() {
				if int64(binary.BigEndian.Uint64(k[len(prefix):])) != n {
					return
				}
				out = append(out, graph.DegreeEntry{ID: graph.ID(k[len(prefix)+8:]), Degree: n})
			}
		}
		if !q.Desc {
			n, after := lo, graph.ID("")
			if a := q.After; a != nil && a.Degree >= lo {
				n, after = a.Degree, a.ID
			}
			for n <= hi && len(out) < limit {
				if err := ctx.Err(); err != nil {
					return err
				}
				group(n, after)
				// The next count: the first key past this count's.
				if n == math.MaxInt64 {
					break
				}
				k := c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(n+1)))
				if k == nil || !bytes.HasPrefix(k, prefix) {
					break
				}
				n, after = int64(binary.BigEndian.Uint64(k[len(prefix):])), ""
			}
			return c.err
		}
		top := hi
		if a := q.After; a != nil {
			if a.Degree < lo {
				return nil
			}
			if a.Degree <= hi {
				group(a.Degree, a.ID)
				top = a.Degree - 1
			}
		}
		for top >= lo && len(out) < limit {
			if err := ctx.Err(); err != nil {
				return err
			}
			// The highest count at or below top: the key before the first
			// past it.
			var k []byte
			if top == math.MaxInt64 {
				k = c.Seek(append(bytes.Clone(prefix), 0x80))
			} else {
				k = c.Seek(binary.BigEndian.AppendUint64(bytes.Clone(prefix), uint64(top+1)))
			}
			if k == nil {
				k = c.Last()
			} else {
				k = c.Prev()
			}
			if k == nil || !bytes.HasPrefix(k, prefix) || len(k) < len(prefix)+8 {
				break
			}
			n := int64(binary.BigEndian.Uint64(k[len(prefix):]))
			if n < lo {
				break
			}
			group(n, "")
			top = n - 1
		}
		return c.err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
