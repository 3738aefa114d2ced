//go:build browser

// The browser test is built only with -tags browser (make browser-test,
// run by CI), so plain go test neither runs nor skips it.

package web_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/web"
)

var (
	chromium = flag.String("lore.chromium", "", "run TestBrowser in the Chromium at this `path` (make browser-test)")
	shots    = flag.String("lore.shots", "", "`folder` for TestBrowser's screenshots (default: a new temporary folder)")
)

// How long one step may take to show its result. Generous: CI machines are
// shared, and GraphiQL's first load parses 5 MB of JavaScript.
const stepTimeout = 45 * time.Second

// TestBrowser drives headless Chromium through the landing page, the
// console and the explorer, as a person would, while an agent writes over
// MCP, at a desktop size (1400×900) and a phone's (390×844), with a
// screenshot of each page at each. Chromium resolves every host but
// 127.0.0.1 to nothing, and the test fails if a page asks for anything that
// is not on the server, breaks its Content-Security-Policy, logs an error
// or throws.
func TestBrowser(t *testing.T) {
	if *chromium == "" {
		t.Fatal("needs -lore.chromium PATH; make browser-test gives it")
	}
	f := newFixtureWith(t, &web.Options{Version: "browser-test", StorePath: "/var/lib/lore/test"})
	b := newBrowser(t, f.url)
	agent := f.mcpClient(t)

	b.size(t, desktop)

	t.Run("landing", func(t *testing.T) {
		b.open(t, "/")
		b.wait(t, "the version and the store", `document.getElementById('version')?.textContent === 'browser-test' &&
			document.getElementById('store')?.textContent === '/var/lib/lore/test'`)
		b.shot(t, "landing")
	})

	t.Run("console query", func(t *testing.T) {
		b.open(t, "/console/")
		b.wait(t, "seven example tabs, the first one open", `document.querySelectorAll('.graphiql-tab').length === 7 &&
			editorText('.graphiql-query-editor').includes('query Billing')`)
		b.click(t, `.graphiql-sidebar button[aria-label="Show Documentation Explorer"]`)
		b.wait(t, "the schema in the docs explorer", `(document.querySelector('.graphiql-doc-explorer')?.innerText ?? '').includes('Subscription')`)
		b.wait(t, "a header with the product's name and links home and to the explorer", consoleHeader)
		b.wait(t, "every tab in sight beside the docs", `(() => {
			const bar = document.querySelector('.graphiql-tabs').getBoundingClientRect();
			const tabs = [...document.querySelectorAll('.graphiql-tab')].map(e => e.getBoundingClientRect());
			return tabs.length === 7 && tabs.every(r => r.width > 0 && r.left >= bar.left - 1 && r.right <= bar.right + 1 && r.bottom <= bar.bottom + 1);
		})()`)
		b.wait(t, "no line cut off at the editor's edge", unclipped)
		b.click(t, ".graphiql-execute-button")
		b.wait(t, "billing in the response", `editorText('.result-window').includes('"id": "service/billing"') &&
			editorText('.result-window').includes('"language": "Kotlin"')`)
		b.shot(t, "console-1400x900")
	})

	t.Run("console subscription", func(t *testing.T) {
		b.eval(t, `[...document.querySelectorAll('.graphiql-tab-button')].find(e => e.textContent.includes('WatchBilling')).click()`)
		b.wait(t, "the subscription tab", `editorText('.graphiql-query-editor').includes('subscription WatchBilling')`)
		b.click(t, ".graphiql-execute-button")
		// since: 0 replays billing's history first, so once the import shows,
		// the subscription follows and misses no later write.
		b.wait(t, "the replayed import", `editorText('.result-window').includes('"op": "import"') &&
			document.querySelector('.graphiql-execute-button').getAttribute('aria-label').startsWith('Stop')`)
		seq := upsert(t, agent, `{"id":"service/billing","type":"Service","merge":true,"properties":{"lifecycle":"deprecated"}}`)
		b.wait(t, "the agent's write", fmt.Sprintf(`editorText('.result-window').includes('"seq": %d') &&
			editorText('.result-window').includes('"lifecycle": "deprecated"') &&
			document.querySelector('.graphiql-execute-button').getAttribute('aria-label').startsWith('Stop')`, seq))
		b.shot(t, "console-subscription")
		if !slices.ContainsFunc(b.requests(), func(u string) bool { return u == "ws"+strings.TrimPrefix(f.url, "http")+"/graphql" }) {
			t.Errorf("the subscription opened no WebSocket to /graphql")
		}
		b.click(t, ".graphiql-execute-button")
		b.wait(t, "the subscription stopped", `document.querySelector('.graphiql-execute-button').getAttribute('aria-label').startsWith('Execute')`)
	})

	t.Run("console phone", func(t *testing.T) {
		b.size(t, phone)
		defer b.size(t, desktop)
		b.open(t, "/console/")
		b.wait(t, "the console's tabs", `document.querySelectorAll('.graphiql-tab').length === 7`)
		b.wait(t, "the header, on the phone's width", consoleHeader+` && document.querySelector('.lore-bar').getBoundingClientRect().right <= innerWidth`)
		b.wait(t, "tabs that scroll within the page, and nothing wider than the screen", `document.documentElement.scrollWidth <= innerWidth &&
			document.querySelector('.graphiql-tabs').getBoundingClientRect().right <= innerWidth &&
			document.querySelector('.graphiql-tabs').scrollWidth > document.querySelector('.graphiql-tabs').clientWidth`)
		// The docs pane, open since the first visit, covers the editors
		// on a phone instead of squeezing them; its button closes it.
		b.wait(t, "the docs covering the editors", `(() => {
			const docs = document.querySelector('.graphiql-doc-explorer')?.getBoundingClientRect();
			return !!docs && docs.width >= innerWidth - 120 && document.querySelector('.graphiql-sidebar button.active') !== null;
		})()`)
		b.shot(t, "console-390x844-docs")
		b.click(t, ".graphiql-sidebar button.active")
		b.wait(t, "the docs closed", `!document.querySelector('.graphiql-doc-explorer')`)
		b.wait(t, "no line cut off at the editor's edge", unclipped)
		b.shot(t, "console-390x844")
	})

	t.Run("explorer", func(t *testing.T) {
		b.open(t, "/explore/")
		b.wait(t, "the explorer following changes", `document.getElementById('graph').dataset.ready === 'true' &&
			document.getElementById('live').dataset.live === 'on'`)
		// Without a link it opens on the best-connected suggestion and
		// lists the others.
		b.wait(t, "an opening node and suggestions", `!!document.getElementById('details').dataset.id &&
			loreExplorer.cy.$id(document.getElementById('details').dataset.id).hasClass('expanded') &&
			document.querySelectorAll('#suggestions button[data-id]').length >= 4 &&
			location.search === '?id=' + document.getElementById('details').dataset.id`)
		b.wait(t, "a legend with every drawn type in its colour", `document.querySelectorAll('#legend li').length >= 5 &&
			loreExplorer.cy.nodes().every(n => document.querySelector('#legend li[data-type="' + n.data('type') + '"]')?.dataset.color === n.data('color')) &&
			loreExplorer.cy.nodes().every(n => document.querySelector('#legend li[data-type="' + n.data('type') + '"]').classList.contains('drawn'))`)
		b.shot(t, "explorer-opening")
		b.do(t, chromedp.SendKeys(chromedp.ID("q"), "billing"), chromedp.Click(chromedp.CSS(`#search button`)))
		b.wait(t, "billing among the hits", `!!document.querySelector('#hits button[data-id="service/billing"]')`)
		b.click(t, `#hits button[data-id="service/billing"]`)
		b.wait(t, "billing and its neighbours drawn", settled("service/billing")+` && +document.getElementById('graph').dataset.nodes > 5`)
		before := b.count(t)
		b.shot(t, "explorer-node")

		// Click the team that owns billing where cytoscape drew it.
		pos := b.nodePosition(t, "team/payments")
		b.do(t, chromedp.MouseClickXY(pos[0], pos[1]))
		b.wait(t, "the team expanded", settled("team/payments")+fmt.Sprintf(` && +document.getElementById('graph').dataset.nodes > %d &&
			loreExplorer.cy.$id('team/payments').hasClass('expanded')`, before))
		b.shot(t, "explorer-expanded")

		upsert(t, agent, `{"id":"team/payments","type":"Team","merge":true,"properties":{"mission":"Rewritten by an agent over MCP."}}`)
		b.wait(t, "the agent's change in the details", `document.getElementById('details').dataset.revision === '2' &&
			document.getElementById('details').innerText.includes('Rewritten by an agent over MCP.')`)
		b.shot(t, "explorer-live")
	})

	t.Run("explorer links", func(t *testing.T) {
		b.open(t, "/explore/?id=service/checkout")
		b.wait(t, "?id= opening its node", settled("service/checkout")+` && document.getElementById('graph').dataset.ready === 'true'`)
		b.open(t, "/explore/#team/payments")
		b.wait(t, "#id opening its node, the address rewritten to ?id=", settled("team/payments")+` && location.search === '?id=team/payments' && location.hash === ''`)
		b.eval(t, `location.hash = 'service/billing'`)
		b.wait(t, "a changed #id opening its node", settled("service/billing")+` && location.search === '?id=service/billing'`)
	})

	t.Run("explorer labels", func(t *testing.T) {
		b.wait(t, "edge labels drawn level and at a legible size", `loreExplorer.cy.edges().length > 0 && loreExplorer.cy.edges().every(e =>
			e.style('text-rotation') === 'none' && parseFloat(e.renderedStyle('font-size')) >= 11.5)`)
		// A hovered node shows its whole label, which the graph may shorten.
		id := b.text(t, `loreExplorer.cy.nodes().filter(n => n.data('label').length > 20).first().id()`)
		if id == "" {
			t.Fatal("no node with a long label drawn")
		}
		pos := b.nodePosition(t, id)
		b.do(t, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pos[0], pos[1]))
		b.wait(t, "the whole label on hover", fmt.Sprintf(`!document.getElementById('tip').hidden &&
			document.getElementById('tip').innerText.includes(loreExplorer.cy.$id(%q).data('label')) &&
			document.getElementById('tip').innerText.includes(%q)`, id, id))
		b.shot(t, "explorer-hover")
		b.do(t, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 2, 2))
		b.wait(t, "the tooltip gone", `document.getElementById('tip').hidden`)

		// The edge filter hides the edges of an unticked label and shows them again.
		b.click(t, `#edge-filter label[data-label="dependsOn"] input`)
		b.wait(t, "dependsOn edges hidden, others shown", `loreExplorer.cy.edges('[label = "dependsOn"]').length > 0 &&
			loreExplorer.cy.edges('[label = "dependsOn"]').every(e => !e.visible()) &&
			loreExplorer.cy.edges('[label != "dependsOn"]').length > 0 && loreExplorer.cy.edges('[label != "dependsOn"]').every(e => e.visible())`)
		b.shot(t, "explorer-filtered")
		b.click(t, `#edge-filter label[data-label="dependsOn"] input`)
		b.wait(t, "dependsOn edges shown again", `loreExplorer.cy.edges().every(e => e.visible())`)
	})

	t.Run("explorer keyboard", func(t *testing.T) {
		b.do(t, chromedp.Focus(chromedp.ID("graph")))
		from := b.text(t, `document.getElementById('details').dataset.id`)
		moved := ""
		for _, key := range []string{kb.ArrowRight, kb.ArrowDown, kb.ArrowLeft, kb.ArrowUp} {
			b.do(t, chromedp.KeyEvent(key))
			if moved = b.text(t, `document.getElementById('details').dataset.id`); moved != from {
				break
			}
		}
		if moved == from {
			t.Fatalf("no arrow key moved the selection from %s", from)
		}
		b.wait(t, "the selection moved, shown and linked", fmt.Sprintf(`loreExplorer.cy.$id(%q).selected() && location.search === '?id=%s'`, moved, moved))
		if b.text(t, fmt.Sprintf(`String(loreExplorer.cy.$id(%q).hasClass('expanded'))`, moved)) == "false" {
			b.do(t, chromedp.KeyEvent(kb.Enter))
			b.wait(t, "Enter expanding the selected node", settled(moved)+fmt.Sprintf(` && loreExplorer.cy.$id(%q).hasClass('expanded')`, moved))
		}
		b.do(t, chromedp.KeyEvent("/"))
		b.wait(t, "/ focusing the search", `document.activeElement.id === 'q'`)
		b.do(t, chromedp.KeyEvent(kb.Escape))
		b.wait(t, "Escape back to the graph", `document.activeElement.id === 'graph'`)
	})

	t.Run("explorer resize", func(t *testing.T) {
		b.open(t, "/explore/?id=service/billing")
		b.wait(t, "billing drawn", settled("service/billing")+` && document.getElementById('graph').dataset.ready === 'true'`)
		b.wait(t, "every node inside the graph", insideGraph)
		b.shot(t, "explorer-1400x900")
		fits := b.text(t, `document.getElementById('graph').dataset.fitted`)
		b.size(t, phone)
		defer b.size(t, desktop)
		b.wait(t, "the graph refitted to the phone's width", fmt.Sprintf(`document.getElementById('graph').dataset.fitted !== %q &&
			+document.getElementById('graph').dataset.width <= 390 && document.documentElement.scrollWidth <= innerWidth`, fits)+" && "+insideGraph)
		b.shot(t, "explorer-390x844")
		b.open(t, "/explore/?id=team/payments")
		b.wait(t, "a phone opening a link", settled("team/payments")+` && document.getElementById('graph').dataset.ready === 'true' && `+insideGraph)
		b.shot(t, "explorer-390x844-link")
	})

	b.check(t, f.url)
}

