package graph_test

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// The oracle test checks query_graph against a brute-force evaluator over
// an in-memory copy of the same random graph: results, counts, order,
// paging and paths, also under tiny work limits, byte limits and deadlines.
//
//	go test -run TestQueryOracle ./graph -lore.oracle.n 20000 -lore.oracle.seed 42
var (
	oracleN    = flag.Int("lore.oracle.n", 1000, "random queries the oracle test runs")
	oracleSeed = flag.Uint64("lore.oracle.seed", 0, "seed of the oracle test (0: from the clock)")
)

type oracleRun struct {
	t     *testing.T
	s     graph.Store
	g     *oGraph
	q     *oQuery
	start []string
	want  []string // the result, in the query's order
	ctx   string   // what to print with a failure
	stats *oracleStats
}

type oracleStats struct {
	queries, calls, truncated, cutOrdered, partial, lossless, deadlineCuts, groupings int
	indexed                                                                           int // ordered pages read through an index
	reachIndexed                                                                      int // pages of a traversal read through an index
	probed                                                                            int // of those, pages whose entries were probed in place of the traversal
}

func (r *oracleRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: %s", r.ctx, fmt.Sprintf(format, args...))
}

func (r *oracleRun) call(cursor string, limits map[string]int) (*graph.QueryResult, bool) {
	r.t.Helper()
	doc := r.q.json(cursor, limits)
	q, err := graph.ParseQuery(r.s.Model(), []byte(doc))
	if err != nil {
		r.fail("ParseQuery(%s): %v", doc, err)
		return nil, false
	}
	res, err := graph.Run(r.t.Context(), r.s, q, graph.Limits{})
	if err != nil {
		if limits["maxBytes"] > 0 && errors.Is(err, graph.ErrInvalid) && strings.Contains(err.Error(), "alone takes") {
			return nil, false // a result larger than the byte limit: said plainly
		}
		r.fail("Run(%s): %v", doc, err)
		return nil, false
	}
	r.stats.calls++
	if res.More != (res.Cursor != "") || res.Truncated != (res.Reason != "") {
		r.fail("Run(%s): more %v with cursor %q, truncated %v with reason %q", doc, res.More, res.Cursor, res.Truncated, res.Reason)
	}
	return res, true
}

// pageIDs checks one page: every node and path correct; it returns the IDs.
func (r *oracleRun) pageIDs(res *graph.QueryResult, doc string) []string {
	r.t.Helper()
	var out []string
	if r.q.paths && len(res.Paths) != len(res.Nodes) {
		r.fail("%s: %d paths for %d nodes", doc, len(res.Paths), len(res.Nodes))
		return nil
	}
	for i, n := range res.Nodes {
		id, _ := n["id"].(string)
		if !slices.Contains(r.want, id) {
			r.fail("%s: %s is not a result (want %v)", doc, id, r.want)
		}
		if len(r.q.degrees) > 0 {
			want := map[string]int64{}
			for _, d := range r.q.degrees {
				want[degreeKey(d)] = int64(r.g.degree(id, &d))
			}
			if got, _ := n["degrees"].(map[string]int64); !maps.Equal(got, want) {
				r.fail("%s: %s has degrees %v, want %v", doc, id, n["degrees"], want)
			}
		}
		if nd := r.g.nodes[id]; nd != nil && len(r.q.fields) > 0 {
			// Fields hold the node's values, and only those it has.
			for _, f := range r.q.fields {
				want, has := nd.props[f]
				if f == "id" {
					continue
				}
				if got, ok := n[f]; ok != has || ok && fmt.Sprint(got) != fmt.Sprint(want) {
					r.fail("%s: %s has %s %v (%v), want %v (%v)", doc, id, f, got, ok, want, has)
				}
			}
		}
		if r.q.paths {
			if why := r.g.checkPath(r.q, r.start, res.Paths[i], id); why != "" {
				r.fail("%s: path %v to %s %s", doc, res.Paths[i], id, why)
			}
		}
		out = append(out, id)
	}
	return out
}

