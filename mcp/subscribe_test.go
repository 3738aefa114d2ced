package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

const (
	watched  = "service/billing"
	sentinel = "topic/observability"
	other    = "service/checkout"
)

// touch commits one write to each node: a merge of a new description.
func (f *fixture) touch(t testing.TB, ids ...graph.ID) {
	t.Helper()
	b := &graph.Batch{}
	for _, id := range ids {
		n, err := f.store.Node(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		prop := "description"
		if n.Type == "Team" {
			prop = "mission"
		}
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: id, Type: n.Type, Merge: true,
			Properties: graph.Props{prop: fmt.Sprintf("revision after %d", n.Revision)}})
	}
	if _, err := f.store.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
}

// expectUpdates runs the writes and checks the notifications: one per
// write touching the watched node, none for writes elsewhere. A final write
// to the sentinel, on the same stream, proves nothing else is on its way.
func (f *fixture) expectUpdates(t *testing.T, next func() string) {
	t.Helper()
	f.expectUpdatesIn(t, next, true)
}

// expectUpdatesIn is expectUpdates, comparing the notifications in order or
// (when each URI has a stream of its own) as a set.
func (f *fixture) expectUpdatesIn(t *testing.T, next func() string, ordered bool) {
	t.Helper()
	f.touch(t, other)           // elsewhere: nothing
	f.touch(t, watched)         // 1
	f.touch(t, other, sentinel) // the sentinel is subscribed too: 1 for it
	f.touch(t, watched, other)  // 1 (one write, one notification)
	f.touch(t, "team/payments") // an edge-less change elsewhere: nothing
	f.touch(t, sentinel)        // the end
	want := []string{mcp.NodeURI(watched), mcp.NodeURI(sentinel), mcp.NodeURI(watched), mcp.NodeURI(sentinel)}
	var got []string
	for range want {
		got = append(got, next())
	}
	if !ordered {
		slices.Sort(got)
		slices.Sort(want)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("notifications:\n got %v\nwant %v", got, want)
	}
}

func receiver(t *testing.T) (*mcpsdk.ClientOptions, func() string) {
	ch := make(chan string, 64)
	opts := &mcpsdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
		ch <- req.Params.URI
	}}
	return opts, func() string {
		select {
		case u := <-ch:
			return u
		case <-time.After(10 * time.Second):
			t.Fatal("no notification within 10s")
			return ""
		}
	}
}

// TestSubscriptionsLegacy: a legacy session (in memory, and over HTTP with
// its GET stream) hears exactly the writes that touch what it subscribed to.
func TestSubscriptionsLegacy(t *testing.T) {
	for _, transport := range []string{"memory", "http"} {
		t.Run(transport, func(t *testing.T) {
			f := newFixture(t, nil)
			opts, next := receiver(t)
			var cs *mcpsdk.ClientSession
			if transport == "http" {
				cs = f.connectHTTP(t, legacy, opts)
			} else {
				cs = f.connect(t, legacy, opts)
			}
			for _, id := range []graph.ID{watched, sentinel} {
				if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: mcp.NodeURI(id)}); err != nil {
					t.Fatal(err)
				}
			}
			f.expectUpdates(t, next)
		})
	}
}

