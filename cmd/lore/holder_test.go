package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/schema"
)

// TestCLIThroughHolder: with a holder holding the store, every CLI command
// that reads or writes runs there, relative paths resolved in the client's
// directory, stdin and stdout streamed, exit status and messages kept; a
// --model other than the store's is refused, saying so; compact and check
// --repair name the process to stop.
func TestCLIThroughHolder(t *testing.T) {
	store := newStore(t)
	hold := startHold(t, store, "--idle", "1h")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "new.ndjson"), []byte(`{"kind":"node","id":"topic/relative","type":"Topic","properties":{"name":"relative"}}`+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "q.json"), []byte(`{"from":{"ids":["team/payments"]}}`), 0o644)
	for _, tt := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		out   string // in stdout
		err   string // in stderr
	}{
		{"stats", "", []string{"stats"}, 0, `"nodes": 101`, ""},
		{"stats table", "", []string{"stats", "-o", "table"}, 0, "nodes    101", ""},
		{"get table", "", []string{"get", "-o", "table", "team/payments"}, 0, "Team  team/payments  Payments\n", ""},
		{"get", "", []string{"get", "team/payments"}, 0, `"id": "team/payments"`, ""},
		{"get missing", "", []string{"get", "team/nobody"}, 1, "", "lore: "},
		{"search", "", []string{"search", "billing"}, 0, "service/billing", ""},
		{"neighbors", "", []string{"neighbors", "team/payments"}, 0, "team/payments", ""},
		{"paths", "", []string{"paths", "team/payments", "service/billing"}, 0, "paths", ""},
		{"query file", "", []string{"query", "q.json"}, 0, "team/payments", ""},
		{"query stdin", `{"from":{"ids":["team/payments"]}}`, []string{"query", "-"}, 0, "team/payments", ""},
		{"import file", "", []string{"import", "new.ndjson"}, 0, "", "imported 1 node"},
		{"import stdin", `{"kind":"node","id":"topic/piped","type":"Topic","properties":{"name":"piped"}}` + "\n", []string{"import", "-"}, 0, "", "imported 1 node"},
		{"import bad", `{"kind":"node","id":"topic/bad","type":"Topic","properties":{"name":7}}` + "\n", []string{"import", "-"}, 1, "", "line 1"},
		{"export file", "", []string{"export", "out.ndjson"}, 0, "", "exported 103 nodes"},
		{"export stdout", "", []string{"export", "-"}, 0, `"topic/piped"`, "exported 103 nodes"},
		{"check", "", []string{"check"}, 0, ": ok", ""},
		{"usage", "", []string{"get"}, 2, "", "get takes one ID"},
		{"compact", "", []string{"compact"}, 1, "", fmt.Sprintf("lore compact needs the store to itself, and pid %d (", hold.Process.Pid)},
		{"repair", "", []string{"check", "--repair"}, 1, "", fmt.Sprintf("lore check --repair needs the store to itself, and pid %d (", hold.Process.Pid)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := loreIn(t, dir, strings.NewReader(tt.stdin), append(tt.args, "--store", store)...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
				t.Errorf("lore %s: exit %d, want %d\nstdout: %.500s\nstderr: %.500s", strings.Join(tt.args, " "), code, tt.code, out, errOut)
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(dir, "out.ndjson")); err != nil || !strings.Contains(string(data), `"topic/relative"`) {
		t.Errorf("the export into the client's directory: %v %.200s", err, data)
	}
	// A model other than the store's is refused, saying so.
	model := filepath.Join(dir, "model.json")
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	doc["title"] = "another model"
	data, _ := json.Marshal(doc)
	os.WriteFile(model, data, 0o644)
	_, errOut, code := loreIn(t, dir, nil, "get", "team/payments", "--model", "model.json", "--store", store)
	if code != 1 || !strings.Contains(errOut, "--model model.json differs from the model of the store") || !strings.Contains(errOut, fmt.Sprintf("pid %d", hold.Process.Pid)) {
		t.Errorf("get with another model: exit %d: %s", code, errOut)
	}
	// The same model is fine.
	os.WriteFile(model, schema.DefaultJSON(), 0o644)
	if _, errOut, code := loreIn(t, dir, nil, "get", "team/payments", "--model", "model.json", "--store", store); code != 0 {
		t.Errorf("get with the store's model: exit %d: %s", code, errOut)
	}
}

// TestMCPRefusesAnotherModel: lore mcp with a --model other than that of
// the store its holder holds exits at once, saying why.
func TestMCPRefusesAnotherModel(t *testing.T) {
	store := newStore(t)
	startHold(t, store, "--idle", "1h")
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	doc["title"] = "another model"
	data, _ := json.Marshal(doc)
	model := filepath.Join(t.TempDir(), "model.json")
	os.WriteFile(model, data, 0o644)
	_, errOut, code := loreIn(t, "", strings.NewReader(""), "mcp", "--store", store, "--model", model)
	if code != 1 || !strings.Contains(errOut, "differs from the model of the store") {
		t.Errorf("lore mcp --model: exit %d: %s", code, errOut)
	}
}

// rawClient drives lore mcp with JSON-RPC lines.
type rawClient struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	err     *syncBuffer
	backlog []string // read, not yet asked for
}

