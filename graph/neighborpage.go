package graph

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// A neighbourhood of depth 1 is paged from the node's edge listings: the
// listings (one per label and direction) come in the order of the node at
// the other end, so merging them yields the neighbours in ID order, each
// once, and a page reads its page of edges, not every edge before it. Its
// cursor holds the last neighbour returned, and the next page starts the
// listings after it. Paging by offset, as deeper neighbourhoods do, read
// the earlier pages again on every call: all 293k dependents of bench-pg's
// hub at 1M nodes, 1,000 a page, listed ~43M edges in all; and once an
// offset passed the work limit, a call could not reach its page, and
// answered an empty page with the same cursor, for ever.
//
// Each neighbour comes with the first of its edges in the order of
// Store.Edges (by label, out before in, then by key), the edge a
// breadth-first search lists first. Work is one unit per neighbour
// examined; a call examines its first neighbour whatever the bounds, so
// paging always moves on, and a bound leaves a cursor after the last one
// examined.

// neighborsPage fills res with the page of q.ID's neighbours (depth 1)
// after the ID after ("" for the first page), at most lim.MaxResults.
func neighborsPage(ctx context.Context, s Store, q NeighborsQuery, dir Direction, lim Limits, after ID, res *NeighborsResult, b *budget) error {
	// One more says whether a page follows; the first neighbour is
	// examined whatever the bounds (see above).
	ids, edges, cut, err := mergeNeighbors(ctx, s, q.ID, q.Labels, dir, after, lim.MaxResults+1, b, true)
	if err != nil {
		return err
	}
	more := len(ids) > lim.MaxResults
	ids, edges = ids[:min(len(ids), lim.MaxResults)], edges[:min(len(edges), lim.MaxResults)]
	kept, err := res.addNodes(ctx, s, ids, edges, func(ID) int { return 1 })
	if err != nil {
		return err
	}
	for _, i := range kept {
		res.page.keys = append(res.page.keys, ids[i])
	}
	switch {
	case more:
		res.Cursor = res.page.afterID(ids[len(ids)-1])
	case cut:
		res.Truncated, res.Reason = true, b.reason
		if len(ids) > 0 {
			res.Cursor = res.page.afterID(ids[len(ids)-1])
		} else {
			res.Cursor = res.page.cursor // nothing examined: the same place again
		}
	}
	return nil
}

// addNodes reads the nodes ids, 256 at a time, and adds each to the page
// with its edge and its depth; a node deleted since its edge was listed is
// left out, with its edge. It returns the places in ids of those it added.
func (res *NeighborsResult) addNodes(ctx context.Context, s Store, ids []ID, edges []EdgeKey, depth func(ID) int) ([]int, error) {
	var kept []int
	for i := 0; i < len(ids); i += 256 {
		nodes, err := s.Nodes(context.WithoutCancel(ctx), ids[i:min(i+256, len(ids))])
		if err != nil {
			return nil, err
		}
		for j, n := range nodes {
			if n != nil {
				res.Nodes = append(res.Nodes, Neighbor{Node: n, Depth: depth(n.ID)})
				res.Edges = append(res.Edges, edges[i+j])
				kept = append(kept, i+j)
			}
		}
	}
	return kept, nil
}

