package graph

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// expandLevel fetches the edges of one frontier, in bounded chunks, and
// calls reach for each edge leaving it in the given direction, with the
// frontier node and the node at the other end. It stops when the budget does.
func expandLevel(s Store, b *budget, frontier []ID, labels []string, dir Direction, reach func(self, other ID, e *Edge)) error {
	for i := 0; i < len(frontier) && b.ok(); i += frontierChunk {
		part := frontier[i:min(i+frontierChunk, len(frontier))]
		inPart := make(map[ID]bool, len(part))
		for _, id := range part {
			inPart[id] = true
		}
		eq := EdgeQuery{Nodes: part, Labels: labels, Direction: dir, KeysOnly: true}
		for b.ok() {
			eq.Limit = min(2000, b.remaining())
			if eq.Limit <= 0 {
				b.stop(ReasonWork)
				break
			}
			page, err := s.Edges(b.ctx, eq)
			if err != nil {
				if b.ctx.Err() != nil {
					b.stop(ReasonDeadline)
					return nil
				}
				return err
			}
			b.spend(len(page.Edges))
			for _, e := range page.Edges {
				if dir != In && inPart[e.From] {
					reach(e.From, e.To, e)
				}
				if dir != Out && inPart[e.To] {
					reach(e.To, e.From, e)
				}
			}
			if page.Next == "" {
				break
			}
			eq.After = page.Next
		}
	}
	return nil
}

// A NeighborsQuery asks for the nodes within Depth edges of a node.
type NeighborsQuery struct {
	ID        ID        `json:"id"`
	Labels    []string  `json:"edge,omitempty"`
	Direction Direction `json:"direction,omitempty"`
	Depth     int       `json:"depth,omitempty"` // default 1
	Limits    Limits    `json:"limits,omitzero"`
}

// A Neighbor is a node reached at a depth.
type Neighbor struct {
	Node  *Node `json:"node"`
	Depth int   `json:"depth"`
}

// A NeighborsResult lists the neighbours, nearest first, each once, and
// the edges through which each was first reached.
type NeighborsResult struct {
	Nodes     []Neighbor `json:"nodes"`
	Edges     []EdgeKey  `json:"edges"`
	Truncated bool       `json:"truncated"`
	Reason    string     `json:"reason,omitempty"`
	Limits    Limits     `json:"limits"`
	Capped    []string   `json:"capped,omitempty"`
	Stats     ReadStats  `json:"stats"`
}

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
	if _, err := s.Node(ctx, q.ID); err != nil {
		return nil, err
	}
	b := newBudget(ctx, lim)
	defer b.cancel()
	seen := map[ID]bool{q.ID: true}
	var order []ID
	depthOf := map[ID]int{}
	frontier := []ID{q.ID}
	for d := 1; d <= depth && len(frontier) > 0 && b.ok(); d++ {
		var next []ID
		err := expandLevel(s, b, frontier, q.Labels, dir, func(_, other ID, e *Edge) {
			if seen[other] || !b.spend(1) {
				return
			}
			if len(order) == lim.MaxResults {
				b.stop(ReasonResults)
				return
			}
			seen[other] = true
			depthOf[other] = d
			order = append(order, other)
			next = append(next, other)
			res.Edges = append(res.Edges, e.EdgeKey)
		})
		if err != nil {
			return nil, err
		}
		frontier = next
	}
	for i := 0; i < len(order); i += 256 {
		chunk := order[i:min(i+256, len(order))]
		nodes, err := s.Nodes(context.WithoutCancel(ctx), chunk)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n != nil {
				res.Nodes = append(res.Nodes, Neighbor{Node: n, Depth: depthOf[n.ID]})
			}
		}
	}
	if b.reason != "" {
		res.Truncated, res.Reason = true, b.reason
	}
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

// A PathsQuery asks for the shortest paths between two nodes.
type PathsQuery struct {
	From, To ID
	Labels   []string
	// Direction Out follows edges from source to target, In against them,
	// Both either way (the default).
	Direction Direction
	MaxHops   int // default: the ceiling
	K         int // paths wanted; default 1
	Limits    Limits
}

