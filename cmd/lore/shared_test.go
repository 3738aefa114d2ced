package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
)

// Helpers for the tests of one store shared by many processes.

// newStore returns a store directory for a test; a background holder that
// the test's lore mcp processes started there is stopped at its end.
func newStore(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { stopHolder(t, dir) })
	return dir
}

// stopHolder stops the background holder of the store in dir, if one
// runs: it hands the store over (to nobody), which closes the store before
// it answers.
func stopHolder(t testing.TB, dir string) {
	t.Helper()
	h := findHolder(context.Background(), dir)
	if h == nil || h.info.Kind != kindHold {
		return
	}
	if err := h.handover(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("stopping the holder: %v", err)
	}
}

// testEnv is the environment the test's lore processes run with.
func testEnv(t testing.TB) []string {
	return append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME=", "LORE_STORE=", "LORE_MODEL=")
}

// loreIn runs the binary to completion in dir with stdin.
func loreIn(t testing.TB, dir string, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(loreBin, args...)
	cmd.Dir, cmd.Stdin, cmd.Env = dir, stdin, testEnv(t)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// startHold starts lore hold on store as the test's child and waits until
// it is ready; it is stopped at the end of the test.
func startHold(t testing.TB, store string, extra ...string) *exec.Cmd {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(loreBin, append([]string{"hold", "--ready-fd", "3", "--store", store}, extra...)...)
	cmd.Env, cmd.ExtraFiles = testEnv(t), []*os.File{pw}
	var logb syncBuffer
	cmd.Stderr = &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	msg, _ := io.ReadAll(pr)
	pr.Close()
	if strings.TrimSpace(string(msg)) != "ready" {
		cmd.Wait()
		t.Fatalf("lore hold: %q\n%s", msg, logb.String())
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	return cmd
}

// startServe starts lore serve on store as the test's child and returns
// its MCP URL; it is stopped at the end of the test.
func startServe(t testing.TB, store string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(loreBin, append([]string{"serve", "--store", store, "--addr", "127.0.0.1:0"}, extra...)...)
	cmd.Env = testEnv(t)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var url string
	var log strings.Builder
	for url == "" && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	go io.Copy(io.Discard, stderr)
	if url == "" {
		cmd.Wait()
		t.Fatalf("lore serve did not start:\n%s", log.String())
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	return cmd, url
}

// syncBuffer is a bytes.Buffer safe for concurrent use, which can wait
// for what is written.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // closed at the next write
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.b.Write(p)
}

// waitFor waits until the buffer holds sub, for at most d.
func (s *syncBuffer) waitFor(sub string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		if strings.Contains(s.b.String(), sub) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		ch := s.written
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// An update is a resources/updated notification and when it came.
type update struct {
	uri string
	at  time.Time
}

// A client is an MCP client session on the shared store: over stdio
// through lore mcp, or over HTTP to lore serve.
type client struct {
	name   string
	cs     *mcpsdk.ClientSession
	ups    chan update
	stderr *syncBuffer // lore mcp's
	cmd    *exec.Cmd   // lore mcp
}

func (c *client) String() string { return c.name }

// connect opens an SDK client session over transport.
func connect(t testing.TB, name string, transport mcpsdk.Transport, opts *mcpsdk.ClientOptions) *client {
	t.Helper()
	c := &client{name: name, ups: make(chan update, 100000)}
	var o mcpsdk.ClientOptions
	if opts != nil {
		o = *opts
	}
	o.ResourceUpdatedHandler = func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
		c.ups <- update{req.Params.URI, time.Now()}
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: name, Version: "1"}, &o).Connect(t.Context(), transport,
		&mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c.cs = cs
	t.Cleanup(func() { cs.Close() })
	return c
}

// stdioClient starts lore mcp on store with the Go SDK client. A
// background holder it starts exits 5 s after its last client (one started
// while the test ends is not stopped by newStore).
func stdioClient(t testing.TB, name, store string, extra ...string) *client {
	t.Helper()
	cmd := exec.Command(loreBin, append([]string{"mcp", "--store", store, "--idle", "5s"}, extra...)...)
	cmd.Env = testEnv(t)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	c := connect(t, name, &mcpsdk.CommandTransport{Command: cmd}, nil)
	c.stderr, c.cmd = &stderr, cmd
	return c
}

// httpClient connects the Go SDK client to lore serve.
func httpClient(t testing.TB, name, url string) *client {
	t.Helper()
	return connect(t, name, &mcpsdk.StreamableClientTransport{Endpoint: url}, nil)
}

// callUpsert is an upsert_nodes call writing one Topic node.
func callUpsert(id, name string) *mcpsdk.CallToolParams {
	return &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: map[string]any{
		"nodes": []any{map[string]any{"id": id, "type": "Topic", "properties": map[string]any{"name": name}}}}}
}

// upsert writes one Topic node in one commit.
func (c *client) upsert(ctx context.Context, id string) error {
	res, err := c.cs.CallTool(ctx, callUpsert(id, id))
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("upsert %s: %s", id, resultText(res))
	}
	return nil
}

func resultText(res *mcpsdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func (c *client) write(ctx context.Context, ids []string, par int) error {
	return forEach(ids, par, func(id string) error { return c.upsert(ctx, id) })
}

func (c *client) subscribe(ctx context.Context, uris []string) error {
	for _, u := range uris {
		if err := c.cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: u}); err != nil {
			return fmt.Errorf("%s: subscribe %s: %w", c.name, u, err)
		}
	}
	return nil
}

func (c *client) updates() <-chan update { return c.ups }

