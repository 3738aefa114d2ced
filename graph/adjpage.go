package graph

import (
	"context"
	"fmt"
	"time"
)

// A page of one hop from a few start nodes, in ID order (the default
// order), is read from the start nodes' edge listings, not from the whole
// traversal: Store.Edges lists a node's edges of one label in one
// direction by the node at the other end, so merging those listings
// yields the results in ID order, and reading stops once the page is
// full. Collecting the hop first and sorting it read every edge of the
// start nodes for any page: the first 50 dependents of bench-pg's hub at
// 100k nodes (29,757 of them) took 22.6 ms, where PostgreSQL's index scan
// takes 0.05 ms.
//
// The query's cursor is the one collect and page make for the same query
// (the whole start set as one unit expanded in full, and the last result
// returned from it), so its pages continue where a page of the general
// path would: after that ID. A bound that stops the listings leaves the
// results found so far, which are a prefix of the order, and a cursor
// after the last node examined and filtered, so the continuation is exact
// (no result twice, none missed); and as a call examines its first node
// whatever the bounds, paging always moves on.
//
// Work is one unit per node examined (a distinct node at the other end
// of a listed edge, whether or not a filter keeps it); the edges listed
// on the way cost none, as each listing reads at most a page past the
// last node examined.

// maxAdjListings bounds the listings an adjacent page merges (start
// nodes x labels x directions); a query with more goes the general way.
const maxAdjListings = 16

// An edgeListing is one node's edges of one label in one direction, read
// a page at a time in the order of the node at the other end: through the
// store's Adjacency when only the edges' keys are needed (no Edge, ID or
// cursor is built for each edge), through Store.Edges otherwise.
type edgeListing struct {
	self ID
	in   bool
	q    EdgeQuery // its After moves on page by page
	buf  []Edge
	i    int
	done bool // buf is the listing's last page
}

func newEdgeListing(self ID, label string, in, keysOnly bool) *edgeListing {
	d := Out
	if in {
		d = In
	}
	return &edgeListing{self: self, in: in, q: EdgeQuery{Nodes: []ID{self}, Labels: []string{label}, Direction: d, KeysOnly: keysOnly}}
}

// startAfter starts the listing after the edges to other with the empty
// key; its other edges to other, if any, are still to come.
func (l *edgeListing) startAfter(other ID) {
	l.q.After = EdgePlace{Label: l.q.Labels[0], In: l.in, Other: other}.Cursor()
}

func (l *edgeListing) other(e *Edge) ID {
	if l.in {
		return e.From
	}
	return e.To
}

// head returns the listing's next edge (valid until the next call), reading
// a page of size when buf is spent, or nil at its end.
func (l *edgeListing) head(ctx context.Context, s Store, size int) (*Edge, error) {
	for l.i == len(l.buf) {
		if l.done {
			return nil, nil
		}
		if err := l.read(ctx, s, size); err != nil {
			return nil, err
		}
	}
	return &l.buf[l.i], nil
}

func (l *edgeListing) read(ctx context.Context, s Store, size int) error {
	l.buf, l.i = l.buf[:0], 0
	if adj, ok := s.(Adjacency); ok && l.q.KeysOnly {
		more := false
		err := adj.Adjacent(ctx, l.q, func(_ int, k EdgeKey) bool {
			if len(l.buf) == size {
				more = true
				return false
			}
			l.buf = append(l.buf, Edge{EdgeKey: k})
			return true
		})
		if err != nil {
			return err
		}
		l.done = !more
		if more {
			last := &l.buf[len(l.buf)-1]
			l.q.After = EdgePlace{Label: last.Label, In: l.in, Other: l.other(last), Key: last.Key}.Cursor()
		}
		return nil
	}
	l.q.Limit = size
	page, err := s.Edges(ctx, l.q)
	if err != nil {
		return err
	}
	for _, e := range page.Edges {
		l.buf = append(l.buf, *e)
	}
	l.done, l.q.After = page.Next == "", page.Next
	return nil
}

// adjacentShape reports whether the query is one hop from its start IDs
// in the default order (by ID), with no paths, count or groups, a cursor of the kind
// adjacentPage makes (or none), and few enough listings: the start nodes
// without repeats, the labels, and the directions to list.
func (ex *executor) adjacentShape(steps []Step, cur queryCursor) (starts []ID, labels []string, dirs []Direction, ok bool) {
	q := ex.q
	if len(steps) != 1 || q.GroupBy != nil || q.Return.Count || q.Return.Paths || len(q.OrderBy) > 0 ||
		len(q.From.IDs) == 0 || q.From.Type != "" || q.From.where != nil || q.From.Search != "" {
		return nil, nil, nil, false
	}
	st := &steps[0]
	if st.Hops.Min != 1 || st.Hops.Max != 1 {
		return nil, nil, nil, false
	}
	// The cursor continues after cur.ID, with the whole start set as the
	// unit; anything else is another path's cursor, which that path checks.
	first := cur.ID == "" && !cur.Rest
	if cur.At != (startPos{}) || cur.N != 0 || cur.Chunk > 1 || len(cur.After) > 0 || cur.X != nil || cur.G != nil ||
		!first && !(cur.Rest && cur.ID != "") {
		return nil, nil, nil, false
	}
	labels, err := KnownLabels(ex.s.Model(), st.Edge)
	if err != nil {
		return nil, nil, nil, false // the general path says what is wrong
	}
	switch st.Direction {
	case "", Out:
		dirs = []Direction{Out}
	case In:
		dirs = []Direction{In}
	default:
		dirs = []Direction{Out, In}
	}
	seen := map[ID]bool{}
	for _, id := range q.From.IDs {
		if !seen[id] {
			seen[id] = true
			starts = append(starts, id)
		}
	}
	if len(starts)*len(labels)*len(dirs) > maxAdjListings {
		return nil, nil, nil, false
	}
	return starts, labels, dirs, true
}

