package rest_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/gen/rest"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// TestDeepBodyRefused: the body, 1 MB of brackets under one
// argument, is refused before it is decoded, with where and why; before,
// decoding it took minutes of CPU and went on after the client left. The
// bound only tells an answer from a hang.
func TestDeepBodyRefused(t *testing.T) {
	f := newFixture(t, &mcp.HTTPOptions{RateLimit: -1, MaxBodyBytes: 2 << 20})
	n := 500_000
	body := `{"query":"x","type":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.srv.URL+gen.ToolsPath+"search_nodes", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	r := f.do(t, req, nothing)
	p := problemOf(t, r, http.StatusBadRequest, mcp.CodeInvalid)
	want := fmt.Sprintf("/type%s", strings.Repeat("/0", schema.DefaultMaxDepth-1))
	if len(p.Violations) != 1 || p.Violations[0].Pointer != want || !strings.Contains(p.Detail, "nested deeper than 64") {
		t.Errorf("problem %+v, want a violation at %s", p, want)
	}
}

// fuzzHandler is the REST handler behind the guards, over the example data.
func fuzzHandler(t testing.TB) (http.Handler, []*mcp.Tool) {
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: graph.Limits{TimeoutMs: 2000}})
	return mcp.Guard(rest.NewHandler(cat, nil), &mcp.HTTPOptions{RateLimit: -1}), cat.Tools()
}

// serveFuzz runs one request through h; it fails on an internal error or
// an answer that is not JSON, and (through the context) on a hang.
func serveFuzz(t *testing.T, h http.Handler, req *http.Request) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec := httptest.NewRecorder()
	req = req.WithContext(ctx)
	req.Host = "localhost"
	h.ServeHTTP(rec, req)
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no answer within 10s", req.Method, req.URL)
	}
	if rec.Code == http.StatusInternalServerError {
		t.Fatalf("%s %s: internal error: %s", req.Method, req.URL, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.Contains(ct, "json") && rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("%s %s: %d %q %s", req.Method, req.URL, rec.Code, ct, rec.Body)
	}
}

// FuzzRESTBody posts any body to any tool through the real handler: no
// panic, no hang, no internal error.
func FuzzRESTBody(f *testing.F) {
	h, tools := fuzzHandler(f)
	for _, s := range []string{`{"id":"service/billing"}`, `{"query":"billing","limit":3}`, `{}`, ``, `[`, `{"a":1,"a":2}`,
		`{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","hops":[1,3]}]}`, `{"cursor":"eyJmIjoiIn0"}`,
		`{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":"X"}}]}`, "\"\xff\"", `{"type":[[[[[[[[1]]]]]]]]}`} {
		for i := range tools {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, tool uint8, body []byte) {
		name := tools[int(tool)%len(tools)].Name
		req := httptest.NewRequest(http.MethodPost, gen.ToolsPath+name, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		serveFuzz(t, h, req)
	})
}

// FuzzRESTQuery calls any read-only tool with any query string through the
// real handler: no panic, no hang, no internal error.
func FuzzRESTQuery(f *testing.F) {
	h, all := fuzzHandler(f)
	var tools []string
	for _, t := range all {
		if t.ReadOnly {
			tools = append(tools, t.Name)
		}
	}
	for _, s := range []string{"id=service/billing", "query=billing&limit=3", "", "from=%7B%22ids%22%3A%5B%22service%2Fbilling%22%5D%7D",
		"edge=dependsOn&edge=owns", "limit=1e999", "a=%ZZ", "from=" + url.QueryEscape(strings.Repeat("[", 80)), "type=Service&where=%7B%7D"} {
		for i := range tools {
			f.Add(uint8(i), s)
		}
	}
	f.Fuzz(func(t *testing.T, tool uint8, query string) {
		u := &url.URL{Path: gen.ToolsPath + tools[int(tool)%len(tools)], RawQuery: query}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = u
		req.RequestURI = u.RequestURI()
		serveFuzz(t, h, req)
	})
}