// forEach runs f on each item, par at a time, and returns the first error.
func forEach(items []string, par int, f func(string) error) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	sem := make(chan struct{}, max(par, 1))
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(it); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// cliWriter writes through lore import processes, which run in the holder.
type cliWriter struct {
	t     testing.TB
	store string
}

func (w *cliWriter) String() string { return "cli" }

// write imports ids, a commit each (--batch 1 --partial), five a process.
func (w *cliWriter) write(_ context.Context, ids []string, par int) error {
	var chunks []string
	for i := 0; i < len(ids); i += 5 {
		chunks = append(chunks, strings.Join(ids[i:min(i+5, len(ids))], "\n"))
	}
	return forEach(chunks, par, func(chunk string) error {
		var in strings.Builder
		for id := range strings.SplitSeq(chunk, "\n") {
			fmt.Fprintf(&in, `{"kind":"node","id":%q,"type":"Topic","properties":{"name":%q}}`+"\n", id, id)
		}
		_, stderr, code := loreIn(w.t, "", strings.NewReader(in.String()), "import", "--store", w.store, "--batch", "1", "--partial", "-")
		if code != 0 {
			return fmt.Errorf("lore import: exit %d: %s", code, stderr)
		}
		return nil
	})
}

// A writer writes Topic nodes, one commit each.
type writer interface {
	fmt.Stringer
	write(ctx context.Context, ids []string, par int) error
}

// A subscriber hears of the resources that change.
type subscriber interface {
	fmt.Stringer
	subscribe(ctx context.Context, uris []string) error
	updates() <-chan update
}

// topicIDs returns n Topic node IDs with a prefix.
func topicIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("topic/%s-%03d", prefix, i)
	}
	return ids
}

// testSharing is the acceptance test of one store shared by every kind of
// client at once: a write through any writer reaches every subscriber, in
// order; then each writer writes 250 nodes at once with the others, and
// all 1,000 land, in a change log without gaps.
func testSharing(t *testing.T, store string, writers []writer, subs []subscriber, log *client) {
	ctx := t.Context()
	// In order: writes one after another through the writers in turn;
	// every subscriber hears of each, in the order written.
	order := topicIDs("order", 4*len(writers))
	uris := make([]string, len(order))
	for i, id := range order {
		uris[i] = "lore://node/" + id
	}
	for _, s := range subs {
		if err := s.subscribe(ctx, uris); err != nil {
			t.Fatal(err)
		}
	}
	written := make([]time.Time, len(order))
	for i, id := range order {
		written[i] = time.Now()
		if err := writers[i%len(writers)].write(ctx, []string{id}, 1); err != nil {
			t.Fatalf("%s: %v", writers[i%len(writers)], err)
		}
	}
	var lat []time.Duration
	for _, s := range subs {
		for i, want := range uris {
			select {
			case u := <-s.updates():
				if u.uri != want {
					t.Fatalf("%s heard of %s as update %d, want %s (written by %s): out of order", s, u.uri, i, want, writers[i%len(writers)])
				}
				lat = append(lat, u.at.Sub(written[i]))
			case <-time.After(30 * time.Second):
				t.Fatalf("%s did not hear of %s (written by %s)", s, want, writers[i%len(writers)])
			}
		}
	}
	slices.Sort(lat)
	t.Logf("write to notification, over %d subscribers and %d writes: p50 %v, max %v", len(subs), len(order), lat[len(lat)/2], lat[len(lat)-1])

	// At once: 250 writes from each writer.
	before := lastSeq(t, store)
	var wg sync.WaitGroup
	errs := make([]error, len(writers))
	want := map[string]bool{}
	for i, w := range writers {
		ids := topicIDs(fmt.Sprintf("w%d", i), 250)
		for _, id := range ids {
			want[id] = true
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = w.write(ctx, ids, 8)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", writers[i], err)
		}
	}
	// Every write landed, each in its own log entry, with no gap.
	seq := before
	for cursor, more := before, true; more; {
		res, err := log.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "changes_since", Arguments: map[string]any{"cursor": cursor, "limit": 1000}})
		if err != nil || res.IsError {
			t.Fatalf("changes_since: %v %v", err, res)
		}
		var page struct {
			Changes []graph.Change `json:"changes"`
			Cursor  uint64         `json:"cursor"`
			More    bool           `json:"more"`
		}
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatal(err)
		}
		for _, ch := range page.Changes {
			if ch.Seq != seq+1 {
				t.Fatalf("the change log jumps from %d to %d", seq, ch.Seq)
			}
			seq = ch.Seq
			for _, n := range ch.Nodes {
				delete(want, string(n.ID))
			}
		}
		cursor, more = page.Cursor, page.More
	}
	if len(want) > 0 || seq-before != 1000 {
		t.Fatalf("after 4 × 250 writes: %d log entries, %d written nodes missing from the log", seq-before, len(want))
	}
	if end := lastSeq(t, store); end != seq {
		t.Errorf("lore stats says the log ends at %d, the log read ends at %d", end, seq)
	}
	for i := range writers {
		for _, id := range topicIDs(fmt.Sprintf("w%d", i), 250) {
			if _, ok := want[id]; ok {
				t.Errorf("%s is missing", id)
			}
		}
	}
}

// lastSeq returns the end of the store's change log, read by lore stats.
func lastSeq(t testing.TB, store string) uint64 {
	t.Helper()
	var st graph.Stats
	out, stderr, code := loreIn(t, "", nil, "stats", "--json", "--store", store)
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("lore stats: exit %d: %s%s", code, out, stderr)
	}
	return st.LastSeq
}
