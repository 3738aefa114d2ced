package graph

import (
	"context"
	"math/bits"
	"slices"
	"time"

	"github.com/lore-dev/lore/schema"
)

// What a traversal step means.
//
// A step follows the edges with its labels (every label when it names
// none) whose properties pass its edgeWhere (every such edge when it has
// none) in its direction: out from source to target, in from target to
// source, both either way. For a start node s, dist_s(v) is the length of a
// shortest walk from s to v along such edges, and dist_s(s) = 0. From a set
// S of start nodes, a step with hops [min, max] reaches
//
//	{ v : dist_s(v) lies in [min, max] for some s in S }
//
// and keeps the nodes of its type that pass its where. So a start node is
// in the result only when min is 0 or another start node reaches it within
// the range (a cycle back to itself does not count: its distance from
// itself is 0); and with min >= 2, v is in the result when it is min hops
// from some start node, however close it is to another.
//
// The result is a union over start nodes, and so is a chain of steps: the
// answer from S is the union of the answers from each s in S. The engine
// therefore splits the start set into chunks as it likes, and a bound that
// cuts the work leaves results that are correct, only fewer.
//
// A path to a result v is, for each step, a shortest walk (of length
// dist_s(v)) from one of that step's start nodes s to the node it reached,
// joined end to end back to a from node.
//
// The engine computes a step by breadth-first passes over up to 64 start
// nodes at once, each node carrying a bitset of the start nodes that have
// reached it: at level d, the bits a node gets for the first time are the
// start nodes exactly d hops away. A pass cut at any point has only ever
// recorded exact distances.

// passSources is how many start nodes one pass follows: one bit each.
const passSources = 64

// A walk is how a step reached a node: nodes[0] is the step's start node.
type walk struct {
	nodes []ID
	edges []string
}

// A parent records that node prev, at level-1, gave bits to a node at level
// through edge.
type parent struct {
	level int
	prev  ID
	edge  string
	bits  uint64
}

// stepOut is what one step reached from a set of start nodes.
type stepOut struct {
	ids   []ID        // in the order reached
	walks map[ID]walk // with paths: one shortest walk to each
}

// step applies one traversal step to sources (each once, in a fixed order).
func (ex *executor) step(sources []ID, st *Step, withWalks bool) (stepOut, error) {
	out := stepOut{}
	if withWalks {
		out.walks = map[ID]walk{}
	}
	if st.Hops.Max < st.Hops.Min { // the ceiling cut the range below its minimum
		return out, nil
	}
	if len(sources) == 1 && !withWalks {
		ids, ok, err := ex.oneHop(sources[0], st)
		if err != nil {
			return out, err
		}
		if ok {
			out.ids, err = ex.keepStep(st, ids)
			return out, err
		}
	}
	// A pass from one start node finds each node once: its one bit is new
	// to a node only the first time the node is reached.
	var seen map[ID]bool
	if len(sources) > 1 {
		seen = map[ID]bool{}
	}
	// One pass, from a hub, can reach tens of thousands of nodes at its
	// first level: growing its sets as it goes cost more than reading
	// them (see reachHint).
	hint := 0
	if len(sources) <= passSources {
		hint = ex.reachHint(sources, st)
		if st.Hops.Min <= 1 {
			out.ids = make([]ID, 0, hint)
		}
	}
	for i := 0; i < len(sources); i += passSources {
		if !ex.b.ok() && st.Hops.Min > 0 {
			break
		}
		src := sources[i:min(i+passSources, len(sources))]
		err := ex.pass(src, st, withWalks, hint, func(v ID, wk func() walk) {
			if seen != nil {
				if seen[v] {
					return
				}
				seen[v] = true
			}
			out.ids = append(out.ids, v)
			if withWalks {
				out.walks[v] = wk()
			}
		})
		if err != nil {
			return out, err
		}
	}
	kept, err := ex.keepStep(st, out.ids)
	if err != nil {
		return out, err
	}
	if withWalks && len(kept) < len(out.ids) {
		keep := make(map[ID]bool, len(kept))
		for _, id := range kept {
			keep[id] = true
		}
		for _, id := range out.ids {
			if !keep[id] {
				delete(out.walks, id)
			}
		}
	}
	out.ids = kept
	return out, nil
}

