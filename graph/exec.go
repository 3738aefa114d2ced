package graph

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A QueryResult is the answer to a query: one page of results.
//
// The paging contract, the same for every query:
//
//   - More is true exactly when Cursor is set: there may be more results,
//     and sending the same query with the cursor continues.
//   - Truncated is true when a bound (Reason: work, deadline, hops, bytes)
//     made this answer smaller than what was asked. The results returned
//     are still correct: a bound never makes a result wrong, only fewer.
//     Note says in a sentence what was cut and what to do.
//   - Within a result that no bound cut, limit and cursor page through the
//     results exactly once, in order (orderBy, then ID; by ID by default;
//     by rank for a plain search).
//   - After a work or deadline bound, the cursor continues the computation
//     where it stopped. Such a continuation is at-least-once: a later page
//     may repeat a result already returned (deduplicate by id), and the
//     order holds within each page only. Together, the pages hold every
//     result, unless Partial names start nodes whose traversal a bound cut
//     even alone: the cursor moves past them, so results reached only from
//     them may be missing.
//   - With orderBy, a page is returned only when every result was found:
//     a partial order is not the order. When a bound cut the work first,
//     Nodes is empty, Truncated and Note say so, and no cursor skips ahead.
//     An order read from an index (a property's: indexorder.go, and
//     Stats.Index names it; one degree's: degreeorder.go) is the
//     exception: its results come in order, so a cut page holds the
//     first of them, and its cursor continues after what the scan read.
//     (A traversal whose page an index walk reads, reachorder.go, is
//     not: its traversal completes first, as every ordered one does.)
//   - Count is exact unless Truncated; then it is a lower bound. A count
//     has no cursor.
//   - With groupBy, Groups holds a page of groups in their order and
//     Count their number; limit and cursor page through the groups exactly
//     once. As with orderBy, groups come only when every result was
//     found: when a bound cut the work, Groups is empty and Truncated and
//     Note say so.
type QueryResult struct {
	Nodes []map[string]any `json:"nodes"`
	// Paths holds, with return.paths, one path per result, in the same order.
	Paths []Path `json:"paths,omitempty"`
	// Groups holds, with groupBy, a page of groups; Count is then the
	// number of groups.
	Groups []Group `json:"groups,omitempty"`
	Count  *int    `json:"count,omitempty"`
	// More is true when Cursor continues the results.
	More      bool   `json:"more"`
	Truncated bool   `json:"truncated"`
	Reason    string `json:"reason,omitempty"`
	// Note explains, in a sentence or two, what a bound cut and what to do.
	Note string `json:"note,omitempty"`
	// Partial lists start nodes whose traversal a bound cut even when
	// expanded alone; the cursor moves past them (see the contract above).
	Partial []ID      `json:"partial,omitempty"`
	Cursor  string    `json:"cursor,omitempty"`
	Limits  Limits    `json:"limits"`
	Capped  []string  `json:"capped,omitempty"`
	Stats   ReadStats `json:"stats"`
	// Plan says, with explain, how the query read its start set and its
	// order, in a sentence.
	Plan string `json:"plan,omitempty"`
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

// How start nodes are expanded: a call expands them in chunks, the first
// of one node, each next one four times as large up to maxChunk, so that a
// bound rarely leaves nothing; a cut chunk is the unit of continuation.
const (
	maxChunk = 4096
	maxUnit  = 1 << 30
)

// queryCursor continues a query. At is where the start set resumes. A
// cursor that pages through a unit (the N start nodes from At, or Rest:
// every one from At to the end, all expanded in full by an earlier call)
// also holds the sort key and ID of the last result returned from it; the
// call expands the unit again, returns its results after that one, and then
// goes on past the unit. Chunk is the chunk size to start with, so that a
// unit is expanded again exactly as before.
type queryCursor struct {
	F     string            `json:"f"`
	At    startPos          `json:"s,omitzero"`
	N     int               `json:"n,omitempty"`
	Rest  bool              `json:"r,omitempty"`
	After []json.RawMessage `json:"a,omitempty"`
	ID    ID                `json:"i,omitempty"`
	Chunk int               `json:"c,omitempty"`
	// G continues a grouped query (groupBy) after a group.
	G *groupCursor `json:"g,omitempty"`
	// X is the last index entry an index-ordered page passed over (at or
	// after its last result, named by ID and After): the walk goes on
	// after it. With no ID, no result came before it.
	X *walkPos `json:"x,omitempty"`

	after []any // After decoded
}

// UnmarshalJSON decodes a cursor strictly: a field it does not know is an
// error, not something to ignore.
func (c *queryCursor) UnmarshalJSON(data []byte) error {
	type plain queryCursor
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	var p plain
	if err := d.Decode(&p); err != nil {
		return err
	}
	*c = queryCursor(p)
	return nil
}

type executor struct {
	s        Store
	q        *Query
	b        *budget
	hardStop time.Time // reading results stops here, bound or not
	cut      bool      // reading results was cut at hardStop
	degs     map[degreeKey]int64
	err      error      // a store error reading a degree for a filter
	rw       *reachWalk // the traversal's page may come from an index walk
	stats    *Stats     // the store's Stats, read once (storeStats)
	statsErr error
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
		res.Capped = appendOnce(res.Capped, "maxHops")
		res.Note = fmt.Sprintf("The query asks for more hops than the server allows (maxHops %d): the results are those within %d hops.", lim.MaxHops, lim.MaxHops)
	}
	fp := q.fingerprint()
	cur, err := q.decodeCursor(s, fp)
	if err != nil {
		return nil, err
	}
	b := newBudget(ctx, lim)
	defer b.cancel()
	// Past its bound, a query still reads the results it found, but that
	// stops a quarter of the timeout after the deadline.
	ex := &executor{s: s, q: q, b: b, hardStop: start.Add(time.Duration(lim.TimeoutMs) * time.Millisecond * 5 / 4)}
	if q.GroupBy == nil && cur.G != nil {
		return nil, errBadCursor("a cursor of groups")
	}
	// A count the store's counts or indexes answer opens no source: its
	// plan would read the index to estimate what the count reads anyway.
	var src *source
	var walked *orderWalk // an index walk that ended before the page did
	if n, ok, complete, err := ex.countIndexed(steps); err != nil {
		return nil, err
	} else if ok {
		if q.Cursor != "" {
			return nil, errBadCursor("a count has no pages")
		}
		res.Count = &n
		if !complete {
			ex.truncated(res)
			res.note(fmt.Sprintf("The count is a lower bound: the %s limit stopped it. Raise limits.maxVisited or limits.timeoutMs, or narrow the query.", res.Reason))
		}
		res.More = false
		if q.Explain {
			res.Plan = "count from the store's counts and indexes"
		}
		return res.finish(b, start), nil
	}
	if done, err := ex.adjacentPage(res, steps, cur, fp); err != nil {
		return nil, err
	} else if done {
		res.More = res.Cursor != ""
		return res.finish(b, start), nil
	}
	if w, err := ex.planOrderWalk(steps); err != nil {
		return nil, err
	} else if w != nil {
		if err := cur.checkPaging(q); err != nil {
			return nil, err
		}
		done, err := ex.walkOrder(res, w, cur, fp)
		if err != nil {
			return nil, err
		}
		if done {
			res.More = res.Cursor != ""
			res.finish(b, start).Stats.Index = w.name()
			if q.Explain {
				res.Plan = w.explain() + ", stopping when the page is full"
			}
			return res, nil
		}
		walked = w
		// The sort path answers this page, from the last result (the
		// entries passed over since hold none).
		if cur.X = nil; cur.ID == "" {
			cur = queryCursor{F: fp}
		}
	}
	if p, ok := ex.degreeRangePlan(steps, cur); ok {
		if done, err := ex.runDegreeRange(res, p, cur, fp); err != nil {
			return nil, err
		} else if done {
			res.More = res.Cursor != ""
			return res.finish(b, start), nil
		}
	}
	if p, ok := ex.degreeOrderPlan(steps); ok {
		if err := ex.runDegreeOrder(res, p, cur, fp); err != nil {
			return nil, err
		}
		res.More = res.Cursor != ""
		return res.finish(b, start), nil
	}
	if src, err = ex.newSource(cur.At); err != nil {
		return nil, err
	}
	// Ordered by ID alone, a type scan's results are in order as it reads them.
	stream := len(steps) == 0 && (len(q.OrderBy) == 0 && (src.kind == srcSearch || src.byID()) || idOrder(q.OrderBy) && src.byID())
	switch {
	case q.GroupBy != nil:
		if err := ex.group(res, src, steps, cur, fp); err != nil {
			return nil, err
		}
	case q.Return.Count:
		if q.Cursor != "" {
			return nil, errBadCursor("a count has no pages")
		}
		if n, ok, err := ex.countAdjacent(steps); err != nil {
			return nil, err
		} else if ok {
			res.Count = &n
			break
		}
		c, err := ex.collect(src, cur, steps)
		if err != nil {
			return nil, err
		}
		n := len(c.ids)
		res.Count = &n
		if !c.complete {
			ex.truncated(res)
			res.note(fmt.Sprintf("The count is a lower bound: the %s limit stopped the work before every result was found. Raise limits.maxVisited or limits.timeoutMs, or narrow the query.", res.Reason))
		}
	case stream:
		if cur.N != 0 || cur.Rest || cur.ID != "" || len(cur.After) > 0 || cur.X != nil {
			return nil, errBadCursor("not a cursor of a scan")
		}
		if err := ex.stream(res, src, fp); err != nil {
			return nil, err
		}
	default:
		if err := cur.checkPaging(q); err != nil {
			return nil, err
		}
		run := steps
		if ex.rw = ex.planReachWalk(steps); ex.rw != nil {
			run = ex.rw.steps(steps)
		}
		c, err := ex.collect(src, cur, run)
		if err != nil {
			return nil, err
		}
		if ex.rw != nil {
			if err := ex.readReached(res, c, cur); err != nil {
				return nil, err
			}
		}
		if err := ex.page(res, c, cur, fp); err != nil {
			return nil, err
		}
	}
	if src.searchCut != "" {
		res.Truncated = true
		res.Reason = cmp.Or(res.Reason, src.searchCut)
		res.note("The search itself needs more than this query's limits allow: the results come from the part of it they allow.")
	}
	res.More = res.Cursor != ""
	res.finish(b, start).Stats.Index = src.index()
	if walked != nil && res.Stats.Index == "" {
		res.Stats.Index = walked.name()
	}
	if ex.rw != nil && ex.rw.used && res.Stats.Index == "" {
		res.Stats.Index = ex.rw.name()
	}
	if q.Explain {
		res.Plan = ex.explain(src, walked, stream, steps)
	}
	return res, nil
}

