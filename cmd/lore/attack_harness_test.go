//go:build attack

package main

// The harness of make attack (attack_test.go): real lore serve processes
// on loopback ports, their memory and CPU sampled from /proc while the
// attacks run, and the table of what each attack cost.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the run. The RSS bound is over 4 times the peak measured over
// the whole run (105 to 122 MiB, reached by the GraphQL walk its read
// budget of 8 MiB stops; the 1 MB bodies add a few MiB each); the finding
// it guards against took 764 MB. The CPU bound of an attack is about twice
// the dearest single-request attack measured (the four-level neighbours
// walk: 0.87 to 0.95 s, stopped by its read budget); the findings cost
// 10 s to minutes. Floods of thousands of requests get a bound per
// request (see the attacks).
const (
	maxRSS       = 512 << 20
	maxAttackCPU = 2 * time.Second
	// answerBound is how long a request may take before the attack
	// counts it as hanging; refusals must come much faster (fastBound).
	answerBound = 20 * time.Second
	fastBound   = 2 * time.Second
	// idleWindow and idleCPU define idle: at most idleCPU of CPU in
	// idleWindow. An attack is over when its server is idle again, within
	// idleDeadline of the attacker's last request.
	idleWindow   = 400 * time.Millisecond
	idleCPU      = 20 * time.Millisecond
	idleDeadline = 15 * time.Second
	// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
	// 100 on Linux whatever the kernel's HZ).
	clockTick = 10 * time.Millisecond
)

// A target is one lore serve process under attack.
type target struct {
	name  string
	url   string // http://127.0.0.1:PORT
	addr  string // 127.0.0.1:PORT
	store string
	cmd   *exec.Cmd
	log   *lockedBuffer

	exited  chan struct{} // closed when the process has exited
	waitErr error         // set before exited is closed

	mu       sync.Mutex
	peakRSS  int64 // over the whole run
	stepPeak int64 // since the current attack began
}

// lockedBuffer is a buffer a process's output goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var servingRE = regexp.MustCompile(`msg="serving MCP" url=http://(127\.0\.0\.1:\d+)/mcp`)

// startTarget starts lore serve on a free loopback port over a fresh store
// (the example data loads) with extra flags, and samples it until it exits.
func startTarget(t *testing.T, name string, extra ...string) *target {
	t.Helper()
	tg := &target{name: name, store: filepath.Join(t.TempDir(), "store"), log: &lockedBuffer{}, exited: make(chan struct{})}
	args := append([]string{"serve", "--store", tg.store, "--addr", "127.0.0.1:0"}, extra...)
	tg.cmd = exec.Command(loreBin, args...)
	tg.cmd.Env = append(os.Environ(), "LORE_STORE=", "LORE_MODEL=", "LORE_LOG_LEVEL=info")
	stderr, err := tg.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			line := sc.Text()
			tg.log.Write([]byte(line + "\n"))
			if m := servingRE.FindStringSubmatch(line); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
		io.Copy(tg.log, stderr) // a line over the scanner's cap
	}()
	go func() {
		tg.waitErr = tg.cmd.Wait()
		close(tg.exited)
	}()
	select {
	case tg.addr = <-ready:
	case <-tg.exited:
		t.Fatalf("%s: lore serve exited at start: %v\n%s", name, tg.waitErr, tg.log.String())
	case <-time.After(time.Minute):
		tg.cmd.Process.Kill()
		t.Fatalf("%s: lore serve did not start within a minute:\n%s", name, tg.log.String())
	}
	tg.url = "http://" + tg.addr
	go tg.sample()
	t.Cleanup(func() {
		select {
		case <-tg.exited:
		default:
			tg.cmd.Process.Kill()
			<-tg.exited
		}
	})
	return tg
}

// sample reads the process's RSS every 100 ms until it exits.
func (tg *target) sample() {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tg.exited:
			return
		case <-tick.C:
			tg.rss()
		}
	}
}