// mergeNeighbors lists the neighbours of id after the ID after, in ID
// order, up to want of them, each with its first edge (see above),
// spending a unit of b per neighbour; with firstFree, the first one
// examined costs its unit whatever the bounds. cut reports that a bound
// stopped the listings (the budget says which).
func mergeNeighbors(ctx context.Context, s Store, id ID, asked []string, dir Direction, after ID, want int, b *budget, firstFree bool) (ids []ID, edges []EdgeKey, cut bool, err error) {
	labels, err := KnownLabels(s.Model(), asked)
	if err != nil {
		return nil, nil, false, err
	}
	dirs := []Direction{dir}
	if dir == Both {
		dirs = []Direction{Out, In}
	}
	var ls []*edgeListing
	for _, label := range labels {
		for _, d := range dirs {
			l := newEdgeListing(id, label, d == In, true)
			if after != "" {
				// After its edge with the empty key; the others are passed
				// over below.
				l.startAfter(after)
			}
			ls = append(ls, l)
		}
	}
	size := min(want+1, 2000)
	first := firstFree
	rctx := b.ctx
	if first {
		rctx = context.WithoutCancel(ctx)
	}
	// head is l.head, but past the first neighbour a read the deadline
	// stops is errBound; the budget says why.
	head := func(l *edgeListing) (*Edge, error) {
		e, err := l.head(rctx, s, size)
		if err != nil && !first && b.ctx.Err() != nil {
			b.stop(ReasonDeadline)
			return nil, errBound
		}
		return e, err
	}
	err = func() error {
		for len(ids) < want {
			var next ID
			for _, l := range ls {
				e, err := head(l)
				if err != nil {
					return err
				}
				if e != nil && (next == "" || l.other(e) < next) {
					next = l.other(e)
				}
			}
			if next == "" {
				return nil // every listing ended
			}
			skip := next == after || next == id // the last page's, or a loop
			if !skip && !first && !b.spend(1) {
				return errBound
			}
			// Its first edge is the first listing's that has it; pass
			// over the rest.
			var edge EdgeKey
			found := false
			for _, l := range ls {
				for {
					e, err := head(l)
					if err != nil {
						return err
					}
					if e == nil || l.other(e) != next {
						break
					}
					if !found {
						edge, found = e.EdgeKey, true
					}
					l.i++
				}
			}
			if skip {
				continue
			}
			if first {
				b.visited++ // its unit, counted whatever the bounds
				first, rctx = false, b.ctx
			}
			ids = append(ids, next)
			edges = append(edges, edge)
		}
		return nil
	}()
	if errors.Is(err, errBound) {
		return ids, edges, true, nil
	}
	return ids, edges, false, err
}

// firstLevel lists the first level of a deeper neighbourhood of n, in ID
// order, up to want neighbours, each with its first edge. When want is a
// good part of n's degree and the budget holds the whole level, it
// expands the level (the store's Adjacency reads an edge for a fraction
// of what a page of Store.Edges does) and sorts it, since the page lies
// past or near its end; else it merges the listings up to want. A level
// that a bound cuts before it is whole is left out: its nodes so far are
// in the listings' order, not a prefix of the level's.
func firstLevel(s Store, b *budget, n *Node, labels []string, dir Direction, want int) ([]ID, []EdgeKey, error) {
	deg := countDegree(n.Edges, labels, dir)
	if 4*int64(want) < deg || 2*deg+1 > int64(b.remaining()) {
		ids, edges, _, err := mergeNeighbors(b.ctx, s, n.ID, labels, dir, "", want, b, false)
		return ids, edges, err
	}
	type reached struct {
		id   ID
		edge EdgeKey
	}
	level := make([]reached, 0, deg)
	// One listing comes in ID order: a neighbour's edges are together.
	// Several need a set, and a sort.
	known, err := KnownLabels(s.Model(), labels)
	if err != nil {
		return nil, nil, err
	}
	var seen map[ID]bool
	if len(known) > 1 || dir == Both {
		seen = make(map[ID]bool, deg)
	}
	err = expandLevel(s, b, []ID{n.ID}, labels, dir, nil, func(_, other ID, k EdgeKey) {
		switch {
		case other == n.ID:
		case seen == nil:
			if (len(level) == 0 || level[len(level)-1].id != other) && b.spend(1) {
				level = append(level, reached{other, k})
			}
		case !seen[other] && b.spend(1):
			seen[other] = true
			level = append(level, reached{other, k})
		}
	})
	if err != nil || b.reason != "" {
		return nil, nil, err
	}
	if seen != nil {
		slices.SortFunc(level, func(a, b reached) int { return strings.Compare(string(a.id), string(b.id)) })
	}
	level = level[:min(len(level), want)]
	ids, edges := make([]ID, len(level)), make([]EdgeKey, len(level))
	for i, r := range level {
		ids[i], edges[i] = r.id, r.edge
	}
	return ids, edges, nil
}

// errBound ends mergeNeighbors's listings at a bound.
var errBound = errors.New("a bound stopped the listings")
