package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// A query that orders a whole type by one degree (one label, out or in)
// and traverses nothing reads the store's degree index (DegreeRanker) in
// that order and stops once the page is full, instead of reading every
// node's edge summary and sorting them: top-k by degree costs k index
// entries and k nodes, whatever the size of the type. The index lists the
// nodes with a nonzero degree; those with none come after them (before
// them in ascending order), read from the type index by ID, each checked
// against its summary.
//
// Its pages are those of the plain ordered path (collect, then page): the
// same order, the same cursor (the last result's sort key and ID), so a
// cursor of one continues on the other. Unlike that path, a bound that
// stops the scan leaves a correct prefix of the page; its cursor continues
// after the last entry the scan examined, so a retry makes progress even
// when a filter passed none of them.

// degreeOrder describes a query the degree index can order.
type degreeOrder struct {
	d      *Degree
	desc   bool
	lo, hi int64 // the degree range the filters allow (hi: math.MaxInt64 for none)
}

// degreeOrderPlan reports whether the query is one the degree index
// orders, and how.
func (ex *executor) degreeOrderPlan(steps []Step) (degreeOrder, bool) {
	q := ex.q
	_, ranker := ex.s.(DegreeRanker)
	_, lister := ex.s.(TypeIDLister)
	if !ranker || !lister || len(steps) > 0 || q.GroupBy != nil || q.Return.Count || q.From.Type == "" || q.From.Search != "" || len(q.From.IDs) > 0 || len(q.OrderBy) != 1 {
		return degreeOrder{}, false
	}
	o := q.OrderBy[0]
	if o.Degree == nil || len(o.Degree.Edge) != 1 || o.Degree.Direction != In && o.Degree.Direction != Out {
		return degreeOrder{}, false
	}
	p := degreeOrder{d: o.Degree, desc: o.Desc, hi: math.MaxInt64}
	for _, f := range []*filter{q.From.where, q.where} {
		p.narrow(f)
	}
	return p, true
}

// narrow lowers the range to what the conditions on the degree that f
// requires allow (every one of them, and of its "and" filters).
func (p *degreeOrder) narrow(f *filter) {
	if f == nil {
		return
	}
	for _, g := range f.and {
		p.narrow(g)
	}
	for _, c := range f.conds {
		if c.deg == nil || c.deg.Key() != p.d.Key() {
			continue
		}
		v, ok := toFloat(c.val)
		if !ok || math.IsNaN(v) {
			continue
		}
		v = max(min(v, math.MaxInt64/2), -1)
		switch c.op {
		case "gte":
			p.lo = max(p.lo, int64(math.Ceil(v)))
		case "gt":
			p.lo = max(p.lo, int64(math.Floor(v))+1)
		case "lte":
			p.hi = min(p.hi, int64(math.Floor(v)))
		case "lt":
			p.hi = min(p.hi, int64(math.Ceil(v))-1)
		case "eq":
			p.lo, p.hi = max(p.lo, int64(math.Ceil(v))), min(p.hi, int64(math.Floor(v)))
		}
	}
}

// A degreeScan reads the type's nodes in the order's sequence: the index
// (nonzero degrees) and the zero degrees, in the order's turn.
type degreeScan struct {
	ex    *executor
	p     degreeOrder
	zeros bool         // reading the nodes of degree 0 (else the index)
	at    *DegreeEntry // the last entry examined (nil: none yet)
	end   bool
}

// newDegreeScan starts the scan after the cursor's entry, if any.
func (ex *executor) newDegreeScan(p degreeOrder, after *DegreeEntry) *degreeScan {
	sc := &degreeScan{ex: ex, p: p, at: after}
	hasZeros, hasIndex := p.lo <= 0 && p.hi >= 0, p.hi >= max(p.lo, 1)
	switch {
	case !hasZeros && !hasIndex:
		sc.end = true
	case p.desc:
		sc.zeros = !hasIndex || after != nil && after.Degree == 0
	default:
		sc.zeros = hasZeros && (after == nil || after.Degree == 0)
	}
	return sc
}