// rss reads the process's resident memory and records the peaks.
func (tg *target) rss() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tg.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	var kb int64
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	b := kb << 10
	tg.mu.Lock()
	tg.peakRSS = max(tg.peakRSS, b)
	tg.stepPeak = max(tg.stepPeak, b)
	tg.mu.Unlock()
	return b
}

// cpu is the CPU time the process has used (user and system).
func (tg *target) cpu(t *testing.T) time.Duration {
	t.Helper()
	d, err := procCPU(tg.cmd.Process.Pid)
	if err != nil {
		t.Fatalf("%s: %v (did the server exit?)", tg.name, err)
	}
	return d
}

// procCPU reads utime + stime from /proc/PID/stat.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3, state
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick, nil
}

// fds counts the process's open file descriptors.
func (tg *target) fds() int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", tg.cmd.Process.Pid))
	return len(ents)
}

// alive fails the test if the process has exited: a crash.
func (tg *target) alive(t *testing.T) {
	t.Helper()
	select {
	case <-tg.exited:
		t.Fatalf("%s: lore serve exited during the attack (a crash): %v\n%s", tg.name, tg.waitErr, tail(tg.log.String(), 4000))
	default:
	}
}

// waitIdle waits until the process uses at most idleCPU in an idleWindow,
// and fails if it does not within idleDeadline: work that goes on after
// the attacker has gone. It returns how long after the attack the first
// idle window began (0: idle at once).
func (tg *target) waitIdle(t *testing.T) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		began := time.Since(start)
		c0 := tg.cpu(t)
		select {
		case <-time.After(idleWindow): // a measuring window, not a synchronisation
		case <-tg.exited:
			tg.alive(t)
		}
		if c1 := tg.cpu(t); c1-c0 <= idleCPU {
			return began
		} else if time.Since(start) > idleDeadline {
			t.Fatalf("%s: still busy %s after the attack (%v CPU in the last %v): work goes on after the attacker has gone",
				tg.name, idleDeadline, c1-c0, idleWindow)
		}
	}
}

// stop sends SIGTERM and waits for a clean exit; it fails on a crash, an
// exit status other than 0, or a panic in the log that was not recovered.
func (tg *target) stop(t *testing.T) {
	t.Helper()
	tg.alive(t)
	if err := tg.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tg.exited:
	case <-time.After(30 * time.Second):
		tg.cmd.Process.Kill()
		t.Fatalf("%s: lore serve did not stop within 30s of SIGTERM", tg.name)
	}
	log := tg.log.String()
	if tg.waitErr != nil {
		t.Errorf("%s: lore serve exited with %v after SIGTERM:\n%s", tg.name, tg.waitErr, tail(log, 4000))
	}
	if !strings.Contains(log, `msg="shut down"`) {
		t.Errorf("%s: no clean shutdown in the log:\n%s", tg.name, tail(log, 2000))
	}
	checkPanics(t, tg.name, log)
}

