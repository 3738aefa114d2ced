package graph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

// example opens a store holding the example dataset.
func example(t testing.TB) graph.Store {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, strings.NewReader(string(schema.ExampleData())), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func run(t testing.TB, s graph.Store, query string, ceilings graph.Limits) *graph.QueryResult {
	t.Helper()
	q, err := graph.ParseQuery(s.Model(), []byte(query))
	if err != nil {
		t.Fatalf("ParseQuery(%s): %v", query, err)
	}
	res, err := graph.Run(t.Context(), s, q, ceilings)
	if err != nil {
		t.Fatalf("Run(%s): %v", query, err)
	}
	return res
}

func ids(res *graph.QueryResult) []string {
	out := []string{}
	for _, n := range res.Nodes {
		out = append(out, fmt.Sprint(n["id"]))
	}
	return out
}

func TestQueryLanguage(t *testing.T) {
	s := example(t)
	for _, tt := range []struct {
		name, query string
		want        []string // result IDs, in order
	}{
		{"ids, missing ones dropped", `{"from":{"ids":["service/billing","service/nope"]}}`, []string{"service/billing"}},
		{"eq", `{"from":{"type":"Service","where":{"lifecycle":"deprecated"}}}`, []string{"service/legacy-invoicer"}},
		{"eq operator", `{"from":{"type":"Service","where":{"language":{"eq":"Rust"}}}}`, []string{"service/card-vault"}},
		{"ne", `{"from":{"type":"Service","where":{"lifecycle":{"ne":"production"}}}}`, []string{"service/legacy-invoicer", "service/route-planner"}},
		{"lt", `{"from":{"type":"Service","where":{"tier":{"lt":1},"language":"Go"}}}`, []string{"service/api-gateway", "service/auth", "service/ledger", "service/payments"}},
		{"lte", `{"from":{"type":"Decision","where":{"number":{"lte":2}}}}`, []string{"adr/0001-record-architecture-decisions", "adr/0002-use-mysql-for-transactional-data"}},
		{"gt", `{"from":{"type":"Decision","where":{"number":{"gt":18}}}}`, []string{"adr/0019-streaming-features-for-fraud-scoring"}},
		{"gte", `{"from":{"type":"Service","where":{"tier":{"gte":3}}}}`, []string{"service/developer-portal", "service/legacy-invoicer"}},
		{"date range", `{"from":{"type":"Decision","where":{"date":{"gte":"2024-06-01","lt":"2025-12-31"}}}}`, []string{"adr/0017-severity-levels-and-incident-commander", "adr/0018-carrier-integrations-behind-carrier-connect"}},
		{"in", `{"from":{"type":"Service","where":{"language":{"in":["Rust","C"]}}}}`, []string{"service/card-vault", "service/redis-cache"}},
		{"contains", `{"from":{"type":"Service","where":{"name":{"contains":"PAY"}}}}`, []string{"service/payments"}},
		{"prefix", `{"from":{"type":"Service","where":{"name":{"prefix":"car"}}}}`, []string{"service/card-vault", "service/carrier-connect"}},
		{"exists", `{"from":{"type":"Person","where":{"bio":{"exists":false},"role":{"prefix":"Staff"}}}}`, []string{}},
		{"exists true", `{"from":{"type":"Person","where":{"bio":{"exists":true},"role":{"prefix":"Staff"}}}}`, []string{"person/amara-nwosu", "person/felix-wagner", "person/ravi-shankar", "person/sven-lindqvist", "person/tomas-rivera"}},
		{"or", `{"from":{"type":"Service","where":{"or":[{"language":"Rust"},{"language":"C"}]}}}`, []string{"service/card-vault", "service/redis-cache"}},
		{"and, not", `{"from":{"type":"Decision","where":{"and":[{"status":"accepted"},{"date":{"lt":"2020-01-01"}}],"not":{"number":1}}}}`, []string{"adr/0003-store-card-data-only-in-card-vault"}},
		{"id and type fields", `{"from":{"type":"Team","where":{"id":{"prefix":"team/d"}}},"where":{"type":"Team"}}`, []string{"team/data", "team/developer-experience"}},
		{"out", `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn"}]}`, []string{"service/event-bus", "service/ledger", "service/notifications", "service/postgres-cluster"}},
		{"in", `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in"}]}`, []string{"service/legacy-invoicer", "service/payments"}},
		{"both", `{"from":{"ids":["service/ledger"]},"traverse":[{"edge":"dependsOn","direction":"both"}]}`, []string{"service/billing", "service/event-bus", "service/payments", "service/postgres-cluster"}},
		{"hops 1-3", `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[1,3]}]}`, []string{"service/checkout", "service/legacy-invoicer", "service/payments"}},
		{"hops exactly 2", `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[2,2]}]}`, []string{"service/checkout"}},
		{"hops from 0", `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[0,1]}]}`, []string{"service/billing", "service/legacy-invoicer", "service/payments"}},
		{"hops as n", `{"from":{"ids":["service/checkout"]},"traverse":[{"edge":"dependsOn","hops":2}],"where":{"tier":0}}`, []string{"service/auth", "service/billing", "service/card-vault", "service/event-bus", "service/ledger", "service/payments", "service/postgres-cluster"}},
		{"supersession chain", `{"from":{"ids":["adr/0016-run-postgresql-on-a-managed-ha-cluster"]},"traverse":[{"edge":"supersedes","hops":[1,5]}],"orderBy":[{"field":"number"}]}`, []string{"adr/0002-use-mysql-for-transactional-data", "adr/0007-adopt-postgresql-for-transactional-services"}},
		{"two steps with type", `{"from":{"ids":["service/checkout"]},"traverse":[{"edge":"dependsOn"},{"edge":"owns","direction":"in","type":"Team"}]}`, []string{"team/identity", "team/logistics", "team/payments", "team/platform"}},
		{"step filter", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"owns","type":"Service","where":{"tier":{"gt":0}}}]}`, []string{"service/fraud-scoring", "service/legacy-invoicer"}},
		{"start nodes reach each other", `{"from":{"ids":["service/payments","service/billing"]},"traverse":[{"edge":"dependsOn"}],"where":{"tier":0}}`, []string{"service/billing", "service/card-vault", "service/event-bus", "service/ledger", "service/postgres-cluster"}},
		{"any label", `{"from":{"ids":["adr/0013-replace-legacy-invoicer-with-billing"]},"traverse":[{"direction":"out"}],"where":{"type":"Service"}}`, []string{"service/billing", "service/legacy-invoicer"}},
		{"order desc", `{"from":{"type":"Decision"},"orderBy":[{"field":"date","desc":true}],"limit":3}`, []string{"adr/0019-streaming-features-for-fraud-scoring", "adr/0018-carrier-integrations-behind-carrier-connect", "adr/0017-severity-levels-and-incident-commander"}},
		{"order by two fields", `{"from":{"type":"Service","where":{"tier":{"gte":2}}},"orderBy":[{"field":"tier","desc":true},{"field":"name"}],"limit":4}`, []string{"service/developer-portal", "service/legacy-invoicer", "service/data-warehouse", "service/event-pipeline"}},
		{"search start", `{"from":{"search":"postgres","type":"Decision"},"where":{"status":"accepted"}}`, []string{"adr/0016-run-postgresql-on-a-managed-ha-cluster"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, s, tt.query, graph.Limits{})
			got := ids(res)
			want := tt.want
			if !strings.Contains(tt.query, "orderBy") && !strings.Contains(tt.query, "search") {
				slices.Sort(got) // default order is by ID anyway; sorting keeps the table readable
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if res.Truncated {
				t.Errorf("truncated: %s", res.Reason)
			}
		})
	}
}

func TestQueryReturn(t *testing.T) {
	s := example(t)
	res := run(t, s, `{"from":{"type":"Person"},"return":{"count":true}}`, graph.Limits{})
	if res.Count == nil || *res.Count != 30 || len(res.Nodes) != 0 {
		t.Errorf("count = %v, %d nodes", res.Count, len(res.Nodes))
	}
	res = run(t, s, `{"from":{"ids":["service/billing"]},"return":{"fields":["id","name","tier","revision"]}}`, graph.Limits{})
	want := []map[string]any{{"id": "service/billing", "name": "billing", "tier": res.Nodes[0]["tier"], "revision": int64(1)}}
	if diff := cmp.Diff(want, res.Nodes); diff != "" || fmt.Sprint(res.Nodes[0]["tier"]) != "0" {
		t.Errorf("projection (-want +got):\n%s", diff)
	}
	res = run(t, s, `{"from":{"ids":["service/checkout"]},"traverse":[{"edge":"dependsOn","hops":[2,2]}],"where":{"name":"ledger"},"return":{"paths":true}}`, graph.Limits{})
	if len(res.Paths) != 1 {
		t.Fatalf("paths = %+v", res.Paths)
	}
	p := res.Paths[0]
	if len(p.Nodes) != 3 || p.Nodes[0] != "service/checkout" || p.Nodes[2] != "service/ledger" || len(p.Edges) != 2 || !strings.HasPrefix(p.Edges[0], "dependsOn(service/checkout,") {
		t.Errorf("path = %+v", p)
	}
}

// Paging through a result with cursors: every node exactly once, under
// concurrent writes too.
func TestQueryPaging(t *testing.T) {
	s := graphtest.New(t)
	var b graph.Batch
	for i := range 1000 {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%04d", i)), Type: "Topic",
			Properties: graph.Props{"name": fmt.Sprintf("n%03d", (i*37)%1000), "description": fmt.Sprint(i % 7)}})
	}
	mustApply(t, s, &b)
	for _, order := range []string{`[]`, `[{"field":"name","desc":true}]`, `[{"field":"description"},{"field":"name"}]`} {
		t.Run(order, func(t *testing.T) {
			seen := map[string]int{}
			var pages int
			cursor := ""
			for {
				q := fmt.Sprintf(`{"from":{"type":"Topic"},"orderBy":%s,"limit":37,"cursor":%q}`, order, cursor)
				if cursor == "" {
					q = fmt.Sprintf(`{"from":{"type":"Topic"},"orderBy":%s,"limit":37}`, order)
				}
				res := run(t, s, q, graph.Limits{})
				pages++
				for _, id := range ids(res) {
					seen[id]++
				}
				if res.Cursor == "" {
					break
				}
				cursor = res.Cursor
			}
			if len(seen) != 1000 || pages != 28 {
				t.Errorf("%d distinct nodes in %d pages, want 1000 in 28", len(seen), pages)
			}
			for id, n := range seen {
				if n != 1 {
					t.Errorf("%s returned %d times", id, n)
				}
			}
		})
	}
	// A cursor belongs to its query.
	res := run(t, s, `{"from":{"type":"Topic"},"limit":10}`, graph.Limits{})
	q, _ := graph.ParseQuery(s.Model(), []byte(fmt.Sprintf(`{"from":{"type":"Topic","where":{"description":"1"}},"cursor":%q}`, res.Cursor)))
	if _, err := graph.Run(t.Context(), s, q, graph.Limits{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a cursor of another query: %v", err)
	}
}

func TestQueryErrors(t *testing.T) {
	m := schema.Default()
	for _, tt := range []struct {
		name, query, ptr, want string
	}{
		{"not json", `{`, "", "not JSON"},
		{"missing from", `{}`, "/from", "required"},
		{"unknown key", `{"from":{"type":"Service"},"select":1}`, "/select", "not an allowed property"},
		{"from two ways", `{"from":{"ids":["a/b"],"type":"Service"}}`, "/from", "give exactly one of"},
		{"unknown type", `{"from":{"type":"Servise"}}`, "/from/type", `unknown node type "Servise"; the model has Decision, Document, Entity, Person, Service, Team or Topic`},
		{"unknown label", `{"from":{"ids":["a/b"]},"traverse":[{"edge":"dependson"}]}`, "/traverse/0/edge", `unknown edge label "dependson"; the model has about, authored, decides, dependsOn`},
		{"unknown field", `{"from":{"type":"Service","where":{"colour":"red"}}}`, "/from/where/colour", `unknown field "colour" for Service`},
		{"bad operator", `{"from":{"type":"Service","where":{"tier":{"above":1}}}}`, "/from/where/tier/above", "is not an operator; operators are eq, ne"},
		{"bad direction", `{"from":{"ids":["a/b"]},"traverse":[{"direction":"up"}]}`, "/traverse/0/direction", "enum"},
		{"hops reversed", `{"from":{"ids":["a/b"]},"traverse":[{"hops":[3,1]}]}`, "/traverse/0/hops", "min 3 is above max 1"},
		{"bad id", `{"from":{"ids":["a b"]}}`, "/from/ids/0", "not allowed"},
		{"count with fields", `{"from":{"type":"Team"},"return":{"count":true,"fields":["id"]}}`, "/return", "count returns only the number"},
		{"bad time", `{"from":{"type":"Team","where":{"createdAt":{"gt":"yesterday"}}}}`, "/from/where/createdAt/gt", "RFC 3339"},
		{"order field", `{"from":{"type":"Team"},"orderBy":[{"field":"tier"}]}`, "/orderBy/0/field", `unknown field "tier" for Team`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := graph.ParseQuery(m, []byte(tt.query))
			var qe *graph.QueryError
			if !errors.As(err, &qe) || !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("ParseQuery = %v, want a *QueryError", err)
			}
			found := false
			for _, v := range qe.Violations {
				if v.Pointer == tt.ptr && strings.Contains(v.Message+" "+v.Rule, tt.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no violation at %q containing %q:\n%v", tt.ptr, tt.want, err)
			}
		})
	}
}

// chain builds a graph where every node depends on the next three, so a
// deep traversal reaches far more than any small budget allows.
func chain(t testing.TB, n int) graph.Store {
	t.Helper()
	s := graphtest.New(t)
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"s%d"}}`+"\n", i, i)
	}
	for i := range n {
		for _, j := range []int{(i + 1) % n, (i*7 + 3) % n, (i*13 + 5) % n} {
			if j != i {
				fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, j)
			}
		}
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestQueryBounds(t *testing.T) {
	s := chain(t, 5000)
	deep := `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","direction":"both","hops":[1,6]}],"limits":%s}`

	res := run(t, s, fmt.Sprintf(deep, `{"maxVisited":1000}`), graph.Limits{})
	if !res.Truncated || res.Reason != graph.ReasonWork || res.Stats.Visited > 1000 || res.Stats.Visited < 900 || len(res.Nodes) == 0 {
		t.Errorf("maxVisited 1000: truncated %v, reason %q, visited %d, %d nodes", res.Truncated, res.Reason, res.Stats.Visited, len(res.Nodes))
	}
	res = run(t, s, fmt.Sprintf(deep, `{"timeoutMs":1}`), graph.Limits{})
	if !res.Truncated || res.Reason != graph.ReasonDeadline {
		t.Errorf("timeout 1ms: truncated %v, reason %q (visited %d in %.1f ms)", res.Truncated, res.Reason, res.Stats.Visited, res.Stats.ElapsedMs)
	}
	// Asking for more than a ceiling gets the ceiling, and the response says so.
	res = run(t, s, fmt.Sprintf(deep, `{"maxVisited":1000000000,"timeoutMs":600000}`), graph.Limits{MaxVisited: 2000, TimeoutMs: 60000})
	if res.Limits.MaxVisited != 2000 || res.Limits.TimeoutMs != 60000 || !slices.Contains(res.Capped, "maxVisited") || !slices.Contains(res.Capped, "timeoutMs") || res.Reason != graph.ReasonWork {
		t.Errorf("over the ceiling: limits %+v, capped %v, reason %q", res.Limits, res.Capped, res.Reason)
	}
	res = run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","hops":[1,5]},{"edge":"dependsOn","hops":[1,5]}]}`, graph.Limits{MaxHops: 4})
	if !slices.Contains(res.Capped, "maxHops") || res.Reason != graph.ReasonHops {
		t.Errorf("10 hops under a ceiling of 4: capped %v, reason %q", res.Capped, res.Reason)
	}
	// Results and bytes.
	res = run(t, s, `{"from":{"type":"Service"},"limit":10000}`, graph.Limits{MaxResults: 100})
	if len(res.Nodes) != 100 || res.Cursor == "" || !slices.Contains(res.Capped, "maxResults") {
		t.Errorf("maxResults 100: %d nodes, cursor %q, capped %v", len(res.Nodes), res.Cursor, res.Capped)
	}
	res = run(t, s, `{"from":{"type":"Service"},"limit":5000,"limits":{"maxBytes":10000}}`, graph.Limits{})
	if !res.Truncated || res.Reason != graph.ReasonBytes || len(res.Nodes) == 0 || len(res.Nodes) > 200 || res.Cursor == "" {
		t.Errorf("maxBytes 10000: truncated %v, reason %q, %d nodes", res.Truncated, res.Reason, len(res.Nodes))
	}
	// A type scan cut by work continues where it stopped, without repeats.
	seen := map[string]bool{}
	cursor := ""
	for i := 0; ; i++ {
		q := `{"from":{"type":"Service","where":{"name":{"prefix":"s1"}}},"limit":10000,"limits":{"maxVisited":700}}`
		if cursor != "" {
			q = q[:len(q)-1] + fmt.Sprintf(`,"cursor":%q}`, cursor)
		}
		res := run(t, s, q, graph.Limits{})
		for _, id := range ids(res) {
			if seen[id] {
				t.Fatalf("%s returned twice", id)
			}
			seen[id] = true
		}
		if res.Cursor == "" {
			break
		}
		if i > 50 {
			t.Fatal("no end")
		}
		cursor = res.Cursor
	}
	if len(seen) != 1111 { // s1, s10–s19, s100–s199, s1000–s1999
		t.Errorf("continued scan found %d nodes, want 1111", len(seen))
	}
}

