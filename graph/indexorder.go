package graph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Index-ordered scans. A query whose results are a type's nodes (no
// traversal) ordered by one indexed property reads them by walking that
// property's index in the order asked (IndexWalker), within the stretches
// its filters allow (indexrange.go), and stops once the page is full: its
// cost is the page and the index entries its filters pass over, not the
// type. Its cursor holds the last result's sort key and ID, as the sort
// path's does, so a page resumes by seeking there; it may also hold the
// last index entry passed over (walkPos), so that a page a bound cut with
// nothing found still moves on.
//
// The walk covers the scalar values (false, true, numbers, strings; null
// is a missing value to orderBy). Results past it in the order (arrays
// and objects, which orderBy places after strings, and missing values,
// last) are not in its reach: when the walk ends before the page is full
// and its filters do not rule them out, the sort path answers that page.
// Descending, arrays and objects come first: the walk then serves only a
// property whose schema allows no arrays or objects.

// An orderWalk is how an index-ordered query reads its results.
type orderWalk struct {
	typ, prop string
	desc      bool
	ranges    []valueRange // sorted ascending
	// complete: every result has a scalar value in the ranges, so the
	// walk's end is the results' end.
	complete bool
}

// A walkPos is a position in an index walk: an entry's encoded value and ID.
type walkPos struct {
	V []byte `json:"v"`
	I ID     `json:"i,omitempty"`
}

// name is the index's name in the query's stats.
func (w *orderWalk) name() string { return w.typ + "." + w.prop }

// planOrderWalk returns how to walk an index for the query, or nil when
// its results do not come from one: the query starts from a type, does
// not traverse, count or group, orders by one indexed property, and has
// no more selective indexed condition on another property (estimated as
// choosePlan does); the store walks indexes; and descending, the
// property's schema allows no arrays or objects.
func (ex *executor) planOrderWalk(steps []Step) (*orderWalk, error) {
	q := ex.q
	if q.From.Type == "" || q.From.Search != "" || len(steps) > 0 || q.GroupBy != nil || q.Return.Count || len(q.OrderBy) != 1 {
		return nil, nil
	}
	w := ex.orderWalkOf(q.From.Type, q.OrderBy[0], q.From.where, q.where)
	if w == nil {
		return nil, nil
	}
	nt, _ := ex.s.Model().Node(q.From.Type)
	// Another indexed condition that few nodes meet reads less: leave it
	// to the sort path.
	others := indexPlans(q.From.Type, func(p string) bool { return p != w.prop && nt.IsIndexed(p) }, q.From.where)
	if len(others) > 0 {
		plan, err := ex.choosePlan(others)
		if err != nil || plan != 1 && others[plan-2].count <= estimateCap {
			return nil, err
		}
	}
	return w, nil
}

// orderWalkOf returns how to walk the index of typ's property for the
// order o of nodes of typ that pass every one of filters, or nil when no
// walk serves it: o is on a property typ indexes, the store walks
// indexes, and descending, the property's schema allows no arrays or
// objects.
func (ex *executor) orderWalkOf(typ string, o Order, filters ...*filter) *orderWalk {
	nt, ok := ex.s.Model().Node(typ)
	if o.Degree != nil || slices.Contains(metaFields, o.Field) || !ok || !nt.IsIndexed(o.Field) {
		return nil
	}
	if _, ok := ex.s.(IndexWalker); !ok {
		return nil
	}
	types := nt.PropertyTypes(o.Field)
	scalar := types != nil && !slices.Contains(types, "array") && !slices.Contains(types, "object")
	if o.Desc && !scalar || types != nil && !slices.ContainsFunc(types, func(t string) bool { return t != "array" && t != "object" }) {
		return nil // descending, arrays and objects come first; no scalar, nothing to walk
	}
	w := &orderWalk{typ: typ, prop: o.Field, desc: o.Desc, ranges: []valueRange{scalarRange}}
	present := false // some condition holds only on a present value
	for _, f := range filters {
		for _, c := range mustHold(f) {
			if c.field != o.Field || c.deg != nil {
				continue
			}
			rs, narrows := condRanges(c)
			if !narrows {
				continue
			}
			w.ranges = intersect(w.ranges, rs)
			switch c.op {
			case "lt", "lte", "gt", "gte", "prefix":
				w.complete = true // holds on numbers or strings alone
			default:
				present = true // eq, in: on a scalar, or an array holding it
			}
		}
	}
	required := slices.Contains(nt.Required, o.Field) && !slices.Contains(types, "null")
	w.complete = w.complete || scalar && (present || required)
	return w
}

