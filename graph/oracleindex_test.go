package graph_test

import (
	"math/rand/v2"
	"slices"

	"github.com/lore-dev/lore/graph"
)

// Queries for index-ordered scans: a type's nodes ordered by one indexed
// property (A indexes n, s, m and the array t; B indexes n), with
// conditions on that property that narrow the walk (ranges, prefix, eq,
// in) or do not (ne, exists), beside others, and sometimes a condition
// on another indexed property that narrows more.

// mixedValue draws a value of m: null, a boolean, an integer or a string.
func mixedValue(rng *rand.Rand) any {
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return rng.IntN(2) == 0
	case 2:
		return rng.IntN(5) - 1
	}
	return []string{"x", "y", "z", "xy", "X", "Xy", "ẞ"}[rng.IntN(7)]
}

// indexValue draws a value to compare an indexed field with.
func indexValue(rng *rand.Rand, field, op string) any {
	if op == "prefix" {
		return []string{"x", "X", "", "xY", "y", "ß", "z"}[rng.IntN(7)]
	}
	v := randomValue(rng, field, op)
	if field == "m" || rng.IntN(10) == 0 {
		v = mixedValue(rng)
	}
	switch v.(type) {
	case nil, bool:
		if op == "lt" || op == "lte" || op == "gt" || op == "gte" {
			return []any{"x", 2}[rng.IntN(2)] // comparisons take numbers and strings
		}
	}
	return v
}

func randomIndexQuery(rng *rand.Rand) *oQuery {
	q := &oQuery{typ: []string{"A", "A", "A", "B"}[rng.IntN(4)]}
	fields := []string{"n", "s", "m", "m", "t", "id"}
	if q.typ == "B" {
		fields = []string{"n"}
	}
	field := fields[rng.IntN(len(fields))]
	q.order = []graph.Order{{Field: field, Desc: rng.IntN(2) == 0}}
	if rng.IntN(4) > 0 {
		w := &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}}
		used := map[string]bool{}
		for range 1 + rng.IntN(2) {
			op := []string{"lt", "lte", "gt", "gte", "prefix", "prefix", "eq", "in", "ne", "exists"}[rng.IntN(10)]
			if used[op] {
				continue
			}
			used[op] = true
			var val any
			switch op {
			case "exists":
				val = rng.IntN(3) > 0
			case "in":
				var vs []any
				for range 1 + rng.IntN(3) {
					vs = append(vs, indexValue(rng, field, "eq"))
				}
				val = vs
			default:
				val = indexValue(rng, field, op)
			}
			w.conds[field] = append(w.conds[field], oCond{op, val})
		}
		if rng.IntN(3) == 0 { // another field, indexed or not
			other := []string{"n", "s", "u", "f", "name"}[rng.IntN(5)]
			if other != field {
				w.conds[other] = []oCond{{"eq", randomValue(rng, other, "eq")}}
				w.short[other] = true
			}
		}
		if rng.IntN(4) == 0 { // a narrowing condition inside an "and"
			w.and = append(w.and, &oFilter{conds: map[string][]oCond{field: {{"gte", indexValue(rng, field, "gte")}}}, short: map[string]bool{}})
		}
		q.where = w
	}
	if rng.IntN(4) == 0 {
		q.final = randomFilter(rng, 1, oFields)
	}
	switch rng.IntN(6) {
	case 0:
		q.paths = true
	case 1:
		q.fields = []string{"id", "name", "n"}
	case 2:
		q.degrees = []graph.Degree{*randomDegree(rng)}
	}
	if rng.IntN(6) > 0 {
		q.limit = 1 + rng.IntN(8)
	}
	return q
}

// walkable reports whether the engine may read q's results by walking an
// index (one orderBy on a property the start type indexes, or on id
// ascending, and no traversal):
// its pages may then be cut at any page, and a cut page may move its
// cursor past the entries it passed over.
func (q *oQuery) walkable() bool {
	indexed := map[string][]string{"A": {"n", "s", "t", "m"}, "B": {"n"}}[q.typ]
	return q.search == "" && len(q.ids) == 0 && len(q.steps) == 0 && len(q.order) == 1 && q.group == nil && !q.count &&
		(slices.Contains(indexed, q.order[0].Field) || q.order[0] == graph.Order{Field: "id"}) // by ID: the type scan's order
}

// degreeOrdered reports whether q may be read in the order of the degree
// index: a whole type ordered by one degree (degreeorder.go).
func (q *oQuery) degreeOrdered() bool {
	return q.search == "" && len(q.ids) == 0 && len(q.steps) == 0 && len(q.order) >= 1 && q.order[0].Degree != nil && q.group == nil && !q.count
}

// reachOrderQuery makes q a traversal whose page the engine may read by
// walking an index (reachorder.go): its last step keeps one type, A or
// B, which indexes the one property the query orders by, and the limit
// is small. The last step's where is often on an indexed property (whose
// index may answer instead of the walk) or on another; a where on the
// results sometimes narrows the walk to a stretch of values.
func reachOrderQuery(rng *rand.Rand, g *oGraph, q *oQuery) {
	q.count, q.paths, q.group = false, false, nil
	if q.search != "" || len(q.ids) == 0 && q.typ == "" {
		q.search, q.typ, q.where = "", "", nil
		for range 2 + rng.IntN(6) {
			q.ids = append(q.ids, g.ids[rng.IntN(len(g.ids))])
		}
	}
	if len(q.steps) == 0 {
		q.steps = []oStep{{dir: []string{"out", "in", "both"}[rng.IntN(3)], min: 1, max: 1 + rng.IntN(3)}}
	}
	last := &q.steps[len(q.steps)-1]
	last.typ = []string{"A", "A", "A", "B"}[rng.IntN(4)]
	fields := map[string][]string{"A": {"n", "s", "m", "t"}, "B": {"n"}}[last.typ]
	field := fields[rng.IntN(len(fields))]
	q.order = []graph.Order{{Field: field, Desc: rng.IntN(2) == 0}}
	switch rng.IntN(4) {
	case 0:
		last.where = nil
	case 1:
		last.where = randomFilter(rng, 1, map[string][]string{"A": oIndexedA, "B": {"n"}}[last.typ])
	case 2:
		last.where = randomFilter(rng, 1, oFields)
	}
	switch rng.IntN(4) {
	case 0:
		q.final = &oFilter{conds: map[string][]oCond{field: {{"gte", indexValue(rng, field, "gte")}}}, short: map[string]bool{}}
	case 1:
		q.final = nil
	}
	q.limit = 1 + rng.IntN(3)
}