// next returns the next entries, up to n, within the work budget; fewer
// at the end (sc.end) or when the budget stopped it.
func (sc *degreeScan) next(n int) ([]DegreeEntry, error) {
	b := sc.ex.b
	k := min(n, b.remaining(), typePage)
	if k <= 0 || !b.ok() {
		b.stop(ReasonWork)
		return nil, nil
	}
	if sc.zeros {
		es, err := sc.nextZeros(k)
		return es, sc.failed(err)
	}
	q := DegreeQuery{Type: sc.ex.q.From.Type, Label: sc.p.d.Edge[0], Direction: sc.p.d.Direction, Desc: sc.p.desc,
		Min: max(sc.p.lo, 1), Max: sc.p.hi, Limit: k}
	if sc.at != nil && sc.at.Degree > 0 {
		q.After = sc.at
	}
	es, err := sc.ex.s.(DegreeRanker).RankByDegree(b.ctx, q)
	if err != nil {
		return nil, sc.failed(err)
	}
	b.spend(len(es))
	if len(es) > 0 {
		sc.at = &es[len(es)-1]
	}
	if len(es) < k {
		// The index is done: the zero degrees follow it, highest first.
		if sc.p.desc && sc.p.lo <= 0 {
			sc.zeros = true
		} else {
			sc.end = true
		}
	}
	return es, nil
}

// failed handles a store error of the scan: a deadline stops the work.
func (sc *degreeScan) failed(err error) error {
	if err != nil && ignoreDeadline(err) == nil {
		sc.ex.b.stop(ReasonDeadline)
		return nil
	}
	return err
}

// nextZeros reads up to k more nodes of the type by ID, and returns those
// whose degree is 0.
func (sc *degreeScan) nextZeros(k int) ([]DegreeEntry, error) {
	ex, b := sc.ex, sc.ex.b
	after := ""
	if sc.at != nil && sc.at.Degree == 0 {
		after = string(sc.at.ID)
	}
	page, err := ex.s.(TypeIDLister).NodeIDsByType(b.ctx, ex.q.From.Type, Page{After: after, Limit: k})
	if err != nil {
		return nil, err
	}
	b.spend(len(page.IDs))
	if err := ex.readDegrees(page.IDs, []*Degree{sc.p.d}); err != nil {
		return nil, err
	}
	var out []DegreeEntry
	for _, id := range page.IDs {
		if ex.degs[degreeKey{id, sc.p.d.Key()}] == 0 {
			out = append(out, DegreeEntry{ID: id})
		}
	}
	if len(page.IDs) > 0 {
		sc.at = &DegreeEntry{ID: page.IDs[len(page.IDs)-1]}
	}
	switch {
	case page.Next != "":
	case !sc.p.desc && sc.p.hi >= max(sc.p.lo, 1):
		sc.zeros = false // the index follows, lowest first
	default:
		sc.end = true
	}
	return out, nil
}

// runDegreeOrder answers a query the degree index orders (degreeOrderPlan):
// it reads entries in order until the page and one more result are found,
// and reads only those nodes.
func (ex *executor) runDegreeOrder(res *QueryResult, p degreeOrder, cur queryCursor, fp string) error {
	q := ex.q
	var after *DegreeEntry
	if q.Cursor != "" {
		if err := cur.checkPaging(q); err != nil {
			return err
		}
		if cur.ID == "" || len(cur.after) != 1 {
			return errBadCursor("not a cursor of an ordered result")
		}
		num, _ := cur.after[0].(json.Number)
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || n < 0 {
			return errBadCursor("sort key is not a degree")
		}
		after = &DegreeEntry{ID: cur.ID, Degree: n}
	}
	limit := ex.pageLimit(res)
	sc := ex.newDegreeScan(p, after)
	key := p.d.Key()
	type hit struct {
		n   *Node
		deg int64
	}
	var hits []hit
	filters := append(q.From.where.degrees(), q.where.degrees()...)
	for len(hits) <= limit && !sc.end && ex.b.reason == "" {
		es, err := sc.next(limit + 1 - len(hits))
		if err != nil {
			return err
		}
		if len(es) == 0 {
			continue
		}
		ids := make([]ID, len(es))
		for i, e := range es {
			ids[i] = e.ID
			if ex.degs == nil {
				ex.degs = map[degreeKey]int64{}
			}
			ex.degs[degreeKey{e.ID, key}] = e.Degree
		}
		nodes, err := ex.s.Nodes(context.WithoutCancel(ex.b.ctx), ids)
		if err != nil {
			return err
		}
		if err := ex.nodeDegrees(nodes, filters); err != nil {
			return err
		}
		for i, n := range nodes {
			// A node deleted or re-typed since the index was read is not
			// one of the type's any more.
			if n != nil && n.Type == q.From.Type && ex.match(q.From.where, n) && ex.match(q.where, n) {
				hits = append(hits, hit{n, es[i].Degree})
			}
		}
		if ex.err != nil {
			return ex.err
		}
	}
	cursorAfter := func(id ID, deg int64) {
		raw, _ := json.Marshal(json.Number(formatInt(deg)))
		res.Cursor = encodeCursor(ex.s, queryCursor{F: fp, At: startPos{Plan: 1}, Rest: true, Chunk: 1, After: []json.RawMessage{raw}, ID: id})
	}
	page := hits[:min(len(hits), limit)]
	nodes := make([]*Node, len(page))
	for i, h := range page {
		nodes[i] = h.n
	}
	if err := ex.nodeDegrees(nodes, q.returnDegrees()); err != nil {
		return err
	}
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used := 0
	for i, h := range page {
		obj := ex.project(h.n)
		size := jsonSize(obj)
		var path *Path
		if q.Return.Paths {
			path = &Path{Nodes: []ID{h.n.ID}, Edges: []string{}}
			size += jsonSize(path)
		}
		if used+size > budget {
			if i == 0 {
				return tooLarge(h.n.ID, size, budget)
			}
			res.Truncated, res.Reason = true, ReasonBytes
			res.note("The page reached limits.maxBytes; continue with the cursor.")
			cursorAfter(page[i-1].n.ID, page[i-1].deg)
			return nil
		}
		used += size
		res.Nodes = append(res.Nodes, obj)
		if path != nil {
			res.Paths = append(res.Paths, *path)
		}
	}
	switch {
	case len(hits) > limit:
		cursorAfter(page[limit-1].n.ID, page[limit-1].deg)
	case ex.b.reason != "":
		ex.truncated(res)
		res.note(fmt.Sprintf("The %s limit stopped the degree index scan: the results are correct and in order, but not all of them; continue with the cursor.", res.Reason))
		switch {
		case sc.at != nil && sc.at != after:
			cursorAfter(sc.at.ID, sc.at.Degree) // past what it examined
		case q.Cursor != "":
			res.Cursor = q.Cursor // nothing examined: retry
		}
	}
	return nil
}

