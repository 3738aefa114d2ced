package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

const (
	legacy = "2025-11-25"
	modern = mcp.ModernVersion
)

var eras = []string{legacy, modern}

// fixture is a server over a store holding the example dataset.
type fixture struct {
	store graph.Store
	cat   *mcp.Catalog
	srv   *mcp.Server
}

func newFixture(t testing.TB, opts *mcp.Options) *fixture {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, opts)
	srv := mcp.NewServer(cat, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fixture{store: s, cat: cat, srv: srv}
}

// connect opens a client session over in-memory transports in one era.
func (f *fixture) connect(t testing.TB, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := f.srv.SDK().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return dial(t, ct, version, opts)
}

// connectStdio opens a client session over the stdio framing: the server
// runs ServeStdio on one end of a pair of pipes, as lore mcp does on stdin
// and stdout.
func (f *fixture) connectStdio(t testing.TB, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.ServeStdio(ctx, sr, sw); sw.Close() }()
	t.Cleanup(func() {
		cw.Close() // end of input: the server answers what it read, then returns
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		cancel()
	})
	return dial(t, &mcpsdk.IOTransport{Reader: cr, Writer: cw}, version, opts)
}

// connectHTTP opens a client session over Streamable HTTP to an httptest server.
func (f *fixture) connectHTTP(t testing.TB, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	hs := httptest.NewServer(f.srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	return dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, version, opts)
}

func dial(t testing.TB, tr mcpsdk.Transport, version string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), tr, &mcpsdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and checks that every successful result's structured
// content validates against the tool's output schema.
func (f *fixture) call(t testing.TB, cs *mcpsdk.ClientSession, name string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	if s, ok := args.(string); ok {
		args = json.RawMessage(s)
	}
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if !res.IsError {
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.cat.ValidateOutput(name, data); err != nil {
			t.Fatalf("%s: output breaks the output schema: %v\n%s", name, err, data)
		}
		if len(res.Content) != 1 || text(res) == "" {
			t.Fatalf("%s: want one non-empty text block, got %v", name, res.Content)
		}
	}
	return res
}