// oneHop is the step from one start node of exactly one hop, over one
// label in one direction (in or out), with no edge filter and no walks to
// keep, on a store with an Adjacency: the node's listing comes in the
// order of the node at the other end, so the nodes it reaches are told
// apart from the one before, with no set, and come sorted by ID. A pass
// builds a map of every node reached: for the 29,757 dependents of
// bench-pg's hub at 100k nodes, that map (and the one the index walk of
// an ordered page then built from the result, which can now search the
// sorted result instead) were most of a top 50 by size. Work is counted
// as a pass counts it: one unit per edge listed, one per node reached.
// It reports false, having done nothing, for a step of another shape.
func (ex *executor) oneHop(src ID, st *Step) ([]ID, bool, error) {
	adj, ok := ex.s.(Adjacency)
	if !ok || st.edgeWhere != nil || st.Hops.Min != 1 || st.Hops.Max != 1 || st.Direction == Both {
		return nil, false, nil
	}
	labels, err := KnownLabels(ex.s.Model(), st.Edge)
	if err != nil || len(labels) != 1 {
		return nil, false, nil // the pass says what is wrong
	}
	in := st.Direction == In
	b := ex.b
	ids := make([]ID, 0, ex.reachHint([]ID{src}, st))
	if !b.ok() {
		return ids, true, nil
	}
	listed := 0
	err = adj.Adjacent(b.ctx, EdgeQuery{Nodes: []ID{src}, Labels: labels, Direction: st.Direction}, func(_ int, k EdgeKey) bool {
		if listed++; listed%deadlineEvery == 0 && !b.ok() {
			return false
		}
		if b.visited >= b.limits.MaxVisited {
			b.stop(ReasonWork)
			return false
		}
		b.visited++
		other := k.To
		if in {
			other = k.From
		}
		if other == src || len(ids) > 0 && ids[len(ids)-1] == other {
			return true // a self-loop (at distance 0), or a parallel edge
		}
		if !b.spend(1) {
			return false
		}
		ids = append(ids, other)
		return true
	})
	if err != nil {
		if b.ctx.Err() == nil {
			return nil, true, err
		}
		b.stop(ReasonDeadline)
	}
	return ids, true, nil
}

// keepStep returns the nodes of ids, in order, that exist and pass a
// step's type and where: the nodes that an index says may pass the where
// (indexFilter), read and tested unless the index's answer is the
// where's (exactWhere), or their types alone when the step has no where.
func (ex *executor) keepStep(st *Step, ids []ID) ([]ID, error) {
	if st.Type == "" && st.where == nil {
		return ids, nil
	}
	if keep, exact, ok := ex.indexFilter(st, len(ids)); ok {
		kept := ids[:0:0]
		for _, id := range ids {
			if keep[id] {
				kept = append(kept, id)
			}
		}
		if exact {
			return kept, nil
		}
		ids = kept
	}
	if nt, ok := ex.s.(NodeTyper); ok && st.where == nil {
		return ex.keepType(nt, ids, st.Type)
	}
	nodes, err := ex.fetchWith(ids, st.where.props([]string{}), func(n *Node) bool { return (st.Type == "" || n.Type == st.Type) && ex.match(st.where, n) }, -1)
	if err != nil {
		return nil, err
	}
	kept := make([]ID, len(nodes))
	for i, n := range nodes {
		kept[i] = n.ID
	}
	return kept, nil
}

