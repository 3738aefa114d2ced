package rest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/gen/rest"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// fixture is the REST handler behind mcp.Guard over a bolt store holding
// the example dataset, served by httptest; with the openapi build tag (CI),
// conform checks each exchange against the committed OpenAPI document with
// two independent libraries.
type fixture struct {
	cat     *mcp.Catalog
	srv     *httptest.Server
	conform conformFunc
}

// A conformFunc checks a request (when checkRequest is set) and its
// response against the committed OpenAPI document.
type conformFunc func(t *testing.T, req *http.Request, reqBody []byte, resp *http.Response, body []byte, checkRequest bool)

// newConformer, set by openapi_check_test.go under the openapi build tag
// (which make test-race and so CI set), makes a fixture's conformFunc for
// a server at url. make test leaves it nil and checks no exchange against
// the document: compiling the two validators was the largest part of a
// cold make test.
var newConformer func(t *testing.T, url string) conformFunc

func newFixture(t *testing.T, guard *mcp.HTTPOptions) *fixture {
	t.Helper()
	return newFixtureWith(t, guard, nil)
}

// newFixtureWith is newFixture with a catalog made with opts.
func newFixtureWith(t *testing.T, guard *mcp.HTTPOptions, opts *mcp.Options) *fixture {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, opts)
	if guard == nil {
		guard = &mcp.HTTPOptions{RateLimit: -1}
	}
	srv := httptest.NewServer(mcp.Guard(rest.NewHandler(cat, nil), guard))
	t.Cleanup(srv.Close)

	f := &fixture{cat: cat, srv: srv}
	if newConformer != nil {
		f.conform = newConformer(t, srv.URL)
	}
	return f
}

// A reply is an HTTP response with its body read.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// What do checks against the OpenAPI document.
type check int

const (
	nothing  check = iota // a request the document does not describe
	response              // a request the document refuses (bad arguments): the response only
	both                  // the request and the response
)