// A PathsResult lists up to K shortest paths, all of the same length.
type PathsResult struct {
	Paths     []Path    `json:"paths"`
	Length    int       `json:"length"` // edges per path; -1 when none was found
	Truncated bool      `json:"truncated"`
	Reason    string    `json:"reason,omitempty"`
	Limits    Limits    `json:"limits"`
	Capped    []string  `json:"capped,omitempty"`
	Stats     ReadStats `json:"stats"`
}

// maxParents bounds the alternative parents kept per node for enumerating paths.
const maxParents = 16

// Paths finds up to K shortest paths by bidirectional breadth-first search:
// it grows the smaller of the two frontiers one level at a time and stops
// at the first level where they meet, so it visits far less than a
// one-sided search.
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
	k = min(k, lim.MaxResults)
	for _, id := range []ID{q.From, q.To} {
		if _, err := s.Node(ctx, id); err != nil {
			return nil, err
		}
	}
	finish := func(b *budget) *PathsResult {
		if b.reason != "" {
			res.Truncated, res.Reason = true, b.reason
		}
		res.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
		return res
	}
	b := newBudget(ctx, lim)
	defer b.cancel()
	if q.From == q.To {
		res.Paths, res.Length = []Path{{Nodes: []ID{q.From}, Edges: []string{}}}, 0
		return finish(b), nil
	}
	back := map[Direction]Direction{Out: In, In: Out, Both: Both}[dir]
	type side struct {
		dir      Direction
		depth    map[ID]int
		parents  map[ID][]hop
		frontier []ID
		level    int
	}
	fwd := &side{dir: dir, depth: map[ID]int{q.From: 0}, parents: map[ID][]hop{}, frontier: []ID{q.From}}
	bwd := &side{dir: back, depth: map[ID]int{q.To: 0}, parents: map[ID][]hop{}, frontier: []ID{q.To}}
	var meet []ID
	for fwd.level+bwd.level < maxHops && len(fwd.frontier) > 0 && len(bwd.frontier) > 0 && b.ok() {
		sd, other := fwd, bwd
		if len(bwd.frontier) < len(fwd.frontier) {
			sd, other = bwd, fwd
		}
		sd.level++
		var next []ID
		err := expandLevel(s, b, sd.frontier, q.Labels, sd.dir, func(self, nb ID, e *Edge) {
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
			if len(sd.parents[nb]) < maxParents {
				sd.parents[nb] = append(sd.parents[nb], hop{prev: self, edge: e.ID})
			}
			if _, ok := other.depth[nb]; ok && !slices.Contains(meet, nb) {
				meet = append(meet, nb)
			}
		})
		if err != nil {
			return nil, err
		}
		sd.frontier = next
		if len(meet) > 0 {
			break
		}
	}
	if len(meet) == 0 {
		if len(fwd.frontier) > 0 && len(bwd.frontier) > 0 && b.reason == "" && fwd.level+bwd.level >= maxHops {
			b.stop(ReasonHops)
		}
		return finish(b), nil
	}
	// Keep the meeting nodes on shortest paths, then join half-paths.
	best := -1
	for _, m := range meet {
		if l := fwd.depth[m] + bwd.depth[m]; best < 0 || l < best {
			best = l
		}
	}
	res.Length = best
	halves := func(sd *side, from ID) []Path {
		var out []Path
		var walk func(id ID, p Path)
		walk = func(id ID, p Path) {
			if len(out) >= k {
				return
			}
			ps := sd.parents[id]
			if len(ps) == 0 {
				out = append(out, p)
				return
			}
			for _, h := range ps {
				walk(h.prev, Path{Nodes: append([]ID{h.prev}, p.Nodes...), Edges: append([]string{h.edge}, p.Edges...)})
			}
		}
		walk(from, Path{Nodes: []ID{from}, Edges: []string{}})
		return out
	}
	slices.Sort(meet)
	for _, m := range meet {
		if fwd.depth[m]+bwd.depth[m] != best {
			continue
		}
		for _, head := range halves(fwd, m) {
			for _, tail := range halves(bwd, m) {
				if len(res.Paths) == k {
					return finish(b), nil
				}
				p := Path{Nodes: slices.Clone(head.Nodes), Edges: slices.Clone(head.Edges)}
				for i := len(tail.Nodes) - 2; i >= 0; i-- {
					p.Nodes = append(p.Nodes, tail.Nodes[i])
					p.Edges = append(p.Edges, tail.Edges[i])
				}
				res.Paths = append(res.Paths, p)
			}
		}
	}
	return finish(b), nil
}