// countAdjacent answers the count of one hop from one node through the
// store's AdjacentCounter, which reads what the count needs (the node's
// edge summary, or the keys of its edges) and builds no result set; as
// neither holds an edge's properties, a step with an edgeWhere is not of
// that shape. It reports false when the query is not of that shape, the
// store has no AdjacentCounter, or the count would pass the work bound:
// the query then runs as any other.
func (ex *executor) countAdjacent(steps []Step) (int, bool, error) {
	q := ex.q
	ac, ok := ex.s.(AdjacentCounter)
	if !ok || len(steps) != 1 || q.where != nil || q.From.Type != "" || q.From.where != nil || q.From.Search != "" || len(q.From.IDs) == 0 {
		return 0, false, nil
	}
	for _, id := range q.From.IDs[1:] {
		if id != q.From.IDs[0] {
			return 0, false, nil
		}
	}
	st := steps[0]
	if st.Hops != (Hops{1, 1}) || st.Type != "" || st.where != nil || st.edgeWhere != nil {
		return 0, false, nil
	}
	dir, err := ParseDirection(string(st.Direction))
	if err != nil {
		return 0, false, err
	}
	n, work, complete, err := ac.CountAdjacent(ex.b.ctx, q.From.IDs[0], st.Edge, dir, ex.b.remaining())
	if err != nil || !complete {
		if ex.b.ctx.Err() != nil {
			return 0, false, nil // the query runs as any other, and hits the deadline there
		}
		return 0, false, err
	}
	ex.b.visited += work
	return n, true, nil
}