// A traversal stopped by a bound continues, through its cursor, with the
// start nodes it had not expanded: together the pages hold every result.
func TestTruncatedTraversalContinues(t *testing.T) {
	s := chain(t, 3000)
	q := `{"from":{"type":"Service","where":{"name":{"prefix":"s1"}}},"traverse":[{"edge":"dependsOn","hops":[1,2]}],"return":{"fields":["id"]},"limit":10000%s}`
	all := map[string]bool{}
	ceil := graph.Limits{MaxResults: 10000}
	for _, id := range ids(run(t, s, fmt.Sprintf(q, ""), ceil)) {
		all[id] = true
	}
	got := map[string]bool{}
	cursor, calls := "", 0
	for {
		extra := `,"limits":{"maxVisited":2500}`
		if cursor != "" {
			extra += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		res := run(t, s, fmt.Sprintf(q, extra), ceil)
		calls++
		for _, id := range ids(res) {
			got[id] = true
		}
		if res.Cursor == "" {
			break
		}
		if !res.Truncated || res.Reason != graph.ReasonWork {
			t.Fatalf("a cursor without a bound: %+v", res)
		}
		if calls > 100 {
			t.Fatal("no end")
		}
		cursor = res.Cursor
	}
	if calls < 3 || len(got) != len(all) {
		t.Errorf("%d calls found %d results; the unbounded query finds %d", calls, len(got), len(all))
	}
}

func TestSearch(t *testing.T) {
	s := example(t)
	for _, tt := range []struct {
		text, typ string
		top       []string
	}{
		{"billing", "", []string{"service/billing", "doc/billing-design"}},
		{"ledger runbook", "", []string{"doc/ledger-runbook"}},
		// 0016 holds the word postgres (postgres-cluster); 0007 only
		// postgresql, a prefix match.
		{"postgres", "Decision", []string{"adr/0016-run-postgresql-on-a-managed-ha-cluster", "adr/0007-adopt-postgresql-for-transactional-services"}},
		{"Ada", "Person", []string{"person/ada-okafor"}},
		{"incident", "Document", []string{"doc/incident-response-guide"}},
		// Both name Kotlin once; BM25 ranks the shorter text first.
		{"kotlin", "Service", []string{"service/shipments", "service/billing"}},
		{"parsers kötlin", "Service", nil},                                              // stems and folds, but no service holds both
		{"Invoices", "Service", []string{"service/legacy-invoicer", "service/billing"}}, // invoices, invoicer and invoice: stem invoic
		{`"usage fees"`, "", []string{"service/billing"}},                               // a phrase
		{"description:ledger", "Service", []string{"service/ledger"}},                   // a field
	} {
		t.Run(tt.text, func(t *testing.T) {
			res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: tt.text, Type: tt.typ, Limit: 5}, graph.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range res.Hits {
				got = append(got, string(h.Node.ID))
			}
			if len(got) < len(tt.top) || !slices.Equal(got[:len(tt.top)], tt.top) {
				t.Errorf("top hits = %v, want %v first", got, tt.top)
			}
		})
	}
	// Paging through hits returns each once.
	var all []string
	cursor := ""
	for {
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "service", Limit: 3, Cursor: cursor}, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			all = append(all, string(h.Node.ID))
		}
		if res.Cursor == "" {
			break
		}
		cursor = res.Cursor
	}
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	if len(all) < 5 || len(slices.Compact(sorted)) != len(all) {
		t.Errorf("paged hits: %v", all)
	}
	if _, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "!!!"}, graph.Limits{}); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("a query without words: %v", err)
	}
	// The index follows updates and deletes.
	mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/zebra", Type: "Topic", Properties: graph.Props{"name": "Zebra crossings"}}}})
	hits := func(text string) int {
		res, _ := graph.Search(t.Context(), s, graph.SearchQuery{Text: text}, graph.Limits{})
		return len(res.Hits)
	}
	if hits("zebra") != 1 {
		t.Error("new node not found")
	}
	mustApply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/zebra", Type: "Topic", Properties: graph.Props{"name": "Pedestrian paths"}}}})
	if hits("zebra") != 0 || hits("pedestrian") != 1 {
		t.Error("update not reflected in the index")
	}
	mustApply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "topic/zebra"}}})
	if hits("pedestrian") != 0 {
		t.Error("deleted node still found")
	}
	graphtest.CheckOK(t, s)
}