// pass runs one breadth-first pass from up to 64 start nodes and calls
// found for each node some start node reaches at a distance within the
// step's hops (possibly several times), with a function that returns a
// shortest walk to it (nil without withWalks). hint is how many nodes its
// first level may reach (reachHint), or 0.
func (ex *executor) pass(src []ID, st *Step, withWalks bool, hint int, found func(v ID, wk func() walk)) error {
	b := ex.b
	// One map lookup per edge read and one insert per node reached: a
	// node's bits, and the bits it got at the last two levels, live in
	// reach, which index points into.
	index := make(map[ID]int32, len(src)+hint)
	reach := make([]reachBits, 0, len(src)+hint)
	var frontier []ID
	for i, s := range src {
		j, ok := index[s]
		if !ok {
			j = int32(len(reach))
			index[s] = j
			reach = append(reach, reachBits{})
			frontier = append(frontier, s)
		}
		reach[j].bits |= 1 << i
		reach[j].got[0] |= 1 << i // level 0
	}
	if st.Hops.Min == 0 {
		for _, s := range frontier {
			found(s, func() walk { return walk{nodes: []ID{s}, edges: []string{}} })
		}
	}
	var parents map[ID][]parent
	if withWalks {
		parents = map[ID][]parent{}
	}
	for d := 1; d <= st.Hops.Max && len(frontier) > 0 && b.ok(); d++ {
		var next []ID
		if d == 1 {
			next = make([]ID, 0, hint)
		}
		var self0 ID // the frontier node whose edges are being read, and its fresh bits
		var bits0 uint64
		err := expandLevel(ex.s, b, frontier, st.Edge, st.Direction, st.edgeWhere, func(self, other ID, k EdgeKey) {
			if self != self0 {
				self0, bits0 = self, 0
				if j, ok := index[self]; ok {
					bits0 = reach[j].at(d - 1)
				}
			}
			j, known := index[other]
			var r uint64
			if known {
				r = reach[j].bits
			}
			nb := bits0 &^ r
			if nb == 0 {
				return
			}
			if !known {
				if !b.spend(1) {
					return // out of budget: a node costs one unit when a pass first reaches it
				}
				j = int32(len(reach))
				index[other] = j
				reach = append(reach, reachBits{})
			}
			e := &reach[j]
			e.bits |= nb
			if e.at(d) == 0 {
				next = append(next, other)
			}
			e.add(d, nb)
			if parents != nil {
				parents[other] = append(parents[other], parent{level: d, prev: self, edge: k.String(), bits: nb})
			}
			switch {
			case d < st.Hops.Min:
			case parents == nil:
				found(other, nil) // no walk asked for: no closure to build per node
			default:
				found(other, func() walk { return walkBack(parents, other, d, nb) })
			}
		})
		if err != nil {
			return err
		}
		frontier = next
	}
	return nil
}

// reachHint returns how many nodes a pass from sources (up to
// passSources) may reach at its first level, as their edge summaries
// count the step's edges, up to what the budget leaves. A pass sizes its
// sets to it: from the hub of bench-pg's graph at 100k nodes (29,757
// in-edges), growing them edge by edge made a one-hop count with a where
// take 21.4 ms rather than 9.3, and the 2-hop closure's count 39.5 ms
// rather than 28.0 (the same queries, alternated in one run). It asks
// only a store that lists adjacency without pages (Adjacency) and counts
// degrees without reading nodes (DegreeCounter), where the question costs
// a record read per source, not a round trip to a server for every step;
// and it sizes no set beyond maxReachHint nodes: past that, growing costs
// little beside the reads.
func (ex *executor) reachHint(sources []ID, st *Step) int {
	dc, ok := ex.s.(DegreeCounter)
	if _, inProcess := ex.s.(Adjacency); !ok || !inProcess || st.Hops.Max < 1 {
		return 0
	}
	ds, err := dc.Degrees(ex.b.ctx, sources, st.Edge, st.Direction)
	if err != nil {
		return 0 // the pass reads the edges, and says what failed
	}
	var n int64
	for _, d := range ds {
		n += d
	}
	return int(min(n, int64(max(ex.b.remaining(), 0)), maxReachHint))
}

