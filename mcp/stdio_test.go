package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lore-dev/lore/mcp"
)

// wire speaks raw JSON-RPC lines to a server running ServeStdio.
type wire struct {
	t     *testing.T
	w     io.Writer
	lines chan string
}

func stdioWire(t *testing.T, srv *mcp.Server) *wire {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, sr, sw); sw.Close() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cw.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		cancel()
	})
	return &wire{t: t, w: cw, lines: lines}
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.w, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

// message is a JSON-RPC message as read off the wire.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (w *wire) recv() message {
	w.t.Helper()
	select {
	case l, ok := <-w.lines:
		if !ok {
			w.t.Fatal("the server closed stdout: the session ended")
		}
		var m message
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			w.t.Fatalf("not JSON-RPC: %s", l)
		}
		return m
	case <-time.After(10 * time.Second):
		w.t.Fatal("no answer within 10s")
	}
	return message{}
}

// wantError reads the next message and checks it is a JSON-RPC error with
// the code and id, whose message contains want.
func (w *wire) wantError(id string, code int, want string) {
	w.t.Helper()
	m := w.recv()
	if m.Error == nil || m.Error.Code != code || string(m.ID) != id || !strings.Contains(m.Error.Message, want) {
		w.t.Fatalf("want error %d for id %s containing %q, got id %s %+v %s", code, id, want, m.ID, m.Error, m.Result)
	}
}

func (w *wire) wantResult(id, want string) {
	w.t.Helper()
	m := w.recv()
	if m.Error != nil || string(m.ID) != id || !strings.Contains(string(m.Result), want) {
		w.t.Fatalf("want a result for id %s containing %q, got id %s %+v %.300s", id, want, m.ID, m.Error, m.Result)
	}
}

func nested(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":%s,"clientInfo":{"name":"raw","version":"1"}}}`

// TestStdioRefusesBadLines: over stdio, a line nested deeper than the
// limit, with invalid UTF-8, over the size cap, or not a JSON-RPC message
// is answered with a JSON-RPC error (invalid request with the request's id
// when it can be read, else a parse error) before the SDK decodes it, and
// the session goes on, in both eras.
func TestStdioRefusesBadLines(t *testing.T) {
	f := newFixture(t, nil)
	w := stdioWire(t, f.srv)
	w.send(fmt.Sprintf(initLine, `{}`))
	w.wantResult("1", `"protocolVersion":"2025-11-25"`)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// 64 levels pass (the arguments object and 62 arrays inside params),
	// 65 do not.
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing","x":%s}}}`
	w.send(fmt.Sprintf(call, 2, nested(61)))
	w.wantResult("2", `/x`) // the SDK decoded it; the schema refuses x
	w.send(fmt.Sprintf(call, 3, nested(62)))
	w.wantError("3", -32600, "nested deeper than 64 levels at /params/arguments/x/0/")
	w.send(nested(100000)) // no id to read: a parse error
	w.wantError("null", -32700, "nested deeper than 64 levels")
	w.send(`{"jsonrpc":"2.0","id":"u","method":"tools/list","params":{"s":"` + "\xff" + `"}}`)
	w.wantError(`"u"`, -32600, "invalid UTF-8")
	w.send(`{"jsonrpc":"2.0","id":5,"id":6,"method":"tools/list"}`)
	w.wantError("null", -32700, "the same key appears twice")
	w.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list"} {"jsonrpc":"2.0","id":8,"method":"tools/list"}`)
	w.wantError("7", -32600, "data after the JSON value")
	w.send(`{"foo":1}`) // the SDK would end the session on this
	w.wantError("null", -32600, `"jsonrpc" must be "2.0"`)
	w.send(`{"jsonrpc":"2.0","id":9,"method":7}`)
	w.wantError("9", -32600, `"method" must be a string`)
	w.send(`{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`)
	w.wantError("null", -32600, `"id" must be a string or a number`)
	w.send(`42`)
	w.wantError("null", -32600, "a JSON-RPC message is a JSON object")
	w.send(``) // blank lines are skipped

	// The session goes on, in both eras.
	w.send(fmt.Sprintf(call, 10, `1`))
	w.wantResult("10", `/x`)
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"_meta":{%q:%q,%q:{}},"name":"get_node","arguments":{"id":"service/billing"}}}`,
		"io.modelcontextprotocol/protocolVersion", modern, "io.modelcontextprotocol/clientCapabilities"))
	w.wantResult("11", `"io.modelcontextprotocol/serverInfo"`) // a 2026-07-28 result
}

// TestStdioLimitsAreOptions: ServerOptions lower the depth limit and the
// message size cap; an over-long line is answered with its id.
func TestStdioLimitsAreOptions(t *testing.T) {
	f := newFixture(t, nil)
	srv := mcp.NewServer(f.cat, &mcp.ServerOptions{MaxDepth: 4, MaxMessageBytes: 5000})
	w := stdioWire(t, srv)
	w.send(fmt.Sprintf(initLine, `{}`))
	w.wantResult("1", `"protocolVersion"`)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"service/billing","x":%s}}}`
	w.send(fmt.Sprintf(call, 2, nested(2)))
	w.wantError("2", -32600, "nested deeper than 4 levels")
	w.send(fmt.Sprintf(call, 3, `"`+strings.Repeat("a", 10000)+`"`))
	w.wantError("3", -32600, "over 5000 bytes")
	w.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	w.wantResult("4", `"get_node"`)
}

