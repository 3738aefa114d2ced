package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// bound is how long a test waits for something that should happen at
// once: it only tells "happens" from "hangs".
const bound = 15 * time.Second

// tcpServer is web.NewServer serving the whole handler on a real TCP port.
type tcpServer struct {
	addr string
	cat  *mcp.Catalog
}

func newTCPServer(t *testing.T, opts *web.ServerOptions) *tcpServer {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, nil)
	srv := mcp.NewServer(cat, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { srv.Watch(ctx); done <- struct{}{} }()
	hs := web.NewServer(web.NewHandler(srv, &web.Options{HTTP: mcp.HTTPOptions{RateLimit: -1}}), opts)
	go func() { hs.Serve(ctx, ln); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	return &tcpServer{addr: ln.Addr().String(), cat: cat}
}

// dial opens a raw connection that fails the test's reads after bound.
func (s *tcpServer) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	return c
}

// get sends GET path on a fresh connection and returns the status.
func (s *tcpServer) get(t *testing.T, path string) (int, http.Header, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.addr+path, nil)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

// TestSlowBodyDropped: a body trickled slower than the read timeout is cut
// off with 408 on every surface, instead of holding the connection open.
func TestSlowBodyDropped(t *testing.T) {
	s := newTCPServer(t, &web.ServerOptions{ReadTimeout: 300 * time.Millisecond})
	for _, path := range []string{"/api/v1/tools/search_nodes", "/graphql", "/mcp"} {
		c := s.dial(t)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
			"Content-Length: 100\r\n\r\n{\"query\"", path, s.addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a stalled body: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "read timeout") {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
}

// TestSlowHeadersDropped: the read timeout bounds reading a whole
// request, headers included: a request whose headers stall is dropped
// when the read timeout passes, even when the header timeout is longer
// (lore serve --read-timeout 2s kept the 10 s header default).
func TestSlowHeadersDropped(t *testing.T) {
	s := newTCPServer(t, &web.ServerOptions{ReadTimeout: 300 * time.Millisecond, ReadHeaderTimeout: time.Hour})
	c := s.dial(t) // fails its read after bound, far sooner than an hour
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nX-Slow: ", s.addr)
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("a request whose headers stall: %v, want the server to close the connection", err)
	}
}

// TestIdleTimeout: a kept-alive connection that sends no further request
// is closed after the idle timeout.
func TestIdleTimeout(t *testing.T) {
	s := newTCPServer(t, &web.ServerOptions{IdleTimeout: 300 * time.Millisecond})
	c := s.dial(t)
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("an idle connection: %v, want the server to close it", err)
	}
}

// TestConnectionCap: past MaxConns a new connection is answered 503 with
// Retry-After at once (not left waiting in the listen queue); when a
// connection closes there is room again; connections idle between
// requests are closed to make room, so many idle connections cannot shut
// out a real request.
func TestConnectionCap(t *testing.T) {
	const max = 4
	s := newTCPServer(t, &web.ServerOptions{MaxConns: max})
	// max connections busy sending their headers.
	var busy []net.Conn
	for range max {
		c := s.dial(t)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n", s.addr)
		busy = append(busy, c)
	}
	c := s.dial(t)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer past the cap: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "--max-conns") {
		t.Fatalf("past the cap: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	// One busy connection finishes its request and closes: room again.
	fmt.Fprint(busy[0], "Connection: close\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(busy[0]), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("busy connection: %v %v", resp, err)
	}
	busy[0].Close()
	waitStatus(t, s, 200)
	for _, c := range busy[1:] {
		c.Close()
	}

	// Fifty connections left idle after a request each: every one is
	// served, and at the end a real request still is, with at most max of
	// them still open.
	var idle []net.Conn
	for i := range 50 {
		c := s.dial(t)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		for retry := time.Now().Add(bound); err == nil && resp.StatusCode == http.StatusServiceUnavailable && time.Now().Before(retry); {
			// Answered before the server marked the others idle: retry.
			c.Close()
			c = s.dial(t)
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
			resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		}
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("idle connection %d: %v %v", i, resp, err)
		}
		io.Copy(io.Discard, resp.Body)
		idle = append(idle, c)
	}
	waitStatus(t, s, 200)
	deadline := time.Now().Add(bound)
	for {
		open := 0
		for _, c := range idle {
			c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			var b [1]byte
			if _, err := c.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
				open++
			}
		}
		if open <= max {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections still open, want at most %d", open, max)
		}
	}
}

