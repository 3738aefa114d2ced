package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
			if !res.IsError || !strings.Contains(text(res), `needs the "write" scope`) {
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
