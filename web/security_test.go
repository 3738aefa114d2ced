package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// faultStore is the real store with one fault a test can switch on:
// Stats panics, as a bug in a handler's path would.
type faultStore struct {
	graph.Store
	panicStats atomic.Bool
}

func (s *faultStore) Stats(ctx context.Context) (*graph.Stats, error) {
	if s.panicStats.Load() {
		panic("fault injected in Stats")
	}
	return s.Store.Stats(ctx)
}

// logBuffer collects log output for a test to read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newSecureFixture serves web.NewHandler over the example data with opts,
// through a store that can fail, logging to a buffer.
func newSecureFixture(t *testing.T, opts *web.Options) (*fixture, *faultStore, *logBuffer) {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	fs := &faultStore{Store: s}
	cat := mcp.NewCatalog(fs, nil)
	srv := mcp.NewServer(cat, nil)
	var o web.Options
	if opts != nil {
		o = *opts
	}
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if o.HTTP.RateLimit == 0 {
		o.HTTP.RateLimit = -1
	}
	hs := httptest.NewServer(web.NewHandler(srv, &o))
	t.Cleanup(hs.Close)
	return &fixture{url: hs.URL, srv: srv, cat: cat}, fs, logs
}

// A call is one HTTP request to the server.
type call struct {
	method, path, body string
	header             map[string]string
}

func (f *fixture) do(t *testing.T, c call) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if c.body != "" {
		rd = strings.NewReader(c.body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound) // an event stream that is let through never ends
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, c.method, f.url+c.path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if c.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", c.method, c.path, err)
	}
	return resp, body
}

const mcpInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

var mcpHeaders = map[string]string{"Accept": "application/json, text/event-stream"}

// dataRoutes are requests that read data, one per route.
var dataRoutes = []call{
	{method: "GET", path: "/api/v1/tools/get_node?id=service/billing"},
	{method: "POST", path: "/api/v1/tools/search_nodes", body: `{"query":"billing"}`},
	{method: "GET", path: "/api/v1/resources?uri=" + url.QueryEscape("lore://node/service/billing")},
	{method: "GET", path: "/graphql?query=" + url.QueryEscape(`{ getNode(id: "service/billing") { node { id } } }`),
		header: map[string]string{"GraphQL-Require-Preflight": "1"}},
	{method: "POST", path: "/graphql", body: `{"query":"{ getNode(id: \"service/billing\") { node { id } } }"}`},
	{method: "POST", path: "/mcp", body: mcpInit, header: mcpHeaders},
}

// publicRoutes are the documents and pages.
var publicRoutes = []call{
	{method: "GET", path: "/"},
	{method: "GET", path: "/healthz"},
	{method: "GET", path: "/llms.txt"},
	{method: "GET", path: "/openapi.json"},
	{method: "GET", path: "/console/"},
}

func with(c call, header map[string]string) call {
	h := map[string]string{}
	for k, v := range c.header {
		h[k] = v
	}
	for k, v := range header {
		h[k] = v
	}
	c.header = h
	return c
}

// TestHostGuard: a page that rebinds its own name to this server's
// address still sends its name in Host; every route, data or public,
// refuses it with 403 and shows nothing of the data. Loopback names and
// --allow-host names pass; a name:port entry allows that port only.
func TestHostGuard(t *testing.T) {
	f, _, _ := newSecureFixture(t, &web.Options{StorePath: "/data/lore-host-test",
		HTTP: mcp.HTTPOptions{AllowedHosts: []string{"lore.example.com", "pinned.example.com:8443"}}})
	routes := append(append([]call{}, dataRoutes...), publicRoutes...)
	routes = append(routes, call{method: "GET", path: "/api/v1/subscribe?uri=" + url.QueryEscape("lore://changes")})
	for _, host := range []string{"evil.example.com", "evil.example.com:80", "pinned.example.com:9999", "127.0.0.1.evil.example.com", "localhost.evil.example.com"} {
		for _, c := range routes {
			resp, body := f.do(t, with(c, map[string]string{"Host": host}))
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "--allow-host") {
				t.Errorf("Host %s, %s %s: %d %.200s", host, c.method, c.path, resp.StatusCode, body)
			}
			for _, leak := range []string{"service/billing", "lore-host-test"} {
				if strings.Contains(string(body), leak) {
					t.Errorf("Host %s, %s %s: the refusal shows %q", host, c.method, c.path, leak)
				}
			}
		}
	}
	port := f.url[strings.LastIndex(f.url, ":")+1:]
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "LOCALHOST", "lore.example.com", "lore.example.com:1234",
		"pinned.example.com:8443"} {
		for _, c := range append(append([]call{}, dataRoutes...), publicRoutes...) {
			if resp, body := f.do(t, with(c, map[string]string{"Host": host})); resp.StatusCode != http.StatusOK {
				t.Errorf("Host %s, %s %s: %d %.300s", host, c.method, c.path, resp.StatusCode, body)
			}
		}
	}
}

