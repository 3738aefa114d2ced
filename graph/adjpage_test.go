package graph_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// adjacentQuery draws a query that adjacentPage answers (one hop from up
// to three start IDs, in ID order, at most 16 listings), with the step's
// filters, a final where, fields and degrees drawn as randomQuery draws
// them; from a hub, when there is one, half of the time.
func adjacentQuery(rng *rand.Rand, g *oGraph, hub string) *oQuery {
	q := &oQuery{}
	st := oStep{dir: []string{"out", "in", "both"}[rng.IntN(3)], min: 1, max: 1, labels: randomLabels(rng)}
	labels, dirs := len(oLabels), 1
	if len(st.labels) > 0 {
		labels = len(st.labels)
	}
	if st.dir == "both" {
		dirs = 2
	}
	for range 1 + rng.IntN(3) {
		if (len(q.ids)+1)*labels*dirs > 16 {
			break
		}
		switch {
		case hub != "" && rng.IntN(2) == 0:
			q.ids = append(q.ids, hub)
		case rng.IntN(8) == 0:
			q.ids = append(q.ids, "n/missing")
		default:
			q.ids = append(q.ids, g.ids[rng.IntN(len(g.ids))])
		}
	}
	if rng.IntN(4) == 0 {
		st.typ = oTypes[rng.IntN(3)]
	}
	if rng.IntN(4) == 0 {
		st.where = randomFilter(rng, 1, oFields)
	}
	if rng.IntN(4) == 0 {
		st.edgeWhere = randomFilter(rng, 1, oEdgeFields)
	}
	q.steps = []oStep{st}
	if rng.IntN(4) == 0 {
		q.final = randomFilter(rng, 0, oFields)
	}
	if rng.IntN(4) == 0 {
		q.fields = []string{"id", "name", "n"}
	}
	if rng.IntN(4) == 0 {
		q.degrees = append(q.degrees, *randomDegree(rng))
	}
	q.limit = 1 + rng.IntN(8)
	switch rng.IntN(5) {
	case 0: // ordered by a field, or by an indexed field of A (an index walk may read the page)
		if rng.IntN(2) == 0 {
			q.order = []graph.Order{{Field: oFields[rng.IntN(len(oFields))], Desc: rng.IntN(2) == 0}}
		} else {
			reachOrderQuery(rng, g, q)
		}
	case 1: // counted with a filter: the hop is collected, not counted from the summaries
		q.count, q.fields, q.degrees = true, nil, nil
		if q.final == nil {
			q.final = randomFilter(rng, 0, oFields)
		}
	}
	if hub != "" && slices.Contains(q.ids, hub) {
		q.limit = 20 + rng.IntN(200) // thousands of results
	}
	return q
}

// listed reports whether adjacentPage reads q's pages.
func (q *oQuery) listed() bool { return !q.count && len(q.order) == 0 && len(q.steps) == 1 && !q.paths }

// TestAdjacentPageOracle pages through one hop from a few start nodes in
// ID order, which the engine reads from the start nodes' edge listings
// (adjpage.go), or ordered or counted with a filter, which it collects
// (from one start node, with oneHop), and checks every page against the
// brute-force oracle on both stores: random graphs, some with a hub of thousands of edges,
// self-loops and parallel keyed edges; every label set and direction,
// the step's type, where and edgeWhere, a final where; under no limit,
// tiny work limits (the cursor must continue exactly), byte limits and
// deadlines. Each query's plan must say it merged the listings.
func TestAdjacentPageOracle(t *testing.T) {
	rng, seed := oracleRand(t, "TestAdjacentPageOracle", 0x61646a)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	stats := &oracleStats{}
	graphs := 6
	if testing.Short() || raceDetector {
		graphs = 2
	}
	for gi := 0; gi < graphs && !t.Failed(); gi++ {
		g, hub, stores := hubGraphStores(t, rng, m, gi)
		for qi := 0; qi < 20 && !t.Failed(); qi++ {
			q := adjacentQuery(rng, g, hub)
			start, want := g.answer(q)
			for name, s := range stores {
				stats.queries++
				r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: stats,
					ctx: fmt.Sprintf("seed %d, %s store, graph %d (%d nodes, %d edges), query %d %s", seed, name, gi, len(g.ids), len(g.edges), qi, q.json("", nil))}
				if q.listed() {
					checkAdjacentPlan(t, s, m, q, r.ctx)
				}
				r.page(nil, true)
				fromHub := hub != "" && slices.Contains(q.ids, hub)
				work := 1 + rng.IntN(12)
				if fromHub {
					work = 50 + rng.IntN(200)
				}
				r.page(map[string]int{"maxVisited": work}, true)
				if rng.IntN(3) == 0 {
					r.page(map[string]int{"maxBytes": 2048 + 300 + rng.IntN(1000)}, true)
				}
				if rng.IntN(4) == 0 && !fromHub { // a call past the deadline examines one node
					r.page(map[string]int{"timeoutMs": 1, "maxVisited": 50 + rng.IntN(2000)}, false)
				}
			}
		}
	}
	t.Logf("%d queries, %d calls; %d truncated pages", stats.queries, stats.calls, stats.truncated)
	if stats.truncated == 0 {
		t.Errorf("no page was cut by a bound: the test does not check the cursor of a cut listing")
	}
}

