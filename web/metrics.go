package web

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// Surfaces, as the metrics label requests and tool calls.
const (
	SurfaceMCP     = "mcp"
	SurfaceREST    = "rest"
	SurfaceGraphQL = "graphql"
	SurfaceWeb     = "web" // pages, documents, health and metrics
)

// Metrics are the Prometheus series a server exports at /metrics, in a
// registry of their own (nothing package-level):
//
//   - lore_http_requests_total{surface,code} and
//     lore_http_request_duration_seconds{surface}: every HTTP request, by
//     surface (mcp, rest, graphql, web) and status code; a stream (SSE,
//     WebSocket) is observed when it ends.
//   - lore_tool_calls_total{surface,tool,status} and
//     lore_tool_call_duration_seconds{surface,tool}: every tool call, by
//     the surface it came through, the tool and its outcome (ok or an
//     error code: mcp.Outcome).
//   - lore_store_operation_duration_seconds{op} and
//     lore_store_operation_errors_total{op}: every call on the store
//     (apply, node, edges, since, …), through Store.
//   - lore_commits_total: batches this process committed (each one
//     change-log entry); rate() of it is the commit rate.
//   - lore_changelog_last_seq (the store's LastSeq),
//     lore_changelog_delivered_seq (the last entry the server's change
//     feed delivered) and lore_changelog_lag (their difference), read at
//     each scrape; lore_mcp_sessions and lore_mcp_subscriptions, the MCP
//     sessions open and their resource subscriptions; Go runtime and
//     process series.
//
// The zero value is not usable; call NewMetrics.
type Metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec
	requestSeconds *prometheus.HistogramVec
	calls          *prometheus.CounterVec
	callSeconds    *prometheus.HistogramVec
	storeSeconds   *prometheus.HistogramVec
	storeErrors    *prometheus.CounterVec
	commits        prometheus.Counter
}

