package graph_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// The oracle's groupBy: random groupings of random queries' results,
// counted by brute force and checked page by page (grouping is ordered,
// so pages are exactly-once and in order, and a bound returns no group).

// oGroupFields are the fields the oracle groups by.
var oGroupFields = []string{"type", "name", "n", "s", "u", "f", "t"}

// randomGroupBy returns a grouping by a field or a degree, perhaps in
// buckets, in some order.
func randomGroupBy(rng *rand.Rand) *graph.GroupBy {
	g := &graph.GroupBy{}
	if rng.IntN(3) == 0 {
		g.Degree = randomDegree(rng)
		if rng.IntN(2) == 0 {
			b := int64(rng.IntN(2))
			for range 1 + rng.IntN(3) {
				g.Buckets = append(g.Buckets, b)
				b += 1 + int64(rng.IntN(3))
			}
		}
	} else {
		g.Field = oGroupFields[rng.IntN(len(oGroupFields))]
	}
	switch rng.IntN(3) {
	case 1:
		g.Order = "count"
	case 2:
		g.Order = "key"
	}
	if rng.IntN(3) == 0 {
		d := rng.IntN(2) == 0
		g.Desc = &d
	}
	return g
}

// oGroup is a group as the oracle computes it: key nil for null.
type oGroup struct {
	key   any
	count int
}

// groupKeys returns the keys of a node: one per distinct array element,
// nil (the null key) for no value.
func (g *oGraph) groupKeys(id string, gb *graph.GroupBy) []any {
	if gb.Degree != nil {
		d := g.degree(id, gb.Degree)
		key := d
		if len(gb.Buckets) > 0 {
			key = 0
			for _, b := range gb.Buckets {
				if int(b) <= d {
					key = int(b)
				}
			}
		}
		return []any{key}
	}
	v, ok := g.field(g.nodes[id], gb.Field)
	if !ok {
		return []any{nil}
	}
	arr, isArr := v.([]string)
	if !isArr {
		return []any{v}
	}
	var keys []any
	for _, e := range arr {
		if !slices.Contains(keys, any(e)) {
			keys = append(keys, e)
		}
	}
	if len(keys) == 0 {
		return []any{nil}
	}
	return keys
}

// oCompareKeys orders keys: false, true, numbers, strings; nil last.
func oCompareKeys(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	if c := cmp.Compare(kind(a), kind(b)); c != 0 {
		return c
	}
	if ba, ok := a.(bool); ok {
		return cmp.Compare(b2i(ba), b2i(b.(bool)))
	}
	c, _ := oCompare(a, b)
	return c
}

// groups groups the result ids as gb says, in gb's order.
func (g *oGraph) groups(gb *graph.GroupBy, ids []string) []oGroup {
	var out []oGroup
	for _, id := range ids {
		for _, k := range g.groupKeys(id, gb) {
			i := slices.IndexFunc(out, func(o oGroup) bool { return oCompareKeys(o.key, k) == 0 })
			if i < 0 {
				out = append(out, oGroup{key: k})
				i = len(out) - 1
			}
			out[i].count++
		}
	}
	byKey := gb.Order == "key"
	desc := !byKey
	if gb.Desc != nil {
		desc = *gb.Desc
	}
	slices.SortFunc(out, func(a, b oGroup) int {
		if !byKey {
			c := cmp.Compare(a.count, b.count)
			if desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		c := oCompareKeys(a.key, b.key)
		if byKey && desc && a.key != nil && b.key != nil {
			c = -c
		}
		return c
	})
	return out
}

// oKey turns a group key as the engine returns it into the oracle's.
func oKey(v any) any {
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil {
			return int(i)
		}
		f, _ := n.Float64()
		return f
	}
	return v
}

func (o oGroup) String() string { return fmt.Sprintf("%v:%d", o.key, o.count) }