// page pages through the whole result with the limits and checks what the
// pages hold. exact: the limits are deterministic, so the pages must hold
// every result (but for start nodes the engine names as partial).
func (r *oracleRun) page(limits map[string]int, exact bool) {
	r.t.Helper()
	q := r.q
	if q.group != nil {
		r.stats.groupings++
		r.pageGroups(limits, exact)
		return
	}
	ranked := q.search != "" && len(q.steps) == 0 && len(q.order) == 0
	var got []string
	var partial []string
	cursor, clean := "", true
	for calls := 0; ; calls++ {
		if calls > 5000 {
			r.fail("no end after %d calls with limits %v", calls, limits)
			return
		}
		res, ok := r.call(cursor, limits)
		if !ok {
			return
		}
		doc := q.json(cursor, limits)
		if q.count {
			switch {
			case res.Count == nil:
				r.fail("%s: no count", doc)
			case !res.Truncated && *res.Count != len(r.want), *res.Count > len(r.want):
				r.fail("%s: count %d (truncated %v), want %d", doc, *res.Count, res.Truncated, len(r.want))
			case res.Cursor != "":
				r.fail("%s: a count with a cursor", doc)
			}
			if res.Truncated {
				r.stats.truncated++
			}
			return
		}
		ids := r.pageIDs(res, doc)
		if res.Truncated && res.Reason != graph.ReasonBytes {
			r.stats.truncated++
			if res.Reason == graph.ReasonDeadline {
				r.stats.deadlineCuts++
			}
		}
		if len(q.order) > 0 {
			// Ordered pages are exactly-once and in order, always: a bound
			// leaves a page empty, or shorter, never out of order.
			if len(got)+len(ids) > len(r.want) || !slices.Equal(ids, r.want[len(got):len(got)+len(ids)]) {
				r.fail("%s: ordered page %v, want the next of %v after %v", doc, ids, r.want, got)
				return
			}
			if len(ids) == 0 && res.Truncated && res.Cursor != cursor && res.Cursor != "" && res.Reason != graph.ReasonBytes && q.degreeOrdered() {
				// A read in index order (the degree index) may stop past
				// entries that no filter passed: its cursor moves past
				// them, and the pages after it must still be exact.
				r.stats.cutOrdered++
				cursor = res.Cursor
				continue
			}
			if len(ids) == 0 && res.Truncated && (res.Cursor == cursor || !q.walkable()) {
				r.stats.cutOrdered++
				if res.Cursor != cursor {
					r.fail("%s: a cut ordered read moved its cursor", doc)
				}
				// A walk of an index reads more for some pages than for
				// others; a sort reads the same for every page.
				if exact && cursor != "" && res.Reason == graph.ReasonWork && !q.walkable() && !q.probeable() {
					r.fail("%s: a deterministic limit cut an ordered read that an earlier page completed", doc)
				}
				return // a retry would be cut the same way, or not: nothing more to check
			}
			if res.Stats.Index != "" {
				r.stats.indexed++
			}
			if n := len(q.steps); n > 0 && q.where == nil && res.Stats.Index == q.steps[n-1].typ+"."+q.order[0].Field { // no from.where: no start set from an index
				r.stats.reachIndexed++
			}
			if strings.Contains(res.Plan, "in place of the traversal") {
				r.stats.probed++
			}
			got = append(got, ids...)
			if res.Cursor == "" {
				break
			}
			cursor = res.Cursor
			continue
		}
		cutWork := res.Truncated && res.Reason != graph.ReasonBytes
		if cutWork {
			clean = false
		}
		if clean && !ranked {
			// A page of a result no bound cut: the next results in order.
			if len(got)+len(ids) > len(r.want) || !slices.Equal(ids, r.want[len(got):len(got)+len(ids)]) {
				r.fail("%s: page %v, want the next of %v after %v", doc, ids, r.want, got)
				return
			}
		}
		for _, p := range res.Partial {
			partial = append(partial, string(p))
		}
		got = append(got, ids...)
		if res.Cursor == "" {
			if res.Truncated && res.Reason != graph.ReasonBytes {
				return // nothing can continue it: what came was correct
			}
			break
		}
		cursor = res.Cursor
	}
	// The pages hold every result: each once when no bound cut the work.
	set := map[string]int{}
	for _, id := range got {
		set[id]++
	}
	if clean && len(got) != len(set) {
		r.fail("%s: a result returned twice in exact paging: %v", q.json("", limits), got)
	}
	if len(partial) > 0 {
		r.stats.partial++
		_, lower := r.g.evaluate(q, slices.DeleteFunc(slices.Clone(r.start), func(id string) bool { return slices.Contains(partial, id) }))
		for _, id := range lower {
			if set[id] == 0 {
				r.fail("%s: pages miss %s, which start nodes other than the partial %v reach", q.json("", limits), id, partial)
			}
		}
		return
	}
	for _, id := range r.want {
		if set[id] == 0 {
			r.fail("%s: pages miss %s (got %v, want %v)", q.json("", limits), id, got, r.want)
			return
		}
	}
	if !clean {
		r.stats.lossless++
	}
}

