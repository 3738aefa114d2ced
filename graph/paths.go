package graph

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"time"
)

// A PathsQuery asks for the K shortest simple paths between two nodes.
type PathsQuery struct {
	From, To ID
	// Labels restricts the edges followed to these labels; empty means every label.
	Labels []string
	// Direction Out follows edges from source to target, In against them,
	// Both either way (the default).
	Direction Direction
	// MaxHops bounds the length of each path, in edges; 0 means the hop ceiling.
	MaxHops int
	// K is how many paths are wanted (a page of them); 0 means 1. It is
	// capped at the results ceiling.
	K      int
	Limits Limits
	// Cursor, from the result of the same query, continues after the page
	// it came with.
	Cursor string

	// cacheEdges is the room of the cache of edges the spur searches
	// replay: 0 means defaultPathsCache, a negative value none (tests set
	// it, through export_test.go, to check the reads it saves).
	cacheEdges int
}

// A PathsResult lists up to K shortest simple paths (no node twice), in
// order: fewer edges first; paths of equal length compare step by step,
// by the ID of the next node, then by the ID of the edge taken to it, so
// paths through the same nodes over parallel edges are told apart.
//
// The list is always the start of the complete answer: when a bound stops
// the search (Truncated, with the Reason), the paths returned are the first
// ones of the answer an unbounded search would give, perhaps fewer than K.
// With fewer than K paths and no bound hit, there are no more simple paths
// within MaxHops, unless Reason is "hops": longer ones may exist.
type PathsResult struct {
	Paths []Path `json:"paths"`
	// Length is the length in edges of the shortest path, Paths[0]; -1
	// when Paths is empty. Each path's own length is len(Path.Edges).
	Length int `json:"length"`
	// More is true exactly when Cursor is set: the same query with the
	// cursor returns the next K paths, in the same order.
	More      bool      `json:"more"`
	Cursor    string    `json:"cursor,omitempty"`
	Truncated bool      `json:"truncated"`
	Reason    string    `json:"reason,omitempty"`
	Limits    Limits    `json:"limits"`
	Capped    []string  `json:"capped,omitempty"`
	Stats     ReadStats `json:"stats"`

	page pageCursors
}

// CursorAfter returns the cursor that continues after the page's first n
// paths (a surface that keeps only those, to fit its size cap), or the
// cursor of the page itself when n is 0.
func (r *PathsResult) CursorAfter(n int) string { return r.page.after(n) }