const maxReachHint = 1 << 20

// reachBits is what a pass knows of a node: the start nodes that reached
// it, and those that reached it at the last two levels, got[l%2] for level
// l when lvl[l%2] is l.
type reachBits struct {
	bits uint64
	got  [2]uint64
	lvl  [2]int32
}

// at returns the bits the node got at level l.
func (r *reachBits) at(l int) uint64 {
	if r.lvl[l&1] != int32(l) {
		return 0
	}
	return r.got[l&1]
}

// add records bits the node got at level l.
func (r *reachBits) add(l int, nb uint64) {
	if r.lvl[l&1] != int32(l) {
		r.lvl[l&1], r.got[l&1] = int32(l), 0
	}
	r.got[l&1] |= nb
}

// walkBack follows parent records from v, reached at level by the start
// nodes in nb, back to the lowest of those start nodes.
func walkBack(parents map[ID][]parent, v ID, level int, nb uint64) walk {
	bit := uint64(1) << bits.TrailingZeros64(nb)
	w := walk{nodes: []ID{v}, edges: []string{}}
	for x, l := v, level; l > 0; l-- {
		i := slices.IndexFunc(parents[x], func(p parent) bool { return p.level == l && p.bits&bit != 0 })
		if i < 0 {
			break // cannot happen: every bit a node got at a level came through a record
		}
		p := parents[x][i]
		w.nodes = append(w.nodes, p.prev)
		w.edges = append(w.edges, p.edge)
		x = p.prev
	}
	slices.Reverse(w.nodes)
	slices.Reverse(w.edges)
	return w
}

// expand runs every step from a chunk of start nodes. It returns the nodes
// the last step reached, in the order reached, and with paths, a function
// that joins each one's walks into a path from a start node.
func (ex *executor) expand(starts []ID, steps []Step) ([]ID, func(ID) *Path, error) {
	withWalks := ex.q.Return.Paths
	ids := starts
	walks := make([]map[ID]walk, 0, len(steps))
	for i := range steps {
		out, err := ex.step(ids, &steps[i], withWalks)
		if err != nil {
			return nil, nil, err
		}
		ids = out.ids
		walks = append(walks, out.walks)
	}
	if !withWalks {
		return ids, nil, nil
	}
	return ids, func(v ID) *Path {
		p := &Path{Nodes: []ID{v}, Edges: []string{}}
		for k := len(walks) - 1; k >= 0; k-- {
			w, ok := walks[k][v]
			if !ok {
				break // cannot happen: each step's results have walks
			}
			p.Nodes = append(slices.Clone(w.nodes[:len(w.nodes)-1]), p.Nodes...)
			p.Edges = append(slices.Clone(w.edges), p.Edges...)
			v = w.nodes[0]
		}
		return p
	}, nil
}

// keepType returns the nodes of ids that exist and are of type typ, in
// order, reading their types only. Like fetchWith, it stops at the hard
// stop.
func (ex *executor) keepType(nt NodeTyper, ids []ID, typ string) ([]ID, error) {
	var out []ID
	for i := 0; i < len(ids); {
		if !ex.hardStop.IsZero() && time.Now().After(ex.hardStop) {
			ex.cut = true
			break
		}
		chunk := ids[i:min(i+4096, len(ids))]
		i += len(chunk)
		types, err := nt.NodeTypes(context.WithoutCancel(ex.b.ctx), chunk)
		if err != nil {
			return nil, err
		}
		for j, t := range types {
			if t == typ {
				out = append(out, chunk[j])
			}
		}
	}
	return out, nil
}