// pageGroups pages through the groups with the limits and checks them:
// every page the next groups in order, or, when a bound stopped the work,
// no group and no cursor that skips ahead.
func (r *oracleRun) pageGroups(limits map[string]int, exact bool) {
	r.t.Helper()
	want := r.g.groups(r.q.group, r.want)
	var got []oGroup
	cursor := ""
	for calls := 0; ; calls++ {
		if calls > 1000 {
			r.fail("no end of the groups after %d calls with limits %v", calls, limits)
			return
		}
		res, ok := r.call(cursor, limits)
		if !ok {
			return
		}
		doc := r.q.json(cursor, limits)
		if res.Truncated && res.Reason != graph.ReasonBytes {
			r.stats.truncated++
			if len(res.Groups) > 0 || res.Cursor != cursor {
				r.fail("%s: a grouping cut by %s returned %d groups, cursor %q", doc, res.Reason, len(res.Groups), res.Cursor)
			}
			if exact && cursor != "" && res.Reason == graph.ReasonWork {
				r.fail("%s: a deterministic limit cut a grouping that an earlier page completed", doc)
			}
			return
		}
		if res.Count == nil || *res.Count != len(want) {
			r.fail("%s: count %v, want %d groups", doc, ptrInt(res.Count), len(want))
		}
		if len(res.Nodes) > 0 {
			r.fail("%s: a grouping returned nodes", doc)
		}
		var page []oGroup
		for _, gr := range res.Groups {
			page = append(page, oGroup{key: oKey(gr.Key), count: int(gr.Count)})
		}
		n := len(got)
		if n+len(page) > len(want) || !slices.EqualFunc(page, want[n:n+len(page)], func(a, b oGroup) bool {
			return a.count == b.count && oCompareKeys(a.key, b.key) == 0
		}) {
			r.fail("%s: groups %v, want the next of %v after %v", doc, page, want, got)
			return
		}
		if len(page) == 0 && res.Cursor != "" {
			r.fail("%s: an empty page of groups with a cursor", doc)
			return
		}
		got = append(got, page...)
		if res.Cursor == "" {
			break
		}
		cursor = res.Cursor
	}
	if len(got) != len(want) {
		r.fail("%s: groups %v, want %v", r.q.json("", limits), got, want)
	}
}

// groupJSON renders gb as the query language writes it.
func groupJSON(gb *graph.GroupBy) any {
	data, _ := json.Marshal(gb)
	var v any
	json.Unmarshal(data, &v)
	return v
}

func ptrInt(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCountIndexedOracle checks counts the engine answers from the
// store's counts and indexes (a whole type; an indexed property equal to
// a value or to one of several, arrays included) against the brute-force
// oracle, and that they read no node: the work is the index entries.
func TestCountIndexedOracle(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	oIndexed := map[string][]string{"A": {"n", "s", "t"}, "B": {"n"}} // as oracleModel says
	counts, fromIndex := 0, 0
	for gi := range 20 {
		g := randomGraph(rng)
		s := g.load(t, m)
		for _, typ := range oTypes {
			for qi := range 12 {
				q := &oQuery{typ: typ, count: true}
				field, c := []string{"n", "s", "t", "u"}[rng.IntN(4)], oCond{}
				if qi > 0 {
					q.where = &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}}
					c = oCond{op: "eq", val: randomValue(rng, field, "eq")}
					if rng.IntN(2) == 0 {
						vals := []any{}
						for range 1 + rng.IntN(3) {
							vals = append(vals, randomValue(rng, field, "in"))
						}
						c = oCond{op: "in", val: vals}
					}
					q.where.conds[field] = []oCond{c}
					q.where.short[field] = c.op == "eq" && rng.IntN(2) == 0
				}
				_, want := g.evaluate(q, g.starts(q))
				doc := q.json("", nil)
				res := run(t, s, doc, graph.Limits{})
				counts++
				if res.Count == nil || *res.Count != len(want) || res.Truncated {
					t.Fatalf("seed %d, graph %d, %s: count %v (truncated %v), the oracle says %d", seed, gi, doc, ptrInt(res.Count), res.Truncated, len(want))
				}
				// The work is the index entries read (1 for the type's
				// count): one per match of each value.
				entries, indexed := 1, slices.Contains(oIndexed[typ], field)
				if qi > 0 && indexed {
					entries = 0
					vals, isIn := c.val.([]any)
					if !isIn {
						vals = []any{c.val}
					}
					for _, v := range vals {
						eq := &oQuery{typ: typ, where: &oFilter{conds: map[string][]oCond{field: {{op: "eq", val: v}}}}}
						_, m := g.evaluate(eq, g.starts(eq))
						entries += len(m)
					}
				}
				if qi == 0 || indexed {
					fromIndex++
					if res.Stats.Visited != entries {
						t.Fatalf("seed %d, graph %d, %s: work %d, want %d (the index entries)", seed, gi, doc, res.Stats.Visited, entries)
					}
				}
				if len(want) > 1 { // a smaller work bound: a lower bound, marked
					res := run(t, s, q.json("", map[string]int{"maxVisited": 1}), graph.Limits{})
					if res.Count == nil || *res.Count > len(want) || (*res.Count < len(want)) != res.Truncated {
						t.Fatalf("seed %d, graph %d, %s under maxVisited 1: count %v (truncated %v), the oracle says %d", seed, gi, doc, ptrInt(res.Count), res.Truncated, len(want))
					}
				}
			}
		}
	}
	t.Logf("%d counts, %d of them answered from the counts or an index", counts, fromIndex)
}