func TestNeighborsAndPaths(t *testing.T) {
	s := example(t)
	ctx := t.Context()
	nb, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: "service/billing", Labels: []string{"dependsOn"}, Direction: graph.In, Depth: 2}, graph.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, n := range nb.Nodes {
		got[string(n.Node.ID)] = n.Depth
	}
	if diff := cmp.Diff(map[string]int{"service/payments": 1, "service/legacy-invoicer": 1, "service/checkout": 2}, got); diff != "" {
		t.Errorf("neighbours (-want +got):\n%s", diff)
	}
	if len(nb.Edges) != 3 {
		t.Errorf("edges that reached them: %v", nb.Edges)
	}
	if _, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: "service/nope"}, graph.Limits{}); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("neighbours of a missing node: %v", err)
	}
	nb, _ = graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: "team/payments", Direction: graph.Both, Depth: 9}, graph.Limits{MaxHops: 3})
	if !nb.Truncated || nb.Reason != graph.ReasonHops || !slices.Contains(nb.Capped, "maxHops") {
		t.Errorf("depth over the ceiling: %+v", nb)
	}

	p, err := graph.Paths(ctx, s, graph.PathsQuery{From: "service/checkout", To: "service/postgres-cluster", Labels: []string{"dependsOn"}, Direction: graph.Out, K: 10}, graph.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Length != 2 || len(p.Paths) == 0 {
		t.Fatalf("paths = %+v", p)
	}
	for i, path := range p.Paths {
		n := len(path.Nodes)
		if path.Nodes[0] != "service/checkout" || path.Nodes[n-1] != "service/postgres-cluster" || len(path.Edges) != n-1 || i > 0 && n < len(p.Paths[i-1].Nodes) {
			t.Errorf("path %d: %+v", i, path)
		}
	}
	// Against the edges' direction there is no path; either way there is.
	if p, _ := graph.Paths(ctx, s, graph.PathsQuery{From: "service/postgres-cluster", To: "service/checkout", Labels: []string{"dependsOn"}, Direction: graph.Out}, graph.Limits{}); p.Length != -1 {
		t.Errorf("reverse path found: %+v", p)
	}
	p, _ = graph.Paths(ctx, s, graph.PathsQuery{From: "person/ada-okafor", To: "adr/0016-run-postgresql-on-a-managed-ha-cluster"}, graph.Limits{})
	if p.Length < 2 || len(p.Paths) != 1 {
		t.Errorf("person to decision: %+v", p)
	}
	p, _ = graph.Paths(ctx, s, graph.PathsQuery{From: "team/payments", To: "team/payments"}, graph.Limits{})
	if p.Length != 0 {
		t.Errorf("path to itself: %+v", p)
	}
}