func (r *QueryResult) finish(b *budget, start time.Time) *QueryResult {
	r.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return r
}

// note adds a sentence to r.Note.
func (r *QueryResult) note(s string) {
	if r.Note != "" {
		r.Note += " "
	}
	r.Note += s
}

// truncated records the bound that cut the work.
func (ex *executor) truncated(res *QueryResult) {
	res.Truncated = true
	switch {
	case ex.b.reason != "":
		res.Reason = ex.b.reason
	case ex.cut:
		res.Reason = ReasonDeadline
	}
}

// decodeCursor decodes and checks the query's cursor: it must have been
// made for this query (fp), and every field must be in range, as a cursor
// is client input. Start positions are checked by newSource.
func (q *Query) decodeCursor(s Store, fp string) (queryCursor, error) {
	if q.Cursor == "" {
		return queryCursor{}, nil
	}
	c, err := decodeCursor[queryCursor](s, q.Cursor)
	if errors.Is(err, errForeignCursor) {
		return c, err
	}
	if err != nil {
		return c, errBadCursor("not a query cursor")
	}
	if c.F != fp {
		return c, errBadCursor("it was made for another query")
	}
	if c.N < 0 || c.N > maxUnit || c.Chunk < 0 || c.Chunk > maxChunk || c.N > 0 && c.Rest {
		return c, errBadCursor("paging position out of range")
	}
	if c.ID != "" && c.ID.Check() != nil {
		return c, errBadCursor("last result is not an ID")
	}
	if c.X != nil && (len(q.OrderBy) != 1 || c.X.I != "" && c.X.I.Check() != nil) {
		return c, errBadCursor("not a cursor of an index walk")
	}
	for _, raw := range c.After {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return c, errBadCursor("sort key is not JSON")
		}
		c.after = append(c.after, v)
	}
	return c, nil
}