// Paths finds the K shortest simple paths from q.From to q.To by Yen's
// algorithm. The first path comes from a bidirectional breadth-first search
// that grows, one level at a time, the side whose next level reads fewer
// edges (the sum of its frontier's degrees, from the store's edge
// summaries: see Degrees), and stops at the first level where the two
// meet, so a path into a hub grows from its other end; each further path comes from the same
// search run from every node of the previous one (a spur) with the nodes
// before it and the edges already used there removed. Every search draws on
// one budget, so the whole call stays within the limits.
func Paths(ctx context.Context, s Store, q PathsQuery, ceilings Limits) (*PathsResult, error) {
	start := time.Now()
	lim, capped := ceilings.Clamp(q.Limits)
	res := &PathsResult{Paths: []Path{}, Length: -1, Limits: lim, Capped: capped}
	if q.Direction == "" {
		q.Direction = Both
	}
	dir, err := ParseDirection(string(q.Direction))
	if err != nil {
		return nil, err
	}
	if err := checkLabels(s, q.Labels); err != nil {
		return nil, err
	}
	maxHops := q.MaxHops
	switch {
	case maxHops <= 0:
		maxHops = lim.MaxHops
	case maxHops > lim.MaxHops:
		maxHops = lim.MaxHops
		res.Capped = appendOnce(res.Capped, "maxHops")
	}
	k := max(q.K, 1)
	if k > lim.MaxResults {
		k = lim.MaxResults
		res.Capped = appendOnce(res.Capped, "maxResults")
	}
	// Each end's node says, besides that it exists, its degree on its
	// side of the search (as Degrees would), which the search reads first.
	ps := &pathSearch{s: s, labels: q.Labels, dir: dir, noNode: map[ID]bool{}, noEdge: map[string]bool{}, noNext: map[ID]bool{}, degs: map[sideNode]int64{}, adj: newAdjCache(max(cmp.Or(q.cacheEdges, defaultPathsCache), 0))}
	for i, id := range []ID{q.From, q.To} {
		n, err := s.Node(ctx, id)
		if err != nil {
			return nil, err
		}
		d := dir
		if i == 1 {
			d = reverse(dir)
		}
		ps.degs[sideNode{id, d}] = countDegree(n.Edges, q.Labels, d)
	}
	fp := fingerprintOf(struct {
		Kind     string
		From, To ID
		Labels   []string
		Dir      Direction
		MaxHops  int
	}{"find_paths", q.From, q.To, q.Labels, dir, maxHops})
	c, err := openPageCursor(s, q.Cursor, fp, false)
	if err != nil {
		return nil, err
	}
	skip := c.N
	res.page = pageCursors{s: s, fp: fp, at: skip, cursor: q.Cursor}
	b := newBudget(ctx, lim)
	defer b.cancel()
	ps.b = b
	// The paths of earlier pages, this page's, and one more, which says
	// whether another page follows.
	found, beyond, err := ps.kShortest(q.From, q.To, skip+k+1, maxHops)
	if err != nil {
		return nil, err
	}
	more := len(found) > skip+k
	page := found[min(skip, len(found)):min(skip+k, len(found))]
	if len(page) > 0 {
		res.Paths, res.Length = page, len(page[0].Edges)
	}
	switch {
	case more || len(page) == k && b.reason != "":
		res.Cursor = res.page.after(len(page))
	case b.reason != "" && (len(page) > 0 || b.reason != ReasonWork):
		// A prefix of the page: go on after it, or retry it after a
		// deadline; the work limit would stop a retry at the same place.
		res.Cursor = res.page.after(len(page))
	}
	switch {
	case b.reason != "" && !more:
		res.Truncated, res.Reason = true, b.reason
	case len(found) < skip+k && beyond:
		res.Truncated, res.Reason = true, ReasonHops
	case len(page) == k && q.K > k:
		res.Truncated, res.Reason = true, ReasonResults
	}
	res.More = res.Cursor != ""
	res.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return res, nil
}

// A pathSearch runs shortest-path searches over one budget, skipping the
// nodes and edges a spur search must avoid. A spur search grows from
// nodes an earlier search reached, towards the same end: degs holds the
// degrees read so far, so that no search reads one twice, and adj the
// edges of the nodes expanded so far, as many as it has room for.
type pathSearch struct {
	s      Store
	b      *budget
	labels []string
	dir    Direction
	noNode map[ID]bool
	noEdge map[string]bool // every one leaves the spur's start
	noNext map[ID]bool     // the nodes they lead to
	degs   map[sideNode]int64
	adj    adjCache
	// The two sides of a search, whose maps each search empties and reuses.
	fwd, bwd pathSide
}

// A sideNode is a node seen from one side of a search: its degree there
// counts the edges in that direction.
type sideNode struct {
	id  ID
	dir Direction
}

// reverse returns the direction that walks edges the other way.
func reverse(d Direction) Direction {
	switch d {
	case Out:
		return In
	case In:
		return Out
	}
	return d
}

// The outcomes of one search.
type pathOutcome int

const (
	pathFound  pathOutcome = iota
	pathNone               // no path, whatever the hop bound
	pathBeyond             // none within the hop bound; longer ones may exist
	pathCut                // a bound of the budget stopped the search
)

