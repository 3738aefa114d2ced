package graph

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A QueryResult is the answer to a query. When a bound stopped the work it
// holds what was found, Truncated is set, Reason names the bound and, when
// the start set can be continued, Cursor continues it.
type QueryResult struct {
	Nodes     []map[string]any `json:"nodes"`
	Paths     []Path           `json:"paths,omitempty"`
	Count     *int             `json:"count,omitempty"`
	Truncated bool             `json:"truncated"`
	Reason    string           `json:"reason,omitempty"`
	Cursor    string           `json:"cursor,omitempty"`
	Limits    Limits           `json:"limits"`
	Capped    []string         `json:"capped,omitempty"`
	Stats     ReadStats        `json:"stats"`
}

// A Path leads from a start node to a result: Nodes[0] is the start,
// Edges[i] joins Nodes[i] and Nodes[i+1].
type Path struct {
	Nodes []ID     `json:"nodes"`
	Edges []string `json:"edges"`
}

// DefaultQueryLimit is the page size of a query that sets no limit.
const DefaultQueryLimit = 50

// frontierChunk is how many nodes one edge fetch expands.
const frontierChunk = 128

// queryCursor continues a query: Scan resumes the start set's scan (after
// a bound stopped it); After and Pos page through a complete result.
type queryCursor struct {
	F     string `json:"f"`           // the query it belongs to
	Scan  string `json:"s,omitempty"` // resume token of the start scan
	After []any  `json:"a,omitempty"` // sort key of the last result returned
	ID    ID     `json:"i,omitempty"`
	Pos   int    `json:"p,omitempty"` // for rank order: results already returned
	Start int    `json:"t,omitempty"` // start nodes already expanded
	Chunk int    `json:"c,omitempty"` // how many start nodes to expand together next
}

type executor struct {
	s         Store
	q         *Query
	b         *budget
	paths     []map[ID]hop // per step, how each reached node was reached
	hardStop  time.Time    // reading results stops here, bound or not
	cut       bool         // reading results was cut at hardStop
	nextStart int          // the first start node not yet expanded
	nextChunk int          // the chunk size to resume with
	scanCap   int          // work the start scan may use; 0: all
	scanUntil time.Time    // when the start scan must pause; zero: never
}

// startChunk is how many start nodes are expanded together.
const startChunk = 256