// checkPanics fails on any panic in a process's log: one not recovered
// (the runtime's "panic:" or "fatal error:") ends the process, and one
// recovered ("... panicked", logged with its stack) means an attack
// reached a bug behind the guards.
func checkPanics(t *testing.T, name, log string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		switch {
		case strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
			t.Errorf("%s: a panic that was not recovered: %.300s\n%s", name, line, tail(log, 4000))
		case strings.Contains(line, "panicked"):
			t.Errorf("%s: a recovered panic: an attack reached a bug: %.2000s", name, line)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// A row of the final table: one attack.
type row struct {
	name, target, result string
	cpu                  time.Duration // of the server
	idle                 time.Duration // until the server was idle again
	rssAfter, rssPeak    int64
	note                 string
}

// A suite runs attacks, collects every error body they see (for the Go
// type-name scan of item 8) and prints the table at the end.
type suite struct {
	mu        sync.Mutex
	rows      []row
	errBodies []errBody
	targets   []*target
	client    *http.Client
	start     time.Time
	note      string // the current attack's note, set by the attack

	// The attack's own process, when it attacks one (lore mcp, lore import).
	childName string
	childCPU  time.Duration
	childRSS  int64
}

type errBody struct{ where, body string }

func newSuite() *suite {
	return &suite{start: time.Now(), client: &http.Client{Timeout: answerBound, Transport: &http.Transport{
		MaxIdleConnsPerHost: 16, DisableCompression: true, ResponseHeaderTimeout: answerBound}}}
}

// attack runs one attack as a subtest against tg: it checks that the
// server is up before and after, waits for it to be idle again, and
// records the CPU it cost (bounded by cpuBound) and its memory. An attack
// on a process of its own (tg nil) reports that process through child.
func (s *suite) attack(t *testing.T, tg *target, name string, cpuBound time.Duration, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		s.mu.Lock()
		s.note, s.childName, s.childCPU, s.childRSS = "", "", 0, 0
		s.mu.Unlock()
		var c0 time.Duration
		if tg != nil {
			tg.alive(t)
			tg.mu.Lock()
			tg.stepPeak = 0
			tg.mu.Unlock()
			c0 = tg.cpu(t)
		}
		r := row{name: name, result: "FAIL"}
		defer func() {
			if tg != nil {
				r.target = tg.name
				if c1, err := procCPU(tg.cmd.Process.Pid); err == nil {
					r.cpu = c1 - c0
				}
				r.rssAfter = tg.rss()
				tg.mu.Lock()
				r.rssPeak = tg.stepPeak
				tg.mu.Unlock()
			}
			s.mu.Lock()
			if tg == nil {
				r.target, r.cpu, r.rssAfter, r.rssPeak = s.childName, s.childCPU, -1, s.childRSS
			}
			if !t.Failed() {
				r.result = "refused"
			}
			r.note = s.note
			s.rows = append(s.rows, r)
			s.mu.Unlock()
		}()
		f(t)
		if tg == nil {
			s.mu.Lock()
			c := s.childCPU
			s.mu.Unlock()
			if cpuBound > 0 && c > cpuBound {
				t.Errorf("the attack cost the process %v of CPU, over the bound of %v", c, cpuBound)
			}
			return
		}
		tg.alive(t)
		r.idle = tg.waitIdle(t)
		if c := tg.cpu(t) - c0; cpuBound > 0 && c > cpuBound {
			t.Errorf("the attack cost the server %v of CPU, over the bound of %v", c, cpuBound)
		}
	})
}

// child records a process of the attack's own (lore mcp, lore import) that
// has exited: its CPU and peak memory go in the table.
func (s *suite) child(name string, ps *os.ProcessState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.childName = name
	s.childCPU += ps.UserTime() + ps.SystemTime()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.childRSS = max(s.childRSS, ru.Maxrss<<10)
	}
}

// notef sets the current attack's note in the table.
func (s *suite) notef(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.note = fmt.Sprintf(format, args...)
}

// collect keeps an error body the attack saw, for the type-name scan.
func (s *suite) collect(where string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errBodies = append(s.errBodies, errBody{where, string(body)})
}

// collectTool keeps the text of a tool error.
func (s *suite) collectTool(where string, res *mcpsdk.CallToolResult) {
	if res != nil && res.IsError {
		s.collect(where, []byte(toolText(res)))
	}
}

// table prints each attack with its result, the server CPU it cost, the
// RSS after it and its peak, and the totals per server.
func (s *suite) table() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\nmake attack: %d attacks in %s\n", len(s.rows), time.Since(s.start).Round(time.Second))
	fmt.Fprintf(&b, "%-50s %-11s %-8s %9s %8s %9s %9s  %s\n", "attack", "server", "result", "CPU", "idle in", "RSS after", "RSS peak", "note")
	for _, r := range s.rows {
		after := fmt.Sprintf("%8.1fM", mib(r.rssAfter))
		if r.rssAfter < 0 {
			after = "(exited)"
		}
		fmt.Fprintf(&b, "%-50s %-11s %-8s %9s %8s %9s %8.1fM  %s\n", r.name, r.target, r.result, r.cpu.Round(time.Millisecond),
			r.idle.Round(10*time.Millisecond), after, mib(r.rssPeak), r.note)
	}
	for _, tg := range s.targets {
		tg.mu.Lock()
		peak := tg.peakRSS
		tg.mu.Unlock()
		cpu, _ := procCPU(tg.cmd.Process.Pid)
		if st := tg.cmd.ProcessState; st != nil {
			cpu = st.UserTime() + st.SystemTime()
		}
		fmt.Fprintf(&b, "server %-8s peak RSS %.1f MiB (bound %d MiB), total CPU %s\n", tg.name, mib(peak), maxRSS>>20, cpu.Round(time.Millisecond))
	}
	return b.String()
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// An hreq is one HTTP request of an attack.
type hreq struct {
	method, path, body string
	header             map[string]string
	host               string // the Host header, if not the server's
	chunked            bool   // send the body without a length
}