// latencyBuckets span a cached lookup (100 µs) to a read at its default
// ceiling (10 s).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NewMetrics returns the series above, registered in a new registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lore_http_requests_total",
			Help: "HTTP requests served, by surface and status code."}, []string{"surface", "code"}),
		requestSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lore_http_request_duration_seconds",
			Help: "Time to serve an HTTP request (a stream: its whole life), by surface.", Buckets: latencyBuckets}, []string{"surface"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lore_tool_calls_total",
			Help: "Tool calls, by surface, tool and outcome (ok or an error code)."}, []string{"surface", "tool", "status"}),
		callSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lore_tool_call_duration_seconds",
			Help: "Time a tool call took, by surface and tool.", Buckets: latencyBuckets}, []string{"surface", "tool"}),
		storeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lore_store_operation_duration_seconds",
			Help: "Time a store operation took, by operation.", Buckets: latencyBuckets}, []string{"op"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lore_store_operation_errors_total",
			Help: "Store operations that failed, by operation (a rejected batch counts)."}, []string{"op"}),
		commits: prometheus.NewCounter(prometheus.CounterOpts{Name: "lore_commits_total",
			Help: "Batches this process committed, each with one change-log entry."}),
	}
	m.reg.MustRegister(m.requests, m.requestSeconds, m.calls, m.callSeconds, m.storeSeconds, m.storeErrors, m.commits,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry the series are in, to add others to.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the series in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// ObserveCall records a tool call; it is mcp.Options.Observe. The surface
// is the one the request's context carries (see Handler's routes), MCP
// when none does (stdio, or a session the SDK serves on its own context).
func (m *Metrics) ObserveCall(ctx context.Context, tool string, d time.Duration, err error) {
	if errors.Is(err, mcp.ErrUnknownTool) {
		tool = "(unknown)" // a client's typo must not add a series
	}
	surface, _ := ctx.Value(surfaceKey{}).(string)
	if surface == "" {
		surface = SurfaceMCP
	}
	m.calls.WithLabelValues(surface, tool, mcp.Outcome(err)).Inc()
	m.callSeconds.WithLabelValues(surface, tool).Observe(d.Seconds())
}

// A Feed is the MCP server's view of the change log and its sessions,
// which the metrics read at each scrape. *mcp.Server is one.
type Feed interface {
	Delivered() uint64
	Sessions() int
	Subscriptions() int
}

// WatchFeed adds the gauges of the change log's tail and of the MCP
// sessions: read at each scrape from s (its LastSeq, within
// scrapeTimeout) and f.
func (m *Metrics) WatchFeed(s graph.Store, f Feed) {
	m.reg.MustRegister(&feedCollector{store: s, feed: f})
}

// scrapeTimeout bounds the store read of a scrape.
const scrapeTimeout = 5 * time.Second

var (
	lastSeqDesc = prometheus.NewDesc("lore_changelog_last_seq",
		"The store's newest change-log sequence number (commits on every replica).", nil, nil)
	deliveredDesc = prometheus.NewDesc("lore_changelog_delivered_seq",
		"The last change-log entry this server's change feed delivered to its subscriptions.", nil, nil)
	lagDesc = prometheus.NewDesc("lore_changelog_lag",
		"Change-log entries committed but not yet delivered by this server's feed (last_seq - delivered_seq).", nil, nil)
	sessionsDesc = prometheus.NewDesc("lore_mcp_sessions", "MCP sessions open on this server.", nil, nil)
	subsDesc     = prometheus.NewDesc("lore_mcp_subscriptions", "MCP resource subscriptions held by this server's sessions.", nil, nil)
)

// feedCollector reads the change log's tail and the sessions at scrape time.
type feedCollector struct {
	store graph.Store
	feed  Feed
}

func (c *feedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lastSeqDesc
	ch <- deliveredDesc
	ch <- lagDesc
	ch <- sessionsDesc
	ch <- subsDesc
}

func (c *feedCollector) Collect(ch chan<- prometheus.Metric) {
	delivered := c.feed.Delivered() // before LastSeq, so the lag is never negative
	ch <- prometheus.MustNewConstMetric(deliveredDesc, prometheus.GaugeValue, float64(delivered))
	ch <- prometheus.MustNewConstMetric(sessionsDesc, prometheus.GaugeValue, float64(c.feed.Sessions()))
	ch <- prometheus.MustNewConstMetric(subsDesc, prometheus.GaugeValue, float64(c.feed.Subscriptions()))
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	st, err := c.store.Stats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(lastSeqDesc, err) // the scrape fails, saying why
		return
	}
	ch <- prometheus.MustNewConstMetric(lastSeqDesc, prometheus.GaugeValue, float64(st.LastSeq))
	ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(st.LastSeq-min(delivered, st.LastSeq)))
}

type surfaceKey struct{}

// measure counts and times the requests h serves, each by the surface its
// path belongs to (m nil: h itself).
func (m *Metrics) measure(h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	by := map[string]http.Handler{}
	for _, s := range []string{SurfaceMCP, SurfaceREST, SurfaceGraphQL, SurfaceWeb} {
		by[s] = m.measured(s, h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		by[surfaceOf(r.URL.Path)].ServeHTTP(w, r)
	})
}

// surfaceOf names the surface a request path belongs to.
func surfaceOf(path string) string {
	switch {
	case path == "/mcp":
		return SurfaceMCP
	case path == "/graphql":
		return SurfaceGraphQL
	case strings.HasPrefix(path, "/api/"):
		return SurfaceREST
	}
	return SurfaceWeb
}

// measured serves h as surface: its requests are counted and timed, and
// its tool calls know their surface.
func (m *Metrics) measured(surface string, h http.Handler) http.Handler {
	count := m.requests.MustCurryWith(prometheus.Labels{"surface": surface})
	seconds := m.requestSeconds.WithLabelValues(surface)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			code := sw.status
			if code == 0 {
				code = http.StatusOK
			}
			count.WithLabelValues(strconv.Itoa(code)).Inc()
			seconds.Observe(time.Since(start).Seconds())
		}()
		h.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), surfaceKey{}, surface)))
	})
}

// statusWriter records the status a handler sends. It passes on flushing,
// hijacking and (through Unwrap) deadlines.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 || code == http.StatusSwitchingProtocols {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