func text(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// structured decodes a result's structured content.
func structured[T any](t testing.TB, res *mcpsdk.CallToolResult) T {
	t.Helper()
	var v T
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

type toolCase struct {
	name, tool, args string
	// wantErr, if set, must appear in the text of an isError result;
	// otherwise want must appear in the structured content.
	want, wantErr string
}

var toolCases = []toolCase{
	{name: "describe", tool: "describe_model", args: `{}`, want: `"name":"Service"`},
	{name: "describe type", tool: "describe_model", args: `{"type":"Service"}`, want: `"tier"`},
	{name: "describe unknown", tool: "describe_model", args: `{"type":"Spaceship"}`, wantErr: "neither a node type nor an edge label"},
	{name: "get", tool: "get_node", args: `{"id":"service/billing"}`, want: `"id":"service/billing"`},
	{name: "get missing", tool: "get_node", args: `{"id":"service/nope"}`, wantErr: "not_found"},
	{name: "get bad args", tool: "get_node", args: `{"ID":"x"}`, wantErr: "/id: is required"},
	{name: "get edge", tool: "get_edge", args: `{"id":"memberOf(person/ada-okafor,team/payments)"}`, want: `"role":"lead"`},
	{name: "get edge missing", tool: "get_edge", args: `{"id":"memberOf(person/ada-okafor,team/nope)"}`, wantErr: "not_found"},
	{name: "search", tool: "search_nodes", args: `{"query":"billing","type":"Service"}`, want: `"id":"service/billing"`},
	{name: "search bad limit", tool: "search_nodes", args: `{"query":"x","limit":0}`, wantErr: "/limit"},
	// A size above a tool's maximum is lowered to it and reported, on every tool.
	{name: "search capped", tool: "search_nodes", args: `{"query":"billing","limit":5000}`, want: `"capped":["limit"]`},
	{name: "neighbors capped", tool: "neighbors", args: `{"id":"service/billing","depth":99,"limit":5000}`, want: `"capped":["depth","limit"`},
	{name: "paths capped", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"service/billing","maxHops":99,"k":500}`, want: `"capped":["maxHops","k"`},
	{name: "changes capped", tool: "changes_since", args: `{"limit":5000}`, want: `"capped":["limit"]`},
	{name: "search unknown type", tool: "search_nodes", args: `{"query":"x","type":"Spaceship"}`, wantErr: "invalid_argument"},
	{name: "neighbors", tool: "neighbors", args: `{"id":"service/billing","edge":"dependsOn","direction":"out"}`, want: `"depth":1`},
	{name: "neighbors depth", tool: "neighbors", args: `{"id":"service/billing","depth":2,"limit":5}`, want: `"nodes":[`},
	{name: "neighbors missing", tool: "neighbors", args: `{"id":"service/nope"}`, wantErr: "not_found"},
	{name: "neighbors bad direction", tool: "neighbors", args: `{"id":"service/billing","direction":"up"}`, wantErr: "/direction"},
	{name: "paths", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"service/billing"}`, want: `"paths":[{`},
	{name: "paths missing", tool: "find_paths", args: `{"from":"person/ada-okafor","to":"service/nope"}`, wantErr: "not_found"},
	{name: "query", tool: "query_graph", args: `{"from":{"type":"Service","where":{"tier":0}},"return":{"fields":["id","name"]}}`, want: `"id":"service/billing"`},
	{name: "query count", tool: "query_graph", args: `{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","hops":[1,3]}],"return":{"count":true}}`, want: `"count":`},
	{name: "query more", tool: "query_graph", args: `{"from":{"type":"Service"},"limit":1}`, want: `"more":true`},
	{name: "query groupBy", tool: "query_graph", args: `{"from":{"type":"Service"},"groupBy":{"field":"lifecycle"},"limit":1}`, want: `"groups":[{"count":21,"key":"production"}]`},
	{name: "query groupBy invalid", tool: "query_graph", args: `{"from":{"type":"Service"},"groupBy":{"field":"lifecycle","buckets":[1]}}`, wantErr: "/groupBy/buckets: buckets group degrees"},
	{name: "query invalid", tool: "query_graph", args: `{"from":{"type":"Spaceship"},"traverse":[{"edge":"flies"}]}`, wantErr: "/traverse/0/edge"},
	{name: "query edgeWhere", tool: "query_graph", args: `{"from":{"type":"Team"},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":"lead"}}],"return":{"count":true}}`, want: `"count":6`},
	{name: "query edgeWhere unknown", tool: "query_graph", args: `{"from":{"type":"Team"},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"rank":1}}]}`, wantErr: "/traverse/0/edgeWhere/rank"},
	{name: "changes", tool: "changes_since", args: `{"cursor":0,"limit":1}`, want: `"seq":1`},
	{name: "changes bad cursor", tool: "changes_since", args: `{"cursor":-1}`, wantErr: "/cursor"},
	{name: "upsert node", tool: "upsert_nodes", args: `{"nodes":[{"id":"topic/graphs","type":"Topic","properties":{"name":"Graphs"}}]}`, want: `"status":"created"`},
	{name: "upsert node invalid", tool: "upsert_nodes", args: `{"nodes":[{"id":"topic/a","type":"Topic","properties":{"name":7}},{"id":"bad id","type":"Nope","properties":{}}]}`, wantErr: "/nodes/1"},
	{name: "upsert node stale", tool: "upsert_nodes", args: `{"nodes":[{"id":"service/billing","type":"Service","properties":{"name":"b"},"expectedRevision":9}]}`, wantErr: "conflict"},
	{name: "upsert edge", tool: "upsert_edges", args: `{"edges":[{"from":"person/ada-okafor","label":"memberOf","to":"team/data"}]}`, want: `"seq":`},
	{name: "upsert edge dangling", tool: "upsert_edges", args: `{"edges":[{"from":"person/ada-okafor","label":"memberOf","to":"team/nope"}]}`, wantErr: "/edges/0"},
	{name: "delete node unconfirmed", tool: "delete_nodes", args: `{"nodes":[{"id":"service/billing"}]}`, wantErr: "confirm: true"},
	{name: "delete node", tool: "delete_nodes", args: `{"nodes":[{"id":"topic/graphs"}],"confirm":true}`, want: `"deletedNodes":["topic/graphs"]`},
	{name: "changes after writes", tool: "changes_since", args: `{"cursor":1,"limit":1}`, want: `"more":true`},
	{name: "delete node missing", tool: "delete_nodes", args: `{"nodes":[{"id":"topic/nope"}],"confirm":true}`, wantErr: "not_found"},
	{name: "delete edge", tool: "delete_edges", args: `{"edges":[{"from":"team/payments","label":"owns","to":"service/billing"}],"confirm":true}`, want: `"deletedEdges":["owns(team/payments,service/billing)"]`},
	{name: "delete edge unconfirmed", tool: "delete_edges", args: `{"edges":[{"from":"team/payments","label":"owns","to":"service/checkout"}]}`, wantErr: "confirmation_required"},
}

// TestTools runs every tool's happy and error paths through the SDK client
// in both eras, in memory, over the stdio framing and over Streamable HTTP.
func TestTools(t *testing.T) {
	for _, transport := range []string{"memory", "stdio", "http"} {
		for _, era := range eras {
			t.Run(transport+"/"+era, func(t *testing.T) {
				f := newFixture(t, nil)
				var cs *mcpsdk.ClientSession
				switch transport {
				case "memory":
					cs = f.connect(t, era, nil)
				case "stdio":
					cs = f.connectStdio(t, era, nil)
				case "http":
					cs = f.connectHTTP(t, era, nil)
				}
				seen := map[string]bool{}
				for _, tc := range toolCases {
					t.Run(tc.name, func(t *testing.T) {
						seen[tc.tool] = true
						res := f.call(t, cs, tc.tool, tc.args)
						if tc.wantErr != "" {
							if !res.IsError || !strings.Contains(text(res), tc.wantErr) {
								t.Fatalf("want an isError result containing %q, got isError=%v %q", tc.wantErr, res.IsError, text(res))
							}
							if res.StructuredContent != nil {
								t.Errorf("an error result carries structured content: %v", res.StructuredContent)
							}
							return
						}
						if res.IsError {
							t.Fatalf("unexpected tool error: %s", text(res))
						}
						data, _ := json.Marshal(res.StructuredContent)
						if !strings.Contains(string(data), tc.want) {
							t.Fatalf("want %s in\n%.2000s", tc.want, data)
						}
					})
				}
				for _, tool := range f.cat.Tools() {
					if !seen[tool.Name] {
						t.Errorf("tool %s has no test case", tool.Name)
					}
				}
			})
		}
	}
}

// TestInputErrorsListEveryViolation checks that one call breaking several
// rules hears of all of them, each with its JSON pointer.
func TestInputErrorsListEveryViolation(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	res := f.call(t, cs, "neighbors", `{"id":7,"direction":"up","depth":0,"colour":"red"}`)
	if !res.IsError {
		t.Fatal("want an error")
	}
	for _, want := range []string{"/id:", "/direction:", "/depth:", "/colour:"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("missing %s in %q", want, text(res))
		}
	}
	// A batch with several bad elements reports each, and writes nothing.
	before, _ := f.store.Stats(t.Context())
	res = f.call(t, cs, "upsert_nodes", `{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":7}},{"id":"topic/y","type":"Topic","properties":{"name":"ok"}},{"id":"a b","type":"Topic","properties":{"name":"c"}}]}`)
	for _, want := range []string{"/nodes/0/properties/name", "/nodes/2"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("missing %s in %q", want, text(res))
		}
	}
	after, _ := f.store.Stats(t.Context())
	if after.LastSeq != before.LastSeq || after.Nodes != before.Nodes {
		t.Errorf("a rejected batch wrote: %+v -> %+v", before, after)
	}
}

// TestReadOnly leaves the write tools out.
func TestReadOnly(t *testing.T) {
	f := newFixture(t, &mcp.Options{ReadOnly: true})
	cs := f.connect(t, legacy, nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if !tool.Annotations.ReadOnlyHint {
			t.Errorf("%s is listed on a read-only server", tool.Name)
		}
	}
	if len(names) != 8 {
		t.Errorf("want the 8 read tools, got %v", names)
	}
	if _, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: map[string]any{"nodes": []any{}}}); err == nil {
		t.Error("calling an absent write tool did not fail")
	}
}