// mustHold returns the conditions of f that every node passing it meets:
// its own and those of its "and" filters, as indexPlans reads them.
func mustHold(f *filter) []cond {
	if f == nil {
		return nil
	}
	conds := slices.Clone(f.conds)
	for _, g := range f.and {
		if g != nil && len(g.or) == 0 && g.not == nil {
			conds = append(conds, g.conds...)
		}
	}
	return conds
}

// walkOrder answers one page of an index-ordered query. It reports false,
// having returned nothing, when the sort path must answer it: the cursor
// points past the walk, or the walk ended before the page was full and
// results may lie past it.
func (ex *executor) walkOrder(res *QueryResult, w *orderWalk, cur queryCursor, fp string) (bool, error) {
	q, b := ex.q, ex.b
	iw := ex.s.(IndexWalker)
	limit := ex.pageLimit(res)
	var pos *walkPos // the last entry passed: the walk goes on after it
	switch {
	case cur.X != nil:
		pos = cur.X
	case cur.ID != "":
		enc, ok := EncodeIndexValue(cur.after[0])
		if cur.after[0] == nil || !ok {
			return false, nil // the last result was past the walk
		}
		pos = &walkPos{V: enc, I: cur.ID}
	}
	start := pos
	type found struct {
		n   *Node
		key []any
		at  walkPos
	}
	var page []found
	more, cut, batch := false, false, limit+1
	ranges := slices.Clone(w.ranges)
	if w.desc {
		slices.Reverse(ranges)
	}
	filterDegrees := append(q.From.where.degrees(), q.where.degrees()...)
walk:
	for _, r := range ranges {
		if pos != nil && (!w.desc && r.hi != nil && bytes.Compare(pos.V, r.hi) >= 0 || w.desc && r.lo != nil && bytes.Compare(pos.V, r.lo) < 0) {
			continue // the position is past this stretch
		}
		for {
			n := min(batch, b.remaining(), MaxPageSize)
			if n <= 0 || !b.ok() {
				b.stop(ReasonWork)
				cut = true
				break walk
			}
			iwq := IndexWalk{Type: w.typ, Property: w.prop, From: r.lo, To: r.hi, Desc: w.desc, Limit: n}
			if pos != nil {
				iwq.AfterValue, iwq.AfterID = pos.V, pos.I
			}
			entries, err := iw.WalkIndex(b.ctx, iwq)
			if err != nil {
				if ignoreDeadline(err) == nil {
					b.stop(ReasonDeadline)
					cut = true
					break walk
				}
				return false, err
			}
			if !b.spend(len(entries)) {
				cut = true
				break walk
			}
			ids := make([]ID, len(entries))
			for i, e := range entries {
				ids[i] = e.ID
			}
			nodes, err := ex.s.Nodes(b.ctx, ids)
			if err != nil {
				if ignoreDeadline(err) == nil {
					b.stop(ReasonDeadline)
					cut = true
					break walk
				}
				return false, err
			}
			if err := ex.nodeDegrees(nodes, filterDegrees); err != nil {
				return false, err
			}
			for i, e := range entries {
				nd := nodes[i]
				if nd != nil && nd.Type == w.typ && ex.match(q.From.where, nd) && ex.match(q.where, nd) {
					key := ex.sortKey(q.OrderBy, nd)
					// An entry of a value the node no longer has, or of an
					// array's element, is not where orderBy puts the node.
					if enc, ok := EncodeIndexValue(key[0]); key[0] != nil && ok && bytes.Equal(enc, e.Value) {
						if len(page) == limit {
							more = true
							break walk
						}
						page = append(page, found{nd, key, walkPos{e.Value, e.ID}})
					}
				}
				if ex.err != nil {
					return false, ex.err
				}
				pos = &walkPos{e.Value, e.ID}
			}
			if len(entries) < n {
				break // the stretch is done
			}
			batch = min(2*batch, MaxPageSize) // the filters pass over entries: read more at a time
		}
	}
	if !cut && !more && len(page) < limit && !w.complete {
		return false, nil // results may lie past the walk: the sort path finds them
	}

	// The page: each result, within the byte cap, and the cursor after the
	// last one returned (and after the entries passed over since, when
	// the page ends where the walk stopped).
	nodes := make([]*Node, len(page))
	for i, f := range page {
		nodes[i] = f.n
	}
	if err := ex.nodeDegrees(nodes, q.returnDegrees()); err != nil {
		return false, err
	}
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used, last := 0, -1
	for i, f := range page {
		obj := ex.project(f.n)
		size := jsonSize(obj)
		var p *Path
		if q.Return.Paths {
			p = &Path{Nodes: []ID{f.n.ID}, Edges: []string{}}
			size += jsonSize(p)
		}
		if used+size > budget {
			if i == 0 {
				return false, tooLarge(f.n.ID, size, budget)
			}
			res.Truncated, res.Reason = true, ReasonBytes
			res.note("The page reached limits.maxBytes; continue with the cursor.")
			break
		}
		used += size
		res.Nodes = append(res.Nodes, obj)
		if p != nil {
			res.Paths = append(res.Paths, *p)
		}
		last = i
	}
	next := queryCursor{F: fp, Rest: true}
	if last >= 0 {
		next.ID = page[last].n.ID
		raw, _ := json.Marshal(page[last].key[0])
		next.After = []json.RawMessage{raw}
	} else if cur.ID != "" {
		next.ID, next.After = cur.ID, cur.After
	} else {
		next.Rest = false
	}
	if last == len(page)-1 && pos != nil && (last < 0 || !bytes.Equal(pos.V, page[last].at.V) || pos.I != page[last].at.I) {
		next.X = pos // the entries passed over after the last result
	}
	switch {
	case cut:
		ex.truncated(res)
		if next.X == nil && last < 0 || pos == start && last < 0 {
			// Nothing found and nothing passed: the same cursor again.
			res.Cursor = q.Cursor
			res.note(fmt.Sprintf("The %s limit stopped the index walk before it found a result. Raise limits.maxVisited or limits.timeoutMs, or narrow the query.", res.Reason))
			return true, nil
		}
		res.note(fmt.Sprintf("The %s limit stopped the index walk: these results are the first in order, and the cursor continues after them.", res.Reason))
	case !more && last == len(page)-1 && (len(page) < limit || w.complete):
		return true, nil // the walk's end is the results' end
	}
	res.Cursor = encodeCursor(ex.s, next)
	return true, nil
}