// waitStatus polls GET /healthz on fresh connections until it answers
// want, within bound.
func waitStatus(t *testing.T, s *tcpServer, want int) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		code, _, err := s.get(t, "/healthz")
		if err == nil && code == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /healthz: %d %v, want %d", code, err, want)
		}
	}
}

// TestStreamsOutliveTimeouts: with read and write timeouts of 200 ms,
// event streams (REST server-sent events, GraphQL over SSE and over
// WebSocket, the MCP session's stream) stay open and deliver every change
// for many times that long.
func TestStreamsOutliveTimeouts(t *testing.T) {
	const timeout = 200 * time.Millisecond
	s := newTCPServer(t, &web.ServerOptions{ReadTimeout: timeout, WriteTimeout: timeout, IdleTimeout: timeout})
	base := "http://" + s.addr
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// The streams start after the change log's last entry (since=), so a
	// change made before one of them took hold is replayed, not missed.
	st, err := s.cat.Store().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	since := fmt.Sprint(st.LastSeq)

	// REST: the change log's event stream.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/subscribe?uri=lore%3A%2F%2Fchanges&since="+since, nil)
	rest, err := http.DefaultClient.Do(req)
	if err != nil || rest.StatusCode != 200 {
		t.Fatalf("REST subscribe: %v %v", rest, err)
	}
	defer rest.Body.Close()
	restEvents := sseData(rest.Body, "updated")
	// GraphQL over server-sent events.
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"subscription { changes(since: `+since+`) { seq } }"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	gsse, err := http.DefaultClient.Do(req)
	if err != nil || gsse.StatusCode != 200 {
		t.Fatalf("GraphQL SSE: %v %v", gsse, err)
	}
	defer gsse.Body.Close()
	gsseEvents := sseData(gsse.Body, "next")
	// GraphQL over WebSocket.
	ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsjson.Write(ctx, ws, map[string]any{"type": "connection_init"})
	wsjson.Write(ctx, ws, map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": "subscription { changes(since: " + since + ") { seq } }"}})
	wsEvents := make(chan string, 100)
	go func() {
		defer close(wsEvents)
		for {
			var m struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := wsjson.Read(ctx, ws, &m); err != nil {
				return
			}
			switch m.Type {
			case "next":
				wsEvents <- string(m.Payload)
			case "ping":
				wsjson.Write(ctx, ws, map[string]any{"type": "pong"})
			}
		}
	}()
	// MCP: a legacy session subscribed to the change log.
	mcpEvents := make(chan string, 100)
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "streams", Version: "1"}, &mcpsdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcpsdk.ResourceUpdatedNotificationRequest) { mcpEvents <- r.Params.URI }})
	cs, err := client.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: base + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: mcp.ChangesURI}); err != nil {
		t.Fatal(err)
	}
	// Write, each stream hearing of each change, for 8 timeouts and more.
	streams := map[string]<-chan string{"REST": restEvents, "GraphQL SSE": gsseEvents, "GraphQL WebSocket": wsEvents, "MCP": mcpEvents}
	start := time.Now()
	for i := 0; ; i++ {
		args := fmt.Sprintf(`{"nodes":[{"id":"topic/t%d","type":"Topic","properties":{"name":"T%d"}}]}`, i, i)
		if _, err := s.cat.Invoke(ctx, "upsert_nodes", json.RawMessage(args)); err != nil {
			t.Fatal(err)
		}
		for name, ch := range streams {
			select {
			case _, ok := <-ch:
				if !ok {
					t.Fatalf("%s: the stream ended after %s (change %d)", name, time.Since(start).Round(time.Millisecond), i)
				}
			case <-time.After(bound):
				t.Fatalf("%s: no event for change %d after %s", name, i, time.Since(start).Round(time.Millisecond))
			}
		}
		if time.Since(start) > 8*timeout && i > 3 {
			break
		}
	}
}

// sseData delivers the data of each event of one name in a stream.
func sseData(r io.Reader, event string) <-chan string {
	ch := make(chan string, 100)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:") && name == event:
				ch <- strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			case line == "":
				name = ""
			}
		}
	}()
	return ch
}