// hubGraphStores draws the gi-th random graph of a test over hubs: every
// third (from the first) with a hub of thousands of edges (withHub, which
// returns it), loaded into the embedded store and, but for every third
// (from the second), into the PostgreSQL store too.
func hubGraphStores(t *testing.T, rng *rand.Rand, m *schema.Model, gi int) (g *oGraph, hub string, stores map[string]graph.Store) {
	t.Helper()
	g = randomGraph(rng)
	if gi%3 == 0 {
		hub = withHub(rng, g)
	}
	stores = map[string]graph.Store{"embedded": g.load(t, m)}
	if gi%3 != 1 {
		stores["postgres"] = g.loadPostgres(t, m)
	}
	return g, hub, stores
}

// checkAdjacentPlan runs q with explain and checks that its page came from
// the edge listings.
func checkAdjacentPlan(t *testing.T, s graph.Store, m *schema.Model, q *oQuery, ctx string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(q.json("", nil)), &doc); err != nil {
		t.Fatal(err)
	}
	doc["explain"] = true
	raw, _ := json.Marshal(doc)
	pq, err := graph.ParseQuery(m, raw)
	if err != nil {
		t.Fatalf("%s: %v", ctx, err)
	}
	res, err := graph.Run(t.Context(), s, pq, graph.Limits{})
	if err != nil {
		t.Fatalf("%s: %v", ctx, err)
	}
	if !strings.Contains(res.Plan, "merge their edge listings") {
		t.Errorf("%s: plan %q: the page did not come from the edge listings", ctx, res.Plan)
	}
}

// A page of a hub's neighbours reads as many of them as the page needs,
// whichever page it is: the work stays near the limit, not the hub's
// degree, on both stores, through query_graph and through neighbors.
func TestAdjacentPageReadsOnlyThePage(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}}
	for i := range 3000 {
		id := fmt.Sprintf("n/%04d", i)
		g.nodes[id] = &oNode{id: id, typ: oTypes[i%3], props: map[string]any{}}
		g.ids = append(g.ids, id)
		if i > 0 {
			g.edges = append(g.edges, oEdge{from: id, to: "n/0000", label: "e1"})
		}
	}
	for store, s := range map[string]graph.Store{"embedded": g.loadInBatches(t, m, 1000), "postgres": g.loadPostgres(t, m)} {
		for _, via := range []string{"query_graph", "neighbors"} {
			name := store + " store, " + via
			// page returns the first ID of the page after cursor, the
			// work it took and the next cursor.
			page := func(cursor string) (first string, visited int, next string) {
				if via == "neighbors" {
					q := graph.NeighborsQuery{ID: "n/0000", Direction: graph.In, Limits: graph.Limits{MaxResults: 100}, Cursor: cursor}
					r, err := graph.Neighbors(t.Context(), s, q, graph.Limits{})
					if err != nil {
						t.Fatal(err)
					}
					if len(r.Nodes) > 0 {
						first = string(r.Nodes[0].Node.ID)
					}
					return first, r.Stats.Visited, r.Cursor
				}
				doc := fmt.Sprintf(`{"from":{"ids":["n/0000"]},"traverse":[{"edge":"e1","direction":"in"}],"limit":100,"cursor":%q}`, cursor)
				res := run(t, s, doc, graph.Limits{})
				if len(res.Nodes) > 0 {
					first, _ = res.Nodes[0]["id"].(string)
				}
				return first, res.Stats.Visited, res.Cursor
			}
			cursor, pages := "", 0
			for {
				first, visited, next := page(cursor)
				if want := fmt.Sprintf("n/%04d", pages*100+1); first != want {
					t.Fatalf("%s: page %d starts %q, want %s", name, pages, first, want)
				}
				if visited > 101 {
					t.Errorf("%s: page %d visited %d for 100 results of 2,999", name, pages, visited)
				}
				pages++
				if cursor = next; cursor == "" {
					break
				}
			}
			if pages != 30 {
				t.Errorf("%s: %d pages of 100 for 2,999 results", name, pages)
			}
		}
	}
}