// checkWalk reports why p is not a walk that q's steps could take from a
// start node to id, or "": each edge exists and joins its nodes, and the
// edges split into one segment per step, each along the step's labels and
// direction, with a length in its hop range.
func checkWalk(t *testing.T, s graph.Store, q *graph.Query, start []graph.ID, p graph.Path, id string) string {
	t.Helper()
	if len(p.Nodes) != len(p.Edges)+1 || string(p.Nodes[len(p.Nodes)-1]) != id || !slices.Contains(start, p.Nodes[0]) {
		return "does not lead from a start node to the result"
	}
	keys := make([]graph.EdgeKey, len(p.Edges))
	for i, e := range p.Edges {
		k, err := graph.ParseEdgeKey(e)
		if err != nil {
			return err.Error()
		}
		if _, err := s.Edge(t.Context(), k); err != nil {
			return fmt.Sprintf("edge %s: %v", e, err)
		}
		keys[i] = k
	}
	follows := func(st graph.Step, i int) bool {
		k := keys[i]
		if len(st.Edge) > 0 && !slices.Contains(st.Edge, k.Label) {
			return false
		}
		fwd := k.From == p.Nodes[i] && k.To == p.Nodes[i+1]
		bwd := k.To == p.Nodes[i] && k.From == p.Nodes[i+1]
		return st.Direction == graph.Out && fwd || st.Direction == graph.In && bwd || st.Direction == graph.Both && (fwd || bwd)
	}
	ends := map[int]bool{0: true} // edges used by the steps so far
	for _, st := range q.Traverse {
		next := map[int]bool{}
		for i := range ends {
			for j := i; j <= len(keys) && j-i <= st.Hops.Max; j++ {
				if j-i >= st.Hops.Min {
					next[j] = true
				}
				if j < len(keys) && !follows(st, j) {
					break
				}
			}
		}
		ends = next
	}
	if !ends[len(keys)] {
		return "does not split into the query's steps"
	}
	return ""
}

