package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/web"
)

// get fetches url and returns its status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// readiness is /readyz's body.
type readiness struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
	Failed string            `json:"failed"`
	Error  string            `json:"error"`
}

func readyz(t *testing.T, base string) (int, readiness) {
	t.Helper()
	code, body := get(t, base+"/readyz")
	var r readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("/readyz: %d %q: %v", code, body, err)
	}
	return code, r
}

// scrape reads /metrics and parses it with the Prometheus library.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample returns the value of the series of family name whose labels
// include want (a counter's or gauge's value, a histogram's count), and
// whether there is one.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestHealthAndMetrics: a real lore serve answers /healthz and /readyz, and
// after tool calls over MCP, REST and GraphQL its /metrics (parsed with the
// Prometheus library) has the requests, tool calls, latencies, store
// operations, commits, change-log tail and sessions.
func TestHealthAndMetrics(t *testing.T) {
	_, mcpURL := startServe(t, filepath.Join(t.TempDir(), "store"))
	base := strings.TrimSuffix(mcpURL, "/mcp")
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, r := readyz(t, base); code != http.StatusOK || r.Status != "ready" || r.Checks["store"] != "ok" || r.Checks["changelog"] != "ok" {
		t.Errorf("/readyz: %d %+v", code, r)
	}

	c := httpClient(t, "metrics", mcpURL)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := c.subscribe(ctx, []string{"lore://node/topic/metered"}); err != nil {
		t.Fatal(err)
	}
	if err := c.upsert(ctx, "topic/metered"); err != nil {
		t.Fatal(err)
	}
	if res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": "topic/nope"}}); err != nil || !res.IsError {
		t.Fatalf("get_node of a missing node: %v %v", err, res)
	}
	for range 3 {
		resp, err := http.Post(base+"/api/v1/tools/get_node", "application/json", strings.NewReader(`{"id":"topic/metered"}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("REST get_node: %d", resp.StatusCode)
		}
	}
	resp, err := http.Post(base+"/graphql", "application/json", strings.NewReader(`{"query":"{ getNode(id: \"topic/metered\") { node { id } } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	gq, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(gq), "topic/metered") {
		t.Fatalf("GraphQL getNode: %d %s", resp.StatusCode, gq)
	}
	select {
	case <-c.updates():
	case <-ctx.Done():
		t.Fatal("no resource update for the write")
	}
	// The feed marks an entry delivered once it has sent the entry's
	// notifications, so the one received above may come first; /readyz
	// waits until the feed has delivered the log's last entry: the lag
	// below is 0.
	if code, r := readyz(t, base); code != http.StatusOK || r.Status != "ready" {
		t.Fatalf("/readyz after the write: %d %+v", code, r)
	}

	fams := scrape(t, base+"/metrics")
	for _, s := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"lore_tool_calls_total", map[string]string{"surface": "mcp", "tool": "upsert_nodes", "status": "ok"}, 1},
		{"lore_tool_calls_total", map[string]string{"surface": "mcp", "tool": "get_node", "status": "not_found"}, 1},
		{"lore_tool_calls_total", map[string]string{"surface": "rest", "tool": "get_node", "status": "ok"}, 3},
		{"lore_tool_call_duration_seconds", map[string]string{"surface": "rest", "tool": "get_node"}, 3},
		{"lore_tool_calls_total", map[string]string{"surface": "graphql", "tool": "get_node", "status": "ok"}, 1},
		{"lore_http_requests_total", map[string]string{"surface": "rest", "code": "200"}, 3},
		{"lore_http_requests_total", map[string]string{"surface": "graphql", "code": "200"}, 1},
		{"lore_http_requests_total", map[string]string{"surface": "mcp"}, 1},
		{"lore_http_requests_total", map[string]string{"surface": "web", "code": "200"}, 2}, // healthz, readyz
		{"lore_http_request_duration_seconds", map[string]string{"surface": "rest"}, 3},
		{"lore_store_operation_duration_seconds", map[string]string{"op": "apply"}, 1},
		{"lore_store_operation_duration_seconds", map[string]string{"op": "node"}, 4},
		{"lore_commits_total", nil, 1},
		{"lore_changelog_last_seq", nil, 1},
		{"lore_mcp_sessions", nil, 1},
		{"lore_mcp_subscriptions", nil, 1},
		{"go_goroutines", nil, 1},
	} {
		if v, ok := sample(fams, s.name, s.labels); !ok || v < s.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", s.name, s.labels, v, ok, s.min)
		}
	}
	if v, ok := sample(fams, "lore_changelog_lag", nil); !ok || v != 0 {
		t.Errorf("lore_changelog_lag = %v (present %v), want 0 once the feed delivered the write", v, ok)
	}
	last, _ := sample(fams, "lore_changelog_last_seq", nil)
	if v, _ := sample(fams, "lore_changelog_delivered_seq", nil); v != last {
		t.Errorf("lore_changelog_delivered_seq = %v, last_seq %v", v, last)
	}
}

