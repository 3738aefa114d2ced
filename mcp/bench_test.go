package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/mcp"
)

// BenchmarkTransports measures tools/call over every transport Lore serves
// (stdio and Streamable HTTP, each in both protocol eras) with 1 and 8
// concurrent clients, each client its own session, against two floors
// measured in the same run:
//
//   - (b) the same SDK serving a trivial tool that returns the bytes Lore's
//     get_node returns for one node, with the handler configuration Lore uses;
//   - (a) no MCP at all: over HTTP a bare http.HandlerFunc writing the
//     JSON-RPC response bytes (b) writes, driven by a plain net/http client
//     posting the request body the SDK client posts; over stdio a raw
//     io.Pipe echo of the same bytes, one line in, one line out.
//
// Each b.Loop iteration runs the whole matrix once and prints a table of
// p50, p99, calls/s and KB allocated per call, then the ratios lore
// get_node/(b) (target: at least 80%) and (b)/(a); the ratios are also
// reported as metrics. The 10k store builds in about a second; larger ones
// are built once (1M: about 5 minutes on 2 cores) and cached under
// os.TempDir() as lore-mcpbench-<generator version>-<nodes>:
//
//	make bench-mcp                                   # 10k, about 30 s
//	make bench-mcp SIZES=10000,1000000
//	go test -run '^$' -bench Transports -benchtime 1x ./mcp -lore.mcponly b -lore.mcptransports http-2026 -cpuprofile b.prof
//
// Every server goroutine carries the profiler label side=server: go tool
// pprof -tagfocus side=server b.prof shows the server's share, -tagignore
// the clients' (and the runtime's background GC workers).
var (
	mcpSizes      = flag.String("lore.mcpsizes", "10000", "comma-separated node counts for BenchmarkTransports")
	mcpTime       = flag.Duration("lore.mcptime", 300*time.Millisecond, "measured time per cell and round (a warm-up of a third of it precedes each)")
	mcpRounds     = flag.Int("lore.mcprounds", 2, "rounds over the matrix; a cell's samples from all rounds are pooled")
	mcpOnly       = flag.String("lore.mcponly", "", "comma-separated subset of get,search,b,a (default all)")
	mcpTransports = flag.String("lore.mcptransports", "", "comma-separated subset of stdio-2025,stdio-2026,http-2025,http-2026 (default all)")
	mcpClients    = flag.String("lore.mcpclients", "1,8", "comma-separated concurrent client counts")
	mcpSDK        = flag.String("lore.mcpsdk", "", "variants of (b) to try, comma-separated: json (JSONResponse on both handlers), noevents (no EventStore), nostream (clients open no standalone SSE stream)")
)

// mcpGenVersion names the generator and the store layout; change it when
// either changes so cached stores are rebuilt (v2: layout version 2).
const mcpGenVersion = "v3"

const (
	eraLegacy = "2025-11-25"
	eraModern = mcp.ModernVersion
)

type mcpTransport struct {
	name string // stdio-2025 …
	http bool
	era  string
}

var allTransports = []mcpTransport{
	{"stdio-2025", false, eraLegacy}, {"stdio-2026", false, eraModern},
	{"http-2025", true, eraLegacy}, {"http-2026", true, eraModern},
}

// Targets, in the order the table lists them.
const (
	tGet    = "get"
	tSearch = "search"
	tSDK    = "b"
	tBare   = "a"
)

var targetLabel = map[string]string{tGet: "lore get_node", tSearch: "lore search_nodes", tSDK: "(b) sdk trivial", tBare: "(a) bare"}

func BenchmarkTransports(b *testing.B) {
	for _, s := range strings.Split(*mcpSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			env := newBenchEnv(b, n)
			for b.Loop() {
				res := env.runMatrix(b)
				env.print(res)
				for _, tr := range env.transports {
					for _, c := range env.clients {
						get, sdk, bare := res[cellKey{tr.name, c, tGet}], res[cellKey{tr.name, c, tSDK}], res[cellKey{tr.name, c, tBare}]
						if get != nil && sdk != nil {
							b.ReportMetric(get.rate()/sdk.rate(), fmt.Sprintf("get/b:%s:c%d", tr.name, c))
							b.ReportMetric(sdk.cpuPerCall()/get.cpuPerCall(), fmt.Sprintf("get/b-cpu:%s:c%d", tr.name, c))
						}
						if sdk != nil && bare != nil {
							b.ReportMetric(sdk.rate()/bare.rate(), fmt.Sprintf("b/a:%s:c%d", tr.name, c))
							b.ReportMetric(bare.cpuPerCall()/sdk.cpuPerCall(), fmt.Sprintf("b/a-cpu:%s:c%d", tr.name, c))
						}
					}
				}
			}
		})
	}
}