// Issue 15 item 5: every path is a real walk that honours each step's
// labels, direction and hops. Start nodes that reach each other got a
// zero-hop path, and the README's query a path that skipped its dependsOn
// step.
func TestQueryPathsAreWalks(t *testing.T) {
	s := example(t)
	for _, tt := range []struct {
		query string
		start []graph.ID
	}{
		{`{"from":{"ids":["service/payments","service/checkout"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":1}],"return":{"paths":true}}`,
			[]graph.ID{"service/payments", "service/checkout"}},
		{`{"from":{"type":"Service","where":{"lifecycle":"production","tier":{"lte":1}}},
		  "traverse":[{"edge":"dependsOn","direction":"in","hops":[1,3],"type":"Service"},{"edge":"owns","direction":"in","type":"Team"}],
		  "where":{"name":{"prefix":"Pay"}},"return":{"fields":["id","name"],"paths":true},"orderBy":[{"field":"name"}],"limit":20}`, nil},
		{`{"from":{"ids":["service/billing","service/ledger","service/checkout"]},"traverse":[{"edge":"dependsOn","direction":"both","hops":[2,3]},{"direction":"in","hops":[0,1]}],"return":{"fields":["id"],"paths":true},"limit":500}`,
			[]graph.ID{"service/billing", "service/ledger", "service/checkout"}},
	} {
		q, err := graph.ParseQuery(s.Model(), []byte(tt.query))
		if err != nil {
			t.Fatal(err)
		}
		start := tt.start
		if start == nil {
			from := run(t, s, `{"from":{"type":"Service","where":{"lifecycle":"production","tier":{"lte":1}}},"return":{"fields":["id"]},"limit":1000}`, graph.Limits{})
			for _, id := range ids(from) {
				start = append(start, graph.ID(id))
			}
		}
		res := run(t, s, tt.query, graph.Limits{})
		if len(res.Nodes) == 0 || len(res.Paths) != len(res.Nodes) {
			t.Fatalf("%s: %d nodes, %d paths", tt.query, len(res.Nodes), len(res.Paths))
		}
		for i, p := range res.Paths {
			if why := checkWalk(t, s, q, start, p, ids(res)[i]); why != "" {
				t.Errorf("%s: path %v %s", tt.query, p, why)
			}
		}
	}
}