// The sizes the pages are checked and photographed at.
var (
	desktop = [2]int64{1400, 900}
	phone   = [2]int64{390, 844}
)

// consoleHeader is a condition: the console's header names the product and
// links to the landing page and the explorer.
const consoleHeader = `(() => {
	const bar = document.querySelector('header.lore-bar');
	if (!bar || !bar.innerText.includes('Lore') || !bar.innerText.includes('GraphQL console') || bar.getBoundingClientRect().height < 30) return false;
	const links = [...bar.querySelectorAll('a')].map(a => a.getAttribute('href'));
	return links.includes('/') && links.includes('/explore/');
})()`

// unclipped is a condition: every line of the operation editor ends inside
// the editor (long lines wrap).
const unclipped = `(() => {
	const box = document.querySelector('.graphiql-query-editor .monaco-editor')?.getBoundingClientRect();
	const spans = [...document.querySelectorAll('.graphiql-query-editor .view-line > span')];
	return !!box && spans.length > 10 && spans.every(s => s.getBoundingClientRect().right <= box.right + 1);
})()`

// insideGraph is a condition: the explorer draws every node inside its box.
const insideGraph = `(() => {
	const g = document.getElementById('graph'), cy = loreExplorer.cy;
	return cy.nodes().length > 1 && cy.nodes().every(n => {
		const p = n.renderedPosition();
		return p.x >= 0 && p.y >= 0 && p.x <= g.clientWidth && p.y <= g.clientHeight;
	});
})()`