// TestRecover: a panic in a handler (here the landing page's, through a
// store that panics) is answered 500 in the route's shape and logged with
// its stack; the server goes on serving.
func TestRecover(t *testing.T) {
	f, fs, logs := newSecureFixture(t, nil)
	fs.panicStats.Store(true)
	resp, body := f.do(t, call{method: "GET", path: "/"})
	var p struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &p) != nil || p.Code != mcp.CodeInternal ||
		strings.Contains(string(body), "fault injected") {
		t.Errorf("landing page over a failing store: %d %s", resp.StatusCode, body)
	}
	log := logs.String()
	if !strings.Contains(log, "HTTP handler panicked") || !strings.Contains(log, "fault injected in Stats") || !strings.Contains(log, "goroutine ") {
		t.Errorf("the panic is not logged with its stack:\n%.2000s", log)
	}
	fs.panicStats.Store(false)
	if resp, _ := f.do(t, call{method: "GET", path: "/"}); resp.StatusCode != http.StatusOK {
		t.Errorf("after the panic: %d", resp.StatusCode)
	}
}

// deep nests n arrays around v.
func deep(n int, v string) string { return strings.Repeat("[", n) + v + strings.Repeat("]", n) }

// TestDeepJSON: JSON nested deeper than the limit is refused before
// anything decodes it, on every surface, naming where; JSON just under the
// limit passes the check (and meets the tool's own schema).
func TestDeepJSON(t *testing.T) {
	const limit = 16
	f, _, _ := newSecureFixture(t, &web.Options{HTTP: mcp.HTTPOptions{MaxJSONDepth: limit}})
	over, under := deep(limit, "1"), deep(limit-2, "1")
	for _, tc := range []struct {
		name   string
		c      call
		status int
		want   string // in the body
	}{
		{"REST body", call{method: "POST", path: "/api/v1/tools/search_nodes", body: `{"query":"x","type":` + over + `}`}, 400, "/type/0/0"},
		{"REST body under", call{method: "POST", path: "/api/v1/tools/search_nodes", body: `{"query":"x","type":` + under + `}`}, 400, "invalid_argument"},
		{"REST query parameter", call{method: "GET", path: "/api/v1/tools/query_graph?from=" + url.QueryEscape(`{"ids":`+over+`}`)}, 400, "/from/ids/0"},
		{"GraphQL body", call{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }","variables":{"v":` + over + `}}`}, 400, "/variables/v/0"},
		{"GraphQL GET variables", call{method: "GET", path: "/graphql?query=" + url.QueryEscape("{ describeModel { nodes } }") + "&variables=" +
			url.QueryEscape(`{"v":`+over+`}`), header: map[string]string{"GraphQL-Require-Preflight": "1"}}, 400, "/v/0/0"},
		{"GraphQL GET extensions", call{method: "GET", path: "/graphql?query=" + url.QueryEscape("{ describeModel { nodes } }") + "&extensions=" +
			url.QueryEscape(`{"v":`+over+`}`), header: map[string]string{"GraphQL-Require-Preflight": "1"}}, 400, "nested deeper than 16"},
		{"MCP body", call{method: "POST", path: "/mcp", header: mcpHeaders,
			body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":` + over + `}}`}, 400, "/params/x/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(t, tc.c)
			if resp.StatusCode != tc.status || !strings.Contains(string(body), tc.want) {
				t.Errorf("%d %.400s; want %d with %q", resp.StatusCode, body, tc.status, tc.want)
			}
			if tc.name != "REST body under" && !strings.Contains(string(body), "nested deeper than 16") {
				t.Errorf("the refusal does not say why: %.400s", body)
			}
		})
	}
	// The default limit is schema.DefaultMaxDepth.
	f, _, _ = newSecureFixture(t, nil)
	resp, body := f.do(t, call{method: "POST", path: "/api/v1/tools/search_nodes", body: `{"query":"x","type":` + deep(schema.DefaultMaxDepth, "1") + `}`})
	if resp.StatusCode != 400 || !strings.Contains(string(body), fmt.Sprintf("nested deeper than %d", schema.DefaultMaxDepth)) {
		t.Errorf("default limit: %d %.300s", resp.StatusCode, body)
	}
}

// TestInsufficientScope: a read token calling a write tool gets 403 with
// RFC 6750's WWW-Authenticate error="insufficient_scope" on REST and
// GraphQL, and a tool error saying insufficient_scope over MCP.
func TestInsufficientScope(t *testing.T) {
	f, _, _ := newSecureFixture(t, &web.Options{HTTP: mcp.HTTPOptions{Tokens: []mcp.Token{{Name: "reader", Scope: mcp.ScopeRead, Secret: "read-secret-0123456789"}}}})
	auth := map[string]string{"Authorization": "Bearer read-secret-0123456789"}
	write := `{"nodes":[{"id":"topic/scoped","type":"Topic","properties":{"name":"Scoped"}}]}`
	for _, c := range []call{
		{method: "POST", path: "/api/v1/tools/upsert_nodes", body: write, header: auth},
		{method: "POST", path: "/graphql", header: auth,
			body: `{"query":"mutation { upsertNodes(nodes: [{id: \"topic/scoped\", type: \"Topic\", properties: {name: \"Scoped\"}}]) { seq } }"}`},
	} {
		resp, body := f.do(t, c)
		wa := resp.Header.Get("WWW-Authenticate")
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(wa, `error="insufficient_scope"`) || !strings.Contains(wa, `scope="write"`) {
			t.Errorf("%s: %d WWW-Authenticate %q %.300s", c.path, resp.StatusCode, wa, body)
		}
	}
	// Reads with the same token are plain 200s.
	if resp, body := f.do(t, call{method: "POST", path: "/graphql", header: auth, body: `{"query":"{ describeModel { nodes } }"}`}); resp.StatusCode != 200 ||
		resp.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("read: %d %s", resp.StatusCode, body)
	}

	hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", auth["Authorization"])
		return http.DefaultTransport.RoundTrip(r)
	})}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "scope", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: f.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: json.RawMessage(write)})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcpsdk.TextContent).Text, "insufficient_scope") {
		t.Errorf("MCP: %v %+v", err, res)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// goTypeRE finds what gives away Go types in a message.
var goTypeRE = regexp.MustCompile(`Go (struct|value)|json: |interface \{\}|map\[|\[\]interface|\*?\b[a-z]+\.[A-Z][A-Za-z]+\b`)

// TestNoGoTypeNames: malformed requests get messages about the request,
// not about the server's Go types, nor "internal error". (Over MCP, JSON that is well formed
// but whose params have the wrong types is answered by the SDK, whose
// message names its Go types; that is outside the HTTP layer.)
func TestNoGoTypeNames(t *testing.T) {
	f, _, _ := newSecureFixture(t, nil)
	pre := map[string]string{"GraphQL-Require-Preflight": "1"}
	for _, c := range []call{
		{method: "POST", path: "/graphql", body: `{"query":1}`},
		{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }","variables":[1]}`},
		{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }","operationName":{}}`},
		{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }","extensions":"x"}`},
		{method: "POST", path: "/graphql", body: `[{"query":"{ describeModel { nodes } }"}]`},
		{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }",}`},
		{method: "GET", path: "/graphql?query=x&variables=%5B1%5D", header: pre},
		{method: "GET", path: "/graphql?query=x&variables=%7B", header: pre},
		{method: "POST", path: "/graphql", body: `{"query":"query($n: Int) { searchNodes(query: \"x\", limit: $n) { truncated } }","variables":{"n":"many"}}`},
		{method: "POST", path: "/api/v1/tools/get_node", body: `{"id":1}`},
		{method: "POST", path: "/api/v1/tools/get_node", body: `[1]`},
		{method: "POST", path: "/api/v1/tools/get_node", body: `{"id":"a","id":"b"}`},
		{method: "GET", path: "/api/v1/tools/search_nodes?query=x&limit=many"},
		{method: "POST", path: "/mcp", header: mcpHeaders, body: `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[`},
	} {
		resp, body := f.do(t, c)
		if resp.StatusCode < 400 && !strings.Contains(string(body), `"errors"`) && !strings.Contains(string(body), `"error"`) {
			t.Errorf("%s %s %s: %d, want a refusal: %.300s", c.method, c.path, c.body, resp.StatusCode, body)
		}
		if strings.Contains(string(body), "internal error") {
			t.Errorf("%s %s %s: a malformed request is answered as an internal error: %.300s", c.method, c.path, c.body, body)
		}
		if m := goTypeRE.FindString(string(body)); m != "" {
			t.Errorf("%s %s %s: %q gives away a Go type: %.400s", c.method, c.path, c.body, m, body)
		}
	}
}

// TestPublicRate: the public routes are rate-limited per client address
// like the API, with 429 and Retry-After.
func TestPublicRate(t *testing.T) {
	f, _, _ := newSecureFixture(t, &web.Options{HTTP: mcp.HTTPOptions{RateLimit: 0.001, RateBurst: 3}})
	codes := map[int]int{}
	for range 5 {
		resp, _ := f.do(t, call{method: "GET", path: "/healthz"})
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if codes[200] != 3 || codes[429] != 2 {
		t.Errorf("statuses %v, want 3 × 200 and 2 × 429", codes)
	}
}