// TestCatalogInvariants checks every tool's declaration.
func TestCatalogInvariants(t *testing.T) {
	f := newFixture(t, nil)
	for _, tool := range f.cat.Tools() {
		if !mcp.ValidToolName(tool.Name) || tool.Title == "" || len(tool.Description) < 40 || tool.Icon == "" {
			t.Errorf("%s: name, title, description (40+ chars) and icon are required", tool.Name)
		}
		for which, doc := range map[string]json.RawMessage{"input": tool.Input, "output": tool.Output} {
			var s map[string]any
			if err := json.Unmarshal(doc, &s); err != nil {
				t.Fatal(err)
			}
			// Input schemas leave out $schema: 2020-12 is MCP's default
			// dialect, and models read them every turn.
			if d, ok := s["$schema"]; (ok || which == "output") && d != "https://json-schema.org/draft/2020-12/schema" || s["type"] != "object" {
				t.Errorf("%s %s schema: want $schema 2020-12 (or none, for input) and type object", tool.Name, which)
			}
			if p := typeArray(s, ""); p != "" {
				t.Errorf("%s %s schema: a type array at %s (some clients refuse them: use anyOf or one type)", tool.Name, which, p)
			}
			if which == "input" && (s["anyOf"] != nil || s["oneOf"] != nil) {
				t.Errorf("%s: top-level anyOf/oneOf in the input schema", tool.Name)
			}
		}
		// Clients compile the published schemas with nothing else to hand:
		// they must not refer outside themselves.
		for which, doc := range map[string]json.RawMessage{"input": tool.Input, "output": tool.Output} {
			c := jsonschema.NewCompiler()
			c.UseLoader(refuseLoader{})
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
			if err := c.AddResource("mem:schema.json", v); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Compile("mem:schema.json"); err != nil {
				t.Errorf("%s %s schema does not compile on its own: %v", tool.Name, which, err)
			}
		}
		if u, err := url.Parse(tool.Icon); err != nil || strings.ContainsAny(tool.Icon, " <>\"") || u.Scheme != "data" {
			t.Errorf("%s: icon %q is not a valid data URI", tool.Name, tool.Icon)
		}
		if tool.ReadOnly == tool.Write || tool.Destructive && !tool.Confirm {
			t.Errorf("%s: inconsistent annotations", tool.Name)
		}
	}
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) { return nil, fmt.Errorf("refusing to load %s", url) }

