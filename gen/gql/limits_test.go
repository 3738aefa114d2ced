package gql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/lore-dev/lore/gen/gql"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
)

// fragmentBomb is a query of n fragments, each spreading the next one
// twice: 2^n field visits for a walk that does not remember fragments.
func fragmentBomb(n int) string {
	var b strings.Builder
	b.WriteString(`query { getNode(id: "service/billing") { node { ...f0 } } }`)
	for i := range n {
		fmt.Fprintf(&b, " fragment f%d on Node { id ...f%d ...f%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment f%d on Node { id }", n)
	return b.String()
}

// queryWithin posts a query and fails if no answer comes within d: the
// bound is generous and only tells a hang from an answer.
func queryWithin(t *testing.T, d time.Duration, url, query string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"query": query})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("no answer within %s: %v", d, err)
	}
	defer resp.Body.Close()
	var out response
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("no answer within %s: %v", d, err)
	}
	return out
}

// TestFragmentBomb: a query whose 40 fragments each spread the next one
// twice (about 1.8 KB; 2^40 visits for a walk that re-walks fragments) is
// measured once per fragment and refused at once.
func TestFragmentBomb(t *testing.T) {
	f := newFixture(t, nil)
	q := fragmentBomb(40)
	res := queryWithin(t, 20*time.Second, f.url, q)
	if len(res.Errors) != 1 || res.Errors[0].code() != "COMPLEXITY_LIMIT_EXCEEDED" || res.Data != nil {
		t.Fatalf("%d bytes: want a complexity refusal, got %+v", len(q), res.Errors)
	}
	// Depth through fragments is still counted.
	deep := `query { getNode(id: "service/billing") { ...a } } fragment a on GetNodeResult { node { ...b } }
		fragment b on Node { neighbors { node { ...c } } } fragment c on Node { neighbors { node { ...d } } }
		fragment d on Node { neighbors { node { ...e } } } fragment e on Node { neighbors { node { ...g } } }
		fragment g on Node { neighbors { node { id } } }`
	res = f.query(t, deep, nil)
	if len(res.Errors) != 1 || res.Errors[0].code() != "DEPTH_LIMIT_EXCEEDED" {
		t.Fatalf("deep fragments: %+v", res.Errors)
	}
}

// BenchmarkFragmentBomb measures refusing fragmentBomb(n) for growing n:
// the time grows with n, not 2^n.
func BenchmarkFragmentBomb(b *testing.B) {
	f := newFixture(b, nil)
	for _, n := range []int{10, 20, 40} {
		q := fragmentBomb(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				if res := f.query(b, q, nil); len(res.Errors) != 1 {
					b.Fatal(res.Errors)
				}
			}
		})
	}
}

// graphiqlIntrospection is GraphiQL's introspection query, which the console
// sends when it opens.
const graphiqlIntrospection = `query IntrospectionQuery { __schema { queryType { name } mutationType { name } subscriptionType { name }
  types { ...FullType } directives { name description locations args { ...InputValue } } } }
fragment FullType on __Type { kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue } interfaces { ...TypeRef } enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name
  ofType { kind name ofType { kind name } } } } } } } }`

// TestIntrospectionCounted: introspection costs what it writes out, so an
// operation may walk the schema a few times, not hundreds; GraphiQL's own
// introspection query still passes.
func TestIntrospectionCounted(t *testing.T) {
	f := newFixture(t, nil)
	var b strings.Builder
	b.WriteString("{")
	for i := range 20 {
		fmt.Fprintf(&b, " s%d: __schema { types { name fields { name } } }", i)
	}
	b.WriteString(" }")
	res := f.query(t, b.String(), nil)
	if len(res.Errors) != 1 || res.Errors[0].code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Fatalf("20 schema walks: %+v", res.Errors)
	}
	res = f.query(t, graphiqlIntrospection, nil)
	if len(res.Errors) > 0 || !strings.Contains(string(res.Data["__schema"]), `"name":"Query"`) {
		t.Fatalf("GraphiQL's introspection: %+v", res.Errors)
	}
}