// do sends a request and checks the exchange against the OpenAPI document
// with both libraries.
func (f *fixture) do(t *testing.T, req *http.Request, c check) reply {
	t.Helper()
	var reqBody []byte
	if req.Body != nil && req.ContentLength > 0 {
		reqBody, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if c != nothing && f.conform != nil {
		f.conform(t, req, reqBody, resp, body, c == both)
	}
	return reply{resp.StatusCode, resp.Header, body}
}

func (f *fixture) request(t *testing.T, method, path, body string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// post calls a tool with POST, checking the exchange against the document.
func (f *fixture) post(t *testing.T, tool, args string, c check) reply {
	t.Helper()
	return f.do(t, f.request(t, http.MethodPost, gen.ToolsPath+tool, args), c)
}

// get calls a read-only tool with GET, checking the exchange against the
// document.
func (f *fixture) get(t *testing.T, tool string, q url.Values) reply {
	t.Helper()
	return f.do(t, f.request(t, http.MethodGet, gen.ToolsPath+tool+"?"+q.Encode(), ""), both)
}

type problem struct {
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Status     int                `json:"status"`
	Detail     string             `json:"detail"`
	Code       string             `json:"code"`
	Violations []schema.Violation `json:"violations"`
}

// problemOf checks that a reply is a problem+json with the status and code
// and returns it.
func problemOf(t *testing.T, r reply, status int, code string) problem {
	t.Helper()
	if r.status != status {
		t.Errorf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if p.Code != code || p.Status != status || p.Type != "about:blank" || p.Title != http.StatusText(status) {
		t.Errorf("problem %+v, want code %s, status %d", p, code, status)
	}
	return p
}

// TestTools calls every tool over REST, a happy path and an error path
// each, in an order where the writes build on each other; every exchange
// conforms to the OpenAPI document and every result to the tool's output
// schema.
func TestTools(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct {
		name, tool, args string
		status           int
		code             string // for errors
		want             string // in the body
	}{
		{"describe", "describe_model", ``, 200, "", `"name":"Service"`},
		{"describe type", "describe_model", `{"type":"Service"}`, 200, "", `"tier"`},
		{"describe unknown", "describe_model", `{"type":"Spaceship"}`, 404, mcp.CodeNotFound, "neither a node type nor an edge label"},
		{"get", "get_node", `{"id":"service/billing"}`, 200, "", `"id":"service/billing"`},
		{"get missing", "get_node", `{"id":"service/nope"}`, 404, mcp.CodeNotFound, "service/nope"},
		{"get edge", "get_edge", `{"id":"memberOf(person/ada-okafor,team/payments)"}`, 200, "", `"role":"lead"`},
		{"get edge malformed", "get_edge", `{"id":"memberOf(person/ada-okafor"}`, 400, mcp.CodeInvalid, "label(from,to)"},
		{"get no body", "get_node", ``, 400, mcp.CodeInvalid, `"pointer":"/id"`},
		{"search", "search_nodes", `{"query":"billing","type":"Service"}`, 200, "", `"id":"service/billing"`},
		{"search bad limit", "search_nodes", `{"query":"x","limit":0}`, 400, mcp.CodeInvalid, `"pointer":"/limit"`},
		{"neighbors", "neighbors", `{"id":"service/billing","edge":"dependsOn","direction":"out"}`, 200, "", `"depth":1`},
		{"neighbors missing", "neighbors", `{"id":"service/nope"}`, 404, mcp.CodeNotFound, "service/nope"},
		{"paths", "find_paths", `{"from":"person/ada-okafor","to":"service/billing"}`, 200, "", `"paths":[{`},
		{"paths missing", "find_paths", `{"from":"person/ada-okafor","to":"service/nope"}`, 404, mcp.CodeNotFound, "service/nope"},
		{"query", "query_graph", `{"from":{"type":"Service","where":{"tier":0}},"return":{"fields":["id","name"]}}`, 200, "", `"id":"service/billing"`},
		{"query invalid", "query_graph", `{"from":{"type":"Spaceship"},"traverse":[{"edge":"flies"}]}`, 400, mcp.CodeInvalid, `"pointer":"/traverse/0/edge"`},
		{"query edgeWhere", "query_graph", `{"from":{"type":"Team"},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":"lead"}}],"return":{"count":true}}`, 200, "", `"count":6`},
		{"query edgeWhere unknown", "query_graph", `{"from":{"type":"Team"},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"rank":1}}]}`, 400, mcp.CodeInvalid, `"pointer":"/traverse/0/edgeWhere/rank"`},
		{"changes", "changes_since", `{"cursor":0,"limit":1}`, 200, "", `"seq":1`},
		{"changes bad cursor", "changes_since", `{"cursor":-1}`, 400, mcp.CodeInvalid, `"pointer":"/cursor"`},
		{"upsert node", "upsert_nodes", `{"nodes":[{"id":"topic/graphs","type":"Topic","properties":{"name":"Graphs"}}]}`, 200, "", `"status":"created"`},
		{"upsert node stale", "upsert_nodes", `{"nodes":[{"id":"service/billing","type":"Service","properties":{"name":"b"},"expectedRevision":9}]}`, 409, mcp.CodeConflict, `"violations"`},
		{"upsert node not JSON", "upsert_nodes", `{"nodes":`, 400, mcp.CodeInvalid, "not JSON"},
		{"upsert edge", "upsert_edges", `{"edges":[{"from":"person/ada-okafor","label":"memberOf","to":"team/data"}]}`, 200, "", `"seq":`},
		{"upsert edge dangling", "upsert_edges", `{"edges":[{"from":"person/ada-okafor","label":"memberOf","to":"team/nope"}]}`, 400, mcp.CodeInvalid, `"pointer":"/edges/0`},
		{"delete node unconfirmed", "delete_nodes", `{"nodes":[{"id":"topic/graphs"}]}`, 400, mcp.CodeConfirm, `send the same body with \"confirm\": true`},
		{"delete node", "delete_nodes", `{"nodes":[{"id":"topic/graphs"}],"confirm":true}`, 200, "", `"deletedNodes":["topic/graphs"]`},
		{"delete node missing", "delete_nodes", `{"nodes":[{"id":"topic/nope"}],"confirm":true}`, 404, mcp.CodeNotFound, "topic/nope"},
		{"delete edge unconfirmed", "delete_edges", `{"edges":[{"from":"team/payments","label":"owns","to":"service/billing"}]}`, 400, mcp.CodeConfirm, "confirm"},
		{"delete edge", "delete_edges", `{"edges":[{"from":"team/payments","label":"owns","to":"service/billing"}],"confirm":true}`, 200, "", `"deletedEdges":["owns(team/payments,service/billing)"]`},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := both
			if tt.code == mcp.CodeInvalid {
				c = response // the document refuses these requests too
			}
			r := f.post(t, tt.tool, tt.args, c)
			if tt.code != "" {
				problemOf(t, r, tt.status, tt.code)
			} else {
				if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
					t.Fatalf("%d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
				}
				if err := f.cat.ValidateOutput(tt.tool, r.body); err != nil {
					t.Errorf("output: %v", err)
				}
			}
			if !bytes.Contains(r.body, []byte(tt.want)) {
				t.Errorf("%s not in %s", tt.want, r.body)
			}
		})
	}
	// Every tool of the catalog was called, both ways.
	for _, tl := range f.cat.Tools() {
		ok, failed := false, false
		for _, tt := range cases {
			ok = ok || tt.tool == tl.Name && tt.code == ""
			failed = failed || tt.tool == tl.Name && tt.code != ""
		}
		if !ok || !failed {
			t.Errorf("%s: the table lacks a happy path or an error path", tl.Name)
		}
	}
}

// TestEveryViolation: a call breaking several rules gets one 400 problem
// listing each by pointer, the same list Invoke reports.
func TestEveryViolation(t *testing.T) {
	f := newFixture(t, nil)
	args := `{"id":7,"direction":"up","depth":0,"colour":"red"}`
	p := problemOf(t, f.post(t, "neighbors", args, response), 400, mcp.CodeInvalid)
	var got []string
	for _, v := range p.Violations {
		got = append(got, v.Pointer)
	}
	slices.Sort(got)
	want := []string{"/colour", "/depth", "/direction", "/id"}
	if diff := cmp.Diff(want, slices.Compact(got)); diff != "" {
		t.Errorf("violation pointers (-want +got):\n%s\n%s", diff, p.Detail)
	}
	_, err := f.cat.Invoke(t.Context(), "neighbors", json.RawMessage(args))
	e, ok := err.(*mcp.Error)
	if !ok {
		t.Fatalf("Invoke: %v", err)
	}
	if diff := cmp.Diff(e.Violations, p.Violations); diff != "" {
		t.Errorf("REST and Invoke disagree (-Invoke +REST):\n%s", diff)
	}

	// The GET form refuses bad parameters the same way, unknown ones included.
	p = problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.ToolsPath+"neighbors?id=7&direction=up&depth=0&colour=red", ""), response),
		400, mcp.CodeInvalid)
	got = nil
	for _, v := range p.Violations {
		got = append(got, v.Pointer)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"/colour", "/depth", "/direction"}, slices.Compact(got)); diff != "" {
		t.Errorf("GET violation pointers (-want +got):\n%s\n%s", diff, p.Detail)
	}
}

