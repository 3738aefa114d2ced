package graph

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// A query's start set is read as a stream: a source yields the start nodes
// in a fixed order, each with the position at which a later call can
// resume the stream (startPos). Positions are what query cursors carry, so
// a continuation never depends on how an earlier call chunked the stream.
//
// The orders: ids in the query's order (duplicates dropped); a type scan
// by ID (the type index) or by an index plan's value order; a search in
// rank order, as Search pages it.

// startPos is a position in the start set: resuming there yields the
// start node at that position first.
type startPos struct {
	// Plan is the scan a type start uses: 0 not chosen yet, 1 the type
	// index, 2+i the i-th index plan (indexPlans). Unused for ids and search.
	Plan int `json:"p,omitempty"`
	// Q is the plan's index query (an "in" condition has one per value).
	Q int `json:"q,omitempty"`
	// A is the store's page cursor to resume after (a type index scan: the
	// last ID passed; an index plan: the Lookup cursor; a search: the
	// Search cursor).
	A string `json:"a,omitempty"`
	// K is how many entries of the page at A were passed (ids: the index
	// into the query's IDs).
	K int `json:"k,omitempty"`
}

// A start is one start node and the position that yields it.
type start struct {
	id   ID
	at   startPos
	node *Node // the node as read, when the source read it
}

// Page sizes of the start scans. Positions inside an index page count
// entries of a page of exactly this size, so a resume reads the same page.
const (
	lookupPage = 256
	searchPage = 1000
	typePage   = 256
)

// A source streams a query's start set under the executor's budget.
type source struct {
	ex   *executor
	kind int // srcIDs, srcType, srcLookup or srcSearch
	ids  []ID
	// plans are from.type's index plans; at.Plan chooses among them.
	plans []indexPlan

	// at is the position of the page being read (ids: of the next ID).
	at startPos
	// The page at at, once loaded, and the index of its next entry.
	page     []start
	idx      int
	loaded   bool
	pageNext string // the store's cursor after the page; "" at the end

	// idsOnly: the start nodes are listed by ID alone, as the query needs
	// no more of them: a whole type (TypeIDLister), or the IDs given, when
	// the first step starts one hop away and nothing tests the start nodes
	// (a node that does not exist has no edges: it reaches nothing, as it
	// did when it was read and dropped).
	idsOnly bool

	end bool // the start set is exhausted
	// cut is set when the budget stopped the source before the end; pos
	// then says where it stopped, past every entry it examined, so a resume
	// makes progress even when no entry matched.
	cut bool
	// searchCut is the reason the search, given the whole work limit, was
	// cut by it: the start set is then the part of the search that limit
	// allows ("" when the search is complete).
	searchCut string
}

const (
	srcIDs = iota
	srcType
	srcLookup
	srcSearch
)

// errBadCursor is the error of a cursor that does not fit its query.
func errBadCursor(what string) error {
	return fmt.Errorf("cursor does not belong to this query (%s); send the same query with the cursor it returned, or drop the cursor to start over: %w", what, ErrInvalid)
}