// A query of a type whose from.where requires a range of one degree that
// excludes 0 (such as {"degree": {"edge": "dependsOn", "direction": "in",
// "gte": 100}}), with no order and no traversal, has as candidates the
// index's entries in that range, when they are few (estimateCap at
// most): it reads them, and pages through their nodes by ID, as the type
// scan would (the same cursors). More of them, it runs as any other.

// degreeRangePlan returns the range the index can produce the start set
// from.
func (ex *executor) degreeRangePlan(steps []Step, cur queryCursor) (degreeOrder, bool) {
	q := ex.q
	_, ranker := ex.s.(DegreeRanker)
	if !ranker || len(steps) > 0 || q.GroupBy != nil || q.Return.Count || len(q.OrderBy) > 0 || q.From.Type == "" || q.From.Search != "" || len(q.From.IDs) > 0 || q.From.where == nil {
		return degreeOrder{}, false
	}
	if q.Cursor != "" && (cur.At.Plan != 1 || cur.At.Q != 0 || cur.At.K != 0 || cur.N != 0 || cur.Rest || cur.ID != "" || len(cur.After) > 0 || cur.G != nil) {
		return degreeOrder{}, false // not a cursor of a scan by ID: the plain path says what it is
	}
	for _, d := range q.From.where.degrees() {
		if len(d.Edge) != 1 || d.Direction != In && d.Direction != Out {
			continue
		}
		p := degreeOrder{d: d, hi: math.MaxInt64}
		p.narrow(q.From.where)
		if p.lo >= 1 && p.hi >= p.lo {
			return p, true
		}
	}
	return degreeOrder{}, false
}

