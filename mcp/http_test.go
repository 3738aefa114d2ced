package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/mcp"
)

var testTokens = []mcp.Token{
	{Name: "reader", Scope: mcp.ScopeRead, Secret: "read-secret-0123456789"},
	{Name: "writer", Scope: mcp.ScopeWrite, Secret: "write-secret-0123456789"},
}

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func (f *fixture) serveHTTP(t *testing.T, opts *mcp.HTTPOptions) *httptest.Server {
	hs := httptest.NewServer(f.srv.HTTPHandler(opts))
	t.Cleanup(hs.Close)
	return hs
}

func (f *fixture) dialToken(t *testing.T, url, token, era string) *mcpsdk.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	return dial(t, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, era, nil)
}

func post(t *testing.T, url string, header map[string]string, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestAuth: no token gets 401 with WWW-Authenticate pointing at the
// protected-resource metadata; a read token reads, and calling a write tool
// with it is a tool error naming the missing scope; a write token writes.
func TestAuth(t *testing.T) {
	f := newFixture(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	hs := httptest.NewUnstartedServer(f.srv.HTTPHandler(&mcp.HTTPOptions{Tokens: testTokens, ResourceURL: base + "/mcp"}))
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	url := hs.URL + "/mcp"

	resp := post(t, url, nil, initBody)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: status %d", resp.StatusCode)
	}
	if wa := resp.Header.Get("WWW-Authenticate"); !strings.Contains(wa, `resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("WWW-Authenticate: %q", wa)
	}
	if resp := post(t, url, map[string]string{"Authorization": "Bearer wrong-secret-0123456789"}, initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token: status %d", resp.StatusCode)
	}
	meta, err := http.Get(hs.URL + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Body.Close()
	var prm map[string]any
	if err := json.NewDecoder(meta.Body).Decode(&prm); err != nil || prm["resource"] != url {
		t.Errorf("protected-resource metadata: %v %v", prm, err)
	}

	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			reader := f.dialToken(t, url, "read-secret-0123456789", era)
			if res := f.call(t, reader, "get_node", `{"id":"service/billing"}`); res.IsError {
				t.Fatalf("read token cannot read: %s", text(res))
			}
			res := f.call(t, reader, "upsert_nodes", `{"nodes":[{"id":"topic/auth","type":"Topic","properties":{"name":"Auth"}}]}`)
			if !res.IsError || !strings.Contains(text(res), `needs the "write" scope`) || !strings.Contains(text(res), "insufficient_scope") {
				t.Fatalf("read token writing: isError=%v %q", res.IsError, text(res))
			}
			writer := f.dialToken(t, url, "write-secret-0123456789", era)
			if res := f.call(t, writer, "upsert_nodes", `{"nodes":[{"id":"topic/auth","type":"Topic","properties":{"name":"Auth"}}]}`); res.IsError {
				t.Fatalf("write token cannot write: %s", text(res))
			}
		})
	}
}

// TestOriginGuard: browser requests from other origins get 403 whatever
// the method; loopback origins and the allow-list pass.
func TestOriginGuard(t *testing.T) {
	f := newFixture(t, nil)
	hs := f.serveHTTP(t, &mcp.HTTPOptions{AllowedOrigins: []string{"https://console.example.com"}})
	url := hs.URL + "/mcp"
	for _, origin := range []string{"http://evil.example.com", "null", "https://console.example.com.evil.net"} {
		if resp := post(t, url, map[string]string{"Origin": origin}, initBody); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST from %s: status %d", origin, resp.StatusCode)
		}
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Origin", origin)
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET from %s: %v %v", origin, resp.StatusCode, err)
		}
	}
	for _, origin := range []string{"http://localhost:3000", "http://127.0.0.1:8931", "https://console.example.com"} {
		if resp := post(t, url, map[string]string{"Origin": origin}, initBody); resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("POST from %s: status %d %s", origin, resp.StatusCode, b)
		}
	}
}

// TestLimits: a caller over its rate gets 429 with Retry-After; a body
// over the cap gets 413.
func TestLimits(t *testing.T) {
	f := newFixture(t, nil)
	hs := f.serveHTTP(t, &mcp.HTTPOptions{RateLimit: 0.001, RateBurst: 2, MaxBodyBytes: 4096})
	url := hs.URL + "/mcp"
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 5000) + `"}}`
	if resp := post(t, url, nil, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: status %d", resp.StatusCode)
	}
	if resp := post(t, url, nil, initBody); resp.StatusCode != http.StatusOK {
		t.Errorf("second request: status %d", resp.StatusCode)
	}
	resp := post(t, url, nil, initBody)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "requests per second") {
		t.Errorf("third request: status %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// TestDeleteConfirmation: a delete without confirm asks the user through
// elicitation (legacy) or an input-required result (2026-07-28); a client
// that cannot ask must pass confirm: true.
func TestDeleteConfirmation(t *testing.T) {
	for _, era := range eras {
		for _, tc := range []struct {
			name   string
			action string // the user's answer; "" for a client without elicitation
			wantOK bool
		}{
			{"accept", "accept", true},
			{"decline", "decline", false},
			{"no elicitation", "", false},
		} {
			t.Run(era+"/"+tc.name, func(t *testing.T) {
				f := newFixture(t, nil)
				var opts *mcpsdk.ClientOptions
				asked := 0
				if tc.action != "" {
					opts = &mcpsdk.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
						asked++
						if !strings.Contains(req.Params.Message, "topic/observability") {
							t.Errorf("the question does not name the node: %q", req.Params.Message)
						}
						return &mcpsdk.ElicitResult{Action: tc.action, Content: map[string]any{"confirm": tc.action == "accept"}}, nil
					}}
				}
				cs := f.connectHTTP(t, era, opts)
				res := f.call(t, cs, "delete_nodes", `{"nodes":[{"id":"topic/observability"}]}`)
				_, err := f.store.Node(t.Context(), "topic/observability")
				if tc.wantOK {
					if res.IsError || err == nil {
						t.Fatalf("not deleted: %s (node err %v)", text(res), err)
					}
				} else if !res.IsError || err != nil {
					t.Fatalf("deleted without consent: %s", text(res))
				}
				if (tc.action != "") != (asked == 1) {
					t.Errorf("asked %d times", asked)
				}
			})
		}
	}
}

// initialize opens a legacy session over raw HTTP and returns the response.
func initialize(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	resp := post(t, url, header, initBody)
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// TestSessionCap: a caller may hold MaxSessions legacy sessions; the next
// initialize gets 429 with a JSON-RPC error saying what to do, and once a
// session ends (DELETE) the caller may open another. Other callers (here,
// another token) have their own count.
func TestSessionCap(t *testing.T) {
	f := newFixture(t, nil)
	hs := f.serveHTTP(t, &mcp.HTTPOptions{MaxSessions: 2, RateLimit: -1, Tokens: testTokens})
	url := hs.URL + "/mcp"
	reader := map[string]string{"Authorization": "Bearer read-secret-0123456789"}
	var ids []string
	for i := range 2 {
		resp, body := initialize(t, url, reader)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
			t.Fatalf("session %d: %d %s", i+1, resp.StatusCode, body)
		}
		ids = append(ids, resp.Header.Get("Mcp-Session-Id"))
	}
	resp, body := initialize(t, url, reader)
	var rpc struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal([]byte(body), &rpc) != nil || rpc.ID != 1 ||
		rpc.Error.Code != mcp.CodeTooManySessions || !strings.Contains(rpc.Error.Message, "DELETE") {
		t.Fatalf("third session: %d %s", resp.StatusCode, body)
	}
	// Requests in the open sessions go on.
	if resp := post(t, url, map[string]string{"Authorization": reader["Authorization"], "Mcp-Session-Id": ids[0],
		"MCP-Protocol-Version": "2025-11-25"}, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list in a session: %d", resp.StatusCode)
	}
	// Another caller is not affected.
	if resp, body := initialize(t, url, map[string]string{"Authorization": "Bearer write-secret-0123456789"}); resp.StatusCode != http.StatusOK {
		t.Errorf("another token: %d %s", resp.StatusCode, body)
	}
	// Ending a session makes room.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, url, nil)
	req.Header.Set("Authorization", reader["Authorization"])
	req.Header.Set("Mcp-Session-Id", ids[1])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %v %v", err, resp.Status)
	}
	if resp, body := initialize(t, url, reader); resp.StatusCode != http.StatusOK {
		t.Errorf("after DELETE: %d %s", resp.StatusCode, body)
	}
}

// TestListenStreamCap: on 2026-07-28 an open subscriptions/listen stream
// is what a legacy session was: a caller may hold MaxSessions of them at
// once; the next gets 429 with a JSON-RPC error, and closing one makes room.
func TestListenStreamCap(t *testing.T) {
	f := newFixture(t, nil)
	hs := f.serveHTTP(t, &mcp.HTTPOptions{MaxSessions: 2, RateLimit: -1})
	url := hs.URL + "/mcp"
	listen := func(ctx context.Context) (*http.Response, error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["lore://changes"]}}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		return http.DefaultClient.Do(req)
	}
	var cancels []context.CancelFunc
	for i := range 2 {
		ctx, cancel := context.WithCancel(t.Context())
		cancels = append(cancels, cancel)
		defer cancel()
		resp, err := listen(ctx)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: %v %v", i+1, err, resp)
		}
		// The stream is open once its first event (the acknowledgement) comes.
		if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line == "" {
			t.Fatalf("stream %d: %q %v", i+1, line, err)
		}
	}
	resp, err := listen(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusTooManyRequests {
		resp.Body.Close() // an open stream: reading it would wait for ever
		t.Fatalf("third stream: %d, want 429", resp.StatusCode)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "too many open subscription streams") ||
		!strings.Contains(string(body), fmt.Sprint(mcp.CodeTooManySessions)) {
		t.Fatalf("third stream: %d %s", resp.StatusCode, body)
	}
	cancels[0]()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := listen(ctx)
		if err == nil && resp.StatusCode == http.StatusOK {
			cancel()
			break
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("no room after a stream closed: %v %v", err, resp)
		}
		runtime.Gosched()
	}
}