func startRaw(t *testing.T, store string, extra ...string) *rawClient {
	t.Helper()
	cmd := exec.Command(loreBin, append([]string{"mcp", "--store", store, "--idle", "5s"}, extra...)...)
	cmd.Env = testEnv(t)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	r := &rawClient{t: t, cmd: cmd, in: in, lines: make(chan string, 100), err: &syncBuffer{}}
	cmd.Stderr = r.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	return r
}

func (r *rawClient) send(format string, args ...any) {
	r.t.Helper()
	if _, err := fmt.Fprintf(r.in, format+"\n", args...); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the first message on stdout not yet returned whose text
// matches re.
func (r *rawClient) next(re string) string {
	r.t.Helper()
	m := regexp.MustCompile(re)
	for i, l := range r.backlog {
		if m.MatchString(l) {
			r.backlog = append(r.backlog[:i], r.backlog[i+1:]...)
			return l
		}
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				r.t.Fatalf("lore mcp ended before %s; stderr:\n%s", re, r.err.String())
			}
			if m.MatchString(l) {
				return l
			}
			r.backlog = append(r.backlog, l)
		case <-timeout:
			r.t.Fatalf("no message matching %s; stderr:\n%s", re, r.err.String())
		}
	}
}

// killPID kills a process without warning (SIGKILL).
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// holderPID returns the pid of the store's holder.
func holderPID(t *testing.T, store string) int {
	t.Helper()
	h := findHolder(t.Context(), store)
	if h == nil {
		t.Fatal("no holder answers")
	}
	return h.info.PID
}