// kShortest returns the first k paths of the answer (fewer when there are
// no more, or when the budget runs out) and whether a search stopped at the
// hop bound. It accepts a candidate only once every spur search of the
// previous path has finished, so a budget that runs out never lets a later
// path in ahead of an earlier one.
func (ps *pathSearch) kShortest(from, to ID, k, maxHops int) ([]Path, bool, error) {
	first, out, err := ps.shortest(from, to, maxHops)
	if err != nil || out != pathFound {
		return nil, out == pathBeyond, err
	}
	found := []Path{first}
	seen := map[string]bool{pathKey(first): true}
	var cands []Path
	beyond := false
	for len(found) < k {
		prev := found[len(found)-1]
		for i := range prev.Edges {
			// The spur path leaves prev.Nodes[i]: it avoids the nodes before
			// it and every edge that a path found so far takes from this
			// same root.
			clear(ps.noNode)
			for _, id := range prev.Nodes[:i] {
				ps.noNode[id] = true
			}
			clear(ps.noEdge)
			clear(ps.noNext)
			for _, p := range found {
				if len(p.Edges) > i && slices.Equal(p.Edges[:i], prev.Edges[:i]) {
					ps.noEdge[p.Edges[i]] = true
					ps.noNext[p.Nodes[i+1]] = true
				}
			}
			spur, out, err := ps.shortest(prev.Nodes[i], to, maxHops-i)
			switch {
			case err != nil:
				return nil, false, err
			case out == pathCut:
				return found, beyond, nil
			case out == pathBeyond:
				beyond = true
			case out == pathFound:
				c := Path{Nodes: append(slices.Clone(prev.Nodes[:i]), spur.Nodes...), Edges: append(slices.Clone(prev.Edges[:i]), spur.Edges...)}
				if key := pathKey(c); !seen[key] {
					seen[key] = true
					cands = append(cands, c)
				}
			}
		}
		if len(cands) == 0 {
			break
		}
		best := 0
		for i := range cands {
			if comparePaths(cands[i], cands[best]) < 0 {
				best = i
			}
		}
		found = append(found, cands[best])
		cands = slices.Delete(cands, best, best+1)
	}
	return found, beyond, nil
}

// pathKey identifies a path: from a given start, its edges determine it.
func pathKey(p Path) string { return strings.Join(p.Edges, "\x00") }

// comparePaths orders paths from one start node: fewer edges first, then
// step by step, the next node's ID, then the ID of the edge taken to it.
func comparePaths(a, b Path) int {
	if c := cmp.Compare(len(a.Edges), len(b.Edges)); c != 0 {
		return c
	}
	for i := range a.Edges {
		if c := cmp.Compare(a.Nodes[i+1], b.Nodes[i+1]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Edges[i], b.Edges[i]); c != 0 {
			return c
		}
	}
	return 0
}

// A pathSide is one end of a bidirectional search: how far each node it
// reached is from its end, and every way it was reached at that distance.
type pathSide struct {
	dir      Direction
	depth    map[ID]int
	parents  map[ID][]pathHop
	frontier []ID
	level    int
	cost     int64 // the edges the next level reads, -1 until known
}

// A pathHop is a way a side reached a node: from prev over the edge.
type pathHop struct {
	prev ID
	edge EdgeKey
}

// start makes sd a side that starts at id, in direction dir.
func (sd *pathSide) start(id ID, dir Direction) {
	if sd.depth == nil {
		sd.depth, sd.parents = map[ID]int{}, map[ID][]pathHop{}
	}
	clear(sd.depth)
	clear(sd.parents)
	sd.depth[id] = 0
	*sd = pathSide{dir: dir, depth: sd.depth, parents: sd.parents, frontier: []ID{id}, cost: -1}
}

// nextCost returns how many edges growing sd by a level reads: the sum of
// its frontier's degrees (an upper bound when some edges are excluded).
func (ps *pathSearch) nextCost(sd *pathSide) (int64, error) {
	if sd.cost >= 0 {
		return sd.cost, nil
	}
	var miss []ID
	for _, id := range sd.frontier {
		if _, ok := ps.degs[sideNode{id, sd.dir}]; !ok {
			if miss == nil {
				miss = make([]ID, 0, len(sd.frontier))
			}
			miss = append(miss, id)
		}
	}
	if len(miss) > 0 {
		degs, err := Degrees(ps.b.ctx, ps.s, miss, ps.labels, sd.dir)
		if err != nil {
			return 0, err
		}
		for i, id := range miss {
			ps.degs[sideNode{id, sd.dir}] = degs[i]
		}
	}
	sd.cost, _ = ps.knownCost(sd)
	return sd.cost, nil
}

