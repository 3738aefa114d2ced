package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// A query that traverses, orders, or starts from a set that is not itself
// its result in ID order, expands its start set chunk by chunk into a
// collection of results (collect), then pages through it (page). A cursor
// of such a query names a unit of start nodes a call expanded in full, so
// that the next call can expand it again and go on after its last result
// returned: exactly once within a unit, at-least-once across a cut.

// A collection holds the results one call found, in the order found, and
// how far the expansion of the start set got.
type collection struct {
	ids   []ID
	seen  map[ID]bool // found, whether or not where kept it; nil until a second chunk (see add)
	first []ID        // while seen is nil: what the first chunk found
	keys  map[ID][]any
	paths map[ID]*Path
	// gkeys holds, for a groupBy on a field, the group keys of the
	// results read while collecting them.
	gkeys map[ID][]string

	// unit is the cursor's unit (nil without one), tail what followed it.
	unit, tail *segment
	complete   bool // every start node was expanded in full
	// more: ids holds the first results in order only (an index walk
	// read them), and more follow the last.
	more bool
	// After a cut: where the start set resumes, and the chunk size to use.
	resume      startPos
	resumeChunk int
	lone        ID // a start node a bound cut even alone; resume is past it
	// listed: every result is the far end of an edge read during the call
	// (a traversal's, or adjacentPage's), or a start node the call read (a
	// step of 0 hops), so it existed when it was read.
	listed bool
	// read holds the start nodes the scan read, when they are the results
	// (a query without steps), up to keptStarts of them: the page takes
	// them from there rather than reading them again. nil when there are
	// none, or more.
	read map[ID]*Node
	// readAll says that read holds every start node the scan read.
	readAll bool
}

// keptStarts is how many start nodes a collection keeps for its page (see
// collection.read): a query of a few IDs keeps them all, a scan of a type
// keeps none.
const keptStarts = 1024

// A segment is a run of start nodes expanded one after the other.
type segment struct {
	at    startPos // its first start node
	chunk int      // the chunk size it started with
	done  int      // start nodes in chunks expanded in full
	whole bool     // it was expanded in full, up to its end
	from  int      // collection.ids[from:to] were found while expanding it
	to    int
}

// collect expands the start set from the cursor's position, chunk by
// chunk, until it ends or a bound stops the work: first the cursor's
// unit, if any, then onwards.
func (ex *executor) collect(src *source, cur queryCursor, steps []Step) (*collection, error) {
	c := &collection{keys: map[ID][]any{}, paths: map[ID]*Path{}, gkeys: map[ID][]string{}, readAll: len(steps) == 0 && src.kind != srcSearch,
		listed: len(steps) > 0}
	chunk := cmp.Or(cur.Chunk, 1)
	seg := &segment{at: src.pos(), chunk: chunk}
	left := cur.N // start nodes left in the unit
	if cur.N > 0 || cur.Rest {
		c.unit = seg
	} else {
		c.tail = seg
	}
	endSegment := func() {
		seg.whole, seg.to = true, len(c.ids)
		if seg == c.unit && !cur.Rest {
			seg = &segment{at: src.pos(), chunk: chunk, from: len(c.ids)}
			c.tail = seg
		}
	}
	for first := true; ; first = false {
		if src.end {
			endSegment()
			// A search cut by its work limit found only some of the
			// results: enough for a page, not for an order or a grouping,
			// which need every one.
			c.complete = src.searchCut == "" || len(ex.q.OrderBy) == 0 && ex.q.GroupBy == nil
			break
		}
		size := chunk
		if seg == c.unit && !cur.Rest {
			size = min(size, left)
		}
		starts, err := src.next(size)
		if err != nil {
			return nil, err
		}
		if len(starts) == 0 {
			if src.end {
				continue
			}
			c.resume, c.resumeChunk = src.pos(), chunk // the scan was cut
			break
		}
		ids := make([]ID, len(starts))
		for i, st := range starts {
			ids[i] = st.id
		}
		var found []ID
		var pathOf func(ID) *Path
		if ex.rw != nil && ex.rw.probe {
			ex.rw.starts = append(ex.rw.starts, ids...) // readReached probes, or traverses
		} else if found, pathOf, err = ex.expand(ids, steps); err != nil {
			return nil, err
		}
		var read map[ID]*Node // the start nodes the scan read, when they are the results
		if len(steps) == 0 {
			read = make(map[ID]*Node, len(starts))
			for _, st := range starts {
				if st.node != nil {
					read[st.id] = st.node
				}
			}
			c.keep(read)
		}
		if ex.rw != nil {
			ex.addReached(c, found)
		} else if err := ex.add(c, found, len(steps) > 0, pathOf, read); err != nil {
			return nil, err
		}
		if ex.b.reason != "" || ex.cut {
			// Resume at the cut chunk's first start node, with half as many
			// if it came first (else earlier chunks used the budget). A lone
			// start node cut as the very first thing of a call that began
			// at it is cut by its own traversal: the cursor passes it over.
			switch {
			case first && size == 1 && starts[0].at == cur.At:
				c.lone = starts[0].id
				c.resume, c.resumeChunk = src.pos(), 1
			case first:
				c.resume, c.resumeChunk = starts[0].at, max(len(starts)/2, 1)
			default:
				c.resume, c.resumeChunk = starts[0].at, len(starts)
			}
			break
		}
		seg.done += len(starts)
		chunk = min(4*chunk, maxChunk)
		if seg == c.unit && !cur.Rest {
			if left -= len(starts); left == 0 {
				endSegment()
			}
		}
	}
	seg.to = len(c.ids)
	return c, nil
}

