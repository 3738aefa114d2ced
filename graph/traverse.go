package graph

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// expandLevel fetches the edges of one frontier, in bounded chunks, and
// calls reach for each edge leaving it in the given direction, with the
// frontier node, the node at the other end and the edge's key (whose ID,
// k.String(), a caller makes only when it needs it). Each edge read costs
// one unit of work. It stops when the budget does. With a filter
// (a step's edgeWhere) it reads the edges' properties and skips the edges
// that fail it, which still cost their unit.
//
// With a store's Adjacency and no filter, it reads each chunk's edges in
// one call, with no Edge built per edge; otherwise it pages through
// Store.Edges, which also returns the properties. A frontier node's edges
// are listed for it alone: an edge between two frontier nodes is reached
// once from each end (for Both).
func expandLevel(s Store, b *budget, frontier []ID, labels []string, dir Direction, keep *filter, reach func(self, other ID, k EdgeKey)) error {
	if adj, ok := s.(Adjacency); ok && keep == nil {
		return expandAdjacent(adj, b, frontier, labels, dir, nil, reach)
	}
	_, err := pageLevel(s, b, frontier, labels, dir, keep, -1, func(self, other ID, k EdgeKey) bool {
		reach(self, other, k)
		return true
	})
	return err
}

// pageLevel is expandLevel through Store.Edges, which stops once reach
// returns false, and reads no more than most edges past the first (all
// of them when most < 0). It reports whether it listed every edge.
func pageLevel(s Store, b *budget, frontier []ID, labels []string, dir Direction, keep *filter, most int, reach func(self, other ID, k EdgeKey) bool) (bool, error) {
	listed := 0
	for i := 0; i < len(frontier) && b.ok(); i += frontierChunk {
		part := frontier[i:min(i+frontierChunk, len(frontier))]
		inPart := make(map[ID]bool, len(part))
		for _, id := range part {
			inPart[id] = true
		}
		eq := EdgeQuery{Nodes: part, Labels: labels, Direction: dir, KeysOnly: keep == nil}
		for b.ok() {
			eq.Limit = min(2000, b.remaining())
			if most >= 0 {
				eq.Limit = min(eq.Limit, most+1-listed) // listed <= most here
			}
			if eq.Limit <= 0 {
				b.stop(ReasonWork)
				break
			}
			page, err := s.Edges(b.ctx, eq)
			if err != nil {
				if b.ctx.Err() != nil {
					b.stop(ReasonDeadline)
					return false, nil
				}
				return false, err
			}
			b.spend(len(page.Edges))
			listed += len(page.Edges)
			for _, e := range page.Edges {
				if keep != nil && !keep.match(edgeRecord{e}) {
					continue
				}
				if dir != In && inPart[e.From] && !reach(e.From, e.To, e.EdgeKey) {
					return false, nil
				}
				if dir != Out && inPart[e.To] && !reach(e.To, e.From, e.EdgeKey) {
					return false, nil
				}
			}
			if most >= 0 && listed > most {
				return false, nil
			}
			if page.Next == "" {
				break
			}
			eq.After = page.Next
		}
	}
	return b.ok(), nil
}

// adjacentChunk is how many frontier nodes one Adjacent call expands at
// most; a call also stops at the first node boundary after adjacentEdges
// edges, so that one read holds the store's read side only briefly (a
// writer waits for it). deadlineEvery is how many edges pass between two
// looks at the deadline.
const (
	adjacentChunk = 1024
	adjacentEdges = 16384
	deadlineEvery = 1024
)