// TestOneHopFromHubOracle: one hop into a hub, collected from its listing
// (oneHop) and ordered, counted or filtered, agrees with the brute-force
// oracle on both stores. The hub's dependents and as many other nodes of
// the same type carry the indexed property the order reads (so a walk of
// its index meets nodes the hop did not reach), some dependents have two
// parallel keyed edges to it, and the hub has a self-loop and the highest
// value (so counting it would put it first).
func TestOneHopFromHubOracle(t *testing.T) {
	rng, seed := oracleRand(t, "TestOneHopFromHubOracle", 0x686f70)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}, out: map[string]map[string][]oEdge{}, in: map[string]map[string][]oEdge{}}
	node := func(id, typ string, n int) {
		g.nodes[id] = &oNode{id: id, typ: typ, props: map[string]any{"n": n, "s": oStr[rng.IntN(len(oStr))]}}
		g.ids = append(g.ids, id)
	}
	node("n/hub", "A", 9)
	for i := range 3000 {
		id := fmt.Sprintf("n/x%04d", i)
		node(id, oTypes[rng.IntN(2)], rng.IntN(9))
		if i%2 == 0 {
			g.edges = append(g.edges, oEdge{from: id, to: "n/hub", label: "k", key: "a"})
			if i%6 == 0 {
				g.edges = append(g.edges, oEdge{from: id, to: "n/hub", label: "k", key: "b"})
			}
		}
	}
	g.edges = append(g.edges, oEdge{from: "n/hub", to: "n/hub", label: "k", key: "self"}, oEdge{from: "n/hub", to: "n/x0001", label: "k", key: "a"})
	slices.Sort(g.ids)
	for _, l := range oLabels {
		g.out[l], g.in[l] = map[string][]oEdge{}, map[string][]oEdge{}
	}
	for _, e := range g.edges {
		g.out[e.label][e.from] = append(g.out[e.label][e.from], e)
		g.in[e.label][e.to] = append(g.in[e.label][e.to], e)
	}
	stats := &oracleStats{}
	stores := map[string]graph.Store{"embedded": g.load(t, m), "postgres": g.loadPostgres(t, m)}
	queries := 24
	if raceDetector {
		queries = 8
	}
	for qi := 0; qi < queries && !t.Failed(); qi++ {
		st := oStep{labels: []string{"k"}, dir: map[bool]string{true: "out", false: "in"}[qi%8 == 7], min: 1, max: 1}
		q := &oQuery{ids: []string{"n/hub"}, limit: 20 + rng.IntN(100)}
		if rng.IntN(2) == 0 {
			st.typ = "A"
		}
		if rng.IntN(3) == 0 {
			st.where = randomFilter(rng, 1, oIndexedA)
		}
		switch qi % 4 {
		case 0, 1: // by A's indexed n: an index walk may read the page
			st.typ = "A"
			q.order = []graph.Order{{Field: "n", Desc: qi%4 == 0}}
		case 2:
			q.order = []graph.Order{{Field: "s", Desc: rng.IntN(2) == 0}, {Field: "n"}}
		default:
			q.count = true
			q.final = randomFilter(rng, 0, oFields)
		}
		q.steps = []oStep{st}
		start, want := g.answer(q)
		for name, s := range stores {
			stats.queries++
			r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: stats,
				ctx: fmt.Sprintf("seed %d, %s store, query %d %s", seed, name, qi, q.json("", nil))}
			r.page(nil, true)
		}
	}
	t.Logf("%d queries, %d calls; %d ordered pages through an index", stats.queries, stats.calls, stats.indexed)
	if stats.indexed == 0 {
		t.Errorf("no page came from an index walk: the test does not check the walk's search of a sorted hop")
	}
}