// Issue 15 item 6: a sorted read that a bound cuts returns no page rather
// than a wrong top, and a cursor never skips the true top.
func TestQueryOrderedReadCutShort(t *testing.T) {
	s := chain(t, 1000)
	q := `{"from":{"type":"Service"},"traverse":[{"edge":"dependsOn","hops":[1,2]}],"orderBy":[{"field":"name","desc":true}],"return":{"fields":["id"]},"limit":5%s}`
	want := ids(run(t, s, fmt.Sprintf(q, ""), graph.Limits{}))
	res := run(t, s, fmt.Sprintf(q, `,"limits":{"maxVisited":1000}`), graph.Limits{})
	if !res.Truncated || res.Reason != graph.ReasonWork {
		t.Fatalf("maxVisited 1000: truncated %v, reason %q", res.Truncated, res.Reason)
	}
	if got := ids(res); len(got) > 0 && !slices.Equal(got, want) || res.Cursor != "" {
		t.Errorf("a cut ordered read returned %v and cursor %q; the top is %v", got, res.Cursor, want)
	}
	// A continuation cut by a bound does not skip ahead either.
	first := run(t, s, fmt.Sprintf(q, ""), graph.Limits{})
	next := run(t, s, fmt.Sprintf(q, fmt.Sprintf(`,"cursor":%q,"limits":{"maxVisited":1000}`, first.Cursor)), graph.Limits{})
	if len(next.Nodes) > 0 || next.Cursor != first.Cursor || !next.Truncated {
		t.Errorf("a cut continuation returned %v and cursor %q", ids(next), next.Cursor)
	}
}

