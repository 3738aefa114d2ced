package web_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestLoreSeqHeaders: a REST or GraphQL request that writes answers with
// the write's change-log number in Lore-Seq; Lore-Min-Seq is accepted on
// the next request (and echoed, being that request's floor), and a value
// that is not a number is refused.
func TestLoreSeqHeaders(t *testing.T) {
	f := newFixture(t)
	post := func(path, body string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", f.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := post("/api/v1/tools/upsert_nodes", `{"nodes":[{"id":"topic/seq","type":"Topic","properties":{"name":"seq"}}]}`, nil)
	seq, err := strconv.ParseUint(resp.Header.Get("Lore-Seq"), 10, 64)
	if resp.StatusCode != 200 || err != nil || seq == 0 {
		t.Fatalf("REST write: status %d, Lore-Seq %q", resp.StatusCode, resp.Header.Get("Lore-Seq"))
	}
	resp = post("/graphql", `{"query":"mutation { upsertNodes(nodes: [{id: \"topic/seq2\", type: \"Topic\", properties: {name: \"seq2\"}}]) { seq } }"}`, nil)
	if got, _ := strconv.ParseUint(resp.Header.Get("Lore-Seq"), 10, 64); resp.StatusCode != 200 || got != seq+1 {
		t.Fatalf("GraphQL write: status %d, Lore-Seq %q; want %d", resp.StatusCode, resp.Header.Get("Lore-Seq"), seq+1)
	}
	resp = post("/api/v1/tools/get_node", `{"id":"topic/seq"}`, map[string]string{"Lore-Min-Seq": strconv.FormatUint(seq, 10)})
	if resp.StatusCode != 200 || resp.Header.Get("Lore-Seq") != strconv.FormatUint(seq, 10) {
		t.Fatalf("read with Lore-Min-Seq %d: status %d, Lore-Seq %q", seq, resp.StatusCode, resp.Header.Get("Lore-Seq"))
	}
	resp = post("/api/v1/tools/search_nodes", `{"query":"seq"}`, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Lore-Seq") != "" {
		t.Fatalf("a read without Lore-Min-Seq: status %d, Lore-Seq %q; want none", resp.StatusCode, resp.Header.Get("Lore-Seq"))
	}
	if resp = post("/api/v1/tools/get_node", `{"id":"topic/seq"}`, map[string]string{"Lore-Min-Seq": "soon"}); resp.StatusCode != 400 {
		t.Fatalf("Lore-Min-Seq: soon: status %d, want 400", resp.StatusCode)
	}
}

// TestLoreSeqOnStatelessMCP: a 2026-07-28 request to /mcp has no session
// to keep a floor in, so it takes Lore-Min-Seq and answers with Lore-Seq
// as REST and GraphQL do: a write returns its change-log number, and a
// read sent with it is answered at that floor (and echoes it).
func TestLoreSeqOnStatelessMCP(t *testing.T) {
	f := newFixture(t)
	call := func(method, name, args string, header map[string]string) *http.Response {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{}},"name":"` + name + `","arguments":` + args + `}}`
		req, _ := http.NewRequest("POST", f.url+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", name)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(data), `"result"`) || strings.Contains(string(data), `"isError":true`) {
			t.Fatalf("%s %s: %d %s", method, name, resp.StatusCode, data)
		}
		return resp
	}
	resp := call("tools/call", "upsert_nodes", `{"nodes":[{"id":"topic/stateless","type":"Topic","properties":{"name":"stateless"}}]}`, nil)
	seq, err := strconv.ParseUint(resp.Header.Get("Lore-Seq"), 10, 64)
	if err != nil || seq == 0 {
		t.Fatalf("a stateless write: Lore-Seq %q, want the write's change-log number", resp.Header.Get("Lore-Seq"))
	}
	resp = call("tools/call", "get_node", `{"id":"topic/stateless"}`, map[string]string{"Lore-Min-Seq": strconv.FormatUint(seq, 10)})
	if got := resp.Header.Get("Lore-Seq"); got != strconv.FormatUint(seq, 10) {
		t.Errorf("a stateless read with Lore-Min-Seq %d: Lore-Seq %q", seq, got)
	}
}