// Between two pages of a hub's neighbours, writes move the listing on as
// Store.Edges says (the items after the cursor as they are when read):
// the last result deleted, two new neighbours before the cursor (not
// listed: they sort before), one after it (listed), one deleted ahead (not
// listed); each neighbour comes once, on both stores, through query_graph
// and through neighbors (depth 1).
func TestAdjacentPageAcrossWrites(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}}
	for i := range 41 {
		id := fmt.Sprintf("n/%03d", 2*i) // even IDs: room for new ones between
		g.nodes[id] = &oNode{id: id, typ: "A", props: map[string]any{}}
		g.ids = append(g.ids, id)
		if i > 0 {
			g.edges = append(g.edges, oEdge{from: id, to: "n/000", label: "e1"})
		}
	}
	for _, via := range []string{"query_graph", "neighbors"} {
		for store, s := range map[string]graph.Store{"embedded": g.load(t, m), "postgres": g.loadPostgres(t, m)} {
			name := store + " store, " + via
			acrossWrites(t, s, name, func(cursor string) (ids []string, next string) {
				t.Helper()
				if via == "neighbors" {
					q := graph.NeighborsQuery{ID: "n/000", Labels: []string{"e1"}, Direction: graph.In, Limits: graph.Limits{MaxResults: 10}, Cursor: cursor}
					res, err := graph.Neighbors(t.Context(), s, q, graph.Limits{})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					for _, n := range res.Nodes {
						ids = append(ids, string(n.Node.ID))
					}
					return ids, res.Cursor
				}
				doc := fmt.Sprintf(`{"from":{"ids":["n/000"]},"traverse":[{"edge":"e1","direction":"in"}],"limit":10,"cursor":%q}`, cursor)
				res := run(t, s, doc, graph.Limits{})
				for _, n := range res.Nodes {
					ids = append(ids, n["id"].(string))
				}
				return ids, res.Cursor
			})
		}
	}
}

// acrossWrites is TestAdjacentPageAcrossWrites on one store, through page.
func acrossWrites(t *testing.T, s graph.Store, name string, page func(cursor string) ([]string, string)) {
	t.Helper()
	apply := func(b *graph.Batch) {
		t.Helper()
		if _, err := s.Apply(t.Context(), b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	link := func(id string) *graph.Batch {
		return &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(id), Type: "A", Properties: graph.Props{}}},
			Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: graph.ID(id), Label: "e1", To: "n/000"}}}}
	}
	first, cursor := page("")
	if want := "n/002 n/004 n/006 n/008 n/010 n/012 n/014 n/016 n/018 n/020"; strings.Join(first, " ") != want {
		t.Fatalf("%s: first page %v, want %s", name, first, want)
	}
	apply(&graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "n/020"}, {ID: "n/030"}}}) // the last result, and one ahead
	apply(link("n/011"))                                                            // before the cursor
	apply(link("n/013"))                                                            // (and an offset would shift by one)
	apply(link("n/021"))                                                            // just after it
	got := first
	for calls := 0; cursor != ""; calls++ {
		if calls == 10 {
			t.Fatalf("%s: no end after 10 pages of 10 for 40 neighbours: %v", name, got)
		}
		var ids []string
		ids, cursor = page(cursor)
		got = append(got, ids...)
	}
	var want []string
	for i := 1; i <= 40; i++ {
		if i != 15 {
			want = append(want, fmt.Sprintf("n/%03d", 2*i))
		}
	}
	want = slices.Insert(want, 10, "n/021")
	if !slices.Equal(got, want) {
		t.Errorf("%s: pages across writes %v, want %v", name, got, want)
	}
}
