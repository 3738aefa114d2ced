package mcp_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/mcp"
)

// Arguments a decoder would change silently (invalid UTF-8 turned into
// U+FFFD, a repeated key keeping the last value) or take long over (deep
// nesting) are refused before any decoding, naming the JSON pointer; the
// depth limit is an option. Every surface's calls pass through Invoke.
func TestArgumentsCheckedBeforeDecoding(t *testing.T) {
	deep := `{"from":{"type":"Service","where":` + strings.Repeat(`{"and":[`, 40) + `{"name":"x"}` + strings.Repeat(`]}`, 40) + `}}`
	for _, tt := range []struct {
		name, tool, args string
		depth            int
		ptr, reason      string
	}{
		{"invalid UTF-8", "get_node", "{\"id\":\"service/\xff\"}", 0, "/id", "invalid UTF-8"},
		{"lone surrogate", "search_nodes", `{"query":"\udc00"}`, 0, "/query", "surrogate"},
		{"duplicate key", "search_nodes", `{"query":"billing","query":"payments"}`, 0, "/query", "the same key appears twice"},
		{"nested duplicate key", "upsert_nodes", `{"nodes":[{"id":"topic/a","type":"Topic","properties":{"name":"a","name":"b"}}]}`, 0, "/nodes/0/properties/name", "the same key appears twice"},
		{"deep", "query_graph", `{"query":` + deep + `}`, 0, "/query/from/where", "nested deeper than 64 levels"},
		{"depth option", "get_node", `{"id":"service/billing","x":[[[1]]]}`, 2, "/x/0", "nested deeper than 2 levels"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, &mcp.Options{MaxDepth: tt.depth})
			_, err := f.cat.Invoke(t.Context(), tt.tool, []byte(tt.args))
			var me *mcp.Error
			if !errors.As(err, &me) || me.Code != mcp.CodeInvalid || len(me.Violations) != 1 {
				t.Fatalf("Invoke = %v, want one violation", err)
			}
			if v := me.Violations[0]; !strings.HasPrefix(v.Pointer, tt.ptr) || !strings.Contains(v.Message, tt.reason) {
				t.Errorf("violation %+v, want %s: %s", v, tt.ptr, tt.reason)
			}
		})
	}
}

// Arguments that pass the input schema but not the Go value they decode
// into are refused in the arguments' own terms, never naming Go types.
func TestArgumentDecodingNamesNoGoType(t *testing.T) {
	f := newFixture(t, nil)
	_, err := f.cat.Invoke(t.Context(), "upsert_nodes", []byte(`{"nodes":[{"id":"topic/a","type":"Topic","properties":{"name":"a"},"expectedRevision":1e30}]}`))
	var me *mcp.Error
	if !errors.As(err, &me) || me.Code != mcp.CodeInvalid || !strings.Contains(err.Error(), "/nodes/0/expectedRevision") {
		t.Fatalf("Invoke = %v", err)
	}
	for _, leak := range []string{"Go ", "int64", "mcp.", "In."} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("the error names %q: %v", leak, err)
		}
	}
}

// Through the SDK on both protocol eras, as an MCP client sends them: a
// repeated key in the arguments is refused with its pointer.
func TestArgumentsCheckedOverMCP(t *testing.T) {
	f := newFixture(t, nil)
	for _, era := range eras {
		cs := f.connect(t, era, nil)
		res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "search_nodes", Arguments: json.RawMessage(`{"query":"billing","query":"payments"}`)})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				text += tc.Text
			}
		}
		if !res.IsError || !strings.Contains(text, "/query") || !strings.Contains(text, "the same key appears twice") {
			t.Errorf("%s: a repeated key: error %v, %q", era, res.IsError, text)
		}
	}
}