// TestGroupByIndexOracle checks groupings of whole types by every field,
// which the store answers from a property index where it has one
// (graph.IndexScanner), against the oracle and against the same query on
// the plain store (which reads the nodes), and that the index answer reads
// no node: its work is the index's entries and the type's count.
func TestGroupByIndexOracle(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	oIndexed := map[string][]string{"A": {"n", "s", "t"}, "B": {"n"}} // as oracleModel says
	fromIndex := 0
	for gi := range 15 {
		g := randomGraph(rng)
		s := g.load(t, m)
		for _, typ := range oTypes {
			for _, field := range oGroupFields {
				q := &oQuery{typ: typ, group: randomGroupBy(rng)}
				q.group.Degree, q.group.Buckets, q.group.Field = nil, nil, field
				_, ids := g.evaluate(q, g.starts(q))
				want := g.groups(q.group, ids)
				doc := q.json("", map[string]int{"maxResults": 1000})
				var got [2]string
				for i, store := range []graph.Store{s, plainStore{s}} {
					pq, err := graph.ParseQuery(m, []byte(doc))
					if err != nil {
						t.Fatal(err)
					}
					pq.Limit = 1000
					res, err := graph.Run(t.Context(), store, pq, graph.Limits{})
					if err != nil {
						t.Fatal(err)
					}
					var page []oGroup
					for _, gr := range res.Groups {
						page = append(page, oGroup{key: oKey(gr.Key), count: int(gr.Count)})
					}
					if !slices.EqualFunc(page, want, func(a, b oGroup) bool { return a.count == b.count && oCompareKeys(a.key, b.key) == 0 }) || res.Truncated {
						t.Fatalf("seed %d, graph %d, %s on %T: groups %v (truncated %v), the oracle says %v", seed, gi, doc, store, page, res.Truncated, want)
					}
					got[i] = fmt.Sprint(res.Groups)
					if i == 0 && slices.Contains(oIndexed[typ], field) {
						fromIndex++
						entries := 1 // the type's count
						for _, id := range ids {
							if keys := g.groupKeys(id, q.group); keys[0] != nil {
								entries += len(keys)
							}
						}
						if res.Stats.Visited != entries {
							t.Fatalf("seed %d, graph %d, %s: work %d, want %d (the index entries and the type's count)", seed, gi, doc, res.Stats.Visited, entries)
						}
					}
				}
				if got[0] != got[1] {
					t.Fatalf("%s: %s from the index, %s from the nodes", doc, got[0], got[1])
				}
			}
		}
	}
	t.Logf("%d groupings answered from an index", fromIndex)
}