// expandAdjacent is expandLevel over a store's Adjacency. With a cache,
// it lists the edges of a node the cache holds from there, and keeps those
// of the nodes it reads while there is room.
func expandAdjacent(adj Adjacency, b *budget, frontier []ID, labels []string, dir Direction, cache *adjCache, reach func(self, other ID, k EdgeKey)) error {
	if dir == "" {
		dir = Out
	}
	// For Both, an edge between two frontier nodes reaches from each end
	// at the place it is listed, as expandLevel's paging does within one
	// chunk of frontierChunk nodes: so the order of reach calls, and with
	// it which edge first reaches a node (the path a query returns), is
	// the same with or without the store's Adjacency.
	var chunkOf map[ID]int
	if dir == Both {
		chunkOf = make(map[ID]int, len(frontier))
		for i, id := range frontier {
			if _, ok := chunkOf[id]; !ok {
				chunkOf[id] = i / frontierChunk
			}
		}
	}
	w := &adjWalk{b: b, frontier: frontier, dir: dir, chunkOf: chunkOf, reach: reach}
	w.rec.c = cache
	for i := 0; i < len(frontier) && b.ok(); {
		if es, ok := cache.edges(frontier[i], dir); ok {
			for _, k := range es {
				if !w.visit(i, k) {
					return nil
				}
			}
			i++
			continue
		}
		end := i + 1 // the run of nodes the cache does not hold, up to a chunk
		for end < len(frontier) && end-i < adjacentChunk && !cache.holds(frontier[end], dir) {
			end++
		}
		part := frontier[i:end]
		w.at, w.listed, w.last, w.resume = i, 0, 0, len(part)
		w.rec.start(part, dir)
		err := adj.Adjacent(b.ctx, EdgeQuery{Nodes: part, Labels: labels, Direction: dir}, w.listEdge)
		if err != nil {
			if b.ctx.Err() != nil {
				b.stop(ReasonDeadline)
				return nil
			}
			return err
		}
		if b.reason == "" {
			w.rec.upTo(w.resume) // the nodes before resume are listed whole
		}
		i += w.resume
	}
	return nil
}

// An adjWalk is the state of expandAdjacent, kept together so that the
// calls it makes allocate nothing per call.
type adjWalk struct {
	b        *budget
	frontier []ID
	dir      Direction
	chunkOf  map[ID]int
	reach    func(self, other ID, k EdgeKey)
	n        int // edges listed
	// The Adjacent call under way: the place of its first node in frontier,
	// the edges it listed, the node of the last, the node the next call
	// starts with.
	at, listed, last, resume int
	rec                      adjRecord
}

// listEdge is Adjacent's callback: it takes the edge k of part[j].
func (w *adjWalk) listEdge(j int, k EdgeKey) bool {
	if w.listed >= adjacentEdges && j != w.last {
		w.resume = j // the next call starts with this node's edges
		return false
	}
	w.last = j
	w.listed++
	w.rec.edge(j, k)
	return w.visit(w.at+j, k)
}

// visit takes the edge k listed for frontier[at], and reports whether to
// go on.
func (w *adjWalk) visit(at int, k EdgeKey) bool {
	b := w.b
	if w.n++; w.n%deadlineEvery == 0 && !b.ok() {
		return false
	}
	if b.visited >= b.limits.MaxVisited {
		b.stop(ReasonWork)
		return false
	}
	b.visited++
	self := w.frontier[at]
	switch w.dir {
	case Out:
		w.reach(self, k.To, k)
	case In:
		w.reach(self, k.From, k)
	default:
		c := at / frontierChunk
		if cf, ok := w.chunkOf[k.From]; ok && cf == c {
			w.reach(k.From, k.To, k)
		}
		if ct, ok := w.chunkOf[k.To]; ok && ct == c {
			w.reach(k.To, k.From, k)
		}
	}
	return b.reason == ""
}

// An adjCache holds the edges of some nodes in one direction, as Adjacent
// lists them for one set of labels, for a read that expands the same nodes
// again (Paths' spur searches): at most room edges. A nil cache holds
// nothing.
type adjCache struct {
	lists map[sideNode][]EdgeKey
	held  int
	room  int
}

// defaultPathsCache is the room, in edges, of the cache a Paths call
// keeps for its spur searches.
const defaultPathsCache = 4096

func newAdjCache(room int) adjCache {
	return adjCache{lists: map[sideNode][]EdgeKey{}, room: room}
}

// edges returns the edges of id in direction dir, if c holds them.
func (c *adjCache) edges(id ID, dir Direction) ([]EdgeKey, bool) {
	if c == nil {
		return nil, false
	}
	es, ok := c.lists[sideNode{id, dir}]
	return es, ok
}

