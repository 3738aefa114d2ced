package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

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
}

var scenarios = []scenario{
	{name: "get", tool: "get_node", args: `{"id":"service/billing"}`,
		gql: `{ getNode(id: "service/billing") { node { id type properties revision createdAt updatedAt } } }`},
	{name: "search", tool: "search_nodes", args: `{"query":"billing","type":"Service","limit":3}`,
		gql: `{ searchNodes(query: "billing", type: "Service", limit: 3) { hits { node { id type properties } score } truncated } }`},
	{name: "neighbors", tool: "neighbors", args: `{"id":"service/billing","edge":"dependsOn","direction":"out"}`,
		gql: `{ neighbors(id: "service/billing", edge: ["dependsOn"], direction: out) { nodes { node { id type } depth } truncated } }`},
	{name: "paths", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"service/billing"}`,
		gql: `{ findPaths(from: "person/ada-okafor", to: "service/billing") { paths { nodes edges } length } }`},
	{name: "query", tool: "query_graph", args: `{"from":{"type":"Service","where":{"tier":0}},"return":{"fields":["id","name"]},"orderBy":[{"field":"id"}]}`,
		gql: `{ queryGraph(from: {type: "Service", where: {tier: 0}}, return: {fields: ["id", "name"]}, orderBy: [{field: "id"}]) { nodes truncated } }`},
	{name: "changes", tool: "changes_since", args: `{"cursor":0,"limit":1}`,
		gql: `{ changesSince(cursor: 0, limit: 1) { changes { seq op } cursor more } }`},
	{name: "describe", tool: "describe_model", args: `{"type":"Team"}`,
		gql: `{ describeModel(type: "Team") { schema } }`},
	{name: "not found", tool: "get_node", args: `{"id":"service/nope"}`,
		gql: `{ getNode(id: "service/nope") { node { id } } }`, code: "not_found"},
	{name: "invalid", tool: "neighbors", args: `{"id":"service/billing","depth":99}`,
		gql: `{ neighbors(id: "service/billing", depth: 99) { truncated } }`, code: "invalid_argument", pointers: []string{"/depth"}},
	{name: "bad write", tool: "upsert_nodes", args: `{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":7}},{"id":"a b","type":"Topic","properties":{"name":"ok"}}]}`,
		gql:  `mutation { upsertNodes(nodes: [{id: "topic/x", type: "Topic", properties: {name: 7}}, {id: "a b", type: "Topic", properties: {name: "ok"}}]) { seq } }`,
		code: "invalid_argument", pointers: []string{"/nodes/0/properties/name", "/nodes/1/id"}},
}

// outcome is what one surface answered: a result, or an error code and
// the text that lists its violations.
type outcome struct {
	result any
	code   string
	text   string
}

// TestParity runs one table of calls over MCP, REST and GraphQL: equal
// structured results, equivalent errors.
func TestParity(t *testing.T) {
	f := newFixture(t)
	cs := f.mcpClient(t)
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
			if !reflect.DeepEqual(m.result, r.result) {
				t.Errorf("REST differs from MCP:\nmcp  %v\nrest %v", m.result, r.result)
			}
			if path, ok := covers(m.result, g.result, ""); !ok {
				t.Errorf("GraphQL differs from MCP at %s:\nmcp     %v\ngraphql %v", path, m.result, g.result)
			}
		})
	}
}

// covers reports whether every field of sub (GraphQL's selection) equals
// the same field of full (MCP's result), returning where they part.
func covers(full, sub any, path string) (string, bool) {
	switch s := sub.(type) {
	case map[string]any:
		fm, ok := full.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range s {
			fv, present := fm[k]
			if !present && v == nil {
				continue // GraphQL shows an absent optional field as null
			}
			if p, ok := covers(fv, v, path+"/"+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		fl, ok := full.([]any)
		if !ok || len(fl) != len(s) {
			return path, false
		}
		for i := range s {
			if p, ok := covers(fl[i], s[i], fmt.Sprintf("%s/%d", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(full, sub)
}

// withoutStats drops the timing a read reports, which differs per call.
func withoutStats(v any) any {
	if m, ok := v.(map[string]any); ok {
		delete(m, "stats")
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
	return outcome{result: withoutStats(decode(t, data))}
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
	return outcome{result: withoutStats(decode(t, body))}
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