// newSource opens the start set at position at, checking that the
// position fits the query (a cursor is client input).
func (ex *executor) newSource(at startPos) (*source, error) {
	q := ex.q
	src := &source{ex: ex, at: at}
	if at.K < 0 || at.Q < 0 || at.Plan < 0 {
		return nil, errBadCursor("negative position")
	}
	switch {
	case len(q.From.IDs) > 0:
		src.kind = srcIDs
		seen := map[ID]bool{}
		for _, id := range q.From.IDs {
			if !seen[id] {
				seen[id] = true
				src.ids = append(src.ids, id)
			}
		}
		src.idsOnly = q.From.where == nil && len(q.Traverse) > 0 && q.Traverse[0].Hops.Min >= 1
		if at.Plan != 0 || at.Q != 0 || at.A != "" || at.K > len(src.ids) {
			return nil, errBadCursor("start position out of range")
		}
	case q.From.Search != "":
		src.kind = srcSearch
		if at.Plan != 0 || at.Q != 0 || at.K > searchPage {
			return nil, errBadCursor("search position out of range")
		}
	default:
		src.plans = indexPlans(q.From.Type, ex.typeIndexed(), q.From.where)
		if at.Plan == 0 {
			if at != (startPos{}) {
				return nil, errBadCursor("scan position without a plan")
			}
			plan, err := ex.choosePlan(src.plans)
			if err != nil {
				return nil, err
			}
			src.at.Plan = plan
		}
		switch p := src.at.Plan; {
		case p == 1:
			src.kind = srcType
			_, lister := ex.s.(TypeIDLister)
			src.idsOnly = lister && q.From.where == nil &&
				(len(q.Traverse) > 0 || q.where == nil && len(q.OrderBy) == 0 && (q.Return.Count || q.GroupBy != nil && q.GroupBy.Field == ""))
			if at.Q != 0 || at.K != 0 {
				return nil, errBadCursor("type scan position out of range")
			}
			if at.A != "" && ID(at.A).Check() != nil {
				return nil, errBadCursor("type scan position is not an ID")
			}
		case p-2 < len(src.plans):
			src.kind = srcLookup
			if at.Q >= len(src.plans[p-2].queries) || at.K > lookupPage {
				return nil, errBadCursor("index scan position out of range")
			}
		default:
			return nil, errBadCursor("unknown scan plan")
		}
	}
	return src, nil
}

// typeIndexed reports which properties of from.type are indexed.
func (ex *executor) typeIndexed() func(string) bool {
	nt, ok := ex.s.Model().Node(ex.q.From.Type)
	if !ok {
		return func(string) bool { return false }
	}
	return nt.IsIndexed
}

// byID reports whether the source yields its nodes in ID order.
func (src *source) byID() bool { return src.kind == srcType }

// pos returns where the stream resumes: the next entry to examine.
func (src *source) pos() startPos {
	if src.loaded && src.idx < len(src.page) {
		return src.page[src.idx].at
	}
	return src.at
}

// next returns up to n more start nodes. It returns fewer at the end of the
// start set (src.end) or when the budget stops it (src.cut).
func (src *source) next(n int) ([]start, error) {
	var out []start
	b := src.ex.b
	for len(out) < n && !src.end && !src.cut {
		if src.kind == srcIDs {
			if src.at.K == len(src.ids) {
				src.end = true
				break
			}
			k := min(n-len(out), len(src.ids)-src.at.K, b.remaining())
			if k <= 0 || !b.spend(k) {
				b.stop(ReasonWork)
				src.cut = true
				break
			}
			if src.idsOnly {
				for i, id := range src.ids[src.at.K : src.at.K+k] {
					out = append(out, start{id: id, at: startPos{K: src.at.K + i}})
				}
				src.at.K += k
				continue
			}
			nodes, err := src.ex.s.Nodes(b.ctx, src.ids[src.at.K:src.at.K+k])
			if err != nil {
				if err := src.failed(err); err != nil {
					return nil, err
				}
				break
			}
			for i, nd := range nodes {
				if nd != nil {
					out = append(out, start{id: nd.ID, at: startPos{K: src.at.K + i}, node: nd})
				}
			}
			src.at.K += k
			continue
		}
		if !src.loaded {
			if err := src.load(); err != nil {
				return nil, err
			}
			if !src.loaded {
				src.cut = true
				break
			}
		}
		if src.idx >= len(src.page) {
			src.advance()
			continue
		}
		if src.kind != srcSearch && !b.spend(1) { // a search paid for its page
			src.cut = true
			break
		}
		st := src.page[src.idx]
		src.idx++
		if src.idsOnly || st.node != nil && src.keep(st.node) {
			out = append(out, st)
		}
		if src.idx == len(src.page) {
			src.advance() // so that pos is past the page
		}
	}
	return out, nil
}

// keep reports whether a scanned node belongs to the start set.
func (src *source) keep(n *Node) bool {
	q := src.ex.q
	switch src.kind {
	case srcType, srcLookup:
		return n.Type == q.From.Type && src.ex.match(q.From.where, n)
	}
	return true
}