// TestBridgeReconnects: a request in flight when the session's holder
// goes away gets a JSON-RPC error saying to retry; the client's answer to
// the old holder's question is dropped; the bridge finds the next holder,
// replays the initialize exchange and the subscription there, says the
// subscribed resource may have changed, and the session goes on: a write
// notifies it. Both ways a holder goes: killed under a relayed session
// (lore mcp --relay), which starts a new holder; and handing the store to
// lore serve under an attached session (stdin and stdout handed over),
// which hands the session back with what it had read of a line the client
// had not finished.
func TestBridgeReconnects(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{{"relayed, holder killed", []string{"--relay"}}, {"attached, store handed over", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			r := startRaw(t, store, tc.args...)
			r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
			r.next(`"id":1,"result"`)
			r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			r.send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"lore://node/topic/after"}}`)
			r.next(`"id":2,"result"`)
			how := "relayed"
			if tc.args == nil {
				how = "attached"
			}
			if !r.err.waitFor(`session=`+how, 10*time.Second) {
				t.Fatalf("the session is not %s:\n%s", how, r.err.String())
			}
			// A delete waits for the user's answer: a request surely in flight.
			r.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"delete_nodes","arguments":{"nodes":[{"id":"team/payments"}]}}}`)
			ask := r.next(`"method":"elicitation/create"`)
			var q struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(ask), &q)
			old := holderPID(t, store)
			if tc.args != nil {
				if err := killPID(old); err != nil {
					t.Fatal(err)
				}
			} else {
				// Half a line: the holder may have read it when it lets go.
				fmt.Fprint(r.in, `{"jsonrpc":"2.0","id":9,"method":"tools/call",`)
				startServe(t, store)
			}
			msg := r.next(`"id":3`)
			if !strings.Contains(msg, `"error"`) || !strings.Contains(msg, "retry") || !strings.Contains(msg, fmt.Sprint(old)) {
				t.Fatalf("the request in flight: %s", msg)
			}
			if tc.args == nil {
				r.send(`"params":{"name":"get_node","arguments":{"id":"team/payments"}}}`)
				if got := r.next(`"id":9`); !strings.Contains(got, `"structuredContent"`) {
					t.Fatalf("the request whose line the holder let go half read: %s", got)
				}
			}
			// The answer to the old holder's question goes nowhere.
			r.send(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept","content":{"confirm":true}}}`, q.ID)
			r.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"team/payments"}}}`)
			if got := r.next(`"id":4`); !strings.Contains(got, `"structuredContent"`) {
				t.Fatalf("get_node after the holder went: %s (the delete must not have happened)", got)
			}
			if pid := holderPID(t, store); pid == old {
				t.Fatalf("the holder is still pid %d", pid)
			}
			// The subscription moved to the new holder: the bridge said the
			// resource may have changed, and a write now notifies.
			r.next(`"notifications/resources/updated".*lore://node/topic/after`)
			r.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"upsert_nodes","arguments":{"nodes":[{"id":"topic/after","type":"Topic","properties":{"name":"after"}}]}}}`)
			r.next(`"notifications/resources/updated".*lore://node/topic/after`)
			r.next(`"id":5,"result"`)
			if !r.err.waitFor("reconnected to the store's holder", 30*time.Second) {
				t.Errorf("stderr does not say it reconnected:\n%s", r.err.String())
			}
			r.in.Close()
			if err := r.cmd.Wait(); err != nil {
				t.Errorf("lore mcp after stdin closed: %v\n%s", err, r.err.String())
			}
		})
	}
}

// TestAttachedHolderKilled: a holder killed while it serves attached
// sessions takes what it had read with it, so their lore mcp exit saying
// so (the client sees its server end, and no request waits forever); every
// write acknowledged is in the store, and a lore mcp started again works
// through a new holder.
func TestAttachedHolderKilled(t *testing.T) {
	store := newStore(t)
	clients := []*client{stdioClient(t, "a", store), stdioClient(t, "b", store)}
	old := holderPID(t, store)
	var mu sync.Mutex
	var acked []string
	acks := make(chan struct{}, 10000)
	var wg sync.WaitGroup
	for _, c := range clients {
		if !c.stderr.waitFor("session=attached", 10*time.Second) {
			t.Fatalf("%s is not attached:\n%s", c.name, c.stderr.String())
		}
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					id := fmt.Sprintf("topic/k-%s%d-%04d", c.name, w, i)
					if err := c.upsert(t.Context(), id); err != nil {
						return // the session ended
					}
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					acks <- struct{}{}
				}
			}()
		}
	}
	for range 40 {
		<-acks
	}
	if err := killPID(old); err != nil {
		t.Fatal(err)
	}
	wg.Wait() // every writer's session ended: no call waits forever
	for _, c := range clients {
		c.cs.Close()
		if code := c.cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(c.stderr.String(), "went away while it served this session") {
			t.Errorf("%s: exit %d, stderr:\n%s", c.name, code, c.stderr.String())
		}
	}
	again := stdioClient(t, "again", store)
	if pid := holderPID(t, store); pid == old {
		t.Fatalf("the holder is still pid %d", pid)
	}
	for _, id := range acked {
		res, err := again.cs.CallTool(t.Context(), callGetNode(id))
		if err != nil || res.IsError {
			t.Errorf("acknowledged write %s is missing: %v %s", id, err, resultText(res))
		}
	}
	if err := again.upsert(t.Context(), "topic/after-the-kill"); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes acknowledged before the kill", len(acked))
}