// TestAuthFailureLimit: an address that sends more than AuthFailures
// wrong tokens a minute gets 429 with Retry-After for every request that
// carries a token, right or wrong, so guessing goes no faster; requests
// without a token (which cannot guess) still get 401.
func TestAuthFailureLimit(t *testing.T) {
	f := newFixture(t, nil)
	hs := f.serveHTTP(t, &mcp.HTTPOptions{AuthFailures: 5, RateLimit: -1, Tokens: testTokens})
	url := hs.URL + "/mcp"
	codes := map[int]int{}
	for i := range 20 {
		resp := post(t, url, map[string]string{"Authorization": fmt.Sprintf("Bearer guess-%016d", i)}, initBody)
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if codes[http.StatusUnauthorized] != 5 || codes[http.StatusTooManyRequests] != 15 {
		t.Errorf("statuses %v, want 5 × 401 then 15 × 429", codes)
	}
	if resp := post(t, url, map[string]string{"Authorization": "Bearer read-secret-0123456789"}, initBody); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a valid token from the guessing address: %d, want 429 (else guessing learns from the answers)", resp.StatusCode)
	}
	if resp := post(t, url, nil, initBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
}

// TestRecoverAnswersJSONRPC: a panic under Recover is answered with a
// JSON-RPC internal error (HTTP 500) and logged with its stack; once the
// response has begun, the connection is cut rather than the response left
// looking complete.
func TestRecoverAnswersJSONRPC(t *testing.T) {
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	hs := httptest.NewServer(mcp.Recover(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("late") {
			w.Write([]byte(`{"partial":`))
		}
		var items []int
		_ = items[len(r.URL.Path)] // a real runtime panic: index out of range
	}), log, mcp.InternalError))
	t.Cleanup(hs.Close)
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var rpc struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusInternalServerError || json.Unmarshal(body, &rpc) != nil || rpc.Error.Code != -32603 ||
		strings.Contains(string(body), "out of range") {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if !strings.Contains(got, "index out of range") || !strings.Contains(got, "http_test.go") {
		t.Errorf("log lacks the panic and its stack: %s", got)
	}
	resp, err = http.Get(hs.URL + "?late")
	if err == nil {
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil {
		t.Errorf("a response begun before the panic reads as complete")
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