// TestNotFound: unknown tools, paths and resources are 404 problems.
func TestNotFound(t *testing.T) {
	f := newFixture(t, nil)
	p := problemOf(t, f.do(t, f.request(t, http.MethodPost, gen.ToolsPath+"launch_rocket", `{}`), nothing), 404, mcp.CodeNotFound)
	if !strings.Contains(p.Detail, "get_node") {
		t.Errorf("the detail does not list the tools: %s", p.Detail)
	}
	problemOf(t, f.do(t, f.request(t, http.MethodGet, "/api/v1/nothing", ""), nothing), 404, mcp.CodeNotFound)
	problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath+"?uri="+url.QueryEscape("lore://node/service/nope"), ""), both),
		404, mcp.CodeNotFound)
	problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath+"?uri="+url.QueryEscape("lore://elsewhere"), ""), both),
		404, mcp.CodeNotFound)
	problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.SubscribePath+"?uri="+url.QueryEscape("https://example.com/"), ""), both),
		404, mcp.CodeNotFound)
}

// TestMethods: a method a path does not take is a 405 problem with Allow.
func TestMethods(t *testing.T) {
	f := newFixture(t, nil)
	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodGet, gen.ToolsPath + "upsert_nodes", "POST"},
		{http.MethodPut, gen.ToolsPath + "get_node", "GET, POST"},
		{http.MethodDelete, gen.ToolsPath + "delete_nodes", "POST"},
		{http.MethodPost, gen.ResourcesPath + "?uri=lore://model", "GET, HEAD"},
		{http.MethodPost, gen.SubscribePath + "?uri=lore://changes", "GET"},
		{http.MethodPost, "/openapi.json", "GET, HEAD"},
	} {
		r := f.do(t, f.request(t, tt.method, tt.path, ""), nothing)
		problemOf(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := r.header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
}

// TestGetEqualsPost: a read-only tool's GET form gives the POST result,
// with scalars as plain parameters and objects and arrays JSON-encoded.
func TestGetEqualsPost(t *testing.T) {
	f := newFixture(t, nil)
	for _, tt := range []struct {
		tool  string
		query url.Values
		body  string
	}{
		{"describe_model", nil, `{}`},
		{"describe_model", url.Values{"type": {"Service"}}, `{"type":"Service"}`},
		{"get_node", url.Values{"id": {"service/billing"}}, `{"id":"service/billing"}`},
		{"search_nodes", url.Values{"query": {"billing"}, "type": {"Service"}, "limit": {"3"}}, `{"query":"billing","type":"Service","limit":3}`},
		{"neighbors", url.Values{"id": {"service/billing"}, "edge": {`"dependsOn"`}, "direction": {"out"}, "depth": {"2"}},
			`{"id":"service/billing","edge":"dependsOn","direction":"out","depth":2}`},
		{"neighbors", url.Values{"id": {"service/billing"}, "edge": {`["dependsOn","owns"]`}}, `{"id":"service/billing","edge":["dependsOn","owns"]}`},
		{"find_paths", url.Values{"from": {"person/ada-okafor"}, "to": {"service/billing"}, "k": {"2"}}, `{"from":"person/ada-okafor","to":"service/billing","k":2}`},
		{"query_graph", url.Values{"from": {`{"type":"Service","where":{"tier":0}}`}, "return": {`{"fields":["id","name"]}`}, "limit": {"5"}},
			`{"from":{"type":"Service","where":{"tier":0}},"return":{"fields":["id","name"]},"limit":5}`},
		{"changes_since", url.Values{"cursor": {"0"}, "limit": {"2"}}, `{"cursor":0,"limit":2}`},
	} {
		t.Run(tt.tool+"?"+tt.query.Encode(), func(t *testing.T) {
			got, want := f.get(t, tt.tool, tt.query), f.post(t, tt.tool, tt.body, both)
			if got.status != 200 || want.status != 200 {
				t.Fatalf("GET %d %s; POST %d %s", got.status, got.body, want.status, want.body)
			}
			if diff := sameResult(t, want.body, got.body); diff != "" {
				t.Errorf("(-POST +GET):\n%s", diff)
			}
		})
	}
	// A bare word for an argument that may be a string or an array is the
	// string; a repeated parameter, or a comma list, is an array.
	for q, body := range map[string]string{
		"id=service/billing&edge=dependsOn":           `{"id":"service/billing","edge":"dependsOn"}`,
		"id=service/billing&edge=dependsOn&edge=owns": `{"id":"service/billing","edge":["dependsOn","owns"]}`,
		"id=service/billing&edge=dependsOn,owns":      `{"id":"service/billing","edge":["dependsOn","owns"]}`,
		"id=person/ada-okafor&edge=memberOf,leads":    `{"id":"person/ada-okafor","edge":["memberOf","leads"]}`,
	} {
		got := f.do(t, f.request(t, http.MethodGet, gen.ToolsPath+"neighbors?"+q, ""), response)
		want := f.post(t, "neighbors", body, both)
		if got.status != 200 {
			t.Fatalf("GET ?%s: %d %s", q, got.status, got.body)
		}
		if diff := sameResult(t, want.body, got.body); diff != "" {
			t.Errorf("GET ?%s (-POST +GET):\n%s", q, diff)
		}
	}
}

// sameResult compares two results but for their stats (elapsed time).
func sameResult(t *testing.T, a, b []byte) string {
	t.Helper()
	var x, y map[string]any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	delete(x, "stats")
	delete(y, "stats")
	return cmp.Diff(x, y)
}

// TestResources reads resources by URI.
func TestResources(t *testing.T) {
	f := newFixture(t, nil)
	for _, uri := range []string{"lore://model", "lore://changes", "lore://node/service/billing", "lore://type/Service", "lore://edge/memberOf(person/ada-okafor,team/payments)"} {
		r := f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath+"?uri="+url.QueryEscape(uri), ""), both)
		if r.status != 200 {
			t.Fatalf("%s: %d %s", uri, r.status, r.body)
		}
		want, err := f.cat.ReadResource(t.Context(), uri)
		if err != nil {
			t.Fatal(err)
		}
		if ct := r.header.Get("Content-Type"); ct != want.MIMEType || string(r.body) != want.Text || !json.Valid(r.body) {
			t.Errorf("%s: %s %.80s, want the catalog's %s %.80s", uri, ct, r.body, want.MIMEType, want.Text)
		}
	}
	p := problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath, ""), response), 400, mcp.CodeInvalid)
	if len(p.Violations) != 1 || p.Violations[0].Pointer != "/uri" {
		t.Errorf("violations %+v, want one at /uri", p.Violations)
	}
}

