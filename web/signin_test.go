package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/web"
)

const (
	readSecret  = "read-secret-0123456789"
	writeSecret = "write-secret-0123456789"
)

// newSignInFixture serves the example data with a read and a write token.
func newSignInFixture(t *testing.T) *fixture {
	t.Helper()
	f, _, _ := newSecureFixture(t, &web.Options{HTTP: mcp.HTTPOptions{Tokens: []mcp.Token{
		{Name: "reader", Scope: mcp.ScopeRead, Secret: readSecret},
		{Name: "writer", Scope: mcp.ScopeWrite, Secret: writeSecret},
	}}})
	return f
}

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// signIn posts the sign-in form as a browser on the server's own page
// would (origin "" sends none).
func signIn(t *testing.T, f *fixture, token, next, origin string) (*http.Response, string) {
	t.Helper()
	form := url.Values{"token": {token}, "next": {next}}
	req, err := http.NewRequestWithContext(t.Context(), "POST", f.url+"/signin", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// session signs in with token and returns the session cookie.
func session(t *testing.T, f *fixture, token string) *http.Cookie {
	t.Helper()
	resp, body := signIn(t, f, token, "/console/", f.url)
	for _, c := range resp.Cookies() {
		if c.Name == mcp.SessionCookie {
			return c
		}
	}
	t.Fatalf("sign-in with a valid token: %d, no cookie\n%s", resp.StatusCode, body)
	return nil
}

// gqlResult is a GraphQL response.
type gqlResult struct {
	Data   map[string]json.RawMessage
	Errors []struct {
		Message    string
		Extensions struct{ Code string }
	}
}

// postGraphQL posts an operation with a cookie and an Origin ("" : none).
func postGraphQL(t *testing.T, f *fixture, c *http.Cookie, origin, query string) (*http.Response, gqlResult) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"query": query})
	h := map[string]string{}
	if c != nil {
		h["Cookie"] = c.Name + "=" + c.Value
	}
	if origin != "" {
		h["Origin"] = origin
	}
	resp, raw := f.do(t, call{method: "POST", path: "/graphql", body: string(body), header: h})
	var r gqlResult
	json.Unmarshal(raw, &r)
	return resp, r
}

const (
	readQuery = `{ getNode(id: "service/billing") { node { id } } }`
	mutation  = `mutation { upsertNodes(nodes: [{id: "topic/signed-in", type: "Topic", properties: {name: "Signed in"}}]) { seq } }`
)