// adjacentPage answers a query of adjacentShape from the start nodes' edge
// listings (see above). It reports false, having done nothing, for a query
// of another shape.
func (ex *executor) adjacentPage(res *QueryResult, steps []Step, cur queryCursor, fp string) (bool, error) {
	starts, labels, dirs, ok := ex.adjacentShape(steps, cur)
	if !ok {
		return false, nil
	}
	st := &steps[0]
	var ls []*edgeListing
	for _, s := range starts {
		for _, label := range labels {
			for _, d := range dirs {
				l := newEdgeListing(s, label, d == In, st.edgeWhere == nil)
				if cur.ID != "" {
					// After the last result's edge with the empty key; its
					// other edges, if any, are passed over below.
					l.startAfter(cur.ID)
				}
				ls = append(ls, l)
			}
		}
	}
	limit := ex.pageLimit(res)
	want := limit + 1 // one more tells whether a page follows
	size := min(want+1, 2000)
	c := &collection{keys: map[ID][]any{}, paths: map[ID]*Path{}, gkeys: map[ID][]string{}, complete: true, listed: true}
	// Every node up to decided was examined and, if it passed the edges'
	// test, the step's and the query's filters: the cursor may go on after
	// it. last is the last node examined; batch holds those examined since
	// decided that wait for the filters.
	var decided, last ID
	var batch []ID
	// The first node a call examines is examined whatever the deadline (as
	// page reads its first result past the hard stop): else a deadline that
	// the first listing's read takes up would answer every call with the
	// same cursor, and paging would never end.
	first := true
	ctx := context.WithoutCancel(ex.b.ctx)
	flush := func() error {
		if len(batch) == 0 {
			decided = last
			return nil
		}
		if first {
			stop := ex.hardStop
			ex.hardStop = time.Time{}
			defer func() { ex.hardStop = stop }()
		}
		from := len(c.ids)
		// add keeps what it is given (c.first): batch starts anew.
		kept, err := ex.keepStep(st, batch)
		if err == nil {
			err = ex.add(c, kept, true, nil, nil)
		}
		batch = nil
		switch {
		case err != nil:
			return err
		case !ex.cut:
			decided = last
		case len(c.ids) > from:
			// Cut at the hard stop: the filters were applied in order, up
			// to the last node kept at least.
			decided = c.ids[len(c.ids)-1]
		}
		return nil
	}
	// head is l.head, but a read the deadline stops ends the listings
	// (past the first node): nil, and the budget says why.
	head := func(l *edgeListing) (*Edge, error) {
		e, err := l.head(ctx, ex.s, size)
		if err != nil && ex.b.ctx.Err() != nil && !first {
			ex.b.stop(ReasonDeadline)
			return nil, nil
		}
		return e, err
	}
	exhausted := false
	for len(c.ids) < want && !ex.cut && (first || ex.b.ok()) {
		// The next node at the other end, the least of the listings' heads.
		var next ID
		for _, l := range ls {
			e, err := head(l)
			if err != nil {
				return true, err
			}
			if e != nil && (next == "" || l.other(e) < next) {
				next = l.other(e)
			}
		}
		if ex.b.reason != "" && !first {
			break
		}
		if next == "" {
			exhausted = true
			break
		}
		// The last result's edges with keys follow its edge with the empty
		// key, after which the listings start: not a node to examine again.
		again := next == cur.ID
		if !again && !first && !ex.b.spend(1) {
			break
		}
		// Pass over its edges in every listing: it is a result if one of
		// them passes the edge filter and does not loop back to the start
		// node it is listed for.
		hit := false
		for _, l := range ls {
			for {
				e, err := head(l)
				if err != nil {
					return true, err
				}
				if e == nil || l.other(e) != next {
					break
				}
				l.i++
				if !again && next != l.self && (st.edgeWhere == nil || st.edgeWhere.match(edgeRecord{e})) {
					hit = true
				}
			}
		}
		if ex.b.reason != "" && !first {
			break // the node was not examined in full
		}
		if again {
			continue
		}
		if first {
			ex.b.visited++ // its unit, counted whatever the bounds
		}
		last = next
		if hit {
			batch = append(batch, next)
		}
		if first || len(batch) >= want-len(c.ids) {
			if err := flush(); err != nil {
				return true, err
			}
			if !first {
				size = min(4*size, 2000) // filters passed over some
			}
			first, ctx = false, ex.b.ctx
		}
	}
	if err := flush(); err != nil {
		return true, err
	}
	c.tail = &segment{chunk: 1, whole: true, to: len(c.ids)}
	if err := ex.page(res, c, queryCursor{F: fp}, fp); err != nil {
		return true, err
	}
	if ex.q.Explain {
		res.Plan = fmt.Sprintf("read %d ids, merge their edge listings (%d) in the order of the node at the other end, stopping when the page is full", len(starts), len(ls))
	}
	if res.Cursor != "" || len(c.ids) >= want || exhausted && decided == last {
		return true, nil // the page ended, or the listings did
	}
	// A bound stopped the listings or the filters: the results found so far
	// are the first in order, and the rest come after decided.
	ex.truncated(res)
	next := queryCursor{F: fp, Rest: true, Chunk: 1, ID: decided}
	if decided == "" {
		next = cur // nothing examined: the same place again
		next.F = fp
	}
	res.Cursor = encodeCursor(ex.s, next)
	res.note(fmt.Sprintf("The %s limit stopped the work: these results are correct but not all of them. Continue with the cursor.", res.Reason))
	return true, nil
}
