package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// TestOneErrorTable: one failure of each category, made through MCP, REST
// and GraphQL, reads the same on all three: the code, HTTP status and
// GraphQL extensions.code of its row of mcp.ErrorKinds, and one message.
// Deadlines and cancellations are made by serving the call under a
// context already past its deadline, or cancelled.
func TestOneErrorTable(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for _, tc := range []struct {
		name, code, tool, args, gql string
		ctx                         context.Context // the context every surface serves the call under; nil: the request's
	}{
		{name: "invalid", code: mcp.CodeInvalid, tool: "upsert_nodes",
			args: `{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":7}}]}`,
			gql:  `mutation { upsertNodes(nodes: [{id: "topic/x", type: "Topic", properties: {name: 7}}]) { seq } }`},
		{name: "not found", code: mcp.CodeNotFound, tool: "get_node", args: `{"id":"service/nope"}`,
			gql: `{ getNode(id: "service/nope") { node { id } } }`},
		{name: "conflict", code: mcp.CodeConflict, tool: "upsert_nodes",
			args: `{"nodes":[{"id":"service/billing","type":"Service","properties":{"name":"billing"},"merge":true,"expectedRevision":0}]}`,
			gql:  `mutation { upsertNodes(nodes: [{id: "service/billing", type: "Service", properties: {name: "billing"}, merge: true, expectedRevision: 0}]) { seq } }`},
		{name: "deadline", code: mcp.CodeDeadline, tool: "get_node", args: `{"id":"service/billing"}`,
			gql: `{ getNode(id: "service/billing") { node { id } } }`, ctx: expired},
		{name: "cancelled", code: mcp.CodeCancelled, tool: "get_node", args: `{"id":"service/billing"}`,
			gql: `{ getNode(id: "service/billing") { node { id } } }`, ctx: cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := mcp.KindOf(tc.code)
			if kind.Code != tc.code {
				t.Fatalf("%s is not in mcp.ErrorKinds", tc.code)
			}
			s := graphtest.New(t)
			if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
				t.Fatal(err)
			}
			srv := mcp.NewServer(mcp.NewCatalog(s, nil), nil)
			h := web.NewHandler(srv, nil)
			if tc.ctx != nil {
				// The MCP tool call, and the REST and GraphQL requests, run
				// under tc.ctx; the SDK still writes the answer.
				srv.SDK().AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
					return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
						if method == "tools/call" {
							ctx = tc.ctx
						}
						return next(ctx, method, req)
					}
				})
				inner := h
				h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/mcp" {
						r = r.WithContext(tc.ctx)
					}
					inner.ServeHTTP(w, r)
				})
			}
			hs := httptest.NewServer(h)
			t.Cleanup(hs.Close)

			// MCP: a tool result with isError, "code: message".
			c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "errors", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: tc.tool, Arguments: json.RawMessage(tc.args)})
			if err != nil {
				t.Fatalf("mcp: %v", err)
			}
			if !res.IsError || len(res.Content) != 1 {
				t.Fatalf("mcp: want one error block, got %+v", res)
			}
			mcpCode, mcpText, _ := strings.Cut(res.Content[0].(*mcpsdk.TextContent).Text, ": ")
			mcpMessage, _, _ := strings.Cut(mcpText, "\n- ") // the violations follow

			// REST: an RFC 9457 problem.
			resp, err := http.Post(hs.URL+"/api/v1/tools/"+tc.tool, "application/json", strings.NewReader(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var p struct {
				Title  string `json:"title"`
				Status int    `json:"status"`
				Detail string `json:"detail"`
				Code   string `json:"code"`
			}
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("rest: %v: %s", err, body)
			}

			// GraphQL: the message with extensions.code.
			q, _ := json.Marshal(map[string]string{"query": tc.gql})
			resp, err = http.Post(hs.URL+"/graphql", "application/json", bytes.NewReader(q))
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			var g struct {
				Errors []struct {
					Message    string         `json:"message"`
					Extensions map[string]any `json:"extensions"`
				} `json:"errors"`
			}
			if err := json.Unmarshal(body, &g); err != nil || len(g.Errors) != 1 {
				t.Fatalf("graphql: want one error, got %s (%v)", body, err)
			}

			if mcpCode != kind.Code {
				t.Errorf("mcp code %q, want %q (%s)", mcpCode, kind.Code, mcpText)
			}
			if p.Code != kind.Code || p.Status != kind.Status || resp.StatusCode == 0 || p.Title != kind.Title {
				t.Errorf("rest: code %q status %d title %q, want %q %d %q", p.Code, p.Status, p.Title, kind.Code, kind.Status, kind.Title)
			}
			if got := g.Errors[0].Extensions["code"]; got != kind.GraphQL {
				t.Errorf("graphql extensions.code %v, want %q", got, kind.GraphQL)
			}
			if mcpMessage == "" || p.Detail != mcpMessage || g.Errors[0].Message != mcpMessage {
				t.Errorf("the message differs:\nmcp     %q\nrest    %q\ngraphql %q", mcpMessage, p.Detail, g.Errors[0].Message)
			}
		})
	}
}