// TestSubscriptionsListen: a 2026-07-28 subscriptions/listen stream over
// HTTP, spoken on the wire, hears exactly the writes that touch its URIs,
// each tagged with the listen request's subscription ID.
func TestSubscriptionsListen(t *testing.T) {
	f := newFixture(t, nil)
	hs := httptest.NewServer(f.srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"method":"subscriptions/listen","params":{"_meta":{%q:%q,%q:{}},"notifications":{"resourceSubscriptions":[%q,%q]}}}`,
		"io.modelcontextprotocol/protocolVersion", modern, "io.modelcontextprotocol/clientCapabilities", mcp.NodeURI(watched), mcp.NodeURI(sentinel))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", hs.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modern)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	events := make(chan map[string]any, 64)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(data), &m) == nil {
					events <- m
				}
			}
		}
		close(events)
	}()
	recv := func() map[string]any {
		select {
		case m, ok := <-events:
			if !ok {
				t.Fatal("the listen stream ended")
			}
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("nothing on the listen stream within 10s")
		}
		return nil
	}
	if ack := recv(); ack["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("want the acknowledgement first, got %v", ack)
	}
	f.expectUpdates(t, func() string {
		m := recv()
		params, _ := m["params"].(map[string]any)
		meta, _ := params["_meta"].(map[string]any)
		if m["method"] != "notifications/resources/updated" || meta["io.modelcontextprotocol/subscriptionId"] != float64(41) {
			t.Fatalf("unexpected message %v", m)
		}
		return params["uri"].(string)
	})
}

// TestSubscribeModernClient: the SDK client's Subscribe on a 2026-07-28
// session (a listen stream per URI) hears a write.
func TestSubscribeModernClient(t *testing.T) {
	f := newFixture(t, nil)
	opts, next := receiver(t)
	cs := f.connectHTTP(t, modern, opts)
	if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: mcp.NodeURI(watched)}); err != nil {
		t.Fatal(err)
	}
	f.touch(t, other)
	f.touch(t, watched)
	if got := next(); got != mcp.NodeURI(watched) {
		t.Fatalf("got %s", got)
	}
}

// TestTypeResourcesFollowData: a type is listed as a resource while it has
// nodes; the list changes, and clients are told, when that changes.
func TestTypeResourcesFollowData(t *testing.T) {
	f := newFixture(t, nil)
	changed := make(chan struct{}, 8)
	cs := f.connect(t, legacy, &mcpsdk.ClientOptions{ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) {
		changed <- struct{}{}
	}})
	list := func() []string {
		res, err := cs.ListResources(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var uris []string
		for _, r := range res.Resources {
			uris = append(uris, r.URI)
		}
		return uris
	}
	has := func(uris []string, u string) bool {
		for _, x := range uris {
			if x == u {
				return true
			}
		}
		return false
	}
	entity := mcp.TypeURI("Entity")
	if uris := list(); has(uris, entity) || !has(uris, mcp.TypeURI("Service")) || !has(uris, mcp.ModelURI) || !has(uris, mcp.ChangesURI) {
		t.Fatalf("resources: %v", uris)
	}
	if _, err := f.store.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "entity/Ada", Type: "Entity", Properties: graph.Props{"name": "Ada", "entityType": "person"}}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no list_changed")
	}
	if !has(list(), entity) {
		t.Fatal("Entity not listed after its first node")
	}
}

// TestSubscriptionsPerSession: subscriptions belong to the session that
// made them. Over the real HTTP handler, session B unsubscribing from URIs
// it never subscribed to, or ending after subscribing to them, does not
// silence session A.
func TestSubscriptionsPerSession(t *testing.T) {
	t.Run("legacy", func(t *testing.T) {
		f := newFixture(t, nil)
		hs := httptest.NewServer(f.srv.HTTPHandler(nil))
		t.Cleanup(hs.Close)
		endpoint := &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}
		opts, next := receiver(t)
		a := dial(t, endpoint, legacy, opts)
		b := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, legacy, nil)
		c := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, legacy, nil)
		for _, id := range []graph.ID{watched, sentinel} {
			uri := mcp.NodeURI(id)
			if err := a.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			if err := b.Unsubscribe(t.Context(), &mcpsdk.UnsubscribeParams{URI: uri}); err != nil { // never subscribed
				t.Fatal(err)
			}
			if err := c.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil { // C's session ends: its subscriptions go, not A's
			t.Fatal(err)
		}
		f.expectUpdates(t, next)
	})
	t.Run("modern", func(t *testing.T) {
		f := newFixture(t, nil)
		hs := httptest.NewServer(f.srv.HTTPHandler(nil))
		t.Cleanup(hs.Close)
		opts, next := receiver(t)
		a := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, modern, opts)
		b := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, modern, nil)
		for _, cs := range []*mcpsdk.ClientSession{a, b} {
			for _, id := range []graph.ID{watched, sentinel} {
				if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: mcp.NodeURI(id)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		// B's listen streams end; A's stay.
		for _, id := range []graph.ID{watched, sentinel} {
			if err := b.Unsubscribe(t.Context(), &mcpsdk.UnsubscribeParams{URI: mcp.NodeURI(id)}); err != nil {
				t.Fatal(err)
			}
		}
		f.expectUpdatesIn(t, next, false) // a listen stream per URI: no order across them
	})
}

// listen opens a 2026-07-28 subscriptions/listen stream on the wire and
// returns its first message.
func listen(t *testing.T, url string, uris ...string) map[string]any {
	t.Helper()
	list, _ := json.Marshal(uris)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{%q:%q,%q:{}},"notifications":{"resourceSubscriptions":%s}}}`,
		"io.modelcontextprotocol/protocolVersion", modern, "io.modelcontextprotocol/clientCapabilities", list)
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", modern)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var m map[string]any
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") { // an error comes as one JSON response
		data, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("status %d: %v: %s", resp.StatusCode, err, data)
		}
		return m
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("status %d, no message: %v", resp.StatusCode, sc.Err())
	return nil
}

// TestSubscriptionCap: a session may hold ServerOptions.MaxSubscriptions
// subscriptions; one more is a JSON-RPC error saying so, on a legacy
// session and in a 2026-07-28 listen request.
func TestSubscriptionCap(t *testing.T) {
	f := newFixture(t, nil)
	srv := mcp.NewServer(f.cat, &mcp.ServerOptions{MaxSubscriptions: 3})
	hs := httptest.NewServer(srv.HTTPHandler(nil))
	t.Cleanup(hs.Close)
	uris := []string{mcp.NodeURI(watched), mcp.NodeURI(sentinel), mcp.NodeURI(other), mcp.ChangesURI}

	t.Run("legacy", func(t *testing.T) {
		cs := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, legacy, nil)
		for _, u := range append(uris[:3:3], uris[0]) { // the same URI again is still one subscription
			if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: u}); err != nil {
				t.Fatalf("%s: %v", u, err)
			}
		}
		err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: uris[3]})
		if err == nil || !strings.Contains(err.Error(), "already has 3 resource subscriptions, the server's cap") {
			t.Fatalf("the fourth subscription: %v", err)
		}
		// Another session has its own allowance; an unsubscription makes room.
		other := dial(t, &mcpsdk.StreamableClientTransport{Endpoint: hs.URL + "/mcp"}, legacy, nil)
		if err := other.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: uris[3]}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Unsubscribe(t.Context(), &mcpsdk.UnsubscribeParams{URI: uris[0]}); err != nil {
			t.Fatal(err)
		}
		if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: uris[3]}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("modern", func(t *testing.T) {
		m := listen(t, hs.URL+"/mcp", uris...)
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); !strings.Contains(msg, "already has 3 resource subscriptions") {
			t.Fatalf("a listen request for 4 URIs: %v", m)
		}
		if m := listen(t, hs.URL+"/mcp", uris[:3]...); m["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("a listen request for 3 URIs: %v", m)
		}
	})
}