// do sends r to tg and returns the response with its body read; a status
// of 400 or more keeps the body for the type-name scan.
func (s *suite) do(t *testing.T, tg *target, r hreq) (*http.Response, []byte) {
	t.Helper()
	resp, body, err := s.try(t.Context(), tg, r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return resp, body
}

// try is do without failing: a transport error is returned.
func (s *suite) try(ctx context.Context, tg *target, r hreq) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, answerBound)
	defer cancel()
	var rd io.Reader
	if r.body != "" {
		rd = strings.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, tg.url+r.path, rd)
	if err != nil {
		return nil, nil, err
	}
	if r.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.chunked {
		req.Body = io.NopCloser(strings.NewReader(r.body))
		req.ContentLength = -1
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	if r.host != "" {
		req.Host = r.host
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp, body, fmt.Errorf("reading the body: %w", err)
	}
	if resp.StatusCode >= 400 {
		s.collect(fmt.Sprintf("%s %s %s", tg.name, r.method, r.path), body)
	}
	return resp, body, nil
}

// A gqlResponse is a GraphQL response.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (g gqlResponse) codes() []string {
	var out []string
	for _, e := range g.Errors {
		c, _ := e.Extensions["code"].(string)
		out = append(out, c)
	}
	return out
}

// gql posts a GraphQL operation and decodes the answer; errors are kept
// for the type-name scan.
func (s *suite) gql(t *testing.T, tg *target, query string, vars map[string]any, header map[string]string) (int, gqlResponse) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, data := s.do(t, tg, hreq{method: "POST", path: "/graphql", body: string(body), header: header})
	var g gqlResponse
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("GraphQL: %d, not a GraphQL response: %.300s", resp.StatusCode, data)
	}
	if len(g.Errors) > 0 {
		s.collect(tg.name+" GraphQL", data)
	}
	return resp.StatusCode, g
}

// headerTransport adds headers to every request (a bearer token, a
// protocol version).
type headerTransport struct {
	base   http.RoundTripper
	header map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}

// connectMCP opens an MCP session with the official SDK client over
// Streamable HTTP, in one protocol era; token may be "".
func connectMCP(t *testing.T, tg *target, era, token string, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	t.Helper()
	hc := &http.Client{Timeout: 0, Transport: http.DefaultTransport} // streams outlive any client timeout; calls are bounded by their contexts
	if token != "" {
		hc.Transport = headerTransport{http.DefaultTransport, map[string]string{"Authorization": "Bearer " + token}}
	}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "attacker", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(t.Context(), answerBound)
	defer cancel()
	cs, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: tg.url + "/mcp", HTTPClient: hc},
		&mcpsdk.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatalf("MCP %s: %v", era, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callTool calls a tool within answerBound; a protocol error fails.
func callTool(t *testing.T, cs *mcpsdk.ClientSession, p *mcpsdk.CallToolParams) *mcpsdk.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), answerBound)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: protocol error: %v", p.Name, err)
	}
	return res
}

func toolText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// within fails if f takes longer than d, and returns how long it took.
func within(t *testing.T, d time.Duration, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	f()
	took := time.Since(start)
	if took > d {
		t.Errorf("%s took %v, want under %v", what, took.Round(time.Millisecond), d)
	}
	return took
}
