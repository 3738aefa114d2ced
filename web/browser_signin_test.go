//go:build browser

package web_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/web"
)

// TestBrowserSignIn drives headless Chromium on a server with tokens, as a
// person with a read token would: the console sends the browser to the
// sign-in page, which takes the token once and returns to the console; a
// query runs; a mutation typed into the console is refused for want of the
// write scope; the explorer follows a change an agent makes through the
// API with a write token, over its WebSocket, by the session cookie.
func TestBrowserSignIn(t *testing.T) {
	if *chromium == "" {
		t.Fatal("needs -lore.chromium PATH; make browser-test gives it")
	}
	const read, write = "browser-read-0123456789", "browser-write-0123456789"
	f := newFixtureWith(t, &web.Options{Version: "browser-test", HTTP: mcp.HTTPOptions{Tokens: []mcp.Token{
		{Name: "person", Scope: mcp.ScopeRead, Secret: read}, {Name: "agent", Scope: mcp.ScopeWrite, Secret: write}}}})
	b := newBrowser(t, f.url)
	b.size(t, desktop)

	t.Run("sign in", func(t *testing.T) {
		b.open(t, "/console/")
		b.wait(t, "the sign-in page, to come back to the console", `location.pathname === '/signin' &&
			new URLSearchParams(location.search).get('next') === '/console/' && !!document.getElementById('token') &&
			document.querySelector('input[name=next]').value === '/console/'`)
		b.shot(t, "signin")
		b.do(t, chromedp.SendKeys(chromedp.ID("token"), read))
		ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
		defer cancel()
		resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#signin button[type=submit]`)))
		if err != nil || resp.Status != http.StatusOK || !strings.HasSuffix(resp.URL, "/console/") {
			b.shot(t, "failed")
			t.Fatalf("signing in: %v %+v", err, resp)
		}
		b.wait(t, "the console, signed in", `location.pathname === '/console/' && document.querySelectorAll('.graphiql-tab').length === 7 &&
			!document.cookie.includes('lore_token')`)
	})

	t.Run("console query", func(t *testing.T) {
		b.wait(t, "the first example open", `editorText('.graphiql-query-editor').includes('query Billing')`)
		b.click(t, ".graphiql-execute-button")
		b.wait(t, "billing in the response", `editorText('.result-window').includes('"id": "service/billing"')`)
		b.shot(t, "signin-console-query")
	})

	t.Run("console mutation refused", func(t *testing.T) {
		b.click(t, ".graphiql-query-editor .view-lines")
		b.do(t, chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)), chromedp.KeyEvent(kb.Delete))
		b.wait(t, "an empty editor", `editorText('.graphiql-query-editor').trim() === ''`)
		// Inserted as one piece of text, as a paste would be: typed key by
		// key, the editor would close brackets and complete words.
		if _, err := chromedp.Call(b.ctx, input.InsertText, input.InsertTextParams{Text: `mutation Rename { upsertNodes(nodes: [{id: "team/payments", ` +
			`type: "Team", merge: true, properties: {mission: "Renamed from the console."}}]) { seq } }`}); err != nil {
			t.Fatal(err)
		}
		b.wait(t, "the mutation in the editor", `editorText('.graphiql-query-editor').includes('mutation Rename')`)
		b.click(t, ".graphiql-execute-button")
		b.wait(t, "the refusal, for want of the write scope", `editorText('.result-window').includes('"code": "FORBIDDEN"') &&
			editorText('.result-window').includes('insufficient_scope')`)
		b.shot(t, "signin-console-mutation-refused")
	})

	t.Run("explorer live", func(t *testing.T) {
		b.open(t, "/explore/?id=team/payments")
		b.wait(t, "the explorer following changes", `document.getElementById('graph').dataset.ready === 'true' &&
			document.getElementById('live').dataset.live === 'on' && document.getElementById('details').dataset.id === 'team/payments'`)
		resp, body := f.do(t, call{method: "POST", path: "/api/v1/tools/upsert_nodes", header: map[string]string{"Authorization": "Bearer " + write},
			body: `{"nodes":[{"id":"team/payments","type":"Team","merge":true,"properties":{"mission":"Rewritten by an agent with a write token."}}]}`})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("the agent's write: %d %s", resp.StatusCode, body)
		}
		b.wait(t, "the agent's change in the details", `document.getElementById('details').dataset.revision === '2' &&
			document.getElementById('details').innerText.includes('Rewritten by an agent with a write token.')`)
		b.shot(t, "signin-explorer-live")
		if !slices.Contains(b.requests(), "ws"+strings.TrimPrefix(f.url, "http")+"/graphql") {
			t.Errorf("the explorer opened no WebSocket to /graphql")
		}
	})

	// The console's refused mutation is a 403, which Chromium logs.
	b.check(t, f.url, "Failed to load resource: the server responded with a status of 403 (Forbidden) "+f.url+"/graphql")
}
