package graph

import (
	"bytes"
	"cmp"
	"context"
	"math"
	"slices"
	"time"
)

// Index-ordered traversals. A query that traverses and orders its
// results by one property that their type indexes (the last step's
// type, or the one type its edges lead to) may read its page by walking
// that index in the order asked and keeping the entries whose node the
// traversal reached, instead of reading every node reached to test and
// sort it. The traversal runs as always, except that its last step keeps
// every node it reaches: the step's type and where, and the query's
// where, are tested on the nodes the walk meets, and the walk stops once
// the page is full. A page so read is the page the sort path returns,
// with the same cursor (the last result's sort key and ID, from which
// the next page's walk resumes), so the two paths answer pages of one
// paging alike.
//
// The walk pays when the traversal reaches many of the type's nodes:
// when every node reached is a result, about type size ÷ reached entries
// hold one. Once the traversal is complete, the engine estimates what
// the walk costs against testing every node reached (readCost index
// entries each), and walks only when that is clearly less. An indexed
// condition of the last step that few nodes meet reads less by its index
// (indexFilter): the engine counts its entries, as far as it takes to
// tell, and then leaves the page to the sort path. A walk that passes
// over more than testing every node would cost stops, and the sort path
// answers; so it does when the walk ends before the page is full and
// results may lie past it (orderWalk.complete), or when the cursor's
// last result lies past it.

// readCost is what reading one node to test it costs, in index entries
// walked (bolt: a node read from its key is a seek, an entry mostly the
// cursor's next key).
const readCost = 4

// A reachWalk is how a traversal ordered by an indexed property may read
// its page.
type reachWalk struct {
	*orderWalk
	last Step // the query's last step, which the traversal runs without its type and where
	used bool // the walk answered the page
}

// planReachWalk returns how the query's traversal may read its page from
// an index, or nil when it may not: it traverses, orders by one property
// that the one type its results can have indexes (orderWalkOf), and
// neither counts, groups nor returns paths.
func (ex *executor) planReachWalk(steps []Step) *reachWalk {
	q := ex.q
	if len(steps) == 0 || q.GroupBy != nil || q.Return.Count || q.Return.Paths || len(q.OrderBy) != 1 {
		return nil
	}
	last := steps[len(steps)-1]
	types, ok := stepTypes(ex.s.Model(), &last)
	if !ok || len(types) != 1 {
		return nil
	}
	w := ex.orderWalkOf(types[0], q.OrderBy[0], last.where, q.where)
	if w == nil {
		return nil
	}
	return &reachWalk{orderWalk: w, last: last}
}

// steps returns the traversal to run: the query's, its last step keeping
// every node it reaches.
func (rw *reachWalk) steps(steps []Step) []Step {
	out := slices.Clone(steps)
	last := &out[len(out)-1]
	last.Type, last.Where, last.where = "", nil, nil
	return out
}

// addReached records the nodes a chunk reached, untested (see
// reachWalk); a node that several chunks reached is recorded once for
// each.
func (ex *executor) addReached(c *collection, found []ID) {
	c.ids = append(c.ids, found...)
}

// readReached turns what a complete traversal reached (c.ids, untested)
// into the collection page pages through: the page's results, read by
// walking the index, or every result, read by testing every node reached.
// An ordered query's cursor pages from its start (checkPaging), so the
// collection is one segment.
func (ex *executor) readReached(res *QueryResult, c *collection, cur queryCursor) error {
	if !c.complete {
		return nil // page returns no page: a partial order is not the order
	}
	reached := c.ids
	c.ids = nil
	seg := cmp.Or(c.unit, c.tail)
	defer func() { seg.from, seg.to = 0, len(c.ids) }()
	if ok, err := ex.walkReached(res, c, reached, cur); err != nil || ok {
		return err
	}
	kept, err := ex.keepStep(&ex.rw.last, reached)
	if err != nil {
		return err
	}
	if err := ex.add(c, kept, false, nil, nil); err != nil { // a node several chunks reached is in kept once for each
		return err
	}
	if ex.cut {
		c.complete = false
	}
	return nil
}