// indexFilter returns the nodes that an index says may pass a step's
// where, out of n reached: every node that passes it is among them. It
// answers (ok) only when each node type the step can keep (its type, or
// else every type its edges may lead to, as the model declares them) has
// an indexed condition that every match must meet, and those indexes hold
// no more entries for them than n: reading the entries then costs less
// than reading the n nodes to test them. The nodes kept are read and
// tested as before, unless exact: the where is one condition that the
// index answers as the filter would (exactWhere), so every node it lists
// passes. The entries come out of work already paid for (at most n), so
// they are not charged to the budget.
func (ex *executor) indexFilter(st *Step, n int) (_ map[ID]bool, exact, _ bool) {
	if st.where == nil || n == 0 {
		return nil, false, false
	}
	m := ex.s.Model()
	types, ok := stepTypes(m, st)
	if !ok {
		return nil, false, false
	}
	keep := map[ID]bool{}
	left := n // index entries still worth reading
	for _, t := range types {
		nt, ok := m.Node(t)
		if !ok {
			return nil, false, false
		}
		plans := indexPlans(t, nt.IsIndexed, st.where)
		if len(plans) == 0 {
			return nil, false, false
		}
		// An equality (or a set of them) before a range: usually fewer entries.
		p := plans[0]
		for _, q := range plans {
			if q.queries[0].Eq != nil {
				p = q
				break
			}
		}
		for _, iq := range p.queries {
			for {
				iq.Limit = min(lookupPage, left+1)
				page, err := ex.s.Lookup(ex.b.ctx, iq)
				if err != nil {
					return nil, false, false // the nodes are read and tested instead
				}
				if left -= len(page.IDs); left < 0 {
					return nil, false, false
				}
				for _, id := range page.IDs {
					keep[id] = true
				}
				if page.Next == "" {
					break
				}
				iq.After = page.Next
			}
		}
	}
	return keep, exactWhere(st.where), true
}

// exactWhere says whether an index lookup that indexPlans makes of f
// lists exactly the nodes that pass f, so that keepStep need not read
// them (the count of the dependants of bench-pg's hub at 100k nodes in
// its second largest section took 18.5 ms reading them and 10.7 ms
// without; BenchmarkHubReads's count-1hop-in-where, 22.6 and 9.1 ms with
// reachHint): f is a single equality ("eq", or "in" a list) on a
// property, of values other than null. An index holds
// a property's value, or each scalar element of an array, as
// EncodeIndexValue encodes it, which is equal for values that
// equalValues finds equal (numbers as float64, strings by their bytes);
// and eq on an array looks for an element, as its entries do. null is
// left out: a property set to null is absent to a filter, but indexed,
// and a lookup of null is no lookup at all (IndexQuery.Eq).
func exactWhere(f *filter) bool {
	if f == nil || len(f.conds) != 1 || len(f.and) > 0 || len(f.or) > 0 || f.not != nil {
		return false
	}
	c := f.conds[0]
	if c.deg != nil || metaField(c.field) {
		return false
	}
	switch c.op {
	case "eq":
		return c.val != nil
	case "in":
		return len(c.vals) > 0 && !slices.Contains(c.vals, nil)
	}
	return false
}

// stepTypes returns the node types a step can keep: its type, or else
// every type its edges may lead to, as the model declares them (false:
// any type, as when the step keeps its start nodes, of hops 0).
func stepTypes(m *schema.Model, st *Step) ([]string, bool) {
	if st.Type != "" {
		return []string{st.Type}, true
	}
	if st.Hops.Min == 0 {
		return nil, false
	}
	labels := []string(st.Edge)
	if len(labels) == 0 {
		labels = m.EdgeLabels()
	}
	var types []string
	for _, l := range labels {
		et, ok := m.Edge(l)
		if !ok {
			return nil, false
		}
		var ends []string
		switch st.Direction {
		case In:
			ends = et.From
		case Both:
			ends = append(slices.Clone(et.From), et.To...)
		default:
			ends = et.To
		}
		if len(ends) == 0 {
			return nil, false // any type
		}
		types = append(types, ends...)
	}
	slices.Sort(types)
	return slices.Compact(types), true
}
