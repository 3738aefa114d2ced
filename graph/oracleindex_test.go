package graph_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/schema"
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
			w.conds[field] = append(w.conds[field], oCond{op, condValue(rng, field, op, indexValue)})
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

// probeable reports whether the engine may read q's page by walking an
// index and probing each entry's edges in place of the traversal (one
// hop from a few IDs, ordered by one property: reachorder.go): such a
// page costs what the walk passes over, which differs from page to page.
func (q *oQuery) probeable() bool {
	return len(q.ids) > 0 && len(q.ids) <= 64 && len(q.steps) == 1 && q.steps[0].min == 1 && q.steps[0].max == 1 &&
		q.steps[0].edgeWhere == nil && len(q.order) == 1 && q.order[0].Field != "" && q.group == nil && !q.count && !q.paths
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

// stepIndexQuery makes q a traversal whose last step keeps one type and
// tests one indexed property of it, so that an index may answer the
// step's where in place of reading the nodes it reached (keepStep,
// indexFilter): one condition of any kind on A's n, s, t (an array) or m
// (of mixed kinds, null among them), or B's n, with values of every
// kind; sometimes a second condition, on the same property or another.
func stepIndexQuery(rng *rand.Rand, g *oGraph) *oQuery {
	q := &oQuery{}
	for range 1 + rng.IntN(6) {
		q.ids = append(q.ids, g.ids[rng.IntN(len(g.ids))])
	}
	for range rng.IntN(2) {
		q.steps = append(q.steps, oStep{dir: []string{"out", "in", "both"}[rng.IntN(3)], min: 1, max: 1 + rng.IntN(2)})
	}
	st := oStep{dir: []string{"out", "in", "both"}[rng.IntN(3)], min: rng.IntN(2), max: 1 + rng.IntN(3)}
	if rng.IntN(3) == 0 {
		st.labels = []string{oLabels[rng.IntN(3)]}
	}
	st.typ = []string{"A", "A", "A", "B"}[rng.IntN(4)]
	fields := map[string][]string{"A": oIndexedA, "B": {"n"}}[st.typ]
	w := &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}}
	for range 1 + rng.IntN(4)/3 {
		field := fields[rng.IntN(len(fields))]
		op := []string{"eq", "eq", "eq", "in", "in", "ne", "lt", "gte", "prefix", "exists"}[rng.IntN(10)]
		if slices.ContainsFunc(w.conds[field], func(c oCond) bool { return c.op == op }) {
			continue // a field takes an operator once
		}
		w.conds[field] = append(w.conds[field], oCond{op, condValue(rng, field, op, indexValue)})
	}
	st.where = w
	q.steps = append(q.steps, st)
	switch rng.IntN(4) {
	case 0:
		q.count = true
	case 1:
		q.order = []graph.Order{{Field: fields[rng.IntN(len(fields))], Desc: rng.IntN(2) == 0}}
	}
	if !q.count && rng.IntN(2) == 0 {
		q.limit = 1 + rng.IntN(5)
	}
	return q
}

// TestStepIndexOracle checks traversals whose last step an index may
// filter (stepIndexQuery) against the brute-force evaluator: where the
// index's answer is the where's, the engine keeps the nodes it lists
// without reading them, so an index entry that does not mean a match (a
// null, a value of another kind, an array's element) would be a wrong
// result here.
func TestStepIndexOracle(t *testing.T) {
	runOracle(t, "TestStepIndexOracle", 0x73746570, 100, stepIndexQuery, func(r *oracleRun, _ int, _ *rand.Rand) { r.page(nil, true) })
}

