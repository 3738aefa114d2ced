package mcp_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// minimalArgs are arguments each tool accepts.
var minimalArgs = map[string]string{
	"describe_model": `{}`,
	"get_node":       `{"id":"service/billing"}`,
	"get_edge":       `{"id":"dependsOn(service/billing,service/ledger)"}`,
	"search_nodes":   `{"query":"billing"}`,
	"neighbors":      `{"id":"service/billing"}`,
	"find_paths":     `{"from":"service/payments","to":"service/ledger"}`,
	"query_graph":    `{"from":{"ids":["service/billing"]}}`,
	"changes_since":  `{}`,
	"upsert_nodes":   `{"nodes":[{"id":"topic/x","type":"Topic","properties":{"name":"x"}}]}`,
	"upsert_edges":   `{"edges":[{"from":"service/billing","label":"dependsOn","to":"service/payments"}]}`,
	"delete_nodes":   `{"nodes":[{"id":"topic/x"}],"confirm":true}`,
	"delete_edges":   `{"edges":[{"from":"service/billing","label":"dependsOn","to":"service/payments"}],"confirm":true}`,
}

func invokeErr(t *testing.T, cat *mcp.Catalog, tool, args string) *mcp.Error {
	t.Helper()
	_, err := cat.Invoke(t.Context(), tool, json.RawMessage(args))
	var te *mcp.Error
	if !errors.As(err, &te) {
		t.Fatalf("%s %s: want a tool error, got %v", tool, args, err)
	}
	return te
}

// TestStrictArguments: every tool's declared schema and Go type agree on
// its arguments: a call with the minimal arguments passes both, and a
// field neither declares, at the top or inside an item, is an
// invalid-argument error naming it.
func TestStrictArguments(t *testing.T) {
	f := newFixture(t, nil)
	for _, tool := range f.cat.Tools() {
		args, ok := minimalArgs[tool.Name]
		if !ok {
			t.Errorf("%s: no minimal arguments in this test", tool.Name)
			continue
		}
		if _, err := f.cat.Invoke(t.Context(), tool.Name, json.RawMessage(args)); err != nil {
			t.Errorf("%s %s: %v", tool.Name, args, err)
		}
		extra := args[:len(args)-1]
		if extra != "{" {
			extra += ","
		}
		extra += `"bogusField":1}`
		if e := invokeErr(t, f.cat, tool.Name, extra); e.Code != mcp.CodeInvalid || !strings.Contains(e.Error(), "bogusField") {
			t.Errorf("%s: an unknown argument gave %s: %v", tool.Name, e.Code, e)
		}
	}
	for _, tc := range []struct{ tool, args string }{
		{"upsert_nodes", `{"nodes":[{"id":"topic/x","type":"Topic","properties":{},"bogusField":1}]}`},
		{"upsert_nodes", `{"nodes":[{"id":"topic/x","type":"Topic","properties":{},"createdAt":"2020-01-01T00:00:00Z"}]}`}, // imports only
		{"upsert_edges", `{"edges":[{"from":"a/b","label":"dependsOn","to":"a/c","bogusField":1}]}`},
		{"delete_nodes", `{"nodes":[{"id":"topic/x","bogusField":1}],"confirm":true}`},
		{"delete_edges", `{"edges":[{"from":"a/b","label":"dependsOn","to":"a/c","bogusField":1}],"confirm":true}`},
		{"query_graph", `{"from":{"ids":["a/b"],"bogusField":1}}`},
		{"query_graph", `{"from":{"ids":["a/b"]},"traverse":[{"edge":"dependsOn","bogusField":1}]}`},
	} {
		e := invokeErr(t, f.cat, tc.tool, tc.args)
		field := "bogusField"
		if strings.Contains(tc.args, "createdAt") {
			field = "createdAt"
		}
		if e.Code != mcp.CodeInvalid || !strings.Contains(e.Error(), field) {
			t.Errorf("%s %s: gave %s: %v", tc.tool, tc.args, e.Code, e)
		}
	}
}

// TestWriteLimits: MaxWriteItems is enforced (one more item is refused at
// /nodes, nothing written), and the idempotency key's limit is the
// store's, graph.MaxIdempotencyKey.
func TestWriteLimits(t *testing.T) {
	f := newFixture(t, nil)
	items := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":"topic/t%d","type":"Topic","properties":{"name":"t%d"}}`, i, i)
		}
		return b.String()
	}
	e := invokeErr(t, f.cat, "upsert_nodes", `{"nodes":[`+items(mcp.MaxWriteItems+1)+`]}`)
	if e.Code != mcp.CodeInvalid || len(e.Violations) != 1 || e.Violations[0].Pointer != "/nodes" {
		t.Errorf("MaxWriteItems+1 nodes: %v", e)
	}
	if _, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(`{"nodes":[`+items(mcp.MaxWriteItems)+`]}`)); err != nil {
		t.Errorf("MaxWriteItems nodes: %v", err)
	}
	key := strings.Repeat("k", graph.MaxIdempotencyKey)
	if _, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(`{"nodes":[`+items(1)+`],"idempotencyKey":"`+key+`"}`)); err != nil {
		t.Errorf("a key of graph.MaxIdempotencyKey bytes: %v", err)
	}
	e = invokeErr(t, f.cat, "upsert_nodes", `{"nodes":[`+items(1)+`],"idempotencyKey":"`+key+`k"}`)
	if e.Code != mcp.CodeInvalid || len(e.Violations) != 1 || e.Violations[0].Pointer != "/idempotencyKey" {
		t.Errorf("a key one byte too long: %v", e)
	}
}

// TestStrictOutputsClosed: the copy of each output schema that every
// result of the suite is checked against (fixture.call, ValidateOutput)
// closes every object it describes, so a field the schema lacks fails
// the suite; the published copy has the same properties.
func TestStrictOutputsClosed(t *testing.T) {
	f := newFixture(t, nil)
	for _, tool := range f.cat.Tools() {
		var strict, published any
		if err := json.Unmarshal(tool.StrictOutput(), &strict); err != nil {
			t.Fatal(err)
		}
		json.Unmarshal(tool.Output, &published)
		var walk func(s map[string]any, at string)
		walk = func(s map[string]any, at string) {
			props, _ := s["properties"].(map[string]any)
			if props != nil && s["additionalProperties"] != false {
				t.Errorf("%s: the strict output schema leaves %s open", tool.Name, at)
			}
			for k, p := range props {
				walk(p.(map[string]any), at+"/properties/"+k)
			}
			if items, ok := s["items"].(map[string]any); ok {
				walk(items, at+"/items")
			}
			if values, ok := s["additionalProperties"].(map[string]any); ok {
				walk(values, at+"/additionalProperties")
			}
			for _, kw := range []string{"anyOf", "oneOf", "allOf"} {
				list, _ := s[kw].([]any)
				for i, b := range list {
					walk(b.(map[string]any), fmt.Sprintf("%s/%s/%d", at, kw, i))
				}
			}
		}
		walk(strict.(map[string]any), "")
		if sp, pp := strict.(map[string]any)["properties"], published.(map[string]any)["properties"]; len(sp.(map[string]any)) != len(pp.(map[string]any)) {
			t.Errorf("%s: strict and published output schemas list different properties", tool.Name)
		}
	}
}