// TestHolderKilledDuringWrites: two relayed lore mcp clients write
// without pause while the holder is killed; every write acknowledged is in
// the store afterwards, the ones in flight failed saying to retry, and
// both clients go on writing through a new holder.
func TestHolderKilledDuringWrites(t *testing.T) {
	store := newStore(t)
	clients := []*client{stdioClient(t, "a", store, "--relay"), stdioClient(t, "b", store, "--relay")}
	old := holderPID(t, store)
	var mu sync.Mutex
	var acked []string
	var failed []error
	acks := make(chan int, 10000) // the client's index, per acknowledged write
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for ci, c := range clients {
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					id := fmt.Sprintf("topic/k-%s%d-%04d", c.name, w, i)
					err := c.upsert(t.Context(), id)
					mu.Lock()
					if err == nil {
						acked = append(acked, id)
					} else {
						failed = append(failed, err)
					}
					mu.Unlock()
					if err == nil {
						acks <- ci
					}
				}
			}()
		}
	}
	for range 40 {
		<-acks
	}
	if err := killPID(old); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	atKill := len(acked)
	mu.Unlock()
	// Both clients go on: 20 more acknowledged writes each.
	after := [2]int{}
	for after[0] < 20 || after[1] < 20 {
		select {
		case ci := <-acks:
			mu.Lock()
			if len(acked) > atKill {
				after[ci]++
			}
			mu.Unlock()
		case <-time.After(60 * time.Second):
			t.Fatalf("the clients stopped writing after the holder was killed: %v more", after)
		}
	}
	stop()
	wg.Wait()
	for _, err := range failed {
		if !strings.Contains(err.Error(), "retry") {
			t.Errorf("a write failed without saying to retry: %v", err)
		}
	}
	t.Logf("%d writes acknowledged (%d before the kill), %d failed saying to retry", len(acked), atKill, len(failed))
	if pid := holderPID(t, store); pid == old {
		t.Fatalf("the holder is still pid %d", pid)
	}
	for _, id := range acked {
		res, err := clients[0].cs.CallTool(t.Context(), callGetNode(id))
		if err != nil || res.IsError {
			t.Errorf("acknowledged write %s is missing: %v %s", id, err, resultText(res))
		}
	}
}

// TestTwoMCPStartAtOnce: two lore mcp started together on a store nobody
// holds end up with one holder, both bridged to it.
func TestTwoMCPStartAtOnce(t *testing.T) {
	store := newStore(t)
	var cs [2]*client
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[i] = stdioClient(t, fmt.Sprint("c", i), store)
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	pid := holderPID(t, store)
	re := regexp.MustCompile(`bridged to the store's holder" pid=(\d+)`)
	for _, c := range cs {
		if res, err := c.cs.CallTool(t.Context(), callGetNode("team/payments")); err != nil || res.IsError {
			t.Errorf("%s: get_node: %v", c.name, err)
		}
		c.stderr.waitFor("bridged to the store's holder", 10*time.Second) // an attached session may serve before its log line
		m := re.FindStringSubmatch(c.stderr.String())
		if m == nil || m[1] != fmt.Sprint(pid) {
			t.Errorf("%s is not bridged to the holder, pid %d:\n%s", c.name, pid, c.stderr.String())
		}
	}
}

// TestServeTakesOver: lore serve takes the store over from the background
// holder that lore mcp started; the lore mcp session goes on through lore
// serve, its subscription with it.
func TestServeTakesOver(t *testing.T) {
	store := newStore(t)
	a := stdioClient(t, "a", store)
	if err := a.subscribe(t.Context(), []string{"lore://node/topic/handover"}); err != nil {
		t.Fatal(err)
	}
	if h := findHolder(t.Context(), store); h == nil || h.info.Kind != kindHold {
		t.Fatalf("want a background holder, got %+v", h)
	}
	serve, url := startServe(t, store)
	if h := findHolder(t.Context(), store); h == nil || h.info.PID != serve.Process.Pid {
		t.Fatalf("lore serve (pid %d) does not hold the store: %+v", serve.Process.Pid, h)
	}
	// The session goes on: the write is notified twice, once by the bridge
	// when it reconnected (it may have changed meanwhile), once for the write.
	if err := a.upsert(t.Context(), "topic/handover"); err != nil {
		t.Fatal(err)
	}
	res, err := httpClient(t, "http", url).cs.CallTool(t.Context(), callUpsert("topic/handover", "changed over HTTP"))
	if err != nil || res.IsError {
		t.Fatalf("upsert over HTTP: %v %v", err, res)
	}
	for i := range 3 {
		select {
		case u := <-a.updates():
			if u.uri != "lore://node/topic/handover" {
				t.Errorf("update %d: %s", i, u.uri)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("update %d did not come; stderr:\n%s", i, a.stderr.String())
		}
	}
	if !strings.Contains(a.stderr.String(), "reconnected to the store's holder") {
		t.Errorf("stderr:\n%s", a.stderr.String())
	}
	a.cs.Close() // before lore serve stops, so that it starts no holder
}

// TestServeRefusesAHeldStore: a second lore serve, or lore mcp --direct,
// on a store lore serve holds says which process holds it.
func TestServeRefusesAHeldStore(t *testing.T) {
	store := newStore(t)
	serve, _ := startServe(t, store)
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"mcp", "--direct"}} {
		_, errOut, code := loreIn(t, "", strings.NewReader(""), append(args, "--store", store)...)
		if code != 1 || !strings.Contains(errOut, fmt.Sprintf("store locked: held by pid %d (", serve.Process.Pid)) ||
			!strings.Contains(errOut, "listening on ") {
			t.Errorf("lore %s: exit %d: %s", args[0], code, errOut)
		}
	}
}