// TestSignIn: a browser signs in with a token at /signin and gets an
// HttpOnly, SameSite=Strict session cookie (not the token) that /graphql
// takes with the token's scopes, from the server's own pages only; the
// form refuses other sites' pages, wrong tokens and redirects off the
// server; the console and explorer send a browser without a session to
// the form; signing out clears the cookie.
func TestSignIn(t *testing.T) {
	f := newSignInFixture(t)

	t.Run("cookie", func(t *testing.T) {
		resp, body := signIn(t, f, readSecret, "/explore/?id=service/billing", f.url)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/explore/?id=service/billing" {
			t.Fatalf("status %d, Location %q\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
		}
		set := resp.Header.Values("Set-Cookie")
		if len(set) != 1 {
			t.Fatalf("Set-Cookie %q", set)
		}
		attrs := map[string]bool{}
		for _, a := range strings.Split(set[0], "; ")[1:] {
			attrs[a] = true
		}
		for _, want := range []string{"Path=/", "Max-Age=43200", "HttpOnly", "SameSite=Strict"} {
			if !attrs[want] {
				t.Errorf("Set-Cookie %q lacks %s", set[0], want)
			}
		}
		if attrs["Secure"] || len(attrs) != 4 {
			t.Errorf("Set-Cookie %q: want exactly Path, Max-Age, HttpOnly and SameSite over plain HTTP", set[0])
		}
		c := resp.Cookies()[0]
		if c.Name != "lore_token" || c.Value == "" || strings.Contains(c.Value, readSecret) {
			t.Errorf("cookie %s=%q: want lore_token, not holding the token", c.Name, c.Value)
		}
	})

	read, write := session(t, f, readSecret), session(t, f, writeSecret)

	t.Run("query", func(t *testing.T) {
		resp, r := postGraphQL(t, f, read, f.url, readQuery)
		if resp.StatusCode != 200 || len(r.Errors) > 0 || !strings.Contains(string(r.Data["getNode"]), "service/billing") {
			t.Errorf("read with the cookie: %d %+v", resp.StatusCode, r)
		}
		if resp, _ := postGraphQL(t, f, nil, f.url, readQuery); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("without the cookie: %d, want 401", resp.StatusCode)
		}
		forged := &http.Cookie{Name: read.Name, Value: read.Value[:len(read.Value)-2] + "AA"}
		if resp, _ := postGraphQL(t, f, forged, f.url, readQuery); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("with a forged cookie: %d, want 401", resp.StatusCode)
		}
		token := &http.Cookie{Name: read.Name, Value: readSecret}
		if resp, _ := postGraphQL(t, f, token, f.url, readQuery); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("with the token itself as the cookie: %d, want 401", resp.StatusCode)
		}
		// The session value is no bearer token.
		resp, _ = f.do(t, call{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }"}`,
			header: map[string]string{"Authorization": "Bearer " + read.Value}})
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("the session value as a bearer token: %d, want 401", resp.StatusCode)
		}
	})

	t.Run("scopes", func(t *testing.T) {
		resp, r := postGraphQL(t, f, read, f.url, mutation)
		if resp.StatusCode != http.StatusForbidden || len(r.Errors) == 0 || r.Errors[0].Extensions.Code != "FORBIDDEN" ||
			!strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Errorf("mutation with a read cookie: %d %q %+v", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), r)
		}
		resp, r = postGraphQL(t, f, write, f.url, mutation)
		if resp.StatusCode != 200 || len(r.Errors) > 0 || !strings.Contains(string(r.Data["upsertNodes"]), `"seq"`) {
			t.Errorf("mutation with a write cookie: %d %+v", resp.StatusCode, r)
		}
	})

	t.Run("csrf", func(t *testing.T) {
		for _, origin := range []string{"", "http://evil.example", "http://localhost:1", "null"} {
			resp, r := postGraphQL(t, f, write, origin, `mutation { upsertNodes(nodes: [{id: "topic/csrf", type: "Topic", properties: {name: "x"}}]) { seq } }`)
			if resp.StatusCode != http.StatusForbidden || r.Data != nil {
				t.Errorf("mutation with the cookie from Origin %q: %d %+v, want 403", origin, resp.StatusCode, r)
			}
		}
		if _, r := postGraphQL(t, f, read, f.url, `{ getNode(id: "topic/csrf") { node { id } } }`); len(r.Errors) == 0 || r.Errors[0].Extensions.Code != "NOT_FOUND" {
			t.Errorf("a refused cross-site write was made: %+v", r)
		}
		// The Authorization header wins over the cookie, and needs no Origin.
		resp, _ := f.do(t, call{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }"}`,
			header: map[string]string{"Authorization": "Bearer " + readSecret, "Cookie": "lore_token=garbage"}})
		if resp.StatusCode != 200 {
			t.Errorf("a bearer token beside a bad cookie: %d, want 200", resp.StatusCode)
		}
	})

	t.Run("form", func(t *testing.T) {
		for _, origin := range []string{"", "http://evil.example", "http://localhost:1"} {
			resp, body := signIn(t, f, readSecret, "/console/", origin)
			if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) > 0 || !strings.Contains(body, "Origin") {
				t.Errorf("sign-in from Origin %q: %d, cookies %v", origin, resp.StatusCode, resp.Cookies())
			}
		}
		resp, body := signIn(t, f, "not-a-token-0123456789", "/console/", f.url)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) > 0 || !strings.Contains(body, "not one this server knows") {
			t.Errorf("a wrong token: %d, cookies %v\n%s", resp.StatusCode, resp.Cookies(), body)
		}
		for next, want := range map[string]string{
			"//evil.example":             "/console/",
			"//evil.example/console/":    "/console/",
			`/\evil.example`:             "/console/",
			"https://evil.example/":      "/console/",
			"javascript:alert(1)":        "/console/",
			"console/":                   "/console/",
			"/explore/?id=team/payments": "/explore/?id=team/payments",
		} {
			if resp, _ := signIn(t, f, readSecret, next, f.url); resp.Header.Get("Location") != want {
				t.Errorf("next=%q: Location %q, want %q", next, resp.Header.Get("Location"), want)
			}
		}
		resp, page := f.do(t, call{method: "GET", path: "/signin?next=" + url.QueryEscape("/explore/")})
		if resp.StatusCode != 200 || !strings.Contains(string(page), `name="next" value="/explore/"`) || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "form-action 'self'") {
			t.Errorf("GET /signin: %d %q\n%s", resp.StatusCode, resp.Header.Get("Content-Security-Policy"), page)
		}
	})

	t.Run("pages", func(t *testing.T) {
		resp, _ := noRedirectsGet(t, f.url+"/explore/?id=service/billing", nil)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/signin?next="+url.QueryEscape("/explore/?id=service/billing") {
			t.Errorf("explorer without a session: %d Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if resp, _ := noRedirectsGet(t, f.url+"/console/", read); resp.StatusCode != 200 {
			t.Errorf("console with a session: %d", resp.StatusCode)
		}
		if resp, _ := noRedirectsGet(t, f.url+"/console/graphiql.css", nil); resp.StatusCode != 200 {
			t.Errorf("the console's stylesheet without a session: %d", resp.StatusCode)
		}
		if _, body := f.get(t, "/"); !strings.Contains(string(body), `href="/signin"`) {
			t.Errorf("the landing page does not link to /signin")
		}
	})

	t.Run("signout", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.url+"/signout", nil)
		req.Header.Set("Origin", f.url)
		req.AddCookie(read)
		resp, err := noRedirects.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if cs := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || cs[0].Name != "lore_token" || cs[0].MaxAge >= 0 {
			t.Errorf("sign-out: %d %v", resp.StatusCode, resp.Header.Values("Set-Cookie"))
		}
	})
}