// settled is a condition: the explorer shows id and is not loading.
func settled(id string) string {
	return fmt.Sprintf(`document.getElementById('details').dataset.id === %q && !document.getElementById('graph').dataset.busy`, id)
}

// upsert writes one node as an agent would, over MCP, and returns the
// change's sequence number.
func upsert(t *testing.T, cs *mcpsdk.ClientSession, node string) int {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: json.RawMessage(`{"nodes":[` + node + `]}`)})
	if err != nil || res.IsError {
		t.Fatalf("upsert_nodes: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct{ Seq int }
	if err := json.Unmarshal(raw, &out); err != nil || out.Seq == 0 {
		t.Fatalf("upsert_nodes: no seq in %s", raw)
	}
	return out.Seq
}

// A browser is one headless Chromium tab and what it has seen.
type browser struct {
	ctx    context.Context
	origin string
	dir    string

	mu       sync.Mutex
	urls     []string // every URL asked for, by the page or a worker, HTTP or WebSocket
	problems []string // exceptions, errors logged, CSP violations
	shots    int
}

// pageHelpers is evaluated in every page before its own scripts, by
// DevTools (so the pages' policies do not apply to it): it records CSP
// violations and reads a Monaco editor's visible text.
const pageHelpers = `
addEventListener('securitypolicyviolation', e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));
globalThis.editorText = sel => (document.querySelector(sel + ' .view-lines')?.innerText ?? '').replaceAll('\u00a0', ' ');
`

func newBrowser(t *testing.T, origin string) *browser {
	dir := *shots
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "lore-browser-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(*chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-quic", true),
		// Every host but the server's resolves to nothing: a page that
		// reached out would fail, and the request log below would show it.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx, origin: origin, dir: dir}
	if err := chromedp.Do(ctx); err != nil { // starts Chromium, opens the tab
		t.Fatalf("starting %s: %v", *chromium, err)
	}
	if err := chromedp.Listen(ctx, b.record); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageHelpers}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) record(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.urls = append(b.urls, ev.Request.URL)
	case *network.EventWebSocketCreated:
		b.urls = append(b.urls, ev.URL)
	case *runtime.EventExceptionThrown:
		b.problems = append(b.problems, "exception: "+ev.ExceptionDetails.Text+" "+exceptionMessage(ev.ExceptionDetails))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			var parts []string
			for _, a := range ev.Args {
				parts = append(parts, string(a.Value)+a.Description)
			}
			b.problems = append(b.problems, "console.error: "+strings.Join(parts, " "))
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			b.problems = append(b.problems, fmt.Sprintf("%s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

func exceptionMessage(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

func (b *browser) seen() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.problems)
}

func (b *browser) requests() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.urls)
}