// TestHoldExitsWhenIdle: a background holder exits once it has had no
// client for its idle period, and takes its socket and owner file along.
func TestHoldExitsWhenIdle(t *testing.T) {
	store := newStore(t)
	hold := startHold(t, store, "--idle", "300ms")
	if out, errOut, code := loreIn(t, "", nil, "stats", "--store", store); code != 0 {
		t.Fatalf("stats: %s%s", out, errOut)
	}
	done := make(chan error, 1)
	go func() { done <- hold.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("lore hold: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("lore hold did not exit when idle")
	}
	for _, name := range []string{sockName, ownerFile} {
		if _, err := os.Stat(filepath.Join(store, name)); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
}

// TestSocketInRuntimeDir: a store whose path is too long for a socket
// address gets its socket in an owner-only runtime directory, named in the
// owner file, where clients find it.
func TestSocketInRuntimeDir(t *testing.T) {
	store := filepath.Join(newStore(t), strings.Repeat("d", 100))
	run := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", run)
	startHold(t, store, "--idle", "1h")
	o, ok := readOwner(store)
	if !ok || filepath.Dir(o.socket) != filepath.Join(run, "lore") {
		t.Fatalf("owner file: %+v", o)
	}
	for path, want := range map[string]os.FileMode{filepath.Dir(o.socket): 0o700, o.socket: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, want mode %04o", path, fi.Mode(), want)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", "") // the client finds it by the owner file
	if out, errOut, code := loreIn(t, "", nil, "stats", "--store", store); code != 0 || !strings.Contains(out, `"nodes": 101`) {
		t.Errorf("stats: %s%s", out, errOut)
	}
	// A runtime directory others may enter is made owner-only.
	dir := filepath.Join(t.TempDir(), "lore")
	os.Mkdir(dir, 0o755)
	if err := ensurePrivateDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %04o", fi.Mode().Perm())
	}
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(dir, link)
	if err := ensurePrivateDir(link); err == nil {
		t.Error("a symbolic link was taken for the runtime directory")
	}
}

// TestPeerCheck: the holder's listener refuses a connection from another
// user (SO_PEERCRED) and accepts one from its own.
func TestPeerCheck(t *testing.T) {
	for _, tt := range []struct {
		uid    int
		accept bool
	}{{os.Getuid(), true}, {os.Getuid() + 1, false}} {
		sock := filepath.Join(t.TempDir(), "s")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		pl := &peerListener{Listener: ln, uid: tt.uid, log: slog.New(slog.DiscardHandler)}
		accepted := make(chan bool, 1)
		go func() {
			c, err := pl.Accept()
			if err == nil {
				c.Write([]byte("x"))
				c.Close()
			}
			accepted <- err == nil
		}()
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		n, _ := c.Read(buf)
		if got := n == 1; got != tt.accept {
			t.Errorf("uid %d: read %d byte(s), want accepted=%v", tt.uid, n, tt.accept)
		}
		c.Close()
		ln.Close()
		if tt.accept {
			<-accepted
		}
	}
}

// callGetNode is a get_node call.
func callGetNode(id string) *mcpsdk.CallToolParams {
	return &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": id}}
}

// TestLockedMessageNamesSocket: a command that finds the store locked by a
// holder that does not answer names the holder's pid, command line and
// socket, from the owner file.
func TestLockedMessageNamesSocket(t *testing.T) {
	store := t.TempDir()
	s, err := openEmbedded(t.Context(), storeOptions{path: store, noSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sock := filepath.Join(t.TempDir(), "gone.sock") // nothing listens there
	if err := writeOwner(store, sock); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := loreIn(t, "", nil, "stats", "--store", store)
	want := fmt.Sprintf("store locked: held by pid %d (%s), listening on %s", os.Getpid(), strings.Join(os.Args, " "), sock)
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d: %s\nwant %s", code, errOut, want)
	}
}

// TestAttachedBridgeKilled: when a lore mcp whose session the holder
// serves is killed, the holder ends that session (it would otherwise
// never go idle) and goes on serving the others.
func TestAttachedBridgeKilled(t *testing.T) {
	store := newStore(t)
	keep := stdioClient(t, "keep", store)
	r := startRaw(t, store)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next(`"id":1,"result"`)
	if !r.err.waitFor("session=attached", 10*time.Second) {
		t.Fatalf("not attached:\n%s", r.err.String())
	}
	if h := findHolder(t.Context(), store); h == nil || h.info.Sessions != 2 {
		t.Fatalf("want 2 sessions on the holder, got %+v", h)
	}
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := findHolder(t.Context(), store)
		if h == nil {
			t.Fatal("the holder went away")
		}
		if h.info.Sessions == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder still serves %d sessions", h.info.Sessions)
		}
	}
	if res, err := keep.cs.CallTool(t.Context(), callGetNode("team/payments")); err != nil || res.IsError {
		t.Fatalf("the other session: %v %s", err, resultText(res))
	}
}

