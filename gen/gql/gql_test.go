package gql_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/gen/gql"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// fixture is the GraphQL handler over a store holding the example dataset,
// served by an httptest server.
type fixture struct {
	store graph.Store
	cat   *mcp.Catalog
	url   string
}

func newFixture(t testing.TB, opts *gql.Options) *fixture {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, nil)
	hs := httptest.NewServer(gql.NewHandler(cat, opts))
	t.Cleanup(hs.Close)
	return &fixture{store: s, cat: cat, url: hs.URL}
}

// A response is a GraphQL response body.
type response struct {
	Data   map[string]json.RawMessage `json:"data"`
	Errors []gqlError                 `json:"errors"`
}

type gqlError struct {
	Message    string         `json:"message"`
	Path       []any          `json:"path"`
	Extensions map[string]any `json:"extensions"`
}

func (e gqlError) code() string { c, _ := e.Extensions["code"].(string); return c }

// do posts a query with variables and decodes the response; any HTTP status
// is accepted, since gqlgen answers some errors with 422.
func do(t testing.TB, url, query string, vars map[string]any, header http.Header) response {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out response
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("status %d: %v", res.StatusCode, err)
	}
	return out
}

func (f *fixture) query(t testing.TB, query string, vars map[string]any) response {
	t.Helper()
	return do(t, f.url, query, vars, nil)
}