func TestQueryOracle(t *testing.T) {
	stats := runOracle(t, "TestQueryOracle", 0x6c6f7265, 60, randomQuery, func(r *oracleRun, qi int, rng *rand.Rand) {
		r.page(nil, true)
		r.page(map[string]int{"maxVisited": []int{1, 30, 300}[qi%3] + rng.IntN([]int{30, 300, 3000}[qi%3])}, true)
		if rng.IntN(3) == 0 {
			r.page(map[string]int{"maxBytes": 2048 + 300 + rng.IntN(1000)}, true)
		}
		if rng.IntN(3) == 0 {
			r.page(map[string]int{"timeoutMs": 1, "maxVisited": 1 + rng.IntN(2000)}, false)
		}
	})
	t.Logf("%d queries, %d calls; %d truncated pages (%d by the deadline), %d cut ordered reads, %d pagings with partial start nodes, %d cut pagings that still held every result; %d pagings of groups; %d ordered pages through an index (%d of them a traversal's, %d probed in place of it)",
		stats.queries, stats.calls, stats.truncated, stats.deadlineCuts, stats.cutOrdered, stats.partial, stats.lossless, stats.groupings, stats.indexed, stats.reachIndexed, stats.probed)
	if stats.queries >= 1000 && stats.reachIndexed == 0 {
		t.Errorf("no page of a traversal came from an index walk: the oracle does not check that path (reachorder.go)")
	}

}

// answer returns q's start nodes and its results by brute force, in the
// order the query asks for (by ID, or by q.order).
func (g *oGraph) answer(q *oQuery) (start, want []string) {
	start = g.starts(q)
	_, want = g.evaluate(q, start)
	if len(q.order) > 0 {
		g.order(q, want)
	}
	return start, want
}

// oracleRand returns the random source of the oracle test name, seeded by
// -lore.oracle.seed or the clock and salted by salt (so that each test
// draws its own stream), and its seed, which it logs with the command
// that reruns the test with it.
func oracleRand(t *testing.T, name string, salt uint64) (*rand.Rand, uint64) {
	t.Helper()
	seed := *oracleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d: rerun with go test -run %s ./graph -lore.oracle.seed %d", seed, name, seed)
	return rand.New(rand.NewPCG(seed, salt)), seed
}

// runOracle runs the oracle (-lore.oracle.n queries, seeded by
// -lore.oracle.seed or the clock, the stream salted by salt so that each
// test draws its own): perGraph queries that query draws on each random
// graph, each evaluated by brute force and then checked by check. The
// test named name reruns a failure with the seed it logs.
func runOracle(t *testing.T, name string, salt uint64, perGraph int, query func(*rand.Rand, *oGraph) *oQuery, check func(r *oracleRun, qi int, rng *rand.Rand)) *oracleStats {
	t.Helper()
	rng, seed := oracleRand(t, name, salt)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	stats := &oracleStats{}
	for gi := 0; stats.queries < *oracleN && !t.Failed(); gi++ {
		g := randomGraph(rng)
		s := g.load(t, m)
		for qi := 0; qi < perGraph && stats.queries < *oracleN && !t.Failed(); qi++ {
			stats.queries++
			q := query(rng, g)
			start, want := g.answer(q)
			r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: stats,
				ctx: fmt.Sprintf("seed %d, graph %d (%d nodes, %d edges), query %d %s", seed, gi, len(g.ids), len(g.edges), qi, q.json("", nil))}
			check(r, qi, rng)
		}
	}
	return stats
}

// A path is a shortest walk from the start node it names, also when
// another start node of the same pass reaches its nodes first: from c and
// b, z is 2 hops from b (b→y→z) but 1 from c, so c→y→z is no path to it
// (its length is not z's distance from c).
func TestQueryPathIsShortest(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}, out: map[string]map[string][]oEdge{}, in: map[string]map[string][]oEdge{}}
	for _, id := range []string{"n/a", "n/b", "n/c", "n/y", "n/z"} {
		g.nodes[id] = &oNode{id: id, typ: "A", props: map[string]any{}}
		g.ids = append(g.ids, id)
	}
	for _, l := range oLabels {
		g.out[l], g.in[l] = map[string][]oEdge{}, map[string][]oEdge{}
	}
	for _, e := range []oEdge{{from: "n/c", to: "n/y"}, {from: "n/b", to: "n/y"}, {from: "n/c", to: "n/z"}, {from: "n/y", to: "n/z"}} {
		e.label = "e1"
		g.edges = append(g.edges, e)
		g.byID[e.id()] = e
		g.out["e1"][e.from] = append(g.out["e1"][e.from], e)
		g.in["e1"][e.to] = append(g.in["e1"][e.to], e)
	}
	s := g.load(t, m)
	// The first chunk of start nodes is one node: n/a; n/c and n/b then
	// share a pass.
	q := &oQuery{ids: []string{"n/a", "n/c", "n/b"}, steps: []oStep{{labels: []string{"e1"}, dir: "out", min: 2, max: 2}}, paths: true}
	start := g.starts(q)
	_, want := g.evaluate(q, start)
	r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: &oracleStats{}, ctx: q.json("", nil)}
	r.page(nil, true)
	if !slices.Equal(want, []string{"n/z"}) {
		t.Errorf("oracle: %v", want)
	}
}