// TestModelApplyThroughHolder: with a background holder holding the store
// for a lore mcp session, lore model apply runs in the holder and puts the
// model in use on its open store: the holder keeps serving (same pid), the
// session subscribed to lore://model is told, and reads the new model and
// version; a command with the new --model is now the store's.
func TestModelApplyThroughHolder(t *testing.T) {
	store := newStore(t)
	r := startRaw(t, store)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next(`"id":1,"result"`)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"lore://model"}}`)
	r.next(`"id":2,"result"`)
	pid := holderPID(t, store)

	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	doc["title"] = "applied model"
	topic := doc["$defs"].(map[string]any)["Topic"].(map[string]any)
	topic["x-lore-node"].(map[string]any)["indexed"] = []string{"name"}
	data, _ := json.Marshal(doc)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.json"), data, 0o644)
	v2, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}

	out, errOut, code := loreIn(t, dir, nil, "model", "apply", "model.json", "--store", store)
	if code != 0 || !strings.Contains(out, "applied: the store now uses model.json") {
		t.Fatalf("lore model apply with a holder: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	r.next(`"notifications/resources/updated".*lore://model`)
	r.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"lore://model"}}`)
	if got := r.next(`"id":3`); !strings.Contains(got, `x-lore-version\":\"`+v2.Version()) || !strings.Contains(got, "applied model") {
		t.Fatalf("lore://model after the apply: %.300s", got)
	}
	r.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"describe_model","arguments":{}}}`)
	if got := r.next(`"id":4`); !strings.Contains(got, `"version":"`+v2.Version()) {
		t.Fatalf("describe_model after the apply: %.300s", got)
	}
	if got := holderPID(t, store); got != pid {
		t.Fatalf("the holder changed from pid %d to %d: the apply must not stop it", pid, got)
	}
	if _, errOut, code := loreIn(t, dir, nil, "get", "topic/observability", "--model", "model.json", "--store", store); code != 0 {
		t.Errorf("get with the applied model: exit %d: %s", code, errOut)
	}
	// Applying it again changes nothing.
	if out, errOut, code := loreIn(t, dir, nil, "model", "apply", "model.json", "--store", store); code != 0 || !strings.Contains(out, "changes nothing") {
		t.Errorf("lore model apply again: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
}
