package mcp_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// TestForgedCursor: a query_graph cursor rewritten by the client is a tool
// error saying to send the query again without it; it used to panic and
// end the process.
func TestForgedCursor(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	const query = `{"from":{"type":"Service"},"traverse":[{"edge":"dependsOn","direction":"both"}],"limit":2`
	res := f.call(t, cs, "query_graph", query+`}`)
	first := structured[graph.QueryResult](t, res)
	if first.Cursor == "" {
		t.Fatalf("no cursor: %s", text(res))
	}
	raw, err := base64.RawURLEncoding.DecodeString(first.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw[min(16, len(raw)):], &m); err != nil { // after the 16-byte MAC
		t.Fatal(err)
	}
	m["t"] = -1
	forged, _ := json.Marshal(m)
	res = f.call(t, cs, "query_graph", query+`,"cursor":"`+base64.RawURLEncoding.EncodeToString(forged)+`"}`)
	if !res.IsError || !strings.Contains(text(res), "not one this server issued for this store; send the query again without it") {
		t.Fatalf("forged cursor: isError=%v %s", res.IsError, text(res))
	}
	// The server is still up, and the real cursor still works.
	if res = f.call(t, cs, "query_graph", query+`,"cursor":"`+first.Cursor+`"}`); res.IsError {
		t.Fatalf("real cursor: %s", text(res))
	}
}