// runDegreeRange answers a query whose start set the degree index
// produces (degreeRangePlan). It reports false, having done nothing but
// read the index, when the range holds too many nodes.
func (ex *executor) runDegreeRange(res *QueryResult, p degreeOrder, cur queryCursor, fp string) (bool, error) {
	q, b := ex.q, ex.b
	var ids []ID
	dq := DegreeQuery{Type: q.From.Type, Label: p.d.Edge[0], Direction: p.d.Direction, Min: p.lo, Max: p.hi, Limit: estimateCap + 1}
	es, err := ex.s.(DegreeRanker).RankByDegree(b.ctx, dq)
	if err != nil {
		if ignoreDeadline(err) == nil {
			return false, nil // the query runs as any other, and hits the deadline there
		}
		return false, err
	}
	if len(es) > estimateCap {
		return false, nil
	}
	for _, e := range es {
		if string(e.ID) > cur.At.A {
			ids = append(ids, e.ID)
		}
		if ex.degs == nil {
			ex.degs = map[degreeKey]int64{}
		}
		ex.degs[degreeKey{e.ID, p.d.Key()}] = e.Degree
	}
	slices.Sort(ids)
	limit := ex.pageLimit(res)
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used := 0
	cursorAt := func(after ID) {
		res.Cursor = encodeCursor(ex.s, queryCursor{F: fp, At: startPos{Plan: 1, A: string(after)}})
	}
	// last is the last node returned, examined the last one examined:
	// a cut page's cursor moves past what it examined.
	last, examined := ID(cur.At.A), ID(cur.At.A)
	for i := 0; i < len(ids); {
		k := min(limit-len(res.Nodes)+1, typePage, len(ids)-i, b.remaining())
		if k <= 0 || !b.spend(k) {
			b.stop(ReasonWork)
			ex.truncated(res)
			res.note(fmt.Sprintf("The %s limit stopped the scan: the results are correct but not all of them; continue with the cursor.", res.Reason))
			if examined != "" {
				cursorAt(examined)
			}
			return true, nil
		}
		chunk := ids[i : i+k]
		i += k
		nodes, err := ex.s.Nodes(context.WithoutCancel(b.ctx), chunk)
		if err != nil {
			return true, err
		}
		if err := ex.nodeDegrees(nodes, append(append(q.From.where.degrees(), q.where.degrees()...), q.returnDegrees()...)); err != nil {
			return true, err
		}
		for _, n := range nodes {
			if n == nil || n.Type != q.From.Type || !ex.match(q.From.where, n) || !ex.match(q.where, n) {
				continue
			}
			if len(res.Nodes) == limit {
				cursorAt(last)
				return true, nil
			}
			obj := ex.project(n)
			size := jsonSize(obj)
			var path *Path
			if q.Return.Paths {
				path = &Path{Nodes: []ID{n.ID}, Edges: []string{}}
				size += jsonSize(path)
			}
			if used+size > budget {
				if len(res.Nodes) == 0 {
					return true, tooLarge(n.ID, size, budget)
				}
				res.Truncated, res.Reason = true, ReasonBytes
				res.note("The page reached limits.maxBytes; continue with the cursor.")
				cursorAt(last)
				return true, nil
			}
			used += size
			res.Nodes = append(res.Nodes, obj)
			if path != nil {
				res.Paths = append(res.Paths, *path)
			}
			last = n.ID
		}
		if ex.err != nil {
			return true, ex.err
		}
		examined = chunk[len(chunk)-1]
	}
	return true, nil
}

// groupByDegreeIndex answers a grouping of a whole type by one degree (one
// label, out or in) from the degree index: each entry counts in its
// degree's group (or bucket), and the type's nodes with no entry in the
// group of 0. It reads the index's entries, never a node or its summary.
// done is false when it does not apply; ok is false when a bound stopped
// it.
func (ex *executor) groupByDegreeIndex(steps []Step) (counts map[string]int64, done, ok bool, err error) {
	q, b, g := ex.q, ex.b, ex.q.GroupBy
	dr, ranker := ex.s.(DegreeRanker)
	if !ranker || g.Degree == nil || len(g.Degree.Edge) != 1 || g.Degree.Direction != In && g.Degree.Direction != Out ||
		len(steps) > 0 || q.where != nil || q.From.Type == "" || q.From.Search != "" || q.From.where != nil {
		return nil, false, false, nil
	}
	st, err := ex.storeStats()
	if err != nil {
		return nil, false, false, ignoreDeadline(err)
	}
	b.spend(1)
	counts = map[string]int64{}
	dq := DegreeQuery{Type: q.From.Type, Label: g.Degree.Edge[0], Direction: g.Degree.Direction, Limit: MaxPageSize}
	var entries int64
	for {
		page, err := dr.RankByDegree(b.ctx, dq)
		if err != nil {
			if ignoreDeadline(err) == nil {
				b.stop(ReasonDeadline)
				return nil, true, false, nil
			}
			return nil, true, false, err
		}
		if !b.spend(len(page)) {
			return nil, true, false, nil
		}
		for _, e := range page {
			counts[encodeKey(g.bucket(e.Degree))]++
		}
		entries += int64(len(page))
		if len(page) < MaxPageSize {
			break
		}
		dq.After = &page[len(page)-1]
	}
	if zero := st.NodeTypes[q.From.Type] - entries; zero > 0 {
		counts[encodeKey(g.bucket(0))] += zero
	}
	return counts, true, true, nil
}