// walkReached reads the page by walking the index (see reachWalk), into
// c. It reports false, having read nothing into c, when the sort path
// must answer.
func (ex *executor) walkReached(res *QueryResult, c *collection, reached []ID, cur queryCursor) (bool, error) {
	rw, q, b := ex.rw, ex.q, ex.b
	if len(reached) == 0 {
		return true, nil
	}
	limit := ex.pageLimit(res)
	st, err := ex.s.Stats(b.ctx)
	if err != nil {
		return false, nil // the sort path answers, and meets the deadline, if that was it
	}
	n, r := float64(max(st.NodeTypes[rw.typ], 1)), float64(len(reached))
	testAll := r * readCost // testing every node reached, in index entries
	if float64(limit+1)*(n/r+readCost) > testAll/2 {
		return false, nil
	}
	if !ex.fewMeetLast(limit, n, r) {
		return false, nil
	}
	// What one hop from one node reached comes sorted (oneHop): it is
	// searched, rather than copied into a set.
	var member func(ID) bool
	if slices.IsSorted(reached) {
		member = func(id ID) bool { _, ok := slices.BinarySearch(reached, id); return ok }
	} else {
		in := make(map[ID]bool, len(reached))
		for _, id := range reached {
			in[id] = true
		}
		member = func(id ID) bool { return in[id] }
	}
	var pos *walkPos // the last entry passed: the walk goes on after it
	if cur.ID != "" {
		enc, ok := EncodeIndexValue(cur.after[0])
		if cur.after[0] == nil || !ok {
			return false, nil // the last result was past the walk
		}
		pos = &walkPos{V: enc, I: cur.ID}
	}
	iw := ex.s.(IndexWalker)
	read := ex.s.Nodes
	if pr, ok := ex.s.(PropsReader); ok {
		props := rw.last.where.props(q.readProps())
		read = func(ctx context.Context, ids []ID) ([]*Node, error) { return pr.NodesProps(ctx, ids, props) }
	}
	filterDegrees := append(rw.last.where.degrees(), q.where.degrees()...)
	bound := min(testAll, float64(b.remaining())) // the walk stops past it
	spent := 0.0
	type found struct {
		id  ID
		key []any
	}
	var page []found
	more := false
	walked := 0        // entries walked
	perResult := n / r // entries walked per result, as far as the walk can tell
	ranges := slices.Clone(rw.ranges)
	if rw.desc {
		slices.Reverse(ranges)
	}
walk:
	for _, rg := range ranges {
		if pos != nil && (!rw.desc && rg.hi != nil && bytes.Compare(pos.V, rg.hi) >= 0 || rw.desc && rg.lo != nil && bytes.Compare(pos.V, rg.lo) < 0) {
			continue // the position is past this stretch
		}
		for {
			if time.Now().After(ex.hardStop) {
				ex.cut, c.complete = true, false
				return true, nil
			}
			size := min(int(float64(limit+1-len(page))*perResult*1.25)+16, MaxPageSize, int(bound-spent))
			if size <= 0 {
				return false, nil // the walk costs more than testing every node reached
			}
			iwq := IndexWalk{Type: rw.typ, Property: rw.prop, From: rg.lo, To: rg.hi, Desc: rw.desc, Limit: size}
			if pos != nil {
				iwq.AfterValue, iwq.AfterID = pos.V, pos.I
			}
			// Like fetchWith, the walk reads on after the deadline, up to
			// the hard stop: it reads at most what testing every node
			// reached would.
			entries, err := iw.WalkIndex(context.WithoutCancel(b.ctx), iwq)
			if err != nil {
				return false, err
			}
			b.spend(len(entries)) // within b.remaining(): never a stop
			spent += float64(len(entries))
			walked += len(entries)
			var ids []ID
			var at []int
			for i, e := range entries {
				if member(e.ID) {
					ids = append(ids, e.ID)
					at = append(at, i)
				}
			}
			spent += float64(len(ids)) * readCost
			nodes, err := read(context.WithoutCancel(b.ctx), ids)
			if err != nil {
				return false, err
			}
			if err := ex.nodeDegrees(nodes, filterDegrees); err != nil {
				return false, err
			}
			for j, nd := range nodes {
				if nd == nil || nd.Type != rw.typ || !ex.match(rw.last.where, nd) || !ex.match(q.where, nd) {
					continue
				}
				key := ex.sortKey(q.OrderBy, nd)
				// An entry of a value the node no longer has, or of an
				// array's element, is not where orderBy puts the node.
				if enc, ok := EncodeIndexValue(key[0]); key[0] == nil || !ok || !bytes.Equal(enc, entries[at[j]].Value) {
					continue
				}
				if len(page) == limit {
					more = true
					break walk
				}
				page = append(page, found{nd.ID, key})
			}
			if ex.err != nil {
				return false, ex.err
			}
			if len(entries) > 0 {
				e := entries[len(entries)-1]
				pos = &walkPos{e.Value, e.ID}
			}
			if len(entries) < size {
				break // the stretch is done
			}
			if len(page) > 0 {
				perResult = float64(walked) / float64(len(page))
			} else {
				perResult = max(perResult, float64(walked)) // none yet: at least as many again
			}
		}
	}
	if !more && !rw.complete {
		return false, nil // results may lie past the walk: the sort path finds them
	}
	rw.used = true
	c.more = more
	for _, f := range page {
		c.ids = append(c.ids, f.id)
		c.keys[f.id] = f.key
	}
	return true, nil
}

// fewMeetLast reports whether no indexed condition of the last step is
// met by so few nodes that reading its entries (indexFilter) and testing
// the nodes reached among them reads less than the walk. With e entries,
// those cost e × (1 + r/n × readCost) against the walk's (limit+1) × n/r
// × n/e: it counts each condition's entries up to where the two meet.
// The entries counted are charged to the budget; when it cannot pay for
// them, it reports false.
func (ex *executor) fewMeetLast(limit int, n, r float64) bool {
	rw, b := ex.rw, ex.b
	nt, ok := ex.s.Model().Node(rw.typ)
	if !ok {
		return false
	}
	plans := indexPlans(rw.typ, func(p string) bool { return p != rw.prop && nt.IsIndexed(p) }, rw.last.where)
	even := int(n*math.Sqrt(float64(limit+1)/(r*(1+r/n*readCost)))) + 1
	for _, p := range plans {
		count := 0
		for _, iq := range p.queries {
			for count <= even {
				iq.Limit = min(even+1-count, MaxPageSize)
				if iq.Limit > b.remaining() {
					return false
				}
				page, err := ex.s.Lookup(context.WithoutCancel(b.ctx), iq)
				if err != nil {
					return false
				}
				b.spend(len(page.IDs))
				count += len(page.IDs)
				if page.Next == "" {
					break
				}
				iq.After = page.Next
			}
		}
		if count <= even {
			return false
		}
	}
	return true
}