// index names the property index the source reads ("" for none).
func (src *source) index() string {
	if src.kind != srcLookup {
		return ""
	}
	return src.ex.q.From.Type + "." + src.plans[src.at.Plan-2].queries[0].Property
}

// prefixQueries returns the index lookups that together hold every node
// whose string property passes a prefix condition with value v (a
// superset when the prefix has more ways to be written in upper and lower
// case than foldPrefixes keeps): one range per way. nil: v is no string,
// and the condition holds on no node (another plan, or the type scan,
// finds that out).
func prefixQueries(iq IndexQuery, v any) []IndexQuery {
	p, ok := v.(string)
	if !ok {
		return nil
	}
	var qs []IndexQuery
	for _, s := range foldPrefixes(p, maxPrefixRanges/2) {
		q := iq
		q.Min = s
		if end := PrefixEnd([]byte(s)); end != nil {
			q.Max, q.MaxExclusive = string(end), true
		}
		qs = append(qs, q)
	}
	return qs
}

// typeScanReadsLess reports whether a query whose start set is its result,
// in ID order, reads less by scanning the type in ID order and filtering
// (about limit × type size / matches nodes, the matches spread over the
// IDs) than by reading p's matches whole to sort them by ID: when p
// matches more than √(limit × type size) nodes. Counting that far costs
// index entries, not nodes.
func (ex *executor) typeScanReadsLess(p *indexPlan) bool {
	q := ex.q
	if len(q.Traverse) > 0 || q.Return.Count || q.GroupBy != nil || len(q.OrderBy) > 0 && !idOrder(q.OrderBy) || p.count <= estimateCap/4 {
		return false
	}
	st, err := ex.storeStats()
	if err != nil {
		return false
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	enough := int(math.Sqrt(float64(limit)*float64(st.NodeTypes[q.From.Type]))) + 1
	switch {
	case enough > 64*estimateCap:
		return false // a lookup reads less than a type scan of a huge type would
	case p.count >= enough:
		return true // choosePlan counted that far
	}
	n := 0
	for _, iq := range p.queries {
		iq.Limit = enough - n
		page, err := ex.s.Lookup(ex.b.ctx, iq)
		if err != nil {
			return false
		}
		ex.b.spend(len(page.IDs))
		if n += len(page.IDs); n >= enough {
			return true
		}
	}
	return false
}

// idOrder reports whether order is by ID alone, ascending: the order of a
// type scan, and of results no orderBy orders.
func idOrder(order []Order) bool {
	return len(order) == 1 && order[0].Field == "id" && !order[0].Desc
}

// explain says how the walk reads, for a query's plan.
func (w *orderWalk) explain() string {
	dir := "ascending"
	if w.desc {
		dir = "descending"
	}
	return fmt.Sprintf("walk index %s %s over %d stretch(es) of values", w.name(), dir, len(w.ranges))
}

// explain says how a query read its start set and its order, for its plan.
func (ex *executor) explain(src *source, walked *orderWalk, stream bool, steps []Step) string {
	q := ex.q
	var parts []string
	if walked != nil {
		parts = append(parts, walked.explain()+"; past its end, the results it cannot reach (missing, null, arrays) need a sort")
	}
	switch src.kind {
	case srcIDs:
		parts = append(parts, fmt.Sprintf("read %d ids", len(src.ids)))
	case srcSearch:
		parts = append(parts, "search the text index")
	case srcType:
		parts = append(parts, "scan type "+q.From.Type+" in ID order")
	case srcLookup:
		p := src.plans[src.at.Plan-2]
		parts = append(parts, fmt.Sprintf("look up index %s (%d range(s))", src.index(), len(p.queries)))
	}
	if len(steps) > 0 {
		parts = append(parts, fmt.Sprintf("traverse %d step(s)", len(steps)))
	}
	switch {
	case q.GroupBy != nil:
		parts = append(parts, "group")
	case q.Return.Count:
		parts = append(parts, "count")
	case stream:
		parts = append(parts, "stream in the scan's order, stopping when the page is full")
	case ex.rw != nil && ex.rw.probed:
		parts = append(parts, ex.rw.explain()+", testing each entry's edges back to the start nodes in place of the traversal, stopping when the page is full")
	case ex.rw != nil && ex.rw.used:
		parts = append(parts, ex.rw.explain()+" for the nodes the traversal reached, stopping when the page is full")
	case len(q.OrderBy) > 0:
		parts = append(parts, "sort every result by orderBy")
	default:
		parts = append(parts, "sort every result by ID")
	}
	return strings.Join(parts, "; ")
}