func (c *adjCache) holds(id ID, dir Direction) bool {
	_, ok := c.edges(id, dir)
	return ok
}

// An adjRecord collects, from one Adjacent call, the edges of each node in
// turn, and puts them in its cache (if any) once they are known whole.
type adjRecord struct {
	c    *adjCache
	part []ID
	dir  Direction
	cur  int       // the node whose edges buf holds
	buf  []EdgeKey // its edges so far
	over bool      // they do not fit in the cache
}

// start begins the record of the edges of part, in direction dir.
func (r *adjRecord) start(part []ID, dir Direction) {
	r.part, r.dir, r.cur, r.buf, r.over = part, dir, 0, nil, false
}

// edge takes an edge listed for part[j]: the nodes before it are listed whole.
func (r *adjRecord) edge(j int, k EdgeKey) {
	if r.c == nil {
		return
	}
	r.upTo(j)
	switch {
	case r.over:
	case r.c.held+len(r.buf) >= r.c.room:
		r.over, r.buf = true, nil
	default:
		r.buf = append(r.buf, k)
	}
}

// upTo puts the edges of the nodes before part[j] (listed whole) in the cache.
func (r *adjRecord) upTo(j int) {
	if r.c == nil {
		return
	}
	for ; r.cur < j; r.cur++ {
		if !r.over {
			r.c.lists[sideNode{r.part[r.cur], r.dir}] = r.buf
			r.c.held += len(r.buf)
		}
		r.buf, r.over = nil, false
	}
}

// A NeighborsQuery asks for the nodes within Depth edges of a node.
// Its page holds Limits.MaxResults neighbours at most; Cursor, from the
// result of the same query, continues after the page it came with.
type NeighborsQuery struct {
	ID        ID        `json:"id"`
	Labels    []string  `json:"edge,omitempty"`
	Direction Direction `json:"direction,omitempty"`
	Depth     int       `json:"depth,omitempty"` // default 1
	Limits    Limits    `json:"limits,omitzero"`
	Cursor    string    `json:"cursor,omitempty"`
}

// A Neighbor is a node reached at a depth.
type Neighbor struct {
	Node  *Node `json:"node"`
	Depth int   `json:"depth"`
}

// A NeighborsResult lists a page of the neighbours, nearest first, each
// once, and the edges through which each was first reached (Edges[i]
// reached Nodes[i]). The order is the breadth-first search's, the same on
// every call over the same graph: the neighbours at depth 1 by ID, then
// each deeper level in the order the search reaches it from the one
// before. More is true exactly when Cursor is set, and the same query with
// the cursor returns the next page (a page whose work a bound cut is a
// prefix of the page, and its cursor continues after it; when the work
// limit leaves no room to reach a page at all, it comes empty, truncated,
// with no cursor). A page of depth 1 reads only its own neighbours' edges;
// a deeper one searches from the start again, up to its page.
type NeighborsResult struct {
	Nodes     []Neighbor `json:"nodes"`
	Edges     []EdgeKey  `json:"edges"`
	More      bool       `json:"more"`
	Cursor    string     `json:"cursor,omitempty"`
	Truncated bool       `json:"truncated"`
	Reason    string     `json:"reason,omitempty"`
	Limits    Limits     `json:"limits"`
	Capped    []string   `json:"capped,omitempty"`
	Stats     ReadStats  `json:"stats"`

	page pageCursors
}

// CursorAfter returns the cursor that continues after the page's first n
// neighbours (a surface that keeps only those, to fit its size cap), or
// the cursor of the page itself when n is 0.
func (r *NeighborsResult) CursorAfter(n int) string { return r.page.after(n) }