// shortest finds the first path from one node to another of at most maxLen
// edges in the order of comparePaths: the shortest, and among those the
// least. It searches from both ends, one whole level at a time, growing
// the side whose level reads fewer edges (the forward one on a tie), and
// stops at the end of the first level where the two meet: that level
// finds every meeting node, so it then knows every shortest path and walks
// the least one. A search that a bound cuts returns pathCut.
func (ps *pathSearch) shortest(from, to ID, maxLen int) (Path, pathOutcome, error) {
	if from == to {
		return Path{Nodes: []ID{from}, Edges: []string{}}, pathFound, nil
	}
	b := ps.b
	fwd, bwd := &ps.fwd, &ps.bwd
	fwd.start(from, ps.dir)
	bwd.start(to, reverse(ps.dir))
	var meet []ID
	for fwd.level+bwd.level < maxLen && len(fwd.frontier) > 0 && len(bwd.frontier) > 0 && b.ok() {
		if sd := ps.stuck(); sd != nil {
			// The side has no edges to follow: the level reaches nothing,
			// and the search ends (whatever the other side's cost).
			sd.level++
			sd.frontier, sd.cost = nil, -1
			break
		}
		var sd, other *pathSide
		var listed []pathEdge // the level, when a guess listed it whole
		if g, o, most, ok := ps.guess(); ok {
			edges, whole, err := ps.list(g, most)
			if err != nil {
				return Path{}, pathCut, err
			}
			if b.reason != "" {
				return Path{}, pathCut, nil
			}
			if sd, other = o, g; whole {
				sd, other, listed = g, o, edges
				if len(listed) == 0 {
					// The side has no edges to follow: the level reaches
					// nothing, and the search ends.
					sd.level++
					sd.frontier, sd.cost = nil, -1
					break
				}
			}
		}
		if sd == nil {
			fc, err := ps.nextCost(fwd)
			if err != nil {
				return ps.cutOr(err)
			}
			bc, err := ps.nextCost(bwd)
			if err != nil {
				return ps.cutOr(err)
			}
			sd, other = fwd, bwd
			if bc < fc {
				sd, other = bwd, fwd
			}
			if min(fc, bc) == 0 {
				// The side has no edges to follow: the level reaches
				// nothing, and the search ends.
				sd.level++
				sd.frontier, sd.cost = nil, -1
				break
			}
		}
		sd.level++
		next := make([]ID, 0, min(max(sd.cost, int64(len(listed))), 1024)) // it reaches at most one node per edge
		reach := func(self, nb ID, k EdgeKey) {
			// An excluded edge joins the start and a node of noNext: only
			// such an edge needs its ID made.
			if ps.noNode[nb] || len(ps.noEdge) > 0 && (self == from && ps.noNext[nb] || nb == from && ps.noNext[self]) && ps.noEdge[k.String()] {
				return
			}
			d, seen := sd.depth[nb]
			switch {
			case !seen:
				if !b.spend(1) {
					return
				}
				sd.depth[nb] = sd.level
				next = append(next, nb)
			case d != sd.level:
				return // reached earlier by a shorter way
			}
			sd.parents[nb] = append(sd.parents[nb], pathHop{prev: self, edge: k})
		}
		if listed != nil {
			for _, h := range listed {
				reach(h.self, h.other, h.k)
			}
		} else if err := ps.expand(sd, reach); err != nil {
			return Path{}, pathCut, err
		}
		if b.reason != "" {
			return Path{}, pathCut, nil // the level is incomplete
		}
		sd.frontier, sd.cost = next, -1
		for _, id := range next {
			if _, ok := other.depth[id]; ok {
				meet = append(meet, id)
			}
		}
		if len(meet) > 0 {
			break
		}
	}
	if !b.ok() {
		return Path{}, pathCut, nil
	}
	if len(meet) == 0 {
		if len(fwd.frontier) > 0 && len(bwd.frontier) > 0 {
			return Path{}, pathBeyond, nil
		}
		return Path{}, pathNone, nil
	}
	// Every meeting node is fwd.level steps from the start and bwd.level
	// from the end (the levels before found none). The shortest paths are
	// the chains of forward parents into a meeting node followed by the
	// chains of backward parents out of it: mark the nodes on the forward
	// chains, then walk from the start taking the least step each time.
	onPath := map[ID]bool{}
	stack := slices.Clone(meet)
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if onPath[id] {
			continue
		}
		onPath[id] = true
		for _, h := range fwd.parents[id] {
			stack = append(stack, h.prev)
		}
	}
	ahead := map[ID][]pathHop{} // from a node on a forward chain, the steps towards a meeting node
	for id := range onPath {
		for _, h := range fwd.parents[id] {
			ahead[h.prev] = append(ahead[h.prev], pathHop{prev: id, edge: h.edge})
		}
	}
	n := fwd.level + bwd.level
	p := Path{Nodes: make([]ID, 1, n+1), Edges: make([]string, 0, n)}
	p.Nodes[0] = from
	cur := from
	for range fwd.level {
		h := leastHop(ahead[cur])
		p.Nodes, p.Edges, cur = append(p.Nodes, h.prev), append(p.Edges, h.edge.String()), h.prev
	}
	for range bwd.level {
		h := leastHop(bwd.parents[cur])
		p.Nodes, p.Edges, cur = append(p.Nodes, h.prev), append(p.Edges, h.edge.String()), h.prev
	}
	return p, pathFound, nil
}