// denseFixture is the GraphQL handler over n services, each depending on
// the next fanout ones: a walk four levels deep visits fanout^4 nodes.
func denseFixture(t *testing.T, n, fanout int, ceilings graph.Limits, opts *gql.Options) *fixture {
	t.Helper()
	s := graphtest.New(t)
	var data bytes.Buffer
	for i := range n {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"s%d","tier":1,"lifecycle":"production"}}`+"\n", i, i)
	}
	for i := range n {
		for k := 1; k <= fanout; k++ {
			fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, (i+k)%n)
		}
	}
	if _, err := graph.Import(t.Context(), s, &data, graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: ceilings})
	hs := httptest.NewServer(gql.NewHandler(cat, opts))
	t.Cleanup(hs.Close)
	return &fixture{store: s, cat: cat, url: hs.URL}
}

// walk4 walks four levels of neighbours, up to 100 at each.
const walk4 = `{ getNode(id: "service/s0") { node { neighbors(limit: 100) { node { id neighbors(limit: 100) { node { id
	neighbors(limit: 100) { node { id neighbors(limit: 100) { node { id } } } } } } } } } } }`

// TestOperationDeadline: a walk that would visit 40^4 nodes stops at the
// operation's deadline: no field calls the catalog after it, and the
// response says the data is partial.
func TestOperationDeadline(t *testing.T) {
	f := denseFixture(t, 120, 40, graph.Limits{TimeoutMs: 60_000}, &gql.Options{Timeout: 300 * time.Millisecond})
	res := queryWithin(t, 30*time.Second, f.url, walk4)
	var codes []string
	for _, e := range res.Errors {
		codes = append(codes, e.code())
	}
	if len(res.Errors) != 1 || res.Errors[0].code() != "DEADLINE_EXCEEDED" || !strings.Contains(res.Errors[0].Message, "300ms") {
		t.Fatalf("want one DEADLINE_EXCEEDED error, got %v: %+v", codes, res.Errors)
	}
}

// TestResponseCap: an operation that reads more than its budget from the
// catalog (8 times the response cap) stops there, and one whose response
// would pass the cap gets no data; both say so.
func TestResponseCap(t *testing.T) {
	f := denseFixture(t, 60, 20, graph.Limits{}, &gql.Options{MaxResponseBytes: 2_000})
	res := queryWithin(t, 30*time.Second, f.url, `{ getNode(id: "service/s0") { node { neighbors(limit: 100) { node { id
		neighbors(limit: 100) { node { id properties } } } } } } }`)
	if res.Data != nil || len(res.Errors) != 1 || res.Errors[0].code() != "RESPONSE_TOO_LARGE" || !strings.Contains(res.Errors[0].Message, "16000 bytes") {
		t.Fatalf("a fan-out: data %d bytes, errors %+v", len(res.Data["getNode"]), res.Errors)
	}
	var b strings.Builder
	b.WriteString("{")
	for i := range 30 {
		fmt.Fprintf(&b, ` n%d: getNode(id: "service/s%d") { node { id type properties revision } }`, i, i)
	}
	b.WriteString(" }")
	res = f.query(t, b.String(), nil)
	if res.Data != nil || len(res.Errors) != 1 || res.Errors[0].code() != "RESPONSE_TOO_LARGE" || !strings.Contains(res.Errors[0].Message, "cap of 2000") {
		t.Fatalf("a response over the cap: data %v, errors %+v", res.Data, res.Errors)
	}
	// A small one passes.
	if res := f.query(t, `{ getNode(id: "service/s0") { node { id } } }`, nil); len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
}

// TestClientGoneStopsWork: when the client goes away, the operation stops:
// the handler returns soon after, without waiting for the walk (which
// would take minutes) or the deadline (a minute).
func TestClientGoneStopsWork(t *testing.T) {
	s := denseFixture(t, 120, 40, graph.Limits{TimeoutMs: 60_000}, nil)
	cat := s.cat
	started, done := make(chan struct{}), make(chan struct{})
	h := gql.NewHandler(cat, &gql.Options{Timeout: time.Minute})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		defer close(done)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithCancel(t.Context())
	body, _ := json.Marshal(map[string]any{"query": walk4})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel()
	<-errc
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the operation went on after its client left")
	}
}

// TestGETNeedsPreflight: a GET that a cross-site <img> or link could send
// runs nothing; one with a JSON Content-Type or GraphQL-Require-Preflight
// runs.
func TestGETNeedsPreflight(t *testing.T) {
	f := newFixture(t, nil)
	u := f.url + "?query=" + url.QueryEscape(`{ getNode(id: "service/billing") { node { id } } }`)
	for _, tc := range []struct {
		header map[string]string
		ok     bool
	}{
		{nil, false},
		{map[string]string{"Content-Type": "text/plain"}, false},
		{map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, false},
		{map[string]string{"Accept": "image/*"}, false},
		{map[string]string{"Content-Type": "application/json"}, true},
		{map[string]string{"GraphQL-Require-Preflight": "1"}, true},
		{map[string]string{"Apollo-Require-Preflight": "true"}, true},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		for k, v := range tc.header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ran := strings.Contains(string(body), "service/billing")
		if ran != tc.ok || !tc.ok && (resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "PREFLIGHT_REQUIRED")) {
			t.Errorf("GET with %v: %d %s", tc.header, resp.StatusCode, body)
		}
	}
}

// TestChunkedBodyOverCap: a body over Guard's cap is 413 whether it
// declares its length or is sent chunked.
func TestChunkedBodyOverCap(t *testing.T) {
	s := graphtest.New(t)
	cat := mcp.NewCatalog(s, nil)
	hs := httptest.NewServer(mcp.Guard(gql.NewHandler(cat, nil), &mcp.HTTPOptions{MaxBodyBytes: 1024, RateLimit: -1}))
	t.Cleanup(hs.Close)
	big := `{"query":"{ describeModel { nodes } }","variables":{"pad":"` + strings.Repeat("x", 4096) + `"}}`
	for _, chunked := range []bool{false, true} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL, strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		if chunked {
			req.Body = io.NopCloser(strings.NewReader(big))
			req.ContentLength = -1
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "1024") {
			t.Errorf("chunked=%v: %d %s", chunked, resp.StatusCode, body)
		}
	}
}

// TestWebSocketDeepMessage: a WebSocket message nested deeper than the
// limit closes the socket with 4400 and the reason, before gqlgen decodes
// it.
func TestWebSocketDeepMessage(t *testing.T) {
	f := newFixture(t, &gql.Options{MaxJSONDepth: 10})
	conn := dialWS(t, f.url)
	msg := `{"id":"1","type":"subscribe","payload":{"query":"subscription { changes { seq } }","variables":{"v":` +
		strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}}}`
	if err := conn.Write(t.Context(), websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4400 || !strings.Contains(ce.Reason, "nested deeper than 10") {
		t.Fatalf("want a 4400 close naming the nesting, got %v", err)
	}
}

// sinceFault is the real store whose Since panics when a subscription
// replays the change log's second page (entries 1,002 to 1,005; the first
// page of 1,000 reads one more to know there is more): in the goroutine the
// subscription starts, not in one gqlgen recovers. Reading past the end
// (the live tail, from 1,005) works.
type sinceFault struct{ graph.Store }

func (s sinceFault) Since(ctx context.Context, seq uint64, limit int) ([]graph.Change, error) {
	if seq > 1000 && seq < 1005 {
		panic("fault injected in Since")
	}
	return s.Store.Since(ctx, seq, limit)
}

// TestSubscriptionPanicRecovered: a panic in a subscription's own
// goroutine ends that subscription and is logged with its stack; the
// process and the server live on.
func TestSubscriptionPanicRecovered(t *testing.T) {
	s := graphtest.New(t)
	var data bytes.Buffer
	for i := range 1005 {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"T%d"}}`+"\n", i, i)
	}
	if _, err := graph.Import(t.Context(), s, &data, graph.ImportOptions{Format: graph.NDJSON, BatchSize: 1}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cat := mcp.NewCatalog(sinceFault{s}, &mcp.Options{Logger: log})
	hs := httptest.NewServer(gql.NewHandler(cat, &gql.Options{Logger: log}))
	t.Cleanup(hs.Close)
	conn := dialWS(t, hs.URL)
	send(t, conn, wsMessage{ID: "1", Type: "subscribe", Payload: json.RawMessage(`{"query":"subscription { changes(since: 0) { seq } }"}`)})
	events := 0
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // a subscription that is not ended fails, not hangs
	defer cancel()
	for {
		var m wsMessage
		if err := wsjson.Read(ctx, conn, &m); err != nil {
			t.Fatalf("after %d events, the subscription was not ended: %v", events, err)
		}
		if m.Type == "ping" {
			send(t, conn, wsMessage{Type: "pong"})
			continue
		}
		if m.Type != "next" {
			break
		}
		events++
	}
	if events != 1000 {
		t.Errorf("%d events before the fault, want the first page's 1000", events)
	}
	if got := logs.String(); !strings.Contains(got, "fault injected in Since") || !strings.Contains(got, "goroutine ") {
		t.Errorf("the panic is not logged with its stack: %.1000s", got)
	}
	res := do(t, hs.URL, `{ describeModel { nodes } }`, nil, nil)
	if len(res.Errors) > 0 || !strings.Contains(string(res.Data["describeModel"]), `"nodes":1005`) {
		t.Errorf("after the panic: %+v %s", res.Errors, res.Data["describeModel"])
	}
}

// syncBuffer is a buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
