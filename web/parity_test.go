package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A scenario is one call, made through every surface.
type scenario struct {
	name, tool, args string
	// gql is the GraphQL operation; its data's one root field must equal
	// the MCP structured result on every field it selects.
	gql string
	// code, if set, is the error every surface must report, and
	// pointers the JSON pointers its violations must name.
	code     string
	pointers []string
	// replay marks a write REST and GraphQL replay after MCP made it.
	replay bool
}

// Selections of every field of the shared GraphQL types.
const (
	nodeFields   = `id type properties createdAt updatedAt revision edgeCounts { label direction count }`
	readFields   = `truncated reason limits { maxResults maxHops maxVisited timeoutMs maxBytes } capped stats { visited elapsedMs index }`
	changeFields = `seq time op truncated part { nodeCount edgeCount offset next } nodes { id type action revision } edges { from label to key action revision }`
	writeFields  = `seq nodes { id status revision } edges { id status revision } deletedNodes deletedEdges replayed truncated nodeCount edgeCount deletedNodeCount deletedEdgeCount`
)

// scenarios select every field of every result in GraphQL, and the
// results must be equal on every surface (TestParity).
var scenarios = []scenario{
	{name: "get", tool: "get_node", args: `{"id":"service/billing"}`,
		gql: `{ getNode(id: "service/billing") { node { ` + nodeFields + ` } } }`},
	{name: "get edge", tool: "get_edge", args: `{"id":"memberOf(person/ada-okafor,team/payments)"}`,
		gql: `{ getEdge(id: "memberOf(person/ada-okafor,team/payments)") { edge { id from label to key properties createdAt updatedAt revision } } }`},
	{name: "neighbors with edge properties", tool: "neighbors", args: `{"id":"person/ada-okafor","edgeProperties":true}`,
		gql: `{ neighbors(id: "person/ada-okafor", edgeProperties: true) { nodes { node { ` + nodeFields + ` } depth } edges { from label to key } more cursor edgeProperties ` + readFields + ` } }`},
	{name: "paths with edge properties", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"team/payments","edge":"memberOf","edgeProperties":true}`,
		gql: `{ findPaths(from: "person/ada-okafor", to: "team/payments", edge: "memberOf", edgeProperties: true) { paths { nodes edges } length more cursor edgeProperties ` + readFields + ` } }`},
	{name: "search", tool: "search_nodes", args: `{"query":"billing","type":"Service","limit":3}`,
		gql: `{ searchNodes(query: "billing", type: "Service", limit: 3) { hits { node { ` + nodeFields + ` } score } total totalEstimated more cursor ` + readFields + ` } }`},
	{name: "search paged", tool: "search_nodes", args: `{"query":"a","limit":1}`,
		gql: `{ searchNodes(query: "a", limit: 1) { hits { node { ` + nodeFields + ` } score } total totalEstimated more cursor ` + readFields + ` } }`},
	{name: "neighbors", tool: "neighbors", args: `{"id":"service/billing","edge":"dependsOn","direction":"out"}`,
		gql: `{ neighbors(id: "service/billing", edge: ["dependsOn"], direction: out) { nodes { node { ` + nodeFields + ` } depth } edges { from label to key } more cursor ` + readFields + ` } }`},
	{name: "neighbors cut", tool: "neighbors", args: `{"id":"service/billing","depth":2,"limit":1}`,
		gql: `{ neighbors(id: "service/billing", depth: 2, limit: 1) { nodes { node { ` + nodeFields + ` } depth } edges { from label to key } more cursor ` + readFields + ` } }`},
	{name: "paths", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"service/billing","k":3}`,
		gql: `{ findPaths(from: "person/ada-okafor", to: "service/billing", k: 3) { paths { nodes edges } length more cursor ` + readFields + ` } }`},
	{name: "query", tool: "query_graph", args: `{"from":{"type":"Service","where":{"tier":0}},"return":{"fields":["id","name"]},"orderBy":[{"field":"id"}]}`,
		gql: `{ queryGraph(from: {type: "Service", where: {tier: 0}}, return: {fields: ["id", "name"]}, orderBy: [{field: "id"}]) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "query count", tool: "query_graph", args: `{"from":{"type":"Service"},"return":{"count":true}}`,
		gql: `{ queryGraph(from: {type: "Service"}, return: {count: true}) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "query paths", tool: "query_graph", args: `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"out"}],"return":{"fields":["id"],"paths":true}}`,
		gql: `{ queryGraph(from: {ids: ["service/billing"]}, traverse: [{edge: "dependsOn", direction: out}], return: {fields: ["id"], paths: true}) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "query edgeWhere", tool: "query_graph", args: `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":{"in":["lead","tech lead"]}}}],"return":{"fields":["id"],"paths":true,"edgeProperties":true}}`,
		gql: `{ queryGraph(from: {ids: ["team/payments"]}, traverse: [{edge: "memberOf", direction: in, edgeWhere: {role: {in: ["lead", "tech lead"]}}}], return: {fields: ["id"], paths: true, edgeProperties: true}) { nodes paths { nodes edges } count more note partial cursor edgeProperties ` + readFields + ` } }`},
	{name: "query degree", tool: "query_graph", args: `{"from":{"type":"Service"},"where":{"degree":{"edge":"dependsOn","direction":"in","gte":1}},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":3,"return":{"fields":["id"],"degrees":[{"edge":"dependsOn","direction":"in"},{"direction":"both"}]}}`,
		gql: `{ queryGraph(from: {type: "Service"}, where: {degree: {edge: "dependsOn", direction: "in", gte: 1}}, orderBy: [{degree: {edge: "dependsOn", direction: "in"}, desc: true}], limit: 3, return: {fields: ["id"], degrees: [{edge: "dependsOn", direction: "in"}, {direction: "both"}]}) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "query groupBy", tool: "query_graph", args: `{"from":{"type":"Service"},"groupBy":{"field":"language","order":"count"},"limit":2}`,
		gql: `{ queryGraph(from: {type: "Service"}, groupBy: {field: "language", order: "count"}, limit: 2) { nodes groups { key count } count more note partial cursor ` + readFields + ` } }`},
	{name: "query groupBy degree", tool: "query_graph", args: `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOn","direction":"in"},"buckets":[1,3],"order":"key"}}`,
		gql: `{ queryGraph(from: {type: "Service"}, groupBy: {degree: {edge: "dependsOn", direction: "in"}, buckets: [1, 3], order: "key"}) { nodes groups { key count } count more note partial cursor ` + readFields + ` } }`},
	{name: "query groupBy invalid", tool: "query_graph", args: `{"from":{"type":"Service"},"groupBy":{"field":"licence"}}`,
		gql: `{ queryGraph(from: {type: "Service"}, groupBy: {field: "licence"}) { count } }`, code: "invalid_argument", pointers: []string{"/groupBy/field"}},
	// The work limit cuts a scan: a reason, and a cursor past what it read.
	{name: "query cut", tool: "query_graph", args: `{"from":{"type":"Service"},"return":{"fields":["id"]},"limit":5,"limits":{"maxVisited":3}}`,
		gql: `{ queryGraph(from: {type: "Service"}, return: {fields: ["id"]}, limit: 5, limits: {maxVisited: 3}) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "query capped", tool: "query_graph", args: `{"from":{"type":"Service"},"limit":2,"limits":{"maxResults":1000000}}`,
		gql: `{ queryGraph(from: {type: "Service"}, limit: 2, limits: {maxResults: 1000000}) { nodes paths { nodes edges } count more note partial cursor ` + readFields + ` } }`},
	{name: "changes", tool: "changes_since", args: `{"cursor":0,"limit":2}`,
		gql: `{ changesSince(cursor: 0, limit: 2) { changes { ` + changeFields + ` } cursor more } }`},
	{name: "describe", tool: "describe_model", args: `{}`,
		gql: `{ describeModel { title version nodeTypes { name description display properties required indexed count } edgeLabels { name description from to keyed count } schema nodes edges } }`},
	{name: "describe a type", tool: "describe_model", args: `{"type":"Team"}`,
		gql: `{ describeModel(type: "Team") { title version nodeTypes { name } edgeLabels { name } schema nodes edges } }`},
	{name: "not found", tool: "get_node", args: `{"id":"service/nope"}`,
		gql: `{ getNode(id: "service/nope") { node { id } } }`, code: "not_found"},
	{name: "invalid", tool: "neighbors", args: `{"id":"service/billing","depth":0}`,
		gql: `{ neighbors(id: "service/billing", depth: 0) { truncated } }`, code: "invalid_argument", pointers: []string{"/depth"}},
	// A size above the tool's maximum is lowered and reported alike everywhere.
	{name: "neighbors capped", tool: "neighbors", args: `{"id":"service/billing","depth":99,"limit":5000}`,
		gql: `{ neighbors(id: "service/billing", depth: 99, limit: 5000) { nodes { node { ` + nodeFields + ` } depth } edges { from label to key } more cursor ` + readFields + ` } }`},
	{name: "bad write", tool: "upsert_nodes", args: `{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":7}},{"id":"a b","type":"Topic","properties":{"name":"ok"}}]}`,
		gql:  `mutation { upsertNodes(nodes: [{id: "topic/x", type: "Topic", properties: {name: 7}}, {id: "a b", type: "Topic", properties: {name: "ok"}}]) { seq } }`,
		code: "invalid_argument", pointers: []string{"/nodes/0/properties/name", "/nodes/1/id"}},
	{name: "stale write", tool: "upsert_nodes", args: `{"nodes":[{"id":"service/billing","type":"Service","properties":{},"merge":true,"expectedRevision":0}]}`,
		gql:  `mutation { upsertNodes(nodes: [{id: "service/billing", type: "Service", properties: {}, merge: true, expectedRevision: 0}]) { seq } }`,
		code: "conflict"},
	// A write with an idempotency key: MCP commits it, REST and GraphQL
	// replay it; the three results differ only in "replayed".
	{name: "write", tool: "upsert_nodes", args: `{"nodes":[{"id":"topic/parity","type":"Topic","properties":{"name":"Parity"}}],"idempotencyKey":"parity-1"}`,
		gql:    `mutation { upsertNodes(nodes: [{id: "topic/parity", type: "Topic", properties: {name: "Parity"}}], idempotencyKey: "parity-1") { ` + writeFields + ` } }`,
		replay: true},
}

// TestParityPaging pages neighbors and find_paths through MCP, REST and
// GraphQL: the second page, asked with the first page's cursor (which
// MCP returned), is the same on every surface, as is its cursor.
func TestParityPaging(t *testing.T) {
	f := newFixture(t)
	cs := f.mcpClient(t)
	for _, p := range []struct {
		name, tool, args, gql string
	}{
		{"neighbors", "neighbors", `{"id":"service/billing","depth":2,"limit":2%s}`,
			`{ neighbors(id: "service/billing", depth: 2, limit: 2%s) { nodes { node { ` + nodeFields + ` } depth } edges { from label to key } more cursor ` + readFields + ` } }`},
		{"paths", "find_paths", `{"from":"person/ada-okafor","to":"service/billing","k":1%s}`,
			`{ findPaths(from: "person/ada-okafor", to: "service/billing", k: 1%s) { paths { nodes edges } length more cursor ` + readFields + ` } }`},
	} {
		t.Run(p.name, func(t *testing.T) {
			first := f.viaMCP(t, cs, scenario{tool: p.tool, args: fmt.Sprintf(p.args, "")})
			cursor, _ := first.result.(map[string]any)["cursor"].(string)
			if first.code != "" || cursor == "" {
				t.Fatalf("first page: %v %s", first.result, first.text)
			}
			sc := scenario{tool: p.tool, args: fmt.Sprintf(p.args, `,"cursor":"`+cursor+`"`), gql: fmt.Sprintf(p.gql, `, cursor: "`+cursor+`"`)}
			m, r, g := f.viaMCP(t, cs, sc), f.viaREST(t, sc), f.viaGraphQL(t, sc)
			if m.code != "" || r.code != "" || g.code != "" {
				t.Fatalf("errors: mcp %q %s, rest %q %s, graphql %q %s", m.code, m.text, r.code, r.text, g.code, g.text)
			}
			if diff := cmp.Diff(first.result, m.result); diff == "" {
				t.Errorf("the second page is the first")
			}
			m.result, r.result, g.result = comparable(m.result), comparable(r.result), comparable(fromGraphQL(g.result))
			if diff := cmp.Diff(m.result, r.result); diff != "" {
				t.Errorf("REST differs from MCP (-mcp +rest):\n%s", diff)
			}
			if diff := cmp.Diff(m.result, g.result); diff != "" {
				t.Errorf("GraphQL differs from MCP (-mcp +graphql):\n%s", diff)
			}
		})
	}
}

// outcome is what one surface answered: a result, or an error code and
// the text that lists its violations.
type outcome struct {
	result any
	code   string
	text   string
}

// TestParity runs one table of calls over MCP, REST and GraphQL: every
// field of every result equal (GraphQL selects them all), and
// equivalent errors.
func TestParity(t *testing.T) {
	f := newFixture(t)
	cs := f.mcpClient(t)
	seen := map[string]bool{}
	t.Cleanup(func() {
		// The table reaches the fields the issue found missing.
		for _, k := range []string{"count", "paths", "reason", "capped", "stats", "limits", "edgeLabels", "nodeTypes", "more", "cursor", "replayed", "nodeCount", "edges", "score", "edgeProperties", "properties", "groups"} {
			if !seen[k] {
				t.Errorf("no scenario returns %q", k)
			}
		}
	})
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			m := f.viaMCP(t, cs, sc)
			r := f.viaREST(t, sc)
			g := f.viaGraphQL(t, sc)
			if sc.code != "" {
				for surface, o := range map[string]outcome{"mcp": m, "rest": r, "graphql": g} {
					if o.code != sc.code {
						t.Errorf("%s: code %q, want %q (%s)", surface, o.code, sc.code, o.text)
					}
					for _, p := range sc.pointers {
						if !strings.Contains(o.text, p) {
							t.Errorf("%s: the error does not name %s: %s", surface, p, o.text)
						}
					}
				}
				return
			}
			if m.code != "" || r.code != "" || g.code != "" {
				t.Fatalf("errors: mcp %q %s, rest %q %s, graphql %q %s", m.code, m.text, r.code, r.text, g.code, g.text)
			}
			keys(m.result, seen)
			keys(r.result, seen)
			m.result, r.result, g.result = comparable(m.result), comparable(r.result), comparable(fromGraphQL(g.result))
			if sc.replay {
				if r.result.(map[string]any)["replayed"] != true {
					t.Errorf("REST did not replay the write: %v", r.result)
				}
				m.result.(map[string]any)["replayed"] = true
			}
			if diff := cmp.Diff(m.result, r.result); diff != "" {
				t.Errorf("REST differs from MCP (-mcp +rest):\n%s", diff)
			}
			if diff := cmp.Diff(m.result, g.result); diff != "" {
				t.Errorf("GraphQL differs from MCP (-mcp +graphql):\n%s", diff)
			}
		})
	}
}