// typeArray returns the JSON pointer of the first "type" keyword whose
// value is an array in a schema, or "".
func typeArray(v any, at string) string {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["type"].([]any); ok {
			return at + "/type"
		}
		for _, k := range sortedKeys(v) {
			if p := typeArray(v[k], at+"/"+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range v {
			if p := typeArray(e, fmt.Sprintf("%s/%d", at, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestByteCap: a result over the server's byte cap drops whole items, says
// it was truncated and why, and stays valid JSON under the cap; a single
// node over the cap is a tool error that says what to do.
func TestByteCap(t *testing.T) {
	f := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: 3000}})
	cs := f.connect(t, legacy, nil)
	res := f.call(t, cs, "neighbors", `{"id":"service/postgres-cluster","direction":"both","depth":2}`)
	if res.IsError {
		t.Fatal(text(res))
	}
	data, _ := json.Marshal(res.StructuredContent)
	out := structured[graph.NeighborsResult](t, res)
	if len(data) > 3000 || !out.Truncated || out.Reason != graph.ReasonBytes || len(out.Nodes) == 0 {
		t.Fatalf("%d bytes, truncated %v (%s), %d nodes", len(data), out.Truncated, out.Reason, len(out.Nodes))
	}
	small := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: 200}})
	res = small.call(t, small.connect(t, legacy, nil), "get_node", `{"id":"service/billing"}`)
	if !res.IsError || !strings.Contains(text(res), "over the server's cap") {
		t.Fatalf("want a cap error, got %s", text(res))
	}
}

// TestQueryTextShowsNoNil: a query returning fields without type shows
// what it returned, never Go's <nil> for the fields it left out.
func TestQueryTextShowsNoNil(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	for _, fields := range []string{`["id"]`, `["name"]`} {
		res := f.call(t, cs, "query_graph", `{"from":{"type":"Service"},"return":{"fields":`+fields+`},"limit":2}`)
		if res.IsError || strings.Contains(text(res), "<nil>") || !strings.Contains(text(res), "service/") && fields == `["id"]` {
			t.Errorf("fields %s: %s", fields, text(res))
		}
	}
}