func noRedirectsGet(t *testing.T, u string, c *http.Cookie) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	if c != nil {
		req.AddCookie(c)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

type wsMsg struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dialGraphQL opens a graphql-transport-ws socket with header and sends
// connection_init with payload (nil: none).
func dialGraphQL(t *testing.T, f *fixture, header http.Header, payload any) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(f.url, "http")+"/graphql",
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: header})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	init := wsMsg{Type: "connection_init"}
	if payload != nil {
		init.Payload, _ = json.Marshal(payload)
	}
	if err := wsjson.Write(t.Context(), conn, init); err != nil {
		t.Fatal(err)
	}
	return conn
}

// next reads the socket's next message that is not a ping.
func next(t *testing.T, conn *websocket.Conn) (wsMsg, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		var m wsMsg
		if err := wsjson.Read(ctx, conn, &m); err != nil {
			return m, err
		}
		if m.Type == "ping" {
			wsjson.Write(ctx, conn, wsMsg{Type: "pong"})
			continue
		}
		return m, nil
	}
}

// TestSignInWebSocket: a GraphQL WebSocket authenticates by the session
// cookie on its upgrade, or by a token in its connection_init payload;
// either way a read scope subscribes and hears a write, and a mutation
// needs the write scope. Without either, or with a wrong token, the
// socket is closed with 4403 before it serves anything.
func TestSignInWebSocket(t *testing.T) {
	f := newSignInFixture(t)
	read := session(t, f, readSecret)
	cookie := http.Header{"Cookie": {read.Name + "=" + read.Value}, "Origin": {f.url}}

	for _, tc := range []struct {
		name    string
		header  http.Header
		payload any
	}{
		{"cookie", cookie, nil},
		{"connection_init", nil, map[string]string{"authorization": "Bearer " + readSecret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialGraphQL(t, f, tc.header, tc.payload)
			if m, err := next(t, conn); err != nil || m.Type != "connection_ack" {
				t.Fatalf("want connection_ack, got %+v %v", m, err)
			}
			// since: 0 replays the node's changes from the log's start, so the
			// write below is heard even if it commits before the subscription
			// takes hold (gqlgen runs the two operations concurrently).
			sub, _ := json.Marshal(map[string]any{"query": `subscription { nodeChanged(id: "service/billing", since: 0) { change { seq } } }`})
			wsjson.Write(t.Context(), conn, wsMsg{ID: "1", Type: "subscribe", Payload: sub})
			mut, _ := json.Marshal(map[string]any{"query": mutation})
			wsjson.Write(t.Context(), conn, wsMsg{ID: "2", Type: "subscribe", Payload: mut})
			// The mutation's refusal comes back on the socket; then a write
			// over REST, with the write token, reaches the subscription.
			refused := false
			for !refused {
				m, err := next(t, conn)
				if err != nil {
					t.Fatal(err)
				}
				if m.ID == "2" && m.Type == "next" {
					refused = strings.Contains(string(m.Payload), "FORBIDDEN")
					if !refused {
						t.Fatalf("mutation over a read socket: %s", m.Payload)
					}
				}
			}
			resp, body := f.do(t, call{method: "POST", path: "/api/v1/tools/upsert_nodes", header: map[string]string{"Authorization": "Bearer " + writeSecret},
				body: fmt.Sprintf(`{"nodes":[{"id":"service/billing","type":"Service","merge":true,"properties":{"description":"via %s"}}]}`, tc.name)})
			if resp.StatusCode != 200 {
				t.Fatalf("write: %d %s", resp.StatusCode, body)
			}
			seq := `"seq":` + resp.Header.Get("Lore-Seq") + `}`
			for {
				m, err := next(t, conn)
				if err != nil {
					t.Fatal(err)
				}
				if m.ID == "1" && m.Type == "next" && strings.Contains(string(m.Payload), seq) {
					break // the write's own change
				}
				if m.ID == "1" && m.Type != "next" {
					t.Fatalf("subscription: %+v", m)
				}
			}
		})
	}

	for _, tc := range []struct {
		name    string
		header  http.Header
		payload any
	}{
		{"neither", nil, nil},
		{"wrong token", nil, map[string]string{"authorization": "Bearer not-a-token-0123456789"}},
		{"session value as token", nil, map[string]string{"authorization": "Bearer " + read.Value}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialGraphQL(t, f, tc.header, tc.payload)
			m, err := next(t, conn)
			if websocket.CloseStatus(err) != 4403 {
				t.Errorf("want the socket closed with 4403, got %+v %v", m, err)
			}
		})
	}
	// A cookie from another page: the upgrade is refused.
	_, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(f.url, "http")+"/graphql", &websocket.DialOptions{
		Subprotocols: []string{"graphql-transport-ws"}, HTTPHeader: http.Header{"Cookie": cookie["Cookie"], "Origin": {"http://localhost:1"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cookie from another origin: %v %v", resp, err)
	}
}

// TestSignInWrongTokens: wrong tokens typed into the sign-in form spend
// the client address's allowance (--auth-failures) like wrong bearer
// tokens: past it the form answers 429 with Retry-After, even to a right
// token, and so does the API.
func TestSignInWrongTokens(t *testing.T) {
	f, _, _ := newSecureFixture(t, &web.Options{HTTP: mcp.HTTPOptions{AuthFailures: 2,
		Tokens: []mcp.Token{{Name: "reader", Scope: mcp.ScopeRead, Secret: readSecret}}}})
	for i := range 2 {
		if resp, _ := signIn(t, f, fmt.Sprintf("wrong-token-%d-0123456789", i), "/console/", f.url); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	resp, body := signIn(t, f, readSecret, "/console/", f.url)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || len(resp.Cookies()) > 0 || !strings.Contains(body, "too many wrong tokens") {
		t.Errorf("sign-in past the allowance: %d Retry-After %q cookies %v", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Cookies())
	}
	resp, _ = f.do(t, call{method: "POST", path: "/graphql", body: `{"query":"{ describeModel { nodes } }"}`,
		header: map[string]string{"Authorization": "Bearer " + readSecret}})
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the API past the allowance spent at the form: %d, want 429", resp.StatusCode)
	}
}
