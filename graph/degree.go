package graph

import (
	"context"
	"encoding/json"
)

// A query reads a node's degrees (Degree) from the store's edge summaries
// through Degrees: one call per degree for a chunk of nodes where the
// executor has the chunk (a where over a chunk's results, orderBy, the
// page's return.degrees), one per node otherwise (a from.where or a
// step's where), each remembered for the rest of the call.

type degreeKey struct {
	id  ID
	key string
}

// degreesChunk is how many nodes one Degrees call reads.
const degreesChunk = 1024

// readDegrees reads the degrees ds of the nodes ids that the call has not
// read yet.
func (ex *executor) readDegrees(ids []ID, ds []*Degree) error {
	if ex.degs == nil {
		ex.degs = map[degreeKey]int64{}
	}
	for _, d := range ds {
		k := d.Key()
		var miss []ID
		for _, id := range ids {
			if _, ok := ex.degs[degreeKey{id, k}]; !ok {
				miss = append(miss, id)
			}
		}
		for i := 0; i < len(miss); i += degreesChunk {
			chunk := miss[i:min(i+degreesChunk, len(miss))]
			// Like fetchWith, it reads for nodes already paid for.
			n, err := Degrees(context.WithoutCancel(ex.b.ctx), ex.s, chunk, d.Edge, d.Direction)
			if err != nil {
				return err
			}
			for j, id := range chunk {
				ex.degs[degreeKey{id, k}] = n[j]
			}
		}
	}
	return nil
}

// nodeDegrees reads the degrees ds of nodes.
func (ex *executor) nodeDegrees(nodes []*Node, ds []*Degree) error {
	if len(ds) == 0 {
		return nil
	}
	ids := make([]ID, 0, len(nodes))
	for _, n := range nodes {
		if n != nil {
			ids = append(ids, n.ID)
		}
	}
	return ex.readDegrees(ids, ds)
}

// degree returns a node's degree d, reading it if the call has not; a
// store error is kept in ex.err, for the caller of the filter to return.
func (ex *executor) degree(id ID, d *Degree) (int64, bool) {
	if n, ok := ex.degs[degreeKey{id, d.Key()}]; ok {
		return n, true
	}
	if err := ex.readDegrees([]ID{id}, []*Degree{d}); err != nil {
		ex.err = err
		return 0, false
	}
	return ex.degs[degreeKey{id, d.Key()}], true
}

// A nodeRecord is a node as a query filter reads it: its fields, and its
// degrees, which the executor reads.
type nodeRecord struct {
	n  *Node
	ex *executor
}

func (r nodeRecord) field(name string) (any, bool) { return fieldValue(r.n, name) }

func (r nodeRecord) degree(d *Degree) (any, bool) {
	n, ok := r.ex.degree(r.n.ID, d)
	return json.Number(formatInt(n)), ok
}

// match reports whether n passes f, reading the degrees f needs.
func (ex *executor) match(f *filter, n *Node) bool {
	if f == nil {
		return true
	}
	return f.match(nodeRecord{n, ex})
}

// orderDegrees returns the degrees an order sorts by.
func orderDegrees(order []Order) []*Degree {
	var out []*Degree
	for _, o := range order {
		if o.Degree != nil {
			out = append(out, o.Degree)
		}
	}
	return out
}

// returnDegrees returns the degrees the query returns.
func (q *Query) returnDegrees() []*Degree {
	out := make([]*Degree, len(q.Return.Degrees))
	for i := range q.Return.Degrees {
		out[i] = &q.Return.Degrees[i]
	}
	return out
}

// project returns the requested fields of a node, and its degrees when
// the query returns them (read by nodeDegrees before).
func (ex *executor) project(n *Node) map[string]any {
	obj := project(n, ex.q.Return.Fields)
	if len(ex.q.Return.Degrees) > 0 {
		degs := make(map[string]int64, len(ex.q.Return.Degrees))
		for _, d := range ex.q.returnDegrees() {
			degs[d.Key()], _ = ex.degree(n.ID, d)
		}
		obj["degrees"] = degs
	}
	return obj
}