// checkPaging checks that a cursor's paging fields fit the query's order.
func (c queryCursor) checkPaging(q *Query) error {
	paging := c.N > 0 || c.Rest
	switch {
	case paging != (c.ID != ""):
		return errBadCursor("paging position without a last result")
	case c.ID != "" && len(c.After) != len(q.OrderBy):
		return errBadCursor("sort key of the wrong length")
	case c.ID == "" && len(c.After) > 0:
		return errBadCursor("sort key without a last result")
	case len(q.OrderBy) > 0 && c.ID != "" && (!c.Rest || c.At.A != "" || c.At.K != 0 || c.At.Q != 0):
		return errBadCursor("an ordered result pages from its start")
	case len(q.OrderBy) > 0 && c.ID == "" && (c.At != startPos{} || c.Chunk != 0) && q.Cursor != "":
		return errBadCursor("an ordered result pages from its start")
	}
	return nil
}

// clampHops lowers step hop maxima so they sum to at most max, the last
// step's first, each down to its minimum (at least 1), and then, if that is
// not enough, below it: such a step reaches nothing, so the ceiling holds.
// It returns nil when nothing needed lowering.
func clampHops(steps []Step, maxHops int) []Step {
	total := 0
	for _, st := range steps {
		total += st.Hops.Max
	}
	if total <= maxHops {
		return nil
	}
	out := slices.Clone(steps)
	for _, floor := range []func(Hops) int{func(h Hops) int { return max(h.Min, 1) }, func(Hops) int { return 0 }} {
		for i := len(out) - 1; i >= 0 && total > maxHops; i-- {
			cut := max(min(total-maxHops, out[i].Hops.Max-floor(out[i].Hops)), 0)
			out[i].Hops.Max -= cut
			total -= cut
		}
	}
	return out
}

// fingerprint identifies a query for its cursors: everything but the
// cursor, the page size, the limits and explain. Its filters are written with
// their keys sorted, so the same query written with keys in another order
// (as a surface that rebuilds the arguments writes it) continues the
// same cursors.
func (q *Query) fingerprint() string {
	c := *q
	c.Cursor, c.Limit, c.Limits, c.Explain = "", 0, Limits{}, false
	data, _ := json.Marshal(c)
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if d.Decode(&v) == nil {
		data, _ = json.Marshal(v)
	}
	h := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// pageLimit returns the page size: the query's limit, at most maxResults.
func (ex *executor) pageLimit(res *QueryResult) int {
	limit := ex.q.Limit
	if limit <= 0 {
		limit = DefaultQueryLimit
	}
	if limit > res.Limits.MaxResults {
		limit = res.Limits.MaxResults
		res.Capped = appendOnce(res.Capped, "maxResults")
	}
	return limit
}

// stream pages through a start set that is itself the result, in the
// order the source yields it (by ID from the type index, by rank from a
// search): it reads only as far as the page needs, and a bound leaves a
// correct prefix of the order, which the cursor continues exactly.
func (ex *executor) stream(res *QueryResult, src *source, fp string) error {
	q := ex.q
	limit := ex.pageLimit(res)
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used := 0
	cursorAt := func(at startPos) { res.Cursor = encodeCursor(ex.s, queryCursor{F: fp, At: at}) }
	for {
		batch, err := src.next(min(limit-len(res.Nodes)+1, typePage))
		if err == nil {
			err = ex.err
		}
		if err != nil {
			return err
		}
		nodes := make([]*Node, len(batch))
		for i, st := range batch {
			nodes[i] = st.node
		}
		if err := ex.nodeDegrees(nodes, append(q.where.degrees(), q.returnDegrees()...)); err != nil {
			return err
		}
		for _, st := range batch {
			if !ex.match(q.where, st.node) {
				continue
			}
			if len(res.Nodes) == limit {
				cursorAt(st.at)
				return nil
			}
			obj := ex.project(st.node)
			size := jsonSize(obj)
			var p *Path
			if q.Return.Paths {
				p = &Path{Nodes: []ID{st.id}, Edges: []string{}}
				size += jsonSize(p)
			}
			if used+size > budget {
				if len(res.Nodes) == 0 {
					return tooLarge(st.id, size, budget)
				}
				res.Truncated, res.Reason = true, ReasonBytes
				res.note("The page reached limits.maxBytes; continue with the cursor.")
				cursorAt(st.at)
				return nil
			}
			used += size
			res.Nodes = append(res.Nodes, obj)
			if p != nil {
				res.Paths = append(res.Paths, *p)
			}
		}
		switch {
		case src.end:
			return nil
		case src.cut:
			ex.truncated(res)
			res.note(fmt.Sprintf("The %s limit stopped the scan: the results are correct but not all of them; continue with the cursor.", res.Reason))
			cursorAt(src.pos())
			return nil
		}
	}
}

func tooLarge(id ID, size, budget int) error {
	return fmt.Errorf("result %s alone takes %d bytes, above the %d that limits.maxBytes leaves for results: ask for fewer fields with return.fields: %w", id, size, budget, ErrInvalid)
}

// fetchWith reads nodes already paid for when they were reached (or
// scanned), in order, keeping those that pass, until it has want of them
// (want < 0: all). It runs even after a bound stopped the work, so the
// results found so far are returned, but not past the hard stop. Unless
// props is nil, it may read only the properties props of each node.
func (ex *executor) fetchWith(ids []ID, props []string, keep func(*Node) bool, want int) ([]*Node, error) {
	var out []*Node
	read := ex.s.Nodes
	if pr, ok := ex.s.(PropsReader); ok && props != nil {
		read = func(ctx context.Context, ids []ID) ([]*Node, error) { return pr.NodesProps(ctx, ids, props) }
	}
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
		nodes, err := read(context.WithoutCancel(ex.b.ctx), chunk)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n != nil && keep(n) {
				out = append(out, n)
			}
		}
		if ex.err != nil {
			return nil, ex.err
		}
	}
	return out, nil
}

