package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestStdioRefusesDeepJSON: lore mcp answers a request nested deeper than
// 64 levels with a JSON-RPC error carrying its id, before decoding it, and
// goes on to answer the next request; stdout carries nothing else.
func TestStdioRefusesDeepJSON(t *testing.T) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing","x":` + deep + `}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing"}}}`,
	}, "\n") + "\n"
	cmd := exec.CommandContext(t.Context(), loreBin, "mcp", "--store", t.TempDir())
	cmd.Stdin = strings.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("lore mcp: %v\n%s", err, errb.String())
	}
	got := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m struct {
			ID    int `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not JSON-RPC on stdout: %.200s", l)
		}
		got[m.ID] = l
		if m.ID == 2 && (m.Error == nil || m.Error.Code != -32600 || !strings.Contains(m.Error.Message, "nested deeper than 64 levels")) {
			t.Errorf("the deep request: %.300s", l)
		}
	}
	if len(got) != 3 || !strings.Contains(got[3], `"structuredContent"`) {
		t.Fatalf("want answers to 1, 2 and 3, the last a result:\n%s\nstderr:\n%s", out.String(), errb.String())
	}
	if !strings.Contains(errb.String(), "refused a stdio message") {
		t.Errorf("stderr does not log the refusal:\n%s", errb.String())
	}
}
