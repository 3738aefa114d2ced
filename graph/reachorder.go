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
//
// A traversal of one hop from a few given nodes need not run first: the
// walk can test each entry by reading that node's edges back towards the
// start nodes (a probe), which costs the entry's degree rather than the
// start nodes'. The hub's 50 largest dependents (bench-pg) are then the
// first few hundred entries of the size index and their few edges each,
// not the hub's tens of thousands of edges. The start nodes' degrees
// (DegreeCounter) say how many nodes the traversal would reach; when the
// probe does not clearly cost less, or passes over more than the
// traversal would read, the traversal runs after all, as above, with the
// budget it needs still left.

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
	// probe: the traversal is one hop from the query's IDs (at most
	// maxProbeStarts, with no where), which collect then does not run:
	// it records the start nodes it read in starts, and readReached
	// probes or traverses.
	probe  bool
	starts []ID
	probed bool // a probe answered the page
}

// maxProbeStarts is how many start nodes a probe tests each entry
// against at most.
const maxProbeStarts = passSources

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
	f := q.From
	probe := len(steps) == 1 && last.Hops == (Hops{1, 1}) && last.edgeWhere == nil &&
		len(f.IDs) > 0 && len(f.IDs) <= maxProbeStarts && f.Type == "" && f.Search == "" && f.where == nil
	return &reachWalk{orderWalk: w, last: last, probe: probe}
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
	if ex.rw.probe {
		t, ok, err := ex.probeTest()
		if err != nil {
			return err
		}
		if ok {
			if ok, err := ex.walkReached(res, c, cur, t); err != nil || ok {
				ex.rw.probed = ok
				return err
			}
		}
		// The traversal collect left for the probe.
		if reached, _, err = ex.expand(ex.rw.starts, ex.rw.steps([]Step{ex.rw.last})); err != nil {
			return err
		}
		if ex.b.reason != "" || ex.cut {
			c.complete = false // page returns no page
			return nil
		}
	}
	if ok, err := ex.walkReached(res, c, cur, ex.setTest(reached)); err != nil || ok {
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

// A reachTest says which entries of a walk are nodes the traversal
// reaches, and what that costs.
type reachTest struct {
	// r is how many nodes the traversal reaches (for a probe, an upper
	// bound: the start nodes' degrees).
	r float64
	// traverse is what the traversal that a probe replaces costs, in
	// index entries (0: it ran), and edge what testing one entry costs
	// beyond walking it.
	traverse, edge float64
	// reserve is the budget the walk leaves unspent (for a probe, what
	// the traversal needs if the walk gives up).
	reserve float64
	// members returns the positions in ids of the nodes reached, and the
	// work it spent (charged to the budget); ok is false when that would
	// pass room, and the walk stops.
	members func(ids []ID, room float64) (at []int, work float64, ok bool, err error)
}

// setTest tests entries against what a complete traversal reached.
func (ex *executor) setTest(reached []ID) reachTest {
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
	return reachTest{r: float64(len(reached)), members: func(ids []ID, _ float64) ([]int, float64, bool, error) {
		var at []int
		for i, id := range ids {
			if member(id) {
				at = append(at, i)
			}
		}
		return at, 0, true, nil
	}}
}

// probeTest tests entries by reading their edges back towards the start
// nodes (see reachWalk). ok is false when the start nodes have so many
// edges that the traversal it may still need would not fit in the budget
// beside a probe.
func (ex *executor) probeTest() (reachTest, bool, error) {
	rw, b := ex.rw, ex.b
	labels, dir := []string(rw.last.Edge), rw.last.Direction
	degs, err := Degrees(b.ctx, ex.s, rw.starts, labels, dir)
	if err != nil {
		if ignoreDeadline(err) == nil {
			return reachTest{}, false, nil // the traversal meets the deadline too
		}
		return reachTest{}, false, err
	}
	var r float64
	for _, d := range degs {
		r += float64(d)
	}
	st, err := ex.storeStats()
	if err != nil {
		return reachTest{}, false, nil
	}
	// Probing an entry reads its edges back (about the edges with the
	// labels per node of the type, each way for both) after a seek, which
	// costs about what reading a node does.
	var edges int64
	if len(labels) == 0 {
		edges = st.Edges
	}
	for _, l := range labels {
		edges += st.EdgeLabels[l]
	}
	perNode := float64(edges) / float64(max(st.NodeTypes[rw.typ], 1))
	if dir == Both {
		perNode *= 2
	}
	if float64(b.remaining()) <= r {
		return reachTest{}, false, nil // no room beside what the traversal needs
	}
	starts := make(map[ID]bool, len(rw.starts))
	for _, id := range rw.starts {
		starts[id] = true
	}
	back := reverse(dir)
	return reachTest{r: r, traverse: r, edge: perNode + readCost, reserve: r, members: func(ids []ID, room float64) ([]int, float64, bool, error) {
		// An index of an array holds a node once per element: probe each
		// node once.
		nodes := slices.Clone(ids)
		slices.Sort(nodes)
		nodes = slices.Compact(nodes)
		reached := make(map[ID]bool)
		seek := float64(len(nodes)) * readCost
		if seek > room {
			return nil, 0, false, nil
		}
		work := 0 // edges read
		// see notes that the edge between self and other was read, and
		// reports false once the work passes room.
		see := func(self, other ID) bool {
			if work++; seek+float64(work) > room {
				return false
			}
			if other != self && starts[other] {
				reached[self] = true
			}
			return true
		}
		if adj, ok := ex.s.(Adjacency); ok {
			eq := EdgeQuery{Nodes: nodes, Labels: labels, Direction: back}
			// Bounded by room, as the walk is, it reads on past the deadline.
			err := adj.Adjacent(context.WithoutCancel(b.ctx), eq, func(i int, k EdgeKey) bool {
				other := k.From // the end that is not nodes[i], or it for a self-loop
				if other == nodes[i] {
					other = k.To
				}
				return see(nodes[i], other)
			})
			if err != nil {
				return nil, 0, false, err
			}
			if seek+float64(work) > room {
				return nil, 0, false, nil
			}
			b.spend(work) // within room: never a stop
		} else {
			// Through Store.Edges, paged as a traversal's level is; pageLevel
			// charges what it reads, which stays within room (it stops at
			// the deadline, unlike the walk: the traversal then meets it).
			whole, err := pageLevel(ex.s, b, nodes, labels, back, nil, int(room-seek), func(self, other ID, _ EdgeKey) bool { return see(self, other) })
			if err != nil {
				return nil, 0, false, err
			}
			if !whole || seek+float64(work) > room {
				return nil, 0, false, nil // the walk costs more than the other way, or the deadline passed
			}
		}
		var at []int
		for i, id := range ids {
			if reached[id] {
				at = append(at, i)
			}
		}
		return at, seek + float64(work), true, nil
	}}, true, nil
}

// walkReached reads the page by walking the index (see reachWalk), into
// c, testing its entries with t. It reports false, having read nothing
// into c, when the sort path must answer.
func (ex *executor) walkReached(res *QueryResult, c *collection, cur queryCursor, t reachTest) (bool, error) {
	rw, q, b := ex.rw, ex.q, ex.b
	if t.r == 0 {
		return true, nil
	}
	limit := ex.pageLimit(res)
	st, err := ex.storeStats()
	if err != nil {
		return false, nil // the sort path answers, and meets the deadline, if that was it
	}
	n, r := float64(max(st.NodeTypes[rw.typ], 1)), t.r
	// Without the walk: testing every node reached; for a probe, the
	// traversal, then the cheaper of that and a walk testing what it
	// reached.
	rest := r * readCost
	if t.traverse > 0 {
		rest = t.traverse + min(rest, float64(limit+1)*(n/r+readCost))
	}
	if float64(limit+1)*(n/r*(1+t.edge)+readCost) > rest/2 {
		return false, nil
	}
	if !ex.fewMeetLast(limit, n, r) {
		return false, nil
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
	bound := min(rest, float64(b.remaining())-t.reserve) // the walk stops past it
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
			size := min(int(float64(limit+1-len(page))*perResult*1.25)+16, MaxPageSize, int((bound-spent)/(1+t.edge)))
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
			all := make([]ID, len(entries))
			for i, e := range entries {
				all[i] = e.ID
			}
			at, work, ok, err := t.members(all, bound-spent)
			if err != nil || !ok {
				return false, err // !ok: the walk costs more than the other way
			}
			ids := make([]ID, len(at))
			for j, i := range at {
				ids[j] = all[i]
			}
			spent += work + float64(len(ids))*readCost
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
