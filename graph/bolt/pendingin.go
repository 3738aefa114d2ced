package bolt

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"slices"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// pendingIn holds the in-edge index entries of a bulk load's commits once
// it defers (see deferredIndexes): one run per commit, its keys sorted,
// each after its length (a uvarint). They are written when the load ends,
// merged into key order (flushPendingIn), instead of at scattered places
// in every commit: at 100k nodes, the in-edge index's entries were half of
// the bbolt writes of a load's commits. Until then, readers do not see the
// in-edges of the load's deferred part, as they do not see its search and
// property index entries; the planning of a batch that reads in-edges (a
// node's delete or re-type) and the commit of one that removes edges have
// them written first. A load that dies leaves the store marked deferred,
// and the next Open rebuilds the index from the edge records.
type pendingIn struct {
	runs [][]byte
	n    int // keys held
}

// add adds a commit's keys as a run. It sorts keys.
func (p *pendingIn) add(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, bytes.Compare)
	size := 0
	for _, k := range keys {
		size += binary.MaxVarintLen32 + len(k)
	}
	run := make([]byte, 0, size)
	for _, k := range keys {
		run = binary.AppendUvarint(run, uint64(len(k)))
		run = append(run, k...)
	}
	p.runs = append(p.runs, run)
	p.n += len(keys)
}

// truncate drops the runs after the first n.
func (p *pendingIn) truncate(n int) {
	for _, run := range p.runs[n:] {
		for r := run; len(r) > 0; p.n-- {
			k, w := binary.Uvarint(r)
			r = r[w+int(k):]
		}
	}
	clear(p.runs[n:])
	p.runs = p.runs[:n]
}

// A runCursor reads one run.
type runCursor struct {
	run []byte
	key []byte
}

func (c *runCursor) next() bool {
	if len(c.run) == 0 {
		return false
	}
	n, k := binary.Uvarint(c.run)
	c.key, c.run = c.run[k:k+int(n)], c.run[k+int(n):]
	return true
}

type runHeap []*runCursor

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return bytes.Compare(h[i].key, h[j].key) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runCursor)) }
func (h *runHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// flushPendingIn writes a bulk load's pending in-edge entries in key
// order, materializeChunk keys per transaction, and empties them. The
// caller holds wmu, and no commit's preparation is under way.
func (s *Store) flushPendingIn() error {
	d := s.deferred
	if d == nil || d.in.n == 0 {
		return nil
	}
	h := make(runHeap, 0, len(d.in.runs))
	for _, run := range d.in.runs {
		c := &runCursor{run: run}
		if c.next() {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	s.rw.Lock()
	defer s.rw.Unlock()
	for h.Len() > 0 {
		err := s.db.DB().Update(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bIn)
			b.FillPercent = appendFill
			for n := 0; n < materializeChunk && h.Len() > 0; n++ {
				c := h[0]
				// The runs' memory outlives the transaction.
				if err := b.Put(c.key, []byte{}); err != nil {
					return err
				}
				if c.next() {
					heap.Fix(&h, 0)
				} else {
					heap.Pop(&h)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	d.in = pendingIn{}
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