// TestMetricsNeedToken: with --tokens, /metrics needs a bearer token like
// the API, while /healthz and /readyz need none.
func TestMetricsNeedToken(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	tokens := writeFile(t, "tokens", "prom read "+secret+"\n")
	if err := os.Chmod(tokens, 0o600); err != nil {
		t.Fatal(err)
	}
	_, mcpURL := startServe(t, filepath.Join(t.TempDir(), "store"), "--tokens", tokens)
	base := strings.TrimSuffix(mcpURL, "/mcp")
	if code, _ := get(t, base+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics with a read token: %d", resp.StatusCode)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, body := get(t, base+p); code != http.StatusOK {
			t.Errorf("%s without a token: %d %s", p, code, body)
		}
	}
}

// TestReadyzOnPostgres: /readyz of a lore serve on PostgreSQL turns 503,
// naming the store, once its database is dropped (its connections
// terminated), while /healthz stays 200.
func TestReadyzOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, mcpURL := startServe(t, url)
	base := strings.TrimSuffix(mcpURL, "/mcp")
	if code, r := readyz(t, base); code != http.StatusOK || r.Checks["migrations"] != "ok" {
		t.Fatalf("/readyz: %d %+v", code, r)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := url[strings.LastIndex(url, "/")+1 : strings.Index(url, "?")]
	if _, err := admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	code, r := readyz(t, base)
	if code != http.StatusServiceUnavailable || r.Status != "unavailable" || r.Failed != "store" || r.Error == "" {
		t.Errorf("/readyz after the database was dropped: %d %+v, want 503 failing the store", code, r)
	}
	t.Logf("/readyz: %d %+v", code, r)
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200 while the process serves", code)
	}
}

// TestReadyzChecks runs the checks of lore serve's /readyz on the
// embedded store through an httptest server: the change feed behind the
// log fails them (changelog) until it catches up, and a closed store
// fails them (store).
func TestReadyzChecks(t *testing.T) {
	s, err := bolt.Open(t.Context(), bolt.Config{Path: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := web.NewMetrics()
	srv := newMeteredServer(s, sessionConfig{}, slog.New(slog.DiscardHandler), m)
	m.WatchFeed(s, srv)
	hs := httptest.NewServer(web.NewHandler(srv, &web.Options{Metrics: m, Ready: readyChecks(s, srv), ReadyTimeout: 200 * time.Millisecond}))
	defer hs.Close()
	if code, r := readyz(t, hs.URL); code != http.StatusOK {
		t.Fatalf("/readyz: %d %+v", code, r)
	}
	// A commit that no feed delivers: Watch is not running.
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}}
	if _, err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if code, r := readyz(t, hs.URL); code != http.StatusServiceUnavailable || r.Failed != "changelog" {
		t.Errorf("/readyz with the feed behind: %d %+v, want 503 failing the changelog", code, r)
	}
	fams := scrape(t, hs.URL+"/metrics")
	if v, _ := sample(fams, "lore_changelog_lag", nil); v != 1 {
		t.Errorf("lore_changelog_lag = %v, want 1", v)
	}
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan error, 1)
	go func() { watched <- srv.Watch(ctx) }()
	if err := srv.WaitDelivered(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if code, r := readyz(t, hs.URL); code != http.StatusOK {
		t.Errorf("/readyz once the feed caught up: %d %+v", code, r)
	}
	cancel()
	<-watched
	s.Close()
	if code, r := readyz(t, hs.URL); code != http.StatusServiceUnavailable || r.Failed != "store" || !strings.Contains(r.Error, "closed") {
		t.Errorf("/readyz on a closed store: %d %+v, want 503 failing the store", code, r)
	}
}