// traverse runs the steps from each chunk of start nodes, starting at
// skip, and returns the union of what they reach. A chunk that a bound
// cuts is retried by the cursor: as it was if earlier chunks used the
// budget, else with half as many start nodes, down to one; a single start
// node that alone exceeds the budget is passed over.
func (ex *executor) traverse(start []ID, steps []Step, skip, chunk int) ([]ID, error) {
	if ex.q.Return.Paths {
		ex.paths = make([]map[ID]hop, len(steps))
		for i := range ex.paths {
			ex.paths[i] = map[ID]hop{}
		}
	}
	if chunk <= 0 {
		chunk = startChunk
	}
	seen := map[ID]bool{}
	var out []ID
	pos := min(skip, len(start))
	ex.nextStart, ex.nextChunk = pos, chunk
	for first := true; pos < len(start) && ex.b.ok(); first = false {
		part := start[pos:min(pos+chunk, len(start))]
		ids := part
		for i := range steps {
			var err error
			if ids, err = ex.step(ids, &steps[i], i); err != nil {
				return nil, err
			}
		}
		for _, id := range ids {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
		switch {
		case ex.b.ok():
			pos += len(part)
			ex.nextStart = pos
		case !first:
			ex.nextStart, ex.nextChunk = pos, len(part) // earlier chunks used the budget: retry with a fresh one
		case len(part) > 1:
			ex.nextStart, ex.nextChunk = pos, len(part)/2
		default:
			ex.nextStart, ex.nextChunk = pos+1, 1
		}
	}
	return out, nil
}

type hop struct {
	prev ID
	edge string
}

// Run executes a parsed query under the ceilings. Every bound is enforced
// in this loop, between bounded primitive calls: results, hops, work
// (nodes and edges visited), the deadline and the response size.
func Run(ctx context.Context, s Store, q *Query, ceilings Limits) (*QueryResult, error) {
	start := time.Now()
	lim, capped := ceilings.Clamp(q.Limits)
	res := &QueryResult{Nodes: []map[string]any{}, Limits: lim, Capped: capped}
	steps := q.Traverse
	if clamped := clampHops(q.Traverse, lim.MaxHops); clamped != nil {
		// The query asks for more hops than the ceiling: it gets the
		// ceiling, and the response says so.
		steps = clamped
		res.Truncated, res.Reason = true, ReasonHops
		if !slices.Contains(res.Capped, "maxHops") {
			res.Capped = append(res.Capped, "maxHops")
		}
	}
	fp := q.fingerprint()
	var cur queryCursor
	if q.Cursor != "" {
		c, err := decodeCursor[queryCursor](s, q.Cursor)
		if err != nil || c.F != fp {
			return nil, cmp.Or(err, fmt.Errorf("cursor does not belong to this query; send the same query with the cursor: %w", ErrInvalid))
		}
		cur = c
	}
	b := newBudget(ctx, lim)
	defer b.cancel()
	ex := &executor{s: s, q: q, b: b}
	if len(steps) > 0 { // leave the traversal its share of the work and the time
		ex.scanCap = lim.MaxVisited / 2
		ex.scanUntil = start.Add(time.Duration(lim.TimeoutMs) * time.Millisecond / 2)
	}
	ids, scanNext, ranked, err := ex.startSet(cur)
	if err != nil {
		return nil, err
	}
	startSet := ids
	if len(steps) > 0 {
		// The start nodes are expanded a chunk at a time, so a bound that
		// stops the work leaves a cursor to the start nodes not yet expanded.
		ids, err = ex.traverse(startSet, steps, cur.Start, cur.Chunk)
		if err != nil {
			return nil, err
		}
		if b.reason != "" && ex.nextStart < len(startSet) {
			res.Cursor = encodeCursor(s, queryCursor{F: fp, Scan: cur.Scan, Start: ex.nextStart, Chunk: ex.nextChunk})
		}
	}
	if scanNext != "" && b.reason == "" {
		b.stop(ReasonWork) // the start scan stopped at its share of the budget
	}
	if b.reason != "" {
		res.Truncated, res.Reason = true, b.reason
	}
	// Past its bound, a query still returns what it found, but the work of
	// reading it stops a quarter of the timeout after the deadline.
	ex.hardStop = start.Add(time.Duration(lim.TimeoutMs) * time.Millisecond * 5 / 4)
	if q.Return.Count {
		n := len(ids)
		if q.where != nil {
			nodes, err := ex.fetchAll(ids, q.where)
			if err != nil {
				return nil, err
			}
			n = len(nodes)
		}
		res.Count = &n
	} else if err := ex.page(res, ids, cur, fp, ranked, startSet); err != nil {
		return nil, err
	}
	if ex.cut {
		res.Truncated = true
		if res.Reason == "" {
			res.Reason = ReasonDeadline
		}
	}
	if res.Truncated && res.Cursor == "" && scanNext != "" && (len(steps) == 0 || ex.nextStart >= len(startSet)) {
		res.Cursor = encodeCursor(s, queryCursor{F: fp, Scan: scanNext})
	}
	return res.finish(b, start), nil
}

func (r *QueryResult) finish(b *budget, start time.Time) *QueryResult {
	r.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return r
}

// clampHops lowers step hop maxima so they sum to at most max; it returns
// nil when nothing needed lowering.
func clampHops(steps []Step, maxHops int) []Step {
	total := 0
	for _, st := range steps {
		total += st.Hops.Max
	}
	if total <= maxHops {
		return nil
	}
	out := slices.Clone(steps)
	for i := len(out) - 1; i >= 0 && total > maxHops; i-- {
		cut := min(total-maxHops, out[i].Hops.Max-max(out[i].Hops.Min, 1))
		out[i].Hops.Max -= cut
		total -= cut
	}
	return out
}

// fingerprint identifies a query for its cursors: everything but the
// cursor, the page size and the limits.
func (q *Query) fingerprint() string {
	c := *q
	c.Cursor, c.Limit, c.Limits = "", 0, Limits{}
	data, _ := json.Marshal(c)
	h := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// startSet returns the start nodes in order, a token that resumes the scan
// if a bound stopped it, and whether the order is a search ranking.
func (ex *executor) startSet(cur queryCursor) ([]ID, string, bool, error) {
	q, b := ex.q, ex.b
	switch {
	case len(q.From.IDs) > 0:
		seen := map[ID]bool{}
		var ids []ID
		for _, id := range q.From.IDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		if !b.spend(len(ids)) {
			return nil, "", false, nil
		}
		nodes, err := ex.s.Nodes(b.ctx, ids)
		if err != nil {
			return nil, "", false, ignoreDeadline(err)
		}
		ids = ids[:0]
		for _, n := range nodes {
			if n != nil {
				ids = append(ids, n.ID)
			}
		}
		return ids, "", false, nil
	case q.From.Search != "":
		sr, err := Search(b.ctx, ex.s, SearchQuery{Text: q.From.Search, Type: q.From.Type, Limit: b.limits.MaxResults, Cursor: cur.Scan,
			Limits: Limits{MaxResults: b.limits.MaxResults, MaxVisited: max(ex.scanRemaining(), 1), TimeoutMs: b.limits.TimeoutMs}}, b.limits)
		if err != nil {
			return nil, "", false, err
		}
		b.spend(sr.Stats.Visited)
		if sr.Truncated {
			b.stop(sr.Reason)
		}
		ids := make([]ID, len(sr.Hits))
		for i, h := range sr.Hits {
			ids[i] = h.Node.ID
		}
		return ids, sr.Cursor, true, nil
	}
	return ex.scanType(cur)
}

// indexPlan is an index scan that can produce a type's start nodes.
type indexPlan struct {
	queries []IndexQuery // their union
	count   int          // estimated matches, capped
}

const estimateCap = 1000

// scanType streams the nodes of from.type that match from.where, starting
// from the most selective indexed condition (each estimated by counting up
// to a cap), or from the type index when none is more selective.
func (ex *executor) scanType(cur queryCursor) ([]ID, string, bool, error) {
	q, b := ex.q, ex.b
	typ := q.From.Type
	nt, _ := ex.s.Model().Node(typ)
	var best *indexPlan
	for _, p := range indexPlans(typ, nt.IsIndexed, q.From.where) {
		p.count = 0
		for _, iq := range p.queries {
			iq.Limit = estimateCap + 1
			page, err := ex.s.Lookup(b.ctx, iq)
			if err != nil {
				return nil, "", false, ignoreDeadline(err)
			}
			b.spend(len(page.IDs))
			p.count += len(page.IDs)
		}
		if best == nil || p.count < best.count {
			best = &p
		}
	}
	if best != nil && best.count > estimateCap {
		if st, err := ex.s.Stats(b.ctx); err == nil && int64(best.count) >= st.NodeTypes[typ] {
			best = nil // the type index is no worse
		}
	}
	var tok scanToken
	if cur.Scan != "" {
		t, err := decodeCursor[scanToken](ex.s, cur.Scan)
		if err != nil {
			return nil, "", false, fmt.Errorf("cursor is damaged: %w", ErrInvalid)
		}
		tok = t
	}
	var out []ID
	seen := map[ID]bool{}
	keep := func(nodes []*Node) {
		for _, n := range nodes {
			if n != nil && n.Type == typ && !seen[n.ID] && q.From.where.match(n) {
				seen[n.ID] = true
				out = append(out, n.ID)
			}
		}
	}
	const page = 256
	if best == nil {
		for b.ok() {
			np, err := ex.s.NodesByType(b.ctx, typ, Page{After: tok.After, Limit: page})
			if err != nil {
				return nil, "", false, ignoreDeadline(err)
			}
			nodes := np.Nodes[min(tok.Skip, len(np.Nodes)):]
			n := min(len(nodes), ex.scanRemaining())
			if !b.spend(n) || n < len(nodes) {
				ex.stopScan()
				keep(nodes[:n])
				return out, encodeCursor(ex.s, scanToken{After: tok.After, Skip: tok.Skip + n}), false, nil
			}
			keep(nodes)
			if np.Next == "" {
				return out, "", false, nil
			}
			tok = scanToken{After: np.Next}
		}
		return out, encodeCursor(ex.s, tok), false, nil
	}
	for qi := tok.Query; qi < len(best.queries) && b.ok(); qi++ {
		iq := best.queries[qi]
		iq.After, iq.Limit = tok.After, page
		for b.ok() {
			ip, err := ex.s.Lookup(b.ctx, iq)
			if err != nil {
				return nil, "", false, ignoreDeadline(err)
			}
			ids := ip.IDs[min(tok.Skip, len(ip.IDs)):]
			n := min(len(ids), ex.scanRemaining())
			partial := !b.spend(n) || n < len(ids)
			nodes, err := ex.s.Nodes(b.ctx, ids[:n])
			if err != nil {
				return nil, "", false, ignoreDeadline(err)
			}
			keep(nodes)
			if partial {
				ex.stopScan()
				return out, encodeCursor(ex.s, scanToken{Query: qi, After: iq.After, Skip: tok.Skip + n}), false, nil
			}
			if ip.Next == "" {
				break
			}
			tok = scanToken{Query: qi, After: ip.Next}
			iq.After = ip.Next
		}
		tok = scanToken{}
	}
	if b.reason != "" {
		return out, encodeCursor(ex.s, tok), false, nil
	}
	return out, "", false, nil
}

// scanRemaining is the work the start scan may still do.
func (ex *executor) scanRemaining() int {
	r := ex.b.remaining()
	if ex.scanCap > 0 {
		r = min(r, ex.scanCap-ex.b.visited)
	}
	if !ex.scanUntil.IsZero() && time.Now().After(ex.scanUntil) {
		r = 0
	}
	return max(r, 0)
}

// stopScan ends the start scan: at its share of the budget, the traversal
// still runs (Run reports the cut afterwards); at the whole budget, the work stops.
func (ex *executor) stopScan() {
	if ex.scanCap == 0 || ex.b.remaining() <= 0 {
		ex.b.stop(ReasonWork)
	}
}

// scanToken resumes a start-set scan: which index query, after which page
// cursor, and how many entries of that page were used.
type scanToken struct {
	Query int    `json:"q,omitempty"`
	After string `json:"a,omitempty"`
	Skip  int    `json:"k,omitempty"`
}

// indexPlans lists the index scans that could produce the start set: one
// per indexed condition that every match must meet.
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
			if _, ok := encodeValue(c.val); !ok {
				continue
			}
			iq.Eq = c.val
			plans = append(plans, indexPlan{queries: []IndexQuery{iq}})
		case "in":
			var qs []IndexQuery
			for _, v := range c.vals {
				if _, ok := encodeValue(v); ok {
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
		}
	}
	return plans
}

// step expands the current nodes along one traversal step: breadth first,
// frontier by frontier, each frontier fetched in bounded chunks; it returns
// the nodes reached between Hops.Min and Hops.Max edges away that pass the
// step's type and filter.
// step expands nodes along one traversal step: breadth first, frontier by
// frontier, each frontier fetched in bounded chunks. It returns the nodes
// whose distance from the step's start nodes lies within Hops (a start node
// counts when another start node reaches it), that pass the step's type
// and filter.
func (ex *executor) step(from []ID, st *Step, index int) ([]ID, error) {
	b := ex.b
	var parents map[ID]hop
	if ex.paths != nil {
		parents = ex.paths[index]
	}
	depth := make(map[ID]int, len(from))
	for _, id := range from {
		depth[id] = 0
	}
	var reached []ID
	inResult := map[ID]bool{}
	if st.Hops.Min == 0 {
		reached = append(reached, from...)
		for _, id := range from {
			inResult[id] = true
		}
	}
	frontier := from
	for d := 1; d <= st.Hops.Max && len(frontier) > 0 && b.ok(); d++ {
		var next []ID
		err := expandLevel(ex.s, b, frontier, st.Edge, st.Direction, func(self, other ID, e *Edge) {
			if od, seen := depth[other]; seen {
				if od == 0 && d >= st.Hops.Min && !inResult[other] {
					inResult[other] = true // a start node another start node reaches
					reached = append(reached, other)
				}
				return
			}
			if !b.spend(1) {
				return // out of budget: a node costs one unit when first reached
			}
			depth[other] = d
			next = append(next, other)
			if parents != nil {
				if _, ok := parents[other]; !ok {
					parents[other] = hop{prev: self, edge: e.ID}
				}
			}
		})
		if err != nil {
			return nil, err
		}
		if d >= st.Hops.Min {
			for _, id := range next {
				if !inResult[id] {
					inResult[id] = true
					reached = append(reached, id)
				}
			}
		}
		frontier = next
	}
	if st.Type == "" && st.where == nil {
		return reached, nil
	}
	keep := func(n *Node) bool { return (st.Type == "" || n.Type == st.Type) && st.where.match(n) }
	nodes, err := ex.fetchWith(reached, keep, -1)
	if err != nil {
		return nil, err
	}
	out := make([]ID, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out, nil
}

// fetchAll reads the result nodes that pass f.
func (ex *executor) fetchAll(ids []ID, f *filter) ([]*Node, error) {
	return ex.fetchWith(ids, f.match, -1)
}

// fetchWith reads nodes already paid for when they were reached (or
// scanned), in order, keeping those that pass, until it has want of them
// (want < 0: all). It runs even after a bound stopped the work, so the
// results found so far are returned, but not past the hard stop.
func (ex *executor) fetchWith(ids []ID, keep func(*Node) bool, want int) ([]*Node, error) {
	var out []*Node
	for i := 0; i < len(ids) && (want < 0 || len(out) < want); {
		if !ex.hardStop.IsZero() && time.Now().After(ex.hardStop) {
			ex.cut = true
			break
		}
		n := 256
		if want >= 0 {
			n = min(n, max(want-len(out), 16))
		}
		chunk := ids[i:min(i+n, len(ids))]
		i += len(chunk)
		nodes, err := ex.s.Nodes(context.WithoutCancel(ex.b.ctx), chunk)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n != nil && keep(n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// page sorts the results, skips those a cursor has seen, and projects a
// page of them within the byte limit. In the default order (by ID) it reads
// only the nodes the page needs.
func (ex *executor) page(res *QueryResult, ids []ID, cur queryCursor, fp string, ranked bool, start []ID) error {
	q := ex.q
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	if limit > res.Limits.MaxResults {
		limit = res.Limits.MaxResults
		res.Capped = appendOnce(res.Capped, "maxResults")
	}
	rankOrder := ranked && len(q.Traverse) == 0 && len(q.OrderBy) == 0
	var nodes []*Node
	var from int
	var err error
	switch {
	case rankOrder:
		from = min(cur.Pos, len(ids))
		nodes, err = ex.fetchWith(ids[from:], q.where.match, limit+1)
	case len(q.OrderBy) == 0:
		ids = slices.Clone(ids)
		slices.Sort(ids)
		if cur.ID != "" {
			i, found := slices.BinarySearch(ids, cur.ID)
			if found {
				i++
			}
			ids = ids[i:]
		}
		nodes, err = ex.fetchWith(ids, q.where.match, limit+1)
	default:
		nodes, err = ex.fetchAll(ids, q.where)
		slices.SortStableFunc(nodes, func(a, b *Node) int { return compareNodes(q.OrderBy, a, b) })
		if cur.ID != "" {
			from, _ = slices.BinarySearchFunc(nodes, cur, func(n *Node, c queryCursor) int {
				return compareKey(q.OrderBy, sortKey(q.OrderBy, n), n.ID, c.After, c.ID)
			})
			if from < len(nodes) && nodes[from].ID == cur.ID {
				from++
			}
			nodes = nodes[from:]
			from = 0
		}
	}
	if err != nil {
		return err
	}
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used := 0
	var last *Node
	for i, n := range nodes {
		if i == limit {
			res.Cursor = ex.nextCursor(fp, last, from+i, rankOrder, cur)
			break
		}
		obj := project(n, q.Return.Fields)
		size := jsonSize(obj)
		var p *Path
		if q.Return.Paths {
			p = ex.pathTo(n.ID, start)
			size += jsonSize(p)
		}
		if used+size > budget {
			res.Truncated, res.Reason = true, ReasonBytes
			res.Cursor = ex.nextCursor(fp, last, from+i, rankOrder, cur)
			break
		}
		used += size
		res.Nodes = append(res.Nodes, obj)
		if p != nil {
			res.Paths = append(res.Paths, *p)
		}
		last = n
	}
	return nil
}

func (ex *executor) nextCursor(fp string, last *Node, pos int, rankOrder bool, cur queryCursor) string {
	c := queryCursor{F: fp, Scan: cur.Scan, Start: cur.Start}
	switch {
	case rankOrder:
		c.Pos = pos
	case last != nil:
		c.After, c.ID = sortKey(ex.q.OrderBy, last), last.ID
	default:
		c.After, c.ID = cur.After, cur.ID
	}
	return encodeCursor(ex.s, c)
}

// pathTo walks the steps' parent links back from id to a start node.
func (ex *executor) pathTo(id ID, start []ID) *Path {
	p := &Path{Nodes: []ID{id}, Edges: []string{}}
	for k := len(ex.paths) - 1; k >= 0; k-- {
		for steps := 0; steps <= ex.q.Traverse[k].Hops.Max; steps++ {
			h, ok := ex.paths[k][id]
			if !ok {
				break
			}
			p.Nodes = append(p.Nodes, h.prev)
			p.Edges = append(p.Edges, h.edge)
			id = h.prev
		}
	}
	slices.Reverse(p.Nodes)
	slices.Reverse(p.Edges)
	return p
}

func sortKey(order []Order, n *Node) []any {
	key := make([]any, len(order))
	for i, o := range order {
		v, ok := fieldValue(n, o.Field)
		if t, isTime := v.(time.Time); isTime {
			v = t.Format(time.RFC3339Nano)
		}
		if ok {
			key[i] = v
		}
	}
	return key
}

func compareNodes(order []Order, a, b *Node) int {
	return compareKey(order, sortKey(order, a), a.ID, sortKey(order, b), b.ID)
}

// compareKey orders by the sort key (missing values last, whatever the
// direction), then by ID.
func compareKey(order []Order, ka []any, ida ID, kb []any, idb ID) int {
	for i, o := range order {
		var a, b any
		if i < len(ka) {
			a = ka[i]
		}
		if i < len(kb) {
			b = kb[i]
		}
		switch {
		case a == nil && b == nil:
			continue
		case a == nil:
			return 1
		case b == nil:
			return -1
		}
		c, ok := compareValues(a, b)
		if !ok {
			c = cmp.Compare(kindRank(a), kindRank(b))
		}
		if o.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	return strings.Compare(string(ida), string(idb))
}

func kindRank(v any) int {
	switch v.(type) {
	case bool:
		return 1
	case json.Number, float64:
		return 2
	case string:
		return 3
	}
	return 4
}

// project returns the requested fields of a node.
func project(n *Node, fields []string) map[string]any {
	if len(fields) == 0 {
		fields = []string{"id", "type", "properties"}
	}
	obj := make(map[string]any, len(fields))
	for _, f := range fields {
		switch f {
		case "properties":
			obj[f] = n.Properties
		case "revision":
			obj[f] = n.Revision
		default:
			if v, ok := fieldValue(n, f); ok {
				obj[f] = v
			}
		}
	}
	return obj
}

func jsonSize(v any) int {
	data, _ := json.Marshal(v)
	return len(data) + 1
}