// keep adds the start nodes a chunk read to c.read, while they fit. (A
// search's hits are not kept: the page reads its nodes as it does now.)
func (c *collection) keep(read map[ID]*Node) {
	if !c.readAll {
		return
	}
	if len(c.read)+len(read) > keptStarts {
		c.read, c.readAll = nil, false
		return
	}
	if c.read == nil {
		c.read = make(map[ID]*Node, len(read))
	}
	maps.Copy(c.read, read)
}

// add records the nodes a chunk reached that the call had not found yet,
// keeping those that pass the query's where. read holds nodes the call
// has read already (start nodes a scan read), which it does not read again.
// distinct says that found holds no node twice (a step's result; a start
// set may, in an "in" plan): then the first chunk's nodes are all new, and
// the set of nodes found is built only if a second chunk comes.
func (ex *executor) add(c *collection, found []ID, distinct bool, pathOf func(ID) *Path, read map[ID]*Node) error {
	q := ex.q
	var fresh []ID
	if c.seen == nil && len(c.first) == 0 && distinct {
		c.first, fresh = found, found
	} else {
		if c.seen == nil {
			c.seen = make(map[ID]bool, len(c.first)+len(found))
			for _, id := range c.first {
				c.seen[id] = true
			}
			c.first = nil
		}
		for _, id := range found {
			if !c.seen[id] {
				c.seen[id] = true
				fresh = append(fresh, id)
			}
		}
	}
	push := func(id ID, n *Node) {
		if n != nil && !ex.match(q.where, n) {
			return
		}
		c.ids = append(c.ids, id)
		if len(q.OrderBy) > 0 {
			c.keys[id] = ex.sortKey(q.OrderBy, n)
		}
		if pathOf != nil {
			c.paths[id] = pathOf(id)
		}
		if n != nil && q.GroupBy != nil && q.GroupBy.Field != "" {
			c.gkeys[id] = groupKeys(n, q.GroupBy.Field)
		}
	}
	if q.where == nil && len(q.OrderBy) == 0 {
		for _, id := range fresh {
			push(id, read[id])
		}
		return nil
	}
	var unread []ID
	for _, id := range fresh {
		if read[id] == nil {
			unread = append(unread, id)
		}
	}
	fetched, err := ex.fetchWith(unread, q.readProps(), func(*Node) bool { return true }, -1)
	if err != nil {
		return err
	}
	nodes := fetched
	if len(unread) < len(fresh) {
		// In the order found; fetchWith drops nodes deleted since.
		byID := make(map[ID]*Node, len(fetched))
		for _, n := range fetched {
			byID[n.ID] = n
		}
		nodes = make([]*Node, 0, len(fresh))
		for _, id := range fresh {
			if n := cmp.Or(read[id], byID[id]); n != nil {
				nodes = append(nodes, n)
			}
		}
	}
	if err := ex.nodeDegrees(nodes, append(q.where.degrees(), orderDegrees(q.OrderBy)...)); err != nil {
		return err
	}
	for _, n := range nodes {
		push(n.ID, n)
	}
	return ex.err
}