// A pathEdge is an edge a level lists: from self, to other.
type pathEdge struct {
	self, other ID
	k           EdgeKey
}

// guess returns, on a store whose degrees are a read of their own (no
// Adjacency: a round trip to a server store), the side whose next level
// costs what the search does not know yet, when the other's cost is known,
// and how many edges that side's level may have and still be the one to
// grow (see shortest): its edges can then be listed, at most that many and
// one more, instead of reading its degrees first.
func (ps *pathSearch) guess() (sd, other *pathSide, most int64, ok bool) {
	if _, adj := ps.s.(Adjacency); adj {
		return nil, nil, 0, false
	}
	fwd, bwd := &ps.fwd, &ps.bwd
	fc, fok := ps.knownCost(fwd)
	bc, bok := ps.knownCost(bwd)
	switch {
	case !fok && bok && bc > 0:
		return fwd, bwd, bc, true // the forward side grows on a tie
	case fok && !bok && fc > 0:
		return bwd, fwd, fc - 1, true
	}
	return nil, nil, 0, false
}

// stuck returns a side whose next level is known to have no edges, the
// forward one first, or nil.
func (ps *pathSearch) stuck() *pathSide {
	for _, sd := range []*pathSide{&ps.fwd, &ps.bwd} {
		if c, ok := ps.knownCost(sd); ok && c == 0 {
			return sd
		}
	}
	return nil
}

// knownCost returns what growing sd by a level reads, as nextCost does,
// when the degrees of its frontier are known.
func (ps *pathSearch) knownCost(sd *pathSide) (int64, bool) {
	if sd.cost >= 0 {
		return sd.cost, true
	}
	var n int64
	for _, id := range sd.frontier {
		d, ok := ps.degs[sideNode{id, sd.dir}]
		if !ok {
			return 0, false
		}
		n += d
	}
	return n, true
}

// list lists the edges of sd's next level, as expand would reach them,
// unless there are more than most: whole is false then, and the list is
// not the level.
func (ps *pathSearch) list(sd *pathSide, most int64) (edges []pathEdge, whole bool, err error) {
	edges = []pathEdge{}
	whole, err = pageLevel(ps.s, ps.b, sd.frontier, ps.labels, sd.dir, nil, int(min(most, math.MaxInt32)), func(self, other ID, k EdgeKey) bool {
		if int64(len(edges)) == most {
			return false
		}
		edges = append(edges, pathEdge{self, other, k})
		return true
	})
	if whole && sd.dir != Both {
		// The listing counted each node's edges, as Degrees would: later
		// searches (the spurs of k-shortest) need not read them.
		for _, id := range sd.frontier {
			ps.degs[sideNode{id, sd.dir}] = 0
		}
		for _, e := range edges {
			ps.degs[sideNode{e.self, sd.dir}]++
		}
	}
	return edges, whole, err
}

// expand calls reach for the edges of sd's frontier, as expandLevel does:
// from the store's Adjacency through the call's cache when it has one.
func (ps *pathSearch) expand(sd *pathSide, reach func(self, other ID, k EdgeKey)) error {
	if adj, ok := ps.s.(Adjacency); ok {
		return expandAdjacent(adj, ps.b, sd.frontier, ps.labels, sd.dir, &ps.adj, reach)
	}
	return expandLevel(ps.s, ps.b, sd.frontier, ps.labels, sd.dir, nil, reach)
}

// cutOr turns an error of a degree read into the outcome of a search: a
// cut if the deadline passed (or the caller gave up), else the error.
func (ps *pathSearch) cutOr(err error) (Path, pathOutcome, error) {
	if ps.b.ctx.Err() != nil {
		ps.b.stop(ReasonDeadline)
		return Path{}, pathCut, nil
	}
	return Path{}, pathCut, err
}

// leastHop returns the step to the least node ID, by the least edge ID.
func leastHop(hs []pathHop) pathHop {
	return slices.MinFunc(hs, func(a, b pathHop) int {
		if c := cmp.Compare(a.prev, b.prev); c != 0 {
			return c
		}
		return cmp.Compare(a.edge.String(), b.edge.String())
	})
}