// TestSubscribe follows a node's URI over server-sent events: after the
// ready event, a write to another node sends nothing and a write to this
// one sends one update with its sequence number.
func TestSubscribe(t *testing.T) {
	f := newFixture(t, nil)
	uri := "lore://node/topic/streams"
	req := f.request(t, http.MethodGet, gen.SubscribePath+"?uri="+url.QueryEscape(uri), "")
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan [2]string, 16)
	go func() {
		defer close(events)
		var ev [2]string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			switch line := sc.Text(); {
			case strings.HasPrefix(line, "event: "):
				ev[0] = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev[1] = strings.TrimPrefix(line, "data: ")
			case line == "" && ev[0] != "":
				events <- ev
				ev = [2]string{}
			}
		}
	}()
	next := func() [2]string {
		t.Helper()
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return [2]string{}
	}
	if ev := next(); ev != [2]string{"ready", `{"uri":"` + uri + `"}`} {
		t.Fatalf("first event %q, want ready", ev)
	}
	for _, id := range []string{"topic/other", "topic/streams"} {
		args := fmt.Sprintf(`{"nodes":[{"id":%q,"type":"Topic","properties":{"name":"x"}}]}`, id)
		if _, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := f.cat.Invoke(t.Context(), "changes_since", json.RawMessage(`{"cursor":0,"limit":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	var changes struct{ Cursor uint64 }
	if err := json.Unmarshal(res.Structured, &changes); err != nil {
		t.Fatal(err)
	}
	want := [2]string{"updated", fmt.Sprintf(`{"uri":%q,"seq":%d}`, uri, changes.Cursor)}
	if ev := next(); ev != want {
		t.Errorf("got %q, want %q", ev, want)
	}
}

// TestScopes: with tokens configured, a request without one is refused by
// the guard, a read token may read but not write (403 problem), and a write
// token may write.
func TestScopes(t *testing.T) {
	f := newFixture(t, &mcp.HTTPOptions{RateLimit: -1, Tokens: []mcp.Token{
		{Name: "reader", Scope: mcp.ScopeRead, Secret: "r-secret"}, {Name: "writer", Scope: mcp.ScopeWrite, Secret: "w-secret"}}})
	call := func(token, tool, args string) reply {
		req := f.request(t, http.MethodPost, gen.ToolsPath+tool, args)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		return f.do(t, req, both)
	}
	write := `{"nodes":[{"id":"topic/scoped","type":"Topic","properties":{"name":"Scoped"}}]}`
	if r := call("", "get_node", `{"id":"service/billing"}`); r.status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", r.status, r.body)
	}
	if r := call("r-secret", "get_node", `{"id":"service/billing"}`); r.status != 200 {
		t.Errorf("read token, read: %d %s", r.status, r.body)
	}
	problemOf(t, call("r-secret", "upsert_nodes", write), http.StatusForbidden, mcp.CodeForbidden)
	if r := call("w-secret", "upsert_nodes", write); r.status != 200 {
		t.Errorf("write token, write: %d %s", r.status, r.body)
	}
}

// TestBodyLimit: a body over the guard's cap is a 413, whether the request
// declares its length (the guard refuses it) or streams it (the handler
// hits the cap while reading).
func TestBodyLimit(t *testing.T) {
	f := newFixture(t, &mcp.HTTPOptions{RateLimit: -1, MaxBodyBytes: 64})
	big := `{"nodes":[{"id":"topic/big","type":"Topic","properties":{"name":"` + strings.Repeat("x", 200) + `"}}]}`
	if r := f.post(t, "upsert_nodes", big, both); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("declared: %d %s", r.status, r.body)
	}
	req := f.request(t, http.MethodPost, gen.ToolsPath+"upsert_nodes", "")
	req.Body = io.NopCloser(strings.NewReader(big)) // no length: sent chunked
	req.ContentLength = -1
	p := problemOf(t, f.do(t, req, response), http.StatusRequestEntityTooLarge, "too_large")
	if !strings.Contains(p.Detail, "64 bytes") {
		t.Errorf("detail %q does not give the limit", p.Detail)
	}
}

// TestOpenAPIServed: /openapi.json is the committed document.
func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, f.request(t, http.MethodGet, "/openapi.json", ""), nothing)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || !bytes.Equal(r.body, gen.Committed("openapi.json")) {
		t.Errorf("%d %s, %d bytes", r.status, r.header.Get("Content-Type"), len(r.body))
	}
}

// TestSubscribeResumes: every update carries its change's sequence number
// as its SSE id, and a stream opened with ?since= or Last-Event-ID first
// replays the changes after it that touched the URI; a bad one is a 400
// with a violation.
func TestSubscribeResumes(t *testing.T) {
	f := newFixture(t, nil)
	uri := "lore://node/topic/resume"
	var seqs []uint64
	for _, name := range []string{"one", "two", "three"} {
		res, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(`{"nodes":[{"id":"topic/resume","type":"Topic","properties":{"name":"`+name+`"}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		var w struct{ Seq uint64 }
		json.Unmarshal(res.Structured, &w)
		seqs = append(seqs, w.Seq)
	}
	for _, tc := range []struct {
		name   string
		query  string
		header string
	}{
		{"since", fmt.Sprintf("&since=%d", seqs[0]), ""},
		{"Last-Event-ID", "", fmt.Sprint(seqs[0])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := f.request(t, http.MethodGet, gen.SubscribePath+"?uri="+url.QueryEscape(uri)+tc.query, "")
			if tc.header != "" {
				req.Header.Set("Last-Event-ID", tc.header)
			}
			resp, err := f.srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var ids []string
			for sc.Scan() && len(ids) < 2 {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					ids = append(ids, id)
				}
			}
			if want := []string{fmt.Sprint(seqs[1]), fmt.Sprint(seqs[2])}; !slices.Equal(ids, want) {
				t.Errorf("replayed ids %v, want %v", ids, want)
			}
		})
	}
	p := problemOf(t, f.do(t, f.request(t, http.MethodGet, gen.SubscribePath+"?uri="+url.QueryEscape(uri)+"&since=x", ""), nothing), 400, mcp.CodeInvalid)
	if len(p.Violations) != 1 || p.Violations[0].Pointer != "/since" {
		t.Errorf("violations %+v, want one at /since", p.Violations)
	}
}

// TestViolationsOnEvery400: a 400 always lists violations, even when the
// request has no better place for them than the whole.
func TestViolationsOnEvery400(t *testing.T) {
	f := newFixture(t, nil)
	for _, tc := range []struct {
		name, code string
		req        *http.Request
		pointer    string
	}{
		{"unconfirmed delete", mcp.CodeConfirm, f.request(t, http.MethodPost, gen.ToolsPath+"delete_nodes", `{"nodes":[{"id":"service/ledger"}]}`), "/confirm"},
		{"malformed query string", mcp.CodeInvalid, f.request(t, http.MethodGet, gen.ToolsPath+"get_node?id=%zz", ""), ""},
		{"bad arguments", mcp.CodeInvalid, f.request(t, http.MethodPost, gen.ToolsPath+"get_node", `{"id":7}`), "/id"},
	} {
		p := problemOf(t, f.do(t, tc.req, nothing), 400, tc.code)
		if len(p.Violations) == 0 || p.Violations[0].Pointer != tc.pointer {
			t.Errorf("%s: violations %+v, want one at %q", tc.name, p.Violations, tc.pointer)
		}
	}
}

// TestIDsDecodedOnce: an ID that holds a %-escape travels in a query
// parameter percent-encoded once more, as any query value does, and the
// server decodes it exactly once: "entity/Ada%20Lovelace" is sent as
// id=entity%2FAda%2520Lovelace and read back as itself, in a tool's
// parameter, a resource URI and an edge's ends alike. A value decoded
// twice would name "entity/Ada Lovelace", which is not a valid ID.
func TestIDsDecodedOnce(t *testing.T) {
	f := newFixture(t, nil)
	const ada, acme = "entity/Ada%20Lovelace", "entity/Acme%2FCo"
	body := fmt.Sprintf(`{"nodes": [{"id": %q, "type": "Entity", "properties": {"name": "Ada Lovelace", "entityType": "person"}},
		{"id": %q, "type": "Entity", "properties": {"name": "Acme/Co", "entityType": "company"}}]}`, ada, acme)
	if r := f.post(t, "upsert_nodes", body, both); r.status != 200 {
		t.Fatalf("upsert: %d %s", r.status, r.body)
	}
	if r := f.post(t, "upsert_edges", fmt.Sprintf(`{"edges": [{"from": %q, "label": "relation", "to": %q, "key": "works_at"}]}`, ada, acme), both); r.status != 200 {
		t.Fatalf("upsert edge: %d %s", r.status, r.body)
	}
	var node struct {
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	r := f.get(t, "get_node", url.Values{"id": {ada}})
	if err := json.Unmarshal(r.body, &node); r.status != 200 || err != nil || node.Node.ID != ada {
		t.Errorf("get_node?%s: %d %s, want node %s", url.Values{"id": {ada}}.Encode(), r.status, r.body, ada)
	}
	var nb struct {
		Nodes []struct {
			Node struct {
				ID string `json:"id"`
			} `json:"node"`
		} `json:"nodes"`
	}
	r = f.get(t, "neighbors", url.Values{"id": {ada}, "edge": {"relation"}})
	if err := json.Unmarshal(r.body, &nb); r.status != 200 || err != nil || len(nb.Nodes) != 1 || nb.Nodes[0].Node.ID != acme {
		t.Errorf("neighbors of %s: %d %s, want %s", ada, r.status, r.body, acme)
	}
	uri := "lore://node/" + ada
	r = f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath+"?uri="+url.QueryEscape(uri), ""), both)
	if err := json.Unmarshal(r.body, &node); r.status != 200 || err != nil || node.Node.ID != ada {
		t.Errorf("resource %s: %d %s", uri, r.status, r.body)
	}
	// Sent unencoded, the escape is the query's own: it decodes to a space,
	// which no ID holds, and the answer says so instead of finding
	// another node.
	r = f.do(t, f.request(t, http.MethodGet, gen.ToolsPath+"get_node?id="+ada, ""), response)
	if p := problemOf(t, r, 400, mcp.CodeInvalid); !strings.Contains(p.Detail, "entity/Ada Lovelace") {
		t.Errorf("detail %q does not quote the ID it read", p.Detail)
	}
}