// returnProps names the properties the results' fields hold (none, for
// metadata alone), or nil when the results are returned whole.
func (q *Query) returnProps() []string {
	if len(q.Return.Fields) == 0 || slices.Contains(q.Return.Fields, "properties") {
		return nil
	}
	names := []string{}
	for _, f := range q.Return.Fields {
		if !metaField(f) && !slices.Contains(names, f) {
			names = append(names, f)
		}
	}
	return names
}

// returnsIDsOnly reports whether the query returns its results' IDs and
// nothing else of them.
func (q *Query) returnsIDsOnly() bool {
	if len(q.Return.Fields) == 0 || len(q.Return.Degrees) > 0 || q.Return.Paths {
		return false
	}
	for _, f := range q.Return.Fields {
		if f != "id" {
			return false
		}
	}
	return true
}

// readProps names the properties that the query's where, orderBy and
// groupBy read from the nodes it collects: those it reads to test and
// order them, before it reads its page's nodes whole.
func (q *Query) readProps() []string {
	names := q.where.props([]string{})
	for _, o := range q.OrderBy {
		if o.Degree == nil && !metaField(o.Field) && !slices.Contains(names, o.Field) {
			names = append(names, o.Field)
		}
	}
	if g := q.GroupBy; g != nil && g.Field != "" && !metaField(g.Field) && !slices.Contains(names, g.Field) {
		names = append(names, g.Field)
	}
	return names
}

// sortKey returns a node's orderBy values (nil where it has none), its
// degrees read before (nodeDegrees). Times are written with a fixed
// number of digits so that they order as strings.
func (ex *executor) sortKey(order []Order, n *Node) []any {
	key := make([]any, len(order))
	for i, o := range order {
		var v any
		var ok bool
		if o.Degree != nil {
			v, ok = nodeRecord{n, ex}.degree(o.Degree)
		} else {
			v, ok = fieldValue(n, o.Field)
		}
		if t, isTime := v.(time.Time); isTime {
			v = t.UTC().Format("2006-01-02T15:04:05.000000000Z")
		}
		if ok {
			key[i] = v
		}
	}
	return key
}

// compareKey orders by the sort key (missing values last, whatever the
// direction; false before true; values of different kinds by kind), then
// by ID.
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
			if ba, isBool := a.(bool); isBool && c == 0 {
				c = cmp.Compare(btoi(ba), btoi(b.(bool)))
			}
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

// storeStats returns the store's Stats, read once per call: the plans that
// weigh their costs by them share one read, which is a round trip to a
// server store (a top 50 by size read them twice, a maintainer's top 10
// three times).
func (ex *executor) storeStats() (*Stats, error) {
	if ex.stats == nil && ex.statsErr == nil {
		ex.stats, ex.statsErr = ex.s.Stats(ex.b.ctx)
	}
	return ex.stats, ex.statsErr
}