// TestStdioRefusesBadResponse: a client's answer to the server's
// elicitation that is refused ends that elicitation with an error instead
// of leaving it waiting, nothing is deleted, and the session goes on.
func TestStdioRefusesBadResponse(t *testing.T) {
	f := newFixture(t, nil)
	w := stdioWire(t, f.srv)
	w.send(fmt.Sprintf(initLine, `{"elicitation":{}}`))
	w.wantResult("1", `"protocolVersion"`)
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_nodes","arguments":{"nodes":[{"id":"topic/observability"}]}}}`)
	q := w.recv()
	if q.Method != "elicitation/create" {
		t.Fatalf("want the confirmation question, got %+v", q)
	}
	w.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"confirm":true},"x":%s}}`, q.ID, nested(100)))
	m := w.recv()
	if string(m.ID) != "2" || m.Error == nil && !strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("want the call to fail, got id %s %+v %s", m.ID, m.Error, m.Result)
	}
	if _, err := f.store.Node(t.Context(), "topic/observability"); err != nil {
		t.Fatalf("deleted on a refused answer: %v", err)
	}
	w.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	w.wantResult("3", `"get_node"`)
}

// TestStdioStoppedMidLine: a session whose reading stops (a deadline on a
// pipe, as a holder letting an attached session go sets it) returns the
// input it read but did not pass on, from the start of the unfinished
// line, and Observe saw each message the client sent, in order.
func TestStdioStoppedMidLine(t *testing.T) {
	f := newFixture(t, nil)
	srv := mcp.NewServer(f.cat, nil)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inR.Close()
	defer inW.Close()
	outR, outW := io.Pipe()
	var mu sync.Mutex
	var seen []string
	second := make(chan struct{})
	observe := func(msg []byte) {
		id, method := mcp.MessageFields(msg)
		mu.Lock()
		if seen = append(seen, fmt.Sprintf("%s %s", id, method)); len(seen) == 2 {
			close(second)
		}
		mu.Unlock()
	}
	type result struct {
		rest []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		rest, err := srv.ServeStdioWith(context.Background(), inR, outW, mcp.StdioOptions{Observe: observe})
		done <- result{rest, err}
	}()
	lines := bufio.NewScanner(outR)
	io.WriteString(inW, fmt.Sprintf(initLine, `{}`)+"\n")
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1,"result"`) {
		t.Fatalf("initialize: %s", lines.Text())
	}
	half := `{"jsonrpc":"2.0","id":2,"method":"tools/`
	io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+half)
	// Once the unfinished line is read, nothing more will come: the
	// session is stopped, as a holder letting it go stops it.
	<-second
	inR.SetReadDeadline(time.Unix(1, 0))
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the session did not stop at the deadline")
	}
	if !errors.Is(r.err, os.ErrDeadlineExceeded) || string(r.rest) != half {
		t.Errorf("got rest %q, error %v; want %q and the deadline's error", r.rest, r.err, half)
	}
	want := []string{`1 initialize`, ` notifications/initialized`}
	if !slices.Equal(seen, want) {
		t.Errorf("observed %q, want %q", seen, want)
	}
}