// advance moves to the page after the current one. At the end of the
// start set, the position stays past the last page's last entry, so a
// cursor can point there.
func (src *source) advance() {
	n := len(src.page)
	last := src.at.A
	if n > 0 {
		last = string(src.page[n-1].id)
	}
	src.loaded, src.page, src.idx = false, nil, 0
	switch {
	case src.kind == srcType:
		src.at = startPos{Plan: 1, A: last}
		src.end = src.pageNext == ""
	case src.pageNext != "":
		src.at = startPos{Plan: src.at.Plan, Q: src.at.Q, A: src.pageNext}
	case src.kind == srcLookup && src.at.Q+1 < len(src.plans[src.at.Plan-2].queries):
		src.at = startPos{Plan: src.at.Plan, Q: src.at.Q + 1}
	default:
		src.at.K = n
		src.end = true
	}
}

// load reads the page at src.at. It leaves src.loaded false when the
// budget stopped it.
func (src *source) load() error {
	ex, b := src.ex, src.ex.b
	if !b.ok() {
		return nil
	}
	src.page, src.pageNext, src.idx = nil, "", src.at.K
	switch src.kind {
	case srcType:
		if src.idsOnly {
			ip, err := ex.s.(TypeIDLister).NodeIDsByType(b.ctx, ex.q.From.Type, Page{After: src.at.A, Limit: typePage})
			if err != nil {
				return src.failed(err)
			}
			after := src.at.A
			for _, id := range ip.IDs {
				src.page = append(src.page, start{id: id, at: startPos{Plan: 1, A: after}})
				after = string(id)
			}
			src.pageNext = ip.Next
			break
		}
		np, err := ex.s.NodesByType(b.ctx, ex.q.From.Type, Page{After: src.at.A, Limit: typePage})
		if err != nil {
			return src.failed(err)
		}
		after := src.at.A // a position in the type index is the ID before it
		for _, n := range np.Nodes {
			src.page = append(src.page, start{id: n.ID, at: startPos{Plan: 1, A: after}, node: n})
			after = string(n.ID)
		}
		src.pageNext = np.Next
	case srcLookup:
		iq := src.plans[src.at.Plan-2].queries[src.at.Q]
		iq.After, iq.Limit = src.at.A, lookupPage
		ip, err := ex.s.Lookup(b.ctx, iq)
		if err != nil {
			return src.failed(err)
		}
		nodes, err := ex.s.Nodes(b.ctx, ip.IDs)
		if err != nil {
			return src.failed(err)
		}
		for i, id := range ip.IDs {
			src.page = append(src.page, start{id: id, at: startPos{Plan: src.at.Plan, Q: src.at.Q, A: src.at.A, K: i}, node: nodes[i]})
		}
		src.pageNext = ip.Next
	case srcSearch:
		// A search page gets the whole work limit, not what is left of it,
		// so that the same page reads the same whatever ran before it; its
		// work counts afterwards. A search cut by that limit is used only
		// when nothing ran before it: it is then all this limit allows.
		lim := b.limits
		fresh := b.visited == 0
		sq := SearchQuery{Text: ex.q.From.Search, Type: ex.q.From.Type, Limit: searchPage, Cursor: src.at.A,
			Limits: Limits{MaxResults: searchPage, MaxVisited: lim.MaxVisited, TimeoutMs: lim.TimeoutMs}}
		// The hits are start nodes, not the answer: the query's byte cap
		// applies to what it returns, not to them.
		sr, err := Search(b.ctx, ex.s, sq, Limits{MaxResults: searchPage, MaxHops: lim.MaxHops, MaxVisited: lim.MaxVisited, TimeoutMs: lim.TimeoutMs, MaxBytes: math.MaxInt32})
		if err != nil {
			return src.failed(err)
		}
		if sr.Stats.Visited > b.remaining() {
			b.stop(ReasonWork) // not fresh: the next call reads this page first
			return nil
		}
		b.visited += sr.Stats.Visited
		if sr.Truncated {
			if !fresh || sr.Reason == ReasonDeadline {
				b.stop(sr.Reason)
				return nil
			}
			src.searchCut = sr.Reason
		}
		for i, h := range sr.Hits {
			src.page = append(src.page, start{id: h.Node.ID, at: startPos{A: src.at.A, K: i}, node: h.Node})
		}
		src.pageNext = sr.Cursor
	}
	src.idx = min(src.idx, len(src.page)) // the page shrank since the cursor was made
	if ds := ex.q.From.where.degrees(); len(ds) > 0 && (src.kind == srcType || src.kind == srcLookup) {
		// keep reads the page's degrees: one call per degree for the page.
		nodes := make([]*Node, len(src.page))
		for i, st := range src.page {
			nodes[i] = st.node
		}
		if err := ex.nodeDegrees(nodes, ds); err != nil {
			return err
		}
	}
	src.loaded = true
	return nil
}

