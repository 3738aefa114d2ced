package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStdioRefusesDeepJSON: lore mcp answers a request nested deeper than
// 64 levels with a JSON-RPC error carrying its id, before decoding it, and
// goes on to answer the next request; stdout carries nothing else. The
// refusal is logged by the process serving the session: lore mcp --direct
// on its stderr, the shared holder in its log.
func TestStdioRefusesDeepJSON(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("direct=%v", direct), func(t *testing.T) { testStdioRefusesDeepJSON(t, direct) })
	}
}

func testStdioRefusesDeepJSON(t *testing.T, direct bool) {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing","x":` + deep + `}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing"}}}`,
	}, "\n") + "\n"
	store := newStore(t)
	args := []string{"mcp", "--store", store}
	if direct {
		args = append(args, "--direct")
	}
	cmd := exec.CommandContext(t.Context(), loreBin, args...)
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
	log := errb.String()
	if !direct {
		data, _ := os.ReadFile(filepath.Join(store, holderLog))
		log = string(data)
	}
	if !strings.Contains(log, "refused a stdio message") {
		t.Errorf("the log does not have the refusal:\n%s", log)
	}
}