// Issue 15 item 7: a read a bound cuts returns what it found so far, and a
// paged result says plainly whether more exists.
func TestQueryTruncatedReturnsFound(t *testing.T) {
	s := chain(t, 1000)
	res := run(t, s, `{"from":{"type":"Service"},"traverse":[{"edge":"dependsOn","direction":"both","hops":[2,6]}],"return":{"fields":["id"]},"limits":{"maxVisited":300}}`, graph.Limits{})
	if !res.Truncated || res.Reason != graph.ReasonWork || len(res.Nodes) == 0 || res.Cursor == "" || !res.More {
		t.Errorf("6 hops under maxVisited 300: truncated %v, reason %q, %d nodes, cursor %q, more %v", res.Truncated, res.Reason, len(res.Nodes), res.Cursor, res.More)
	}
	// A page capped by maxResults says that more exists; no bound cut it.
	res = run(t, s, `{"from":{"type":"Service"},"limit":10000}`, graph.Limits{MaxResults: 100})
	if !res.More || res.Cursor == "" || res.Truncated || !slices.Contains(res.Capped, "maxResults") {
		t.Errorf("capped page: more %v, cursor %q, truncated %v, capped %v", res.More, res.Cursor, res.Truncated, res.Capped)
	}
	res = run(t, s, `{"from":{"type":"Service"},"limit":100,"cursor":`+strconv.Quote(res.Cursor)+`}`, graph.Limits{})
	if len(res.Nodes) != 100 || !res.More {
		t.Errorf("next page: %d nodes, more %v", len(res.Nodes), res.More)
	}
	// The last page says no more.
	res = run(t, s, `{"from":{"ids":["service/s1","service/s2"]}}`, graph.Limits{})
	if len(res.Nodes) != 2 || res.More || res.Cursor != "" || res.Truncated {
		t.Errorf("last page: %d nodes, more %v, cursor %q, truncated %v", len(res.Nodes), res.More, res.Cursor, res.Truncated)
	}
	// A count that a bound cut is a lower bound, and says so.
	all := run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","direction":"both","hops":[1,4]}],"return":{"count":true}}`, graph.Limits{})
	cut := run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","direction":"both","hops":[1,4]}],"return":{"count":true},"limits":{"maxVisited":200}}`, graph.Limits{})
	if all.Truncated || cut.Count == nil || !cut.Truncated || *cut.Count >= *all.Count || cut.More || !strings.Contains(cut.Note, "lower bound") {
		t.Errorf("count %d of %d: truncated %v, more %v, note %q", *cut.Count, *all.Count, cut.Truncated, cut.More, cut.Note)
	}
}