// failed handles a store error of a scan: a deadline stops the work, a
// rejected page cursor is a bad query cursor.
func (src *source) failed(err error) error {
	if ignoreDeadline(err) == nil {
		src.ex.b.stop(ReasonDeadline)
		src.cut = true
		return nil
	}
	if errors.Is(err, ErrInvalid) {
		return errBadCursor("scan position")
	}
	return err
}

// choosePlan picks how to scan from.type for from.where: the most
// selective indexed condition (each estimated by counting up to a cap), or
// the type index when none is more selective. It returns the plan number
// of startPos.Plan.
func (ex *executor) choosePlan(plans []indexPlan) (int, error) {
	b := ex.b
	best := -1
	for i := range plans {
		p := &plans[i]
		p.count = 0
		for _, iq := range p.queries {
			iq.Limit = estimateCap + 1
			page, err := ex.s.Lookup(b.ctx, iq)
			if err != nil {
				if ignoreDeadline(err) == nil {
					b.stop(ReasonDeadline)
					return 1, nil
				}
				return 0, err
			}
			b.spend(len(page.IDs))
			p.count += len(page.IDs)
		}
		if best < 0 || p.count < plans[best].count {
			best = i
		}
	}
	if best >= 0 && ex.typeScanReadsLess(&plans[best]) {
		return 1, nil
	}
	if best < 0 {
		return 1, nil
	}
	if plans[best].count > estimateCap {
		if st, err := ex.storeStats(); err == nil && int64(plans[best].count) >= st.NodeTypes[ex.q.From.Type] {
			return 1, nil // the type index is no worse
		}
	}
	return best + 2, nil
}

// indexPlan is an index scan that can produce a type's start nodes.
type indexPlan struct {
	queries []IndexQuery // their union
	count   int          // estimated matches, capped
}

const estimateCap = 1000

// indexPlans lists the index scans that could produce the start set: one
// per indexed condition that every match must meet, in the filter's
// (sorted) order, so that a plan number means the same on every call.
func indexPlans(typ string, indexed func(string) bool, f *filter) []indexPlan {
	if f == nil {
		return nil
	}
	var conds []cond
	conds = append(conds, f.conds...)
	for _, g := range f.and {
		if g != nil && len(g.or) == 0 && g.not == nil {
			conds = append(conds, g.conds...)
		}
	}
	var plans []indexPlan
	for _, c := range conds {
		if !indexed(c.field) {
			continue
		}
		iq := IndexQuery{Type: typ, Property: c.field}
		switch c.op {
		case "eq":
			if _, ok := EncodeIndexValue(c.val); !ok {
				continue
			}
			iq.Eq = c.val
			plans = append(plans, indexPlan{queries: []IndexQuery{iq}})
		case "in":
			var qs []IndexQuery
			for _, v := range c.vals {
				if _, ok := EncodeIndexValue(v); ok {
					x := iq
					x.Eq = v
					qs = append(qs, x)
				}
			}
			if len(qs) == len(c.vals) && len(qs) > 0 {
				plans = append(plans, indexPlan{queries: qs})
			}
		case "lt", "lte":
			iq.Max, iq.MaxExclusive = c.val, c.op == "lt"
			plans = append(plans, indexPlan{queries: []IndexQuery{iq}})
		case "gt", "gte":
			iq.Min, iq.MinExclusive = c.val, c.op == "gt"
			plans = append(plans, indexPlan{queries: []IndexQuery{iq}})
		case "prefix":
			if qs := prefixQueries(iq, c.val); qs != nil {
				plans = append(plans, indexPlan{queries: qs})
			}
		}
	}
	return slices.Clip(plans)
}
