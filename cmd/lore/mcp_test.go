package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioAnswersEveryRequest writes three requests and closes stdin at
// once, as `printf … | lore mcp` does: every request is answered on stdout,
// nothing else is written there, and the process exits 0.
func TestStdioAnswersEveryRequest(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"echo","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_nodes","arguments":{"query":"billing"}}}`,
	}, "\n") + "\n"
	store := newStore(t)
	for range 3 { // the race the SDK loses shows up within a few runs
		cmd := exec.CommandContext(t.Context(), loreBin, "mcp", "--store", store)
		cmd.Stdin = strings.NewReader(in)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("lore mcp: %v\n%s", err, errb.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != 3 {
			t.Fatalf("want 3 responses, got %d:\n%s\nstderr:\n%s", len(lines), out.String(), errb.String())
		}
		// Answers may come in any order; each request gets exactly one.
		got := map[int]string{}
		for _, l := range lines {
			var m struct {
				ID     int             `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil || m.Result == nil || got[m.ID] != "" {
				t.Fatalf("not a fresh result: %.200s", l)
			}
			got[m.ID] = l
		}
		if got[1] == "" || got[2] == "" || got[3] == "" {
			t.Fatalf("want answers to requests 1, 2 and 3, got %v", got)
		}
		if !strings.Contains(got[3], "service/billing") {
			t.Errorf("search result: %.300s", got[3])
		}
	}
}

// TestServeRefusesPublicAddressWithoutTokens: a non-loopback address
// without --tokens exits with a message saying why and what to do.
func TestServeRefusesPublicAddressWithoutTokens(t *testing.T) {
	_, stderr, code := lore(t, "serve", "--store", t.TempDir(), "--addr", "0.0.0.0:0")
	if code != 2 || !strings.Contains(stderr, "without authentication") || !strings.Contains(stderr, "--tokens") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

var urlRE = regexp.MustCompile(`url=(http://\S+/mcp)`)

// TestServeShutsDownWithOpenStreams: SIGTERM stops lore serve promptly even
// while a client holds a standalone SSE stream open.
func TestServeShutsDownWithOpenStreams(t *testing.T) {
	cmd := exec.CommandContext(t.Context(), loreBin, "serve", "--store", t.TempDir(), "--addr", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var url string
	for url == "" && sc.Scan() {
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go io.Copy(io.Discard, stderr)
	// Initialize a legacy session, then open its GET stream.
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	get, _ := http.NewRequest("GET", url, nil)
	get.Header.Set("Accept", "text/event-stream")
	get.Header.Set("Mcp-Session-Id", sid)
	get.Header.Set("MCP-Protocol-Version", "2025-11-25")
	stream, err := http.DefaultClient.Do(get)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", err, stream.Status)
	}
	defer stream.Body.Close()
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	// Shutdown gives open streams 5s before giving up; cancelling them first
	// must make it far quicker than that.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("shutdown took %s with an open stream", d)
	}
}

// TestMCPOverStdioProcess drives a real lore mcp process with the SDK
// client in both protocol eras.
func TestMCPOverStdioProcess(t *testing.T) {
	store := newStore(t)
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			cmd := exec.Command(loreBin, "mcp", "--store", store)
			c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := c.Connect(t.Context(), &mcpsdk.CommandTransport{Command: cmd}, &mcpsdk.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": "team/payments"}})
			if err != nil || res.IsError {
				t.Fatalf("get_node: %v %v", err, res)
			}
			data, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(data), `"id":"team/payments"`) {
				t.Errorf("get_node: %s", data)
			}
			res, err = cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{}})
			if err != nil || !res.IsError {
				t.Errorf("get_node without id: %v %v", err, res)
			}
		})
	}
}