// page returns a page of what collect found: the unit's results after the
// cursor's last one, then the rest, each in order, and the cursor that
// continues without skipping any result.
func (ex *executor) page(res *QueryResult, c *collection, cur queryCursor, fp string) error {
	q := ex.q
	ordered := len(q.OrderBy) > 0
	if !c.complete {
		ex.truncated(res)
	}
	if ordered && !c.complete {
		res.note(fmt.Sprintf("orderBy needs every result, and the %s limit stopped the work before they were all found, so no page is returned: a partial order is not the order. Raise limits.maxVisited or limits.timeoutMs, narrow the query, or drop orderBy to page through the results unordered.", res.Reason))
		if q.Cursor != "" {
			res.Cursor = q.Cursor
			res.note("Call again with the same cursor to retry.")
		}
		return nil
	}
	order := func(a, b ID) int {
		if ordered {
			return compareKey(q.OrderBy, c.keys[a], a, c.keys[b], b)
		}
		return strings.Compare(string(a), string(b))
	}
	var items []ID
	units := 0 // items[:units] come from the unit
	if c.unit != nil {
		u := slices.Clone(c.ids[c.unit.from:c.unit.to])
		slices.SortFunc(u, order)
		i, _ := slices.BinarySearchFunc(u, cur, func(id ID, cur queryCursor) int {
			if ordered {
				return compareKey(q.OrderBy, c.keys[id], id, cur.after, cur.ID)
			}
			return strings.Compare(string(id), string(cur.ID))
		})
		for i < len(u) && u[i] == cur.ID {
			i++
		}
		items, units = u[i:], len(u)-i
	}
	if c.tail != nil {
		t := slices.Clone(c.ids[c.tail.from:c.tail.to])
		slices.SortFunc(t, order)
		items = append(items, t...)
	}

	limit := ex.pageLimit(res)
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used, last, cut := 0, -1, false
	// A page that returns some fields reads only the properties among them:
	// the first 50 dependents of bench-pg's hub by ID, with their IDs,
	// spent half of its time decoding properties no one asked for.
	read := ex.s.Nodes
	if pr, ok := ex.s.(PropsReader); ok {
		if props := q.returnProps(); props != nil {
			read = func(ctx context.Context, ids []ID) ([]*Node, error) { return pr.NodesProps(ctx, ids, props) }
		}
	}
	if c.read != nil {
		// The start nodes the scan read in this call are the results: the
		// page takes them as read (a second read, a round trip to a
		// server store, said no more: a node deleted in between was
		// dropped then, and a node changed in between is returned as the
		// call first read it).
		inner := read
		read = func(ctx context.Context, ids []ID) ([]*Node, error) {
			out := make([]*Node, len(ids))
			var miss []ID
			var at []int
			for i, id := range ids {
				if n := c.read[id]; n != nil {
					out[i] = n
				} else {
					miss, at = append(miss, id), append(at, i)
				}
			}
			if len(miss) == 0 {
				return out, nil
			}
			got, err := inner(ctx, miss)
			if err != nil {
				return nil, err
			}
			for j, n := range got {
				out[at[j]] = n
			}
			return out, nil
		}
	}
	if c.listed && q.returnsIDsOnly() {
		// A page of IDs read from edge listings reads no node: an edge's
		// ends exist wherever it does, so each result existed when its
		// edge was read during this call (as a node read in another
		// transaction says it existed then). Reading them was a third of
		// the first 50 dependents of bench-pg's hub at 1M nodes, and a
		// round trip of five for Lore on PostgreSQL's out-neighbours of a
		// leaf to depth 3.
		read = func(_ context.Context, ids []ID) ([]*Node, error) {
			nodes := make([]Node, len(ids))
			out := make([]*Node, len(ids))
			for i, id := range ids {
				nodes[i].ID = id
				out[i] = &nodes[i]
			}
			return out, nil
		}
	}
	for i := 0; i < len(items) && !cut; {
		// Nodes are read 256 at a time, but no more than the page can
		// still take, and one to tell whether a result follows it: a top
		// 10 of 730 results read 256 whole nodes for 11, an eighth of the
		// query's time at 10,000 nodes.
		chunkSize := min(256, limit-len(res.Nodes)+1)
		if time.Now().After(ex.hardStop) {
			if len(res.Nodes) > 0 {
				ex.cut, cut = true, true
				break
			}
			// Past the hard stop, a page still reads its first result, one
			// node at a time: else a deadline that the expansion alone
			// takes up would answer every retry of the cursor with the
			// same empty page, and paging would never end.
			chunkSize = 1
		}
		base, chunk := i, items[i:min(i+chunkSize, len(items))]
		i += len(chunk)
		nodes, err := read(context.WithoutCancel(ex.b.ctx), chunk)
		if err != nil {
			return err
		}
		if err := ex.nodeDegrees(nodes, q.returnDegrees()); err != nil {
			return err
		}
		for j, n := range nodes {
			if n == nil {
				continue // deleted since it was found
			}
			if len(res.Nodes) == limit {
				cut = true
				break
			}
			obj := ex.project(n)
			size := jsonSize(obj)
			p := c.paths[n.ID]
			if q.Return.Paths {
				size += jsonSize(p)
			}
			if used+size > budget {
				if len(res.Nodes) == 0 {
					return tooLarge(n.ID, size, budget)
				}
				res.Truncated, res.Reason = true, cmp.Or(res.Reason, ReasonBytes)
				res.note("The page reached limits.maxBytes; continue with the cursor.")
				cut = true
				break
			}
			used += size
			res.Nodes = append(res.Nodes, obj)
			if q.Return.Paths {
				res.Paths = append(res.Paths, *p)
			}
			last = base + j
		}
	}
	if ex.cut && res.Reason == "" {
		res.Truncated, res.Reason = true, ReasonDeadline
	}
	cut = cut || c.more

	next := queryCursor{F: fp}
	switch {
	case cut && last < 0: // the hard stop came before the first result: retry
		if q.Cursor != "" || ordered {
			res.Cursor = q.Cursor
			return nil
		}
		first := cmp.Or(c.unit, c.tail)
		next.At, next.Chunk = first.at, first.chunk
	case cut:
		// The page ends inside a segment: page on through it if it was
		// expanded in full (or in part, up to its last full chunk).
		g := c.tail
		if last < units {
			g = c.unit
		}
		id := items[last]
		next.ID, next.Chunk, next.At = id, g.chunk, g.at
		for _, k := range c.keys[id] {
			raw, _ := json.Marshal(k)
			next.After = append(next.After, raw)
		}
		switch {
		case g.whole && g == c.unit:
			next.N, next.Rest = cur.N, cur.Rest
		case g.whole:
			next.Rest = true
		case g.done > 0:
			next.N = g.done
		default:
			next = ex.resumeCursor(res, c, fp)
		}
	case cut || !c.complete:
		next = ex.resumeCursor(res, c, fp)
	default:
		return nil
	}
	res.Cursor = encodeCursor(ex.s, next)
	if !c.complete {
		res.note(fmt.Sprintf("The %s limit stopped the work: these results are correct but not all of them. Continue with the cursor; a continuation may repeat results already returned (deduplicate by id).", res.Reason))
	}
	return nil
}

// resumeCursor continues the expansion where a bound stopped it.
func (ex *executor) resumeCursor(res *QueryResult, c *collection, fp string) queryCursor {
	if c.lone != "" {
		res.Partial = append(res.Partial, c.lone)
		res.note(fmt.Sprintf("The %s limit cut the traversal from start node %s even alone; the cursor moves past it, so results reached only from it may be missing: query from it alone with higher limits to complete them.", res.Reason, c.lone))
	}
	return queryCursor{F: fp, At: c.resume, Chunk: c.resumeChunk}
}