// Neighbors returns the neighbourhood of a node, breadth first, within the ceilings.
func Neighbors(ctx context.Context, s Store, q NeighborsQuery, ceilings Limits) (*NeighborsResult, error) {
	start := time.Now()
	lim, capped := ceilings.Clamp(q.Limits)
	res := &NeighborsResult{Nodes: []Neighbor{}, Edges: []EdgeKey{}, Limits: lim, Capped: capped}
	dir, err := ParseDirection(string(q.Direction))
	if err != nil {
		return nil, err
	}
	if err := checkLabels(s, q.Labels); err != nil {
		return nil, err
	}
	depth := q.Depth
	if depth <= 0 {
		depth = 1
	}
	if depth > lim.MaxHops {
		depth = lim.MaxHops
		res.Truncated, res.Reason = true, ReasonHops
		res.Capped = appendOnce(res.Capped, "maxHops")
	}
	first, err := s.Node(ctx, q.ID)
	if err != nil {
		return nil, err
	}
	fp := fingerprintOf(struct {
		Kind   string
		ID     ID
		Labels []string
		Dir    Direction
		Depth  int
	}{"neighbors", q.ID, q.Labels, dir, depth})
	c, err := openPageCursor(s, q.Cursor, fp, depth == 1)
	if err != nil {
		return nil, err
	}
	skip := c.N
	res.page = pageCursors{s: s, fp: fp, at: skip, cursor: q.Cursor, byKey: depth == 1}
	b := newBudget(ctx, lim)
	defer b.cancel()
	if depth == 1 {
		if err := neighborsPage(ctx, s, q, dir, lim, c.K, res, b); err != nil {
			return nil, err
		}
		res.More = res.Cursor != ""
		res.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
		return res, nil
	}
	seen := map[ID]bool{q.ID: true}
	var order []ID
	depthOf := map[ID]int{}
	frontier := []ID{q.ID}
	for d := 1; d <= depth && len(frontier) > 0 && b.ok(); d++ {
		var next []ID
		if d == 1 {
			// In ID order, as a neighbourhood of depth 1 comes.
			ids, edges, err := firstLevel(s, b, first, q.Labels, dir, skip+lim.MaxResults+1)
			if err != nil {
				return nil, err
			}
			for i, id := range ids {
				if len(order) == skip+lim.MaxResults {
					b.stop(ReasonResults)
					break
				}
				seen[id] = true
				depthOf[id] = 1
				order = append(order, id)
				next = append(next, id)
				res.Edges = append(res.Edges, edges[i])
			}
			frontier = next
			continue
		}
		err := expandLevel(s, b, frontier, q.Labels, dir, nil, func(_, other ID, k EdgeKey) {
			if seen[other] || !b.spend(1) {
				return
			}
			if len(order) == skip+lim.MaxResults {
				b.stop(ReasonResults) // one more than the page: there are more
				return
			}
			seen[other] = true
			depthOf[other] = d
			order = append(order, other)
			next = append(next, other)
			res.Edges = append(res.Edges, k)
		})
		if err != nil {
			return nil, err
		}
		frontier = next
	}
	// The page: the neighbours after those of earlier pages.
	order, edges := order[min(skip, len(order)):], res.Edges[min(skip, len(res.Edges)):]
	res.Edges = []EdgeKey{}
	if res.page.idx, err = res.addNodes(ctx, s, order, edges, func(id ID) int { return depthOf[id] }); err != nil {
		return nil, err
	}
	switch b.reason {
	case "":
	case ReasonResults:
		res.Cursor = res.page.offset(len(order))
	default:
		// A bound cut the page: what it holds is a prefix of it, and the
		// cursor goes on after it; when it holds nothing, the cursor
		// retries it after a deadline, but the work limit would stop the
		// same call at the same place again: no cursor.
		res.Truncated, res.Reason = true, b.reason
		if len(order) > 0 || b.reason != ReasonWork {
			res.Cursor = res.page.offset(len(order))
		}
	}
	res.More = res.Cursor != ""
	res.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return res, nil
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func checkLabels(s Store, labels []string) error {
	m := s.Model()
	for _, l := range labels {
		if _, ok := m.Edge(l); !ok {
			return fmt.Errorf("unknown edge label %q; the model has %s: %w", l, list(m.EdgeLabels()), ErrInvalid)
		}
	}
	return nil
}