// comparable drops what differs between two calls of one read: the time
// it took (stats.elapsedMs). Every other field must be equal.
func comparable(v any) any {
	if m, ok := v.(map[string]any); ok {
		if st, ok := m["stats"].(map[string]any); ok {
			if _, ok := st["elapsedMs"]; !ok {
				st["elapsedMs"] = "missing"
			} else {
				st["elapsedMs"] = "present"
			}
		}
	}
	return v
}

// keys records every object key in v.
func keys(v any, seen map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			seen[k] = true
			keys(e, seen)
		}
	case []any:
		for _, e := range v {
			keys(e, seen)
		}
	}
}

// fromGraphQL reads a GraphQL result as the JSON the tools return: a
// field the result left out is null in GraphQL, and Node's edge counts
// are edgeCounts there (edges is a navigation field).
func fromGraphQL(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			if e == nil {
				continue
			}
			if k == "edgeCounts" {
				k = "edges"
			}
			out[k] = fromGraphQL(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = fromGraphQL(e)
		}
		return out
	}
	return v
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

func (f *fixture) mcpClient(t *testing.T) *mcpsdk.ClientSession {
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "parity", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: f.url + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func (f *fixture) viaMCP(t *testing.T, cs *mcpsdk.ClientSession, sc scenario) outcome {
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: sc.tool, Arguments: json.RawMessage(sc.args)})
	if err != nil {
		t.Fatalf("mcp: %v", err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		code, _, _ := strings.Cut(text.String(), ":")
		return outcome{code: code, text: text.String()}
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := f.cat.ValidateOutput(sc.tool, data); err != nil {
		t.Errorf("mcp output: %v", err)
	}
	return outcome{result: decode(t, data)}
}

func (f *fixture) viaREST(t *testing.T, sc scenario) outcome {
	resp, err := http.Post(f.url+"/api/v1/tools/"+sc.tool, "application/json", strings.NewReader(sc.args))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		var p struct {
			Code string `json:"code"`
		}
		json.Unmarshal(body, &p)
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("rest error content type %q", ct)
		}
		return outcome{code: p.Code, text: string(body)}
	}
	return outcome{result: decode(t, body)}
}

func (f *fixture) viaGraphQL(t *testing.T, sc scenario) outcome {
	q, _ := json.Marshal(map[string]string{"query": sc.gql})
	resp, err := http.Post(f.url+"/graphql", "application/json", bytes.NewReader(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Data   map[string]any `json:"data"`
		Errors []struct {
			Message    string         `json:"message"`
			Extensions map[string]any `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("graphql: %v: %s", err, body)
	}
	if len(out.Errors) > 0 {
		code, _ := out.Errors[0].Extensions["code"].(string)
		return outcome{code: strings.ToLower(code), text: string(body)}
	}
	for _, v := range out.Data {
		return outcome{result: v}
	}
	t.Fatalf("graphql: no data: %s", body)
	return outcome{}
}