// ---- the store

// mcpGraph writes n nodes in the default model as NDJSON: n/200 teams, 30%
// people, the rest services, with memberOf, owns and two dependsOn edges per
// service. Names and descriptions are drawn from a vocabulary of 1,000
// made-up words, so a two-word query matches a few nodes at 10k and a few
// hundred at 1M.
func mcpGraph(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	teams := max(1, n/200)
	people := n * 3 / 10
	services := max(1, n-teams-people)
	langs := []string{"Go", "Kotlin", "Rust", "Python", "TypeScript"}
	roles := []string{"Software Engineer", "Senior Software Engineer", "Staff Engineer", "Engineering Manager", "Site Reliability Engineer"}
	lifecycle := []string{"experimental", "production", "deprecated", "retired"}
	for i := range teams {
		fmt.Fprintf(bw, `{"kind":"node","id":"team/t%d","type":"Team","properties":{"name":"%s %s","mission":"Own the %s %s and %s systems.","channel":"#t%d"}}`+"\n",
			i, benchWord(i, 1), benchWord(i, 2), benchWord(i, 3), benchWord(i, 4), benchWord(i, 5), i)
	}
	for i := range people {
		fmt.Fprintf(bw, `{"kind":"node","id":"person/p%d","type":"Person","properties":{"name":"%s %s","email":"p%d@example.com","role":"%s","bio":"Works on %s %s."}}`+"\n",
			i, title(benchWord(i, 6)), title(benchWord(i, 7)), i, roles[i%len(roles)], benchWord(i, 8), benchWord(i, 9))
	}
	for i := range services {
		fmt.Fprintf(bw, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"%s %s","description":"Handles %s %s for the %s platform.","tier":%d,"lifecycle":"%s","language":"%s"}}`+"\n",
			i, benchWord(i, 10), benchWord(i, 11), benchWord(i, 12), benchWord(i, 13), benchWord(i, 14), i%4, lifecycle[i%4], langs[i%len(langs)])
	}
	for i := range people {
		fmt.Fprintf(bw, `{"kind":"edge","from":"person/p%d","label":"memberOf","to":"team/t%d"}`+"\n", i, i%teams)
	}
	for i := range services {
		fmt.Fprintf(bw, `{"kind":"edge","from":"team/t%d","label":"owns","to":"service/s%d"}`+"\n", i%teams, i)
		for _, j := range []int{(i*7919 + 1) % services, (i*104729 + 3) % services} {
			if j != i {
				fmt.Fprintf(bw, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, j)
			}
		}
	}
	return bw.Flush()
}

func title(w string) string { return strings.ToUpper(w[:1]) + w[1:] }

// benchWord is the made-up word for node i in slot k: three of ten
// syllables, so 1,000 words.
func benchWord(i, k int) string {
	syl := []string{"ka", "lo", "mi", "ren", "tu", "sa", "vo", "ne", "pri", "dax"}
	h := uint64(i)*0x9E3779B97F4A7C15 + uint64(k)*0xBF58476D1CE4E5B9
	h ^= h >> 31
	h *= 0x94D049BB133111EB
	h ^= h >> 29
	w := h % 1000
	return syl[w/100] + syl[w/10%10] + syl[w%10]
}

// benchStore opens the cached store of n nodes, building it first if it is
// missing. It is built in a scratch directory and renamed into place, so a
// store that is there is complete.
func benchStore(b *testing.B, n int) graph.Store {
	ctx := context.Background()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("lore-mcpbench-%s-%d", mcpGenVersion, n))
	if _, err := os.Stat(dir); err != nil {
		start := time.Now()
		tmp, err := os.MkdirTemp(os.TempDir(), filepath.Base(dir)+".building-")
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(tmp)
		s, err := bolt.Open(ctx, bolt.Config{Path: tmp, NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		// Load as lore import does.
		defer graph.TuneGCForImport(false)()
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(mcpGraph(pw, n)) }()
		st, err := graph.Import(ctx, s, pr, graph.ImportOptions{Format: graph.NDJSON})
		pr.Close()
		if err != nil {
			s.Close()
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, os.ErrExist) {
			if _, serr := os.Stat(dir); serr != nil { // not a concurrent build that won
				b.Fatal(err)
			}
		}
		fmt.Printf("built the %d-node store (%d elements) in %s: %s\n", n, st.Elements(), time.Since(start).Round(time.Millisecond), dir)
	}
	// Measure a server in its steady state, with its store in the page
	// cache: read the file once. Cold, a random get_node at 1M nodes costs
	// about 4 times as much, nearly all of it page faults in bbolt's mmap.
	if f, err := os.Open(filepath.Join(dir, "store.bolt")); err == nil {
		io.Copy(io.Discard, f)
		f.Close()
	}
	s, err := bolt.Open(ctx, bolt.Config{Path: dir})
	if err != nil {
		b.Fatalf("%v (delete %s to rebuild it)", err, dir)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// ---- the environment: servers, floors, workloads

type benchEnv struct {
	n          int
	transports []mcpTransport
	clients    []int
	targets    []string
	variants   map[string]bool

	srv                 *mcp.Server
	sdk                 *mcpsdk.Server // (b)
	loreHTTP, sdkHTTP   *httptest.Server
	bareHTTP            *httptest.Server
	httpClient          *http.Client
	getArgs, searchArgs []json.RawMessage
	sdkArgs             json.RawMessage
	bareReq, bareResp   map[string][]byte // per era: the request body and the JSON-RPC response of (b)
	loreResp            map[string][]byte // per era: Lore's JSON-RPC response for the same node
}

func newBenchEnv(b *testing.B, n int) *benchEnv {
	e := &benchEnv{n: n, variants: map[string]bool{}}
	e.transports = pick(b, allTransports, *mcpTransports, func(t mcpTransport) string { return t.name })
	e.targets = pick(b, []string{tGet, tSearch, tSDK, tBare}, *mcpOnly, func(s string) string { return s })
	for _, s := range strings.Split(*mcpClients, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 {
			b.Fatalf("bad -lore.mcpclients %q", *mcpClients)
		}
		e.clients = append(e.clients, c)
	}
	for _, v := range strings.Split(*mcpSDK, ",") {
		if v = strings.TrimSpace(v); v != "" {
			if v != "json" && v != "noevents" && v != "nostream" {
				b.Fatalf("unknown -lore.mcpsdk variant %q", v)
			}
			e.variants[v] = true
		}
	}

	store := benchStore(b, n)
	e.srv = mcp.NewServer(mcp.NewCatalog(store, nil), nil)
	e.loreHTTP = startHTTP(b, e.srv.HTTPHandler(&mcp.HTTPOptions{RateLimit: -1}))
	// One connection pool for every HTTP client, large enough that 8
	// clients (and their standalone SSE streams) never dial per call.
	e.httpClient = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}}
	b.Cleanup(e.httpClient.CloseIdleConnections)

	// Workloads: random services for get_node, two words of a random
	// service's name for search_nodes (every word must match, so each
	// query finds at least that service).
	st, err := store.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	services := int(st.NodeTypes["Service"])
	rng := rand.New(rand.NewPCG(1, 2))
	for range 4096 {
		i := rng.IntN(services)
		e.getArgs = append(e.getArgs, json.RawMessage(fmt.Sprintf(`{"id":"service/s%d"}`, i)))
		e.searchArgs = append(e.searchArgs, json.RawMessage(fmt.Sprintf(`{"query":"%s %s","limit":10}`, benchWord(i, 10), benchWord(i, 11))))
	}

	// (b): one low-level tool named get_node with Lore's input schema,
	// returning what Lore's get_node returns for the middle service.
	ref := fmt.Sprintf("service/s%d", services/2)
	e.sdkArgs = json.RawMessage(fmt.Sprintf(`{"id":%q}`, ref))
	res, err := e.srv.Catalog().Invoke(context.Background(), "get_node", e.sdkArgs)
	if err != nil {
		b.Fatal(err)
	}
	structured, text := res.Structured, res.Text
	var input json.RawMessage
	for _, t := range e.srv.Catalog().Tools() {
		if t.Name == "get_node" {
			input = t.Input
		}
	}
	// The same implementation info, which 2026-07-28 results repeat in _meta.
	ct, sst := mcpsdk.NewInMemoryTransports()
	ss, err := e.srv.SDK().Connect(context.Background(), sst, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), ct,
		&mcpsdk.ClientSessionOptions{ProtocolVersion: eraLegacy})
	if err != nil {
		b.Fatal(err)
	}
	impl := cs.InitializeResult().ServerInfo
	cs.Close()
	ss.Close()
	e.sdk = mcpsdk.NewServer(impl, nil)
	e.sdk.AddTool(&mcpsdk.Tool{Name: "get_node", Description: "A fixed node.", InputSchema: input},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			// A fresh result each call: the SDK annotates results in place.
			return &mcpsdk.CallToolResult{StructuredContent: structured, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}, nil
		})
	same := func(*http.Request) *mcpsdk.Server { return e.sdk }
	lopts := &mcpsdk.StreamableHTTPOptions{EventStore: mcpsdk.NewMemoryEventStore(nil), SessionTimeout: 30 * time.Minute,
		MaxRequestBodyBytes: 1 << 20, JSONResponse: e.variants["json"]}
	if e.variants["noevents"] {
		lopts.EventStore = nil
	}
	legacyH := mcpsdk.NewStreamableHTTPHandler(same, lopts)
	modernH := mcpsdk.NewStreamableHTTPHandler(same, &mcpsdk.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: 1 << 20, JSONResponse: e.variants["json"]})
	e.sdkHTTP = startHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("MCP-Protocol-Version") >= mcp.ModernVersion {
			modernH.ServeHTTP(w, r)
			return
		}
		legacyH.ServeHTTP(w, r)
	}))

	// (a): the bytes (b) exchanges for one call in each era, recorded on
	// the wire, served by a bare handler. Lore's answer for the same node
	// is recorded too, to show the payloads match.
	e.bareReq, e.bareResp, e.loreResp = map[string][]byte{}, map[string][]byte{}, map[string][]byte{}
	for _, era := range []string{eraLegacy, eraModern} {
		e.bareReq[era], e.bareResp[era] = e.recordCall(b, e.sdkHTTP.URL, era)
		_, e.loreResp[era] = e.recordCall(b, e.loreHTTP.URL+"/mcp", era)
	}
	e.bareHTTP = startHTTP(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		io.Copy(io.Discard, r.Body)
		era := eraLegacy
		if r.Header.Get("MCP-Protocol-Version") >= mcp.ModernVersion {
			era = eraModern
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(e.bareResp[era])
	}))
	return e
}

// startHTTP starts an HTTP server for h. Its goroutines, and those they
// start (the SDK's session goroutines), carry the profiler label
// side=server, so a CPU profile can be split into server and client with
// go tool pprof -tagfocus side=server (or -tagignore).
func startHTTP(b *testing.B, h http.Handler) *httptest.Server {
	hs := httptest.NewUnstartedServer(h)
	serverSide(context.Background(), func(context.Context) { hs.Start() })
	b.Cleanup(hs.Close)
	return hs
}

func serverSide(ctx context.Context, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("side", "server"), f)
}

func pick[T any](b *testing.B, all []T, only string, name func(T) string) []T {
	if only == "" {
		return all
	}
	var out []T
	for _, s := range strings.Split(only, ",") {
		i := slices.IndexFunc(all, func(t T) bool { return name(t) == strings.TrimSpace(s) })
		if i < 0 {
			b.Fatalf("unknown name %q", s)
		}
		out = append(out, all[i])
	}
	return out
}

// recordCall makes one get_node call for (b)'s node over HTTP in an era
// and returns the JSON-RPC request body the client posted and the JSON-RPC
// response the server sent (out of its SSE framing, if any).
func (e *benchEnv) recordCall(b *testing.B, url, era string) (req, resp []byte) {
	rec := &recorder{rt: e.httpClient.Transport}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(b.Context(),
		&mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}, DisableStandaloneSSE: true},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(b.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: e.sdkArgs}); err != nil {
		b.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for line := range bytes.Lines(rec.resp) {
		line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("data:")))
		if bytes.HasPrefix(line, []byte(`{`)) && bytes.Contains(line, []byte(`"result"`)) {
			resp = append(slices.Clone(line), '\n')
		}
	}
	if rec.req == nil || resp == nil {
		b.Fatalf("recorded no tools/call exchange at %s:\n%s\n%s", era, rec.req, rec.resp)
	}
	return rec.req, resp
}

// recorder keeps the last tools/call exchange that passes through it.
type recorder struct {
	rt        http.RoundTripper
	mu        sync.Mutex
	req, resp []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := r.rt.RoundTrip(req)
	if err != nil || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return res, err
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	res.Body = io.NopCloser(bytes.NewReader(data))
	r.mu.Lock()
	r.req, r.resp = body, data
	r.mu.Unlock()
	return res, err
}

// ---- clients

// A caller makes calls on its own session.
type caller interface {
	call(ctx context.Context, i int) error
	close()
}

// dial opens one client session to a target over a transport.
func (e *benchEnv) dial(ctx context.Context, tr mcpTransport, target string) (caller, error) {
	if target == tBare {
		if tr.http {
			return &bareHTTPCaller{url: e.bareHTTP.URL, hc: e.httpClient, body: e.bareReq[tr.era], era: tr.era}, nil
		}
		return newPipeEcho(e.bareReq[tr.era], e.bareResp[tr.era]), nil
	}
	var t mcpsdk.Transport
	var done chan error
	if tr.http {
		url := e.loreHTTP.URL + "/mcp"
		if target == tSDK {
			url = e.sdkHTTP.URL
		}
		t = &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: e.httpClient, DisableStandaloneSSE: target == tSDK && e.variants["nostream"]}
	} else {
		// Two pipes: the server reads what the client writes and the other way round.
		sr, cw := io.Pipe()
		cr, sw := io.Pipe()
		done = make(chan error, 1)
		go serverSide(ctx, func(ctx context.Context) {
			var err error
			if target == tSDK {
				err = e.sdk.Run(ctx, &mcpsdk.IOTransport{Reader: sr, Writer: sw})
			} else {
				err = e.srv.ServeStdio(ctx, sr, sw)
			}
			sw.Close()
			sr.Close()
			done <- err
		})
		t = &mcpsdk.IOTransport{Reader: cr, Writer: cw}
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, &mcpsdk.ClientSessionOptions{ProtocolVersion: tr.era})
	if err != nil {
		return nil, err
	}
	c := &sdkCaller{cs: cs, done: done}
	switch target {
	case tGet:
		c.name, c.args = "get_node", e.getArgs
	case tSearch:
		c.name, c.args = "search_nodes", e.searchArgs
	case tSDK:
		c.name, c.args = "get_node", []json.RawMessage{e.sdkArgs}
	}
	return c, nil
}

type sdkCaller struct {
	cs   *mcpsdk.ClientSession
	done chan error // stdio: the server's end
	name string
	args []json.RawMessage
}

func (c *sdkCaller) call(ctx context.Context, i int) error {
	res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: c.name, Arguments: c.args[i%len(c.args)]})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: %v", c.name, res.Content)
	}
	return nil
}

func (c *sdkCaller) close() {
	c.cs.Close()
	if c.done != nil {
		<-c.done
	}
}

type bareHTTPCaller struct {
	url, era string
	hc       *http.Client
	body     []byte
}

func (c *bareHTTPCaller) call(ctx context.Context, _ int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", c.era)
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("bare handler: %s", res.Status)
	}
	return nil
}

func (c *bareHTTPCaller) close() {}

// pipeEcho is (a) over stdio: a goroutine answers each line written to one
// pipe with the response line on the other.
type pipeEcho struct {
	w    *io.PipeWriter
	r    *bufio.Reader
	req  []byte
	done chan struct{}
}

func newPipeEcho(req, resp []byte) *pipeEcho {
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	p := &pipeEcho{w: cw, r: bufio.NewReaderSize(cr, 64<<10), req: append(slices.Clone(bytes.TrimSpace(req)), '\n'), done: make(chan struct{})}
	go serverSide(context.Background(), func(context.Context) {
		defer close(p.done)
		defer sw.Close()
		br := bufio.NewReaderSize(sr, 64<<10)
		for {
			if _, err := br.ReadSlice('\n'); err != nil {
				return
			}
			if _, err := sw.Write(resp); err != nil {
				return
			}
		}
	})
	return p
}

func (p *pipeEcho) call(context.Context, int) error {
	if _, err := p.w.Write(p.req); err != nil {
		return err
	}
	_, err := p.r.ReadSlice('\n')
	return err
}

func (p *pipeEcho) close() {
	p.w.Close()
	<-p.done
}

// ---- running the matrix

type cellKey struct {
	transport string
	clients   int
	target    string
}

type cellResult struct {
	lat     []time.Duration
	calls   int
	elapsed time.Duration
	alloc   uint64        // bytes allocated by the whole process (clients, servers, runtime) while measuring
	cpu     time.Duration // CPU time (user and system) of the whole process while measuring
}

func (r *cellResult) kbPerCall() float64 { return float64(r.alloc) / 1024 / float64(r.calls) }

// cpuPerCall is less sensitive than calls/s to other processes on a busy
// machine: they take wall time from the cell, not CPU time.
func (r *cellResult) cpuPerCall() float64 { return float64(r.cpu.Microseconds()) / float64(r.calls) }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (r *cellResult) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func (r *cellResult) pct(p float64) time.Duration {
	slices.Sort(r.lat)
	return r.lat[min(len(r.lat)-1, int(float64(len(r.lat))*p))]
}

func (e *benchEnv) runMatrix(b *testing.B) map[cellKey]*cellResult {
	res := map[cellKey]*cellResult{}
	for round := range *mcpRounds {
		for _, tr := range e.transports {
			for _, c := range e.clients {
				// Rotate the order of the targets from round to round, so
				// none always runs first (or last) in a cell group.
				order := slices.Clone(e.targets)
				k := round % len(order)
				order = append(order[k:], order[:k]...)
				for _, target := range order {
					key := cellKey{tr.name, c, target}
					r := res[key]
					if r == nil {
						r = &cellResult{}
						res[key] = r
					}
					if err := e.runCell(b.Context(), tr, target, c, r); err != nil {
						b.Fatalf("%s %s c=%d: %v", tr.name, targetLabel[target], c, err)
					}
				}
			}
		}
	}
	return res
}

// runCell connects the clients, warms up, then has every client call
// back to back until the deadline, recording each call's latency.
func (e *benchEnv) runCell(ctx context.Context, tr mcpTransport, target string, clients int, into *cellResult) error {
	// Start from a collected heap, so a cell does not pay for the garbage
	// of the one before (a 1M search_nodes call leaves megabytes).
	runtime.GC()
	callers := make([]caller, clients)
	defer func() {
		for _, c := range callers {
			if c != nil {
				c.close()
			}
		}
	}()
	for i := range callers {
		c, err := e.dial(ctx, tr, target)
		if err != nil {
			return err
		}
		callers[i] = c
	}
	warm := *mcpTime / 3
	var (
		wg      sync.WaitGroup
		ready   sync.WaitGroup
		start   = make(chan struct{})
		mu      sync.Mutex
		firstEr error
		t0      time.Time
		end     time.Time
	)
	lats := make([][]time.Duration, clients)
	ready.Add(clients)
	for ci, c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := func(err error) {
				mu.Lock()
				if firstEr == nil {
					firstEr = err
				}
				mu.Unlock()
			}
			i := ci * 7919 // each client its own walk through the workload
			warmEnd := time.Now().Add(warm)
			var err error
			for time.Now().Before(warmEnd) && err == nil {
				err = c.call(ctx, i)
				i++
			}
			ready.Done()
			if err != nil {
				fail(err)
				return
			}
			<-start
			lat := make([]time.Duration, 0, 4096)
			for deadline := t0.Add(*mcpTime); ; i++ {
				s := time.Now()
				if s.After(deadline) {
					break
				}
				if err := c.call(ctx, i); err != nil {
					fail(err)
					return
				}
				lat = append(lat, time.Since(s))
			}
			lats[ci] = lat
		}()
	}
	ready.Wait()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0 := cpuTime()
	t0 = time.Now()
	close(start)
	wg.Wait()
	end = time.Now()
	into.cpu += cpuTime() - c0
	runtime.ReadMemStats(&m1)
	into.alloc += m1.TotalAlloc - m0.TotalAlloc
	if firstEr != nil {
		return firstEr
	}
	for _, l := range lats {
		into.lat = append(into.lat, l...)
		into.calls += len(l)
	}
	into.elapsed += end.Sub(t0)
	return nil
}

func (e *benchEnv) print(res map[cellKey]*cellResult) {
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }
	fmt.Printf("\nMCP tools/call, %d nodes: %d round(s) of %s per cell after a %s warm-up, each client its own session.\n",
		e.n, *mcpRounds, *mcpTime, *mcpTime/3)
	fmt.Printf("(b) = SDK v1.8.0, one low-level tool returning Lore's get_node result for one node, served as Lore serves it: JSON-RPC responses of %d bytes (2025-11-25) and %d (2026-07-28); Lore's for that node %d and %d",
		len(e.bareResp[eraLegacy]), len(e.bareResp[eraModern]), len(e.loreResp[eraLegacy]), len(e.loreResp[eraModern]))
	if len(e.variants) > 0 {
		fmt.Printf(", variants %v", *mcpSDK)
	}
	fmt.Printf(".\n(a) = over HTTP a bare net/http handler writing those bytes to a plain net/http client; over stdio a raw io.Pipe echo of them.\n")
	fmt.Printf("Clients and servers share this process: CPU µs and KB per call count both ends (and the collector).\n\n")
	fmt.Printf("%-11s %3s  %-18s %9s %9s %9s %9s %9s\n", "transport", "c", "target", "p50 µs", "p99 µs", "calls/s", "CPU µs", "KB/call")
	for _, tr := range e.transports {
		for _, c := range e.clients {
			for _, t := range []string{tGet, tSearch, tSDK, tBare} {
				r := res[cellKey{tr.name, c, t}]
				if r == nil || len(r.lat) == 0 {
					continue
				}
				fmt.Printf("%-11s %3d  %-18s %9.1f %9.1f %9.0f %9.1f %9.1f\n", tr.name, c, targetLabel[t], us(r.pct(0.50)), us(r.pct(0.99)), r.rate(), r.cpuPerCall(), r.kbPerCall())
			}
		}
	}
	fmt.Printf("\nRatios of calls/s (target: lore get_node >= 80%% of (b) everywhere); the p50 and CPU columns are the same ratios\ncomputed from p50 latency and from CPU time per call ((b) p50 / lore p50, (b) CPU / lore CPU, and so on).\n")
	fmt.Printf("%-11s %3s  %12s %6s %6s %12s %6s %6s %14s\n", "transport", "c", "get/(b)", "p50", "CPU", "(b)/(a)", "p50", "CPU", "search/(b)")
	for _, tr := range e.transports {
		for _, c := range e.clients {
			get, search, sdk, bare := res[cellKey{tr.name, c, tGet}], res[cellKey{tr.name, c, tSearch}], res[cellKey{tr.name, c, tSDK}], res[cellKey{tr.name, c, tBare}]
			ratio := func(x, y *cellResult) string {
				if x == nil || y == nil {
					return "-"
				}
				return fmt.Sprintf("%.0f%%", 100*x.rate()/y.rate())
			}
			p50 := func(x, y *cellResult) string {
				if x == nil || y == nil {
					return "-"
				}
				return fmt.Sprintf("%.0f%%", 100*float64(x.pct(0.5))/float64(y.pct(0.5)))
			}
			verdict := ""
			if get != nil && sdk != nil {
				if get.rate() >= 0.8*sdk.rate() {
					verdict = " ok"
				} else {
					verdict = " MISS"
				}
			}
			cpu := func(x, y *cellResult) string {
				if x == nil || y == nil {
					return "-"
				}
				return fmt.Sprintf("%.0f%%", 100*x.cpuPerCall()/y.cpuPerCall())
			}
			fmt.Printf("%-11s %3d  %9s%-3s %6s %6s %12s %6s %6s %14s\n", tr.name, c, ratio(get, sdk), verdict, p50(sdk, get), cpu(sdk, get),
				ratio(sdk, bare), p50(bare, sdk), cpu(bare, sdk), ratio(search, sdk))
		}
	}
}