// TestProbeOracle checks the probe (reachorder.go, probeTest): one hop
// from a few nodes, a hub among them, ordered by an indexed property of
// the one type the step keeps, whose page the engine reads by walking the
// index and reading each entry's edges back towards the start nodes in
// place of the traversal. Random graphs with a hub of thousands of edges
// (self-loops and parallel keyed edges among them), its leaves given
// indexed values; every page against the brute-force oracle, also under
// work limits, on the embedded store (through its Adjacency) and on
// PostgreSQL (through Store.Edges). Each store must have probed some
// pages, and a probe must read less than the hub's edges.
func TestProbeOracle(t *testing.T) {
	rng, seed := oracleRand(t, "TestProbeOracle", 0x70726f62)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"embedded", "postgres"}
	stats := []*oracleStats{{}, {}}
	cheap := 0 // probed pages that read less than a tenth of the hub's edges
	for gi := range 3 {
		g := randomGraph(rng)
		hub := withHub(rng, g)
		for _, id := range g.ids {
			if nd := g.nodes[id]; len(nd.props) == 0 { // the hub's leaves
				if rng.IntN(4) > 0 {
					nd.props["n"] = rng.IntN(6)
				}
				if rng.IntN(2) > 0 {
					nd.props["s"] = oStr[rng.IntN(len(oStr))]
				}
			}
		}
		hubEdges := 0
		for _, es := range g.in {
			hubEdges += len(es[hub])
		}
		stores := []graph.Store{g.load(t, m), g.loadPostgres(t, m)}
		for qi := range 10 {
			q := &oQuery{ids: []string{hub}}
			for range rng.IntN(3) {
				q.ids = append(q.ids, []string{hub, "n/missing", g.ids[rng.IntN(len(g.ids))]}[rng.IntN(3)])
			}
			st := oStep{dir: []string{"in", "in", "out", "both"}[rng.IntN(4)], min: 1, max: 1}
			if rng.IntN(3) > 0 {
				st.labels = randomLabels(rng)
			}
			q.steps = []oStep{st}
			reachOrderQuery(rng, g, q)
			if rng.IntN(3) == 0 {
				q.fields = []string{"id", "n"}
			}
			q.limit = []int{q.limit, 10, 20, 50, 50, 50}[rng.IntN(6)] // tiny limits page through thousands of results slowly
			start, want := g.answer(q)
			for si, s := range stores {
				r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: stats[si],
					ctx: fmt.Sprintf("seed %d, graph %d (%d nodes, %d edges), %s, query %d %s", seed, gi, len(g.ids), len(g.edges), names[si], qi, q.json("", nil))}
				stats[si].queries++
				before := stats[si].probed
				r.page(nil, true)
				if stats[si].probed > before && si == 0 {
					// The first page again, for its work.
					res, ok := r.call("", nil)
					if ok && strings.Contains(res.Plan, "in place of the traversal") && res.Stats.Visited < hubEdges/10 {
						cheap++
					}
				}
				if qi%2 == 0 {
					r.page(map[string]int{"maxVisited": 1 + rng.IntN(3*hubEdges)}, true)
				}
				if t.Failed() {
					return
				}
			}
		}
	}
	for si, st := range stats {
		t.Logf("%s: %d queries, %d calls, %d truncated pages; %d pages of a traversal through an index, %d of them probed", names[si], st.queries, st.calls, st.truncated, st.reachIndexed, st.probed)
		if st.probed == 0 {
			t.Errorf("%s: no page was probed: the test does not check that path", names[si])
		}
	}
	if cheap == 0 {
		t.Errorf("no probed first page read less than a tenth of the hub's edges")
	}
}

// statsCounter counts a store's Stats reads.
type statsCounter struct {
	*bolt.Store
	n int
}

func (s *statsCounter) Stats(ctx context.Context) (*graph.Stats, error) {
	s.n++
	return s.Store.Stats(ctx)
}

// A query reads the store's Stats once at most, however many of its plans
// weigh their costs by them (a round trip each to a server store): a
// probe reads them to estimate its cost and again for the walk, a grouping
// by type for its answer.
func TestStatsReadOncePerCall(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	g := randomGraph(rng)
	hub := withHub(rng, g)
	for _, nd := range g.nodes {
		nd.props["n"] = rng.IntN(6)
	}
	s := &statsCounter{Store: g.load(t, m).(*bolt.Store)}
	for _, doc := range []string{
		`{"from":{"ids":["` + hub + `"]},"traverse":[{"direction":"in","type":"A"}],"orderBy":[{"field":"n","desc":true}],"limit":5,"explain":true}`,
		`{"from":{"ids":["` + hub + `"]},"traverse":[{"direction":"in","type":"A","where":{"n":{"gte":2}}}],"orderBy":[{"field":"n"}],"limit":5,"explain":true}`,
		`{"from":{"type":"A"},"groupBy":{"field":"type"}}`,
	} {
		q, err := graph.ParseQuery(m, []byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		s.n = 0
		res, err := graph.Run(t.Context(), s, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if s.n > 1 {
			t.Errorf("%s (plan %q): %d reads of the store's Stats, want 1 at most", doc, res.Plan, s.n)
		}
	}
}