// toolCases call every tool through its GraphQL field: a happy path, whose
// data must contain want, and an error path, whose first error must have
// the code wantCode.
var toolCases = []struct {
	name, tool, query string
	vars              map[string]any
	want              string
	wantCode          string
}{
	{name: "describe", tool: "describe_model", query: `{ describeModel { nodes edges nodeTypes { name count } edgeLabels { name from to } } }`, want: `"nodes":`},
	{name: "describe a type", tool: "describe_model", query: `{ describeModel(type: "Service") { schema } }`, want: `"properties"`},
	{name: "describe unknown", tool: "describe_model", query: `{ describeModel(type: "Nope") { nodes } }`, wantCode: "NOT_FOUND"},
	{name: "get", tool: "get_node", query: `{ getNode(id: "service/billing") { node { id type properties revision createdAt edgeCounts { label direction count } } } }`,
		want: `"id":"service/billing","type":"Service","properties":{`},
	{name: "get edge", tool: "get_edge", query: `{ getEdge(id: "memberOf(person/ada-okafor,team/payments)") { edge { id properties revision } } }`,
		want: `"properties":{"role":"lead"`},
	{name: "get edge missing", tool: "get_edge", query: `{ getEdge(id: "memberOf(person/ada-okafor,team/nope)") { edge { id } } }`, wantCode: "NOT_FOUND"},
	{name: "get missing", tool: "get_node", query: `{ getNode(id: "service/nope") { node { id } } }`, wantCode: "NOT_FOUND"},
	{name: "search", tool: "search_nodes", query: `{ searchNodes(query: "billing", limit: 3) { hits { score node { id type } } truncated } }`,
		want: `"id":"service/billing"`},
	{name: "search empty", tool: "search_nodes", query: `{ searchNodes(query: "") { truncated } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "neighbors", tool: "neighbors", query: `{ neighbors(id: "service/billing", edge: "dependsOn", direction: out) { nodes { depth node { id } } edges { from label to } truncated } }`,
		want: `"id":"service/ledger"`},
	{name: "neighbors missing", tool: "neighbors", query: `{ neighbors(id: "service/nope") { truncated } }`, wantCode: "NOT_FOUND"},
	{name: "paths", tool: "find_paths", query: `{ findPaths(from: "service/payments", to: "service/ledger") { paths { nodes edges } length } }`,
		want: `"edges":["dependsOn(service/payments,service/ledger)"]`},
	{name: "paths no hops", tool: "find_paths", query: `{ findPaths(from: "service/payments", to: "service/ledger", maxHops: 0) { length } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "paths capped", tool: "find_paths", query: `{ findPaths(from: "service/payments", to: "service/ledger", maxHops: 99, k: 500) { length capped } }`, want: `"capped":["maxHops","k"`},
	{name: "query", tool: "query_graph", query: `{ queryGraph(from: {ids: ["service/billing"]}, traverse: [{edge: "dependsOn", direction: out}], return: {fields: ["id"]}) { nodes truncated } }`,
		want: `"id":"service/ledger"`},
	{name: "query unknown type", tool: "query_graph", query: `{ queryGraph(from: {type: "Nope"}) { nodes } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "query edgeWhere", tool: "query_graph", query: `{ queryGraph(from: {type: "Team"}, traverse: [{edge: "memberOf", direction: in, edgeWhere: {role: "lead"}}], return: {count: true}) { count } }`,
		want: `"count":6`},
	{name: "query edgeWhere unknown", tool: "query_graph", query: `{ queryGraph(from: {type: "Team"}, traverse: [{edge: "memberOf", edgeWhere: {rank: 1}}]) { nodes } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "changes", tool: "changes_since", query: `{ changesSince(cursor: 0, limit: 2) { changes { seq op time nodes { id action } } cursor more } }`,
		want: `"seq":1`},
	{name: "changes negative", tool: "changes_since", query: `{ changesSince(cursor: -1) { cursor } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "upsert nodes", tool: "upsert_nodes",
		query: `mutation { upsertNodes(nodes: [{id: "topic/graphql", type: "Topic", properties: {name: "GraphQL"}}]) { seq } }`, want: `"seq":`},
	{name: "upsert nodes stale", tool: "upsert_nodes",
		query:    `mutation { upsertNodes(nodes: [{id: "service/billing", type: "Service", properties: {name: "billing"}, merge: true, expectedRevision: 0}]) { seq } }`,
		wantCode: "CONFLICT"},
	{name: "upsert edges", tool: "upsert_edges",
		query: `mutation { upsertEdges(edges: [{from: "service/billing", label: "dependsOn", to: "service/payments"}]) { seq } }`, want: `"seq":`},
	{name: "upsert edges bad label", tool: "upsert_edges",
		query: `mutation { upsertEdges(edges: [{from: "service/billing", label: "likes", to: "service/payments"}]) { seq } }`, wantCode: "INVALID_ARGUMENT"},
	{name: "delete nodes", tool: "delete_nodes", query: `mutation { deleteNodes(nodes: [{id: "service/notifications"}], confirm: true) { seq } }`, want: `"seq":`},
	{name: "delete nodes unconfirmed", tool: "delete_nodes", query: `mutation { deleteNodes(nodes: [{id: "service/ledger"}]) { seq } }`,
		wantCode: "CONFIRMATION_REQUIRED"},
	{name: "delete edges", tool: "delete_edges",
		query: `mutation { deleteEdges(edges: [{from: "service/billing", label: "dependsOn", to: "service/ledger"}], confirm: true) { seq } }`, want: `"seq":`},
	{name: "delete edges missing", tool: "delete_edges",
		query:    `mutation { deleteEdges(edges: [{from: "service/billing", label: "dependsOn", to: "team/payments"}], confirm: true) { seq } }`,
		wantCode: "NOT_FOUND"},
}

// TestTools calls every tool as a query or mutation, once as it should be
// called and once so that the tool refuses, and checks that the refusal
// is a GraphQL error with the tool error's code on a null field.
func TestTools(t *testing.T) {
	f := newFixture(t, nil)
	seen := map[string]bool{}
	for _, tc := range toolCases {
		t.Run(tc.name, func(t *testing.T) {
			seen[tc.tool] = true
			res := f.query(t, tc.query, tc.vars)
			field := gen.GraphQLName(tc.tool)
			if tc.wantCode != "" {
				if len(res.Errors) == 0 {
					t.Fatalf("want a %s error, got data %s", tc.wantCode, res.Data[field])
				}
				e := res.Errors[0]
				if e.code() != tc.wantCode || e.Message == "" {
					t.Fatalf("want code %s, got %+v", tc.wantCode, e)
				}
				if len(e.Path) != 1 || e.Path[0] != field {
					t.Errorf("error path %v, want [%s]", e.Path, field)
				}
				if string(res.Data[field]) != "null" {
					t.Errorf("a failed tool's field is %s, want null", res.Data[field])
				}
				return
			}
			if len(res.Errors) > 0 {
				t.Fatalf("unexpected errors: %+v", res.Errors)
			}
			if !strings.Contains(string(res.Data[field]), tc.want) {
				t.Fatalf("want %s in\n%.2000s", tc.want, res.Data[field])
			}
		})
	}
	for _, tool := range f.cat.Tools() {
		if !seen[tool.Name] {
			t.Errorf("tool %s has no test case", tool.Name)
		}
	}
}

// TestViolationsAsInvoke: arguments that GraphQL's types accept but the
// tool's schema refuses get the violations Invoke reports, by pointer.
func TestViolationsAsInvoke(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.cat.Invoke(t.Context(), "neighbors", json.RawMessage(`{"id":"","depth":0,"limit":0}`))
	te, ok := err.(*mcp.Error)
	if !ok || len(te.Violations) != 3 {
		t.Fatalf("Invoke: want three violations, got %v", err)
	}

	res := f.query(t, `query($depth: Int) { neighbors(id: "", depth: $depth, limit: 0) { truncated } }`, map[string]any{"depth": 0})
	if len(res.Errors) != 1 {
		t.Fatalf("want one error, got %+v", res.Errors)
	}
	e := res.Errors[0]
	data, _ := json.Marshal(e.Extensions["violations"])
	var got []schema.Violation
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if e.code() != "INVALID_ARGUMENT" || e.Message != te.Message {
		t.Errorf("got code %q message %q, want INVALID_ARGUMENT %q", e.code(), e.Message, te.Message)
	}
	if diff := cmp.Diff(te.Violations, got); diff != "" {
		t.Errorf("violations differ from Invoke's (-want +got):\n%s", diff)
	}
}

// TestNavigation walks two hops from a node in one query: each neighbors
// field calls the neighbors tool from its node.
func TestNavigation(t *testing.T) {
	f := newFixture(t, nil)
	res := f.query(t, `{ getNode(id: "service/billing") { node { id
		neighbors(edge: "dependsOn", direction: out) { depth node { id neighbors(direction: in) { node { id } } } }
		edges(edge: "dependsOn", direction: out) { from label to } } } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	var got struct {
		Node struct {
			ID        string
			Neighbors []struct {
				Depth int
				Node  struct {
					ID        string
					Neighbors []struct{ Node struct{ ID string } }
				}
			}
			Edges []struct{ From, Label, To string }
		}
	}
	if err := json.Unmarshal(res.Data["getNode"], &got); err != nil {
		t.Fatal(err)
	}
	var ledger []string
	for _, n := range got.Node.Neighbors {
		if n.Depth != 1 {
			t.Errorf("%s at depth %d", n.Node.ID, n.Depth)
		}
		if n.Node.ID == "service/ledger" {
			for _, m := range n.Node.Neighbors {
				ledger = append(ledger, m.Node.ID)
			}
		}
	}
	if len(got.Node.Neighbors) != 4 || !strings.Contains(strings.Join(ledger, " "), "service/billing") {
		t.Errorf("billing's dependencies %+v; ledger's dependants %v", got.Node.Neighbors, ledger)
	}
	if len(got.Node.Edges) != 4 || got.Node.Edges[0].From != "service/billing" || got.Node.Edges[0].Label != "dependsOn" {
		t.Errorf("edges %+v", got.Node.Edges)
	}
}

// TestLimits: an operation nested too deep, or costing too much, is refused
// before any tool runs.
func TestLimits(t *testing.T) {
	f := newFixture(t, &gql.Options{MaxDepth: 6, MaxComplexity: 100})
	for _, tc := range []struct {
		name, query, code string
	}{
		{"depth", `{ getNode(id: "service/billing") { node { neighbors { node { neighbors { node { id } } } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"depth through fragments", `query { getNode(id: "service/billing") { ...a } } fragment a on GetNodeResult { node { ...b } }
			fragment b on Node { neighbors { node { neighbors { node { id } } } } }`, "DEPTH_LIMIT_EXCEEDED"},
		{"complexity", `{ a: getNode(id: "a") { node { id } } b: getNode(id: "b") { node { id } } c: getNode(id: "c") { node { id } }
			d: getNode(id: "d") { node { id } } e: getNode(id: "e") { node { id } } }`, "COMPLEXITY_LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := f.query(t, tc.query, nil)
			if len(res.Errors) != 1 || res.Errors[0].code() != tc.code || res.Data != nil {
				t.Fatalf("want only a %s error, got %+v, data %v", tc.code, res.Errors, res.Data)
			}
		})
	}
	// Just under both limits.
	res := f.query(t, `{ getNode(id: "service/billing") { node { neighbors { node { id } } } } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
}

// TestResource reads resources as MCP resources/read does.
func TestResource(t *testing.T) {
	f := newFixture(t, nil)
	res := f.query(t, `{ node: resource(uri: "lore://node/service/billing") { uri mimeType json }
		model: resource(uri: "lore://model") { mimeType text } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	if !strings.Contains(string(res.Data["node"]), `"id":"service/billing"`) || !strings.Contains(string(res.Data["model"]), `$defs`) {
		t.Errorf("got %s and %.200s", res.Data["node"], res.Data["model"])
	}
	res = f.query(t, `{ resource(uri: "lore://nothing") { text } }`, nil)
	if len(res.Errors) != 1 || res.Errors[0].code() != "NOT_FOUND" {
		t.Errorf("want NOT_FOUND, got %+v", res.Errors)
	}
}

// TestScopes: behind mcp.Guard, a read-only token may query but not mutate,
// and the refusal is FORBIDDEN.
func TestScopes(t *testing.T) {
	s := graphtest.New(t)
	cat := mcp.NewCatalog(s, nil)
	hs := httptest.NewServer(mcp.Guard(gql.NewHandler(cat, nil), &mcp.HTTPOptions{
		Tokens: []mcp.Token{{Name: "reader", Scope: mcp.ScopeRead, Secret: "r-secret"}}}))
	t.Cleanup(hs.Close)
	auth := http.Header{"Authorization": {"Bearer r-secret"}}
	res := do(t, hs.URL, `{ describeModel { nodes } }`, nil, auth)
	if len(res.Errors) > 0 {
		t.Fatalf("read: %+v", res.Errors)
	}
	res = do(t, hs.URL, `mutation { upsertNodes(nodes: [{id: "topic/x", type: "Topic", properties: {name: "x"}}]) { seq } }`, nil, auth)
	if len(res.Errors) != 1 || res.Errors[0].code() != "FORBIDDEN" {
		t.Fatalf("want FORBIDDEN, got %+v", res.Errors)
	}
}

// TestInternalErrors: a failure that is not a tool's refusal (here, the
// store is closed) reaches the client as an internal error and nothing more.
func TestInternalErrors(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	res := f.query(t, `{ getNode(id: "service/billing") { node { id } } resource(uri: "lore://node/service/billing") { text } }`, nil)
	if len(res.Errors) != 2 {
		t.Fatalf("want two errors, got %+v", res.Errors)
	}
	for _, e := range res.Errors {
		if e.code() != "INTERNAL" || !strings.HasPrefix(e.Message, "internal error") || strings.Contains(e.Message, "closed") {
			t.Errorf("error %+v", e)
		}
	}
}

// TestWalkInOneQuery runs the example: two hops from a node, in
// one query, through the neighbors tool at each level.
func TestWalkInOneQuery(t *testing.T) {
	f := newFixture(t, nil)
	res := f.query(t, `{ getNode(id:"service/billing") { node { id neighbors(edge:"dependsOn") { node { id neighbors { node { id } } } } } } }`, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	if got := string(res.Data["getNode"]); strings.Count(got, `"neighbors":[`) < 5 || !strings.Contains(got, `"id":"service/payments"`) {
		t.Errorf("got %.1000s", got)
	}
}

// TestTransports: a query over GET (with the header CSRF protection
// asks for); WebSocket upgrades from loopback and allowed origins only.
func TestTransports(t *testing.T) {
	f := newFixture(t, &gql.Options{AllowedOrigins: []string{"https://app.example.com"}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url+"?query="+url.QueryEscape(`{ getNode(id: "service/billing") { node { type } } }`), nil)
	req.Header.Set("GraphQL-Require-Preflight", "1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out response
	err = json.NewDecoder(res.Body).Decode(&out)
	res.Body.Close()
	if err != nil || string(out.Data["getNode"]) != `{"node":{"type":"Service"}}` {
		t.Errorf("GET: %v %+v", err, out)
	}

	for _, tc := range []struct {
		origin string
		ok     bool
	}{{"http://localhost:5173", true}, {"http://127.0.0.1:8080", true}, {"https://app.example.com", true}, {"https://evil.example", false}} {
		conn, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(f.url, "http"), &websocket.DialOptions{
			Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Origin": {tc.origin}}})
		if tc.ok != (err == nil) {
			t.Errorf("origin %s: err %v", tc.origin, err)
		}
		if err == nil {
			conn.CloseNow()
		} else if resp != nil && resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %s: status %d, want 403", tc.origin, resp.StatusCode)
		}
	}
}