// An index plan may yield a start node twice ("in" with a repeated value,
// an array holding both values): each result still comes once.
func TestQueryRepeatedStarts(t *testing.T) {
	s := example(t)
	want := ids(run(t, s, `{"from":{"type":"Service","where":{"tier":0}},"orderBy":[{"field":"name"}],"limit":100}`, graph.Limits{}))
	for _, q := range []string{
		`{"from":{"type":"Service","where":{"tier":{"in":[0,0]}}},"orderBy":[{"field":"name"}],"limit":100}`,
		`{"from":{"type":"Service","where":{"tier":{"in":[0,0]}}},"where":{"name":{"exists":true}},"limit":100}`,
	} {
		got := ids(run(t, s, q, graph.Limits{}))
		if !strings.Contains(q, "orderBy") {
			slices.Sort(want)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", q, diff)
		}
	}
}

// A step whose minimum lies beyond the hops ceiling reaches nothing: the
// ceiling is never exceeded, and the response says it cut the query.
func TestQueryHopsCeiling(t *testing.T) {
	s := chain(t, 200)
	res := run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","hops":[5,5]}],"return":{"fields":["id"]}}`, graph.Limits{MaxHops: 4})
	if len(res.Nodes) != 0 || !res.Truncated || res.Reason != graph.ReasonHops || !slices.Contains(res.Capped, "maxHops") {
		t.Errorf("5 hops under a ceiling of 4: %d nodes, truncated %v, reason %q, capped %v", len(res.Nodes), res.Truncated, res.Reason, res.Capped)
	}
	res = run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","hops":[1,3]},{"edge":"dependsOn","direction":"in","hops":[2,3]}],"return":{"fields":["id"]}}`, graph.Limits{MaxHops: 4})
	want := ids(run(t, s, `{"from":{"ids":["service/s0"]},"traverse":[{"edge":"dependsOn","hops":[1,2]},{"edge":"dependsOn","direction":"in","hops":[2,2]}],"return":{"fields":["id"]}}`, graph.Limits{}))
	if diff := cmp.Diff(want, ids(res)); diff != "" || res.Reason != graph.ReasonHops {
		t.Errorf("6 hops under a ceiling of 4 (reason %q), want the answer for 2+2 (-want +got):\n%s", res.Reason, diff)
	}
}

// TestSearchPagesWithinTheByteCap: a search whose page would pass the byte
// cap stops at the cap with a cursor (more), and paging yields every hit
// exactly once; before, the page was cut by the surface with no cursor, so
// the rest was unreachable.
func TestSearchPagesWithinTheByteCap(t *testing.T) {
	s := graphtest.New(t)
	var b graph.Batch
	for i := range 120 {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("topic/t%03d", i)), Type: "Topic",
			Properties: graph.Props{"name": fmt.Sprintf("gamma %03d", i), "description": strings.Repeat("filler ", 60)}})
	}
	mustApply(t, s, &b)
	lim := graph.Limits{MaxBytes: 16 << 10}
	seen := map[graph.ID]int{}
	cursor, pages := "", 0
	for {
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "gamma", Limit: 100, Cursor: cursor}, lim)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		data, _ := json.Marshal(res)
		if len(data) > lim.MaxBytes {
			t.Fatalf("page %d is %d bytes, over the cap of %d", pages, len(data), lim.MaxBytes)
		}
		for _, h := range res.Hits {
			seen[h.Node.ID]++
		}
		if res.More != (res.Cursor != "") {
			t.Fatalf("more = %v with cursor %q", res.More, res.Cursor)
		}
		if !res.More {
			break
		}
		if res.Reason != graph.ReasonBytes || !res.Truncated {
			t.Errorf("page %d: truncated %v, reason %q; want bytes", pages, res.Truncated, res.Reason)
		}
		cursor = res.Cursor
	}
	if len(seen) != 120 || pages < 3 {
		t.Errorf("%d distinct hits in %d pages, want 120 in several", len(seen), pages)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", id, n)
		}
	}
}