// do runs actions, each step bounded by stepTimeout.
func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.shot(t, "failed")
		t.Fatal(err)
	}
}

func (b *browser) open(t *testing.T, path string) {
	t.Helper()
	b.do(t, chromedp.Navigate(b.origin+path))
}

func (b *browser) click(t *testing.T, css string) {
	t.Helper()
	b.do(t, chromedp.Click(chromedp.CSS(css)))
}

func (b *browser) eval(t *testing.T, js string) {
	t.Helper()
	b.do(t, chromedp.Evaluate[chromedp.Void](js))
}

// wait polls a condition in the page until it holds: what the page shows,
// never a fixed delay.
func (b *browser) wait(t *testing.T, what, cond string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.shot(t, "failed")
		t.Fatalf("waiting for %s: %v\nproblems so far: %q", what, err, b.seen())
	}
}

// text evaluates an expression in the page and returns it as a string.
func (b *browser) text(t *testing.T, js string) string {
	t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`String(`+js+`)`))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// size sets the page's viewport, as a window of that size would.
func (b *browser) size(t *testing.T, wh [2]int64) {
	t.Helper()
	b.do(t, chromedp.EmulateViewport(wh[0], wh[1]))
}

// count is the number of nodes the explorer draws.
func (b *browser) count(t *testing.T) int {
	t.Helper()
	n, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`+document.getElementById('graph').dataset.nodes`))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// nodePosition is where on the screen cytoscape drew a node.
