package gql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/gen/gql"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// FuzzGraphQL sends any document with any variables through the real
// handler, over POST (the variables as raw JSON) and GET: no panic, no
// hang, no internal error, and always a GraphQL JSON answer.
func FuzzGraphQL(f *testing.F) {
	s := graphtest.New(f)
	if _, err := graph.Import(f.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		f.Fatal(err)
	}
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: graph.Limits{TimeoutMs: 2000}})
	h := mcp.Guard(gql.NewHandler(cat, nil), &mcp.HTTPOptions{RateLimit: -1})
	for _, tc := range toolCases {
		f.Add(tc.query, "{}")
	}
	for _, s := range [][2]string{
		{`query($id: ID!) { getNode(id: $id) { node { id neighbors { node { id } } } } }`, `{"id":"service/billing"}`},
		{`query($q: String!, $n: Int) { searchNodes(query: $q, limit: $n) { hits { node { id } } } }`, `{"q":"billing","n":"x"}`},
		{`{ __schema { types { name } } }`, `null`},
		{fragmentBomb(12), `{}`},
		{`{ a: __typename b: __typename }`, `[1]`},
		{`subscription { changes { seq } }`, `{}`},
		{`mutation { deleteNodes(nodes: [{id: "x"}], confirm: true) { seq } }`, `{"a":1,"a":2}`},
		{`{`, `{"v":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, query, variables string) {
		q, _ := json.Marshal(query)
		post := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":`+string(q)+`,"variables":`+variables+`}`))
		post.Header.Set("Content-Type", "application/json")
		get := httptest.NewRequest(http.MethodGet, "/graphql", nil)
		get.URL.RawQuery = url.Values{"query": {query}, "variables": {variables}}.Encode()
		get.RequestURI = get.URL.RequestURI()
		get.Header.Set("GraphQL-Require-Preflight", "1")
		for _, req := range []*http.Request{post, get} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			rec := httptest.NewRecorder()
			req = req.WithContext(ctx)
			req.Host = "localhost"
			h.ServeHTTP(rec, req)
			timedOut := ctx.Err() != nil
			cancel()
			if timedOut {
				t.Fatalf("%s: no answer within 10s", req.Method)
			}
			var out struct {
				Data   json.RawMessage   `json:"data"`
				Errors []json.RawMessage `json:"errors"`
			}
			if rec.Code == http.StatusInternalServerError || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
				t.Fatalf("%s: %d %s", req.Method, rec.Code, rec.Body)
			}
			if bytes.Contains(rec.Body.Bytes(), []byte(`"INTERNAL"`)) {
				t.Fatalf("%s: internal error: %s", req.Method, rec.Body)
			}
		}
	})
}