func (b *browser) nodePosition(t *testing.T, id string) [2]float64 {
	t.Helper()
	p, err := chromedp.Run(b.ctx, chromedp.Evaluate[[2]float64](fmt.Sprintf(`(() => {
		const p = loreExplorer.cy.$id(%q).renderedPosition(), r = document.getElementById('graph').getBoundingClientRect();
		return [r.left + p.x, r.top + p.y];
	})()`, id)))
	if err != nil {
		t.Fatalf("where is %s: %v", id, err)
	}
	return p
}

// shot saves a screenshot as NN-name.png.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.mu.Lock()
	b.shots++
	file := filepath.Join(b.dir, fmt.Sprintf("%02d-%s.png", b.shots, name))
	b.mu.Unlock()
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Error(err)
	}
}

// check fails for any request off the server and any problem seen but
// those that contain one of expected.
func (b *browser) check(t *testing.T, origin string, expected ...string) {
	server, err := url.Parse(origin)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, raw := range b.requests() {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			t.Errorf("request to %q", raw)
		case u.Scheme == "data" || u.Scheme == "blob":
		case u.Host != server.Host || (u.Scheme != "http" && u.Scheme != "ws"):
			t.Errorf("request off the server: %s", raw)
		default:
			paths[u.Scheme+" "+u.Path] = true
		}
	}
	if len(paths) == 0 {
		t.Errorf("no requests recorded")
	}
	t.Logf("%d requests, all to %s: %v", len(b.requests()), server.Host, slices.Sorted(maps.Keys(paths)))
	for _, p := range b.seen() {
		if !slices.ContainsFunc(expected, func(e string) bool { return strings.Contains(p, e) }) {
			t.Errorf("page problem: %s", p)
		}
	}
}
