package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// Tests of the first start: where lore serve listens, what it logs, and
// what a new store starts with.

// logURLRE reads a startup log line: its message and URL.
var logURLRE = regexp.MustCompile(`msg=("[^"]*"|\S+) url=(\S+)`)

// serveProc is a lore serve process the test started, with its log up to
// the last URL it lists.
type serveProc struct {
	cmd  *exec.Cmd
	log  string
	urls map[string]string // message → URL
}

// startServeEnv starts lore serve with args, in the test environment plus
// env, and reads its log until it has listed every URL; it is stopped at
// the end of the test.
func startServeEnv(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(loreBin, append([]string{"serve"}, args...)...)
	cmd.Env = append(testEnv(t), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, urls: map[string]string{}}
	eps := web.Endpoints()
	last := eps[len(eps)-1].Name
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if m := logURLRE.FindStringSubmatch(sc.Text()); m != nil {
			p.urls[strings.Trim(m[1], `"`)] = m[2]
			if strings.Trim(m[1], `"`) == last {
				break
			}
		}
	}
	p.log = log.String()
	go io.Copy(io.Discard, stderr)
	if p.urls[last] == "" {
		cmd.Wait()
		t.Fatalf("lore serve did not list its URLs:\n%s", p.log)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	return p
}

// TestServeLogsEveryURL: the startup log lists the URL of every surface
// and page, and each page and document answers there.
func TestServeLogsEveryURL(t *testing.T) {
	p := startServeEnv(t, nil, "--store", newStore(t), "--addr", "127.0.0.1:0")
	if p.urls["sign-in page"] != "" {
		t.Errorf("a server without tokens logs a sign-in page: %s", p.urls["sign-in page"])
	}
	// With tokens, the sign-in page is logged too, and answers.
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("reader read "+strings.Repeat("r", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pt := startServeEnv(t, nil, "--store", newStore(t), "--addr", "127.0.0.1:0", "--tokens", tokens)
	signIn := pt.urls["sign-in page"]
	if want := strings.TrimSuffix(pt.urls["serving MCP"], "/mcp") + "/signin"; signIn != want {
		t.Errorf("with tokens: sign-in page %q logged, want %q\n%s", signIn, want, pt.log)
	} else if resp, err := http.Get(signIn); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %v %v", signIn, resp, err)
	} else {
		resp.Body.Close()
	}
	base := strings.TrimSuffix(p.urls["serving MCP"], "/mcp")
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("MCP URL %q\n%s", p.urls["serving MCP"], p.log)
	}
	for _, want := range []string{"landing page", "GraphQL console", "graph explorer", "GraphQL", "OpenAPI", "llms.txt"} {
		if p.urls[want] == "" {
			t.Errorf("no %s URL in the log:\n%s", want, p.log)
		}
	}
	for _, ep := range web.Endpoints() {
		name := ep.Name
		if ep.Path == "/mcp" {
			name = "serving MCP"
		}
		if got := p.urls[name]; got != base+ep.Path {
			t.Errorf("%s: logged %q, want %q", ep.Name, got, base+ep.Path)
			continue
		}
		if ep.Path == "/mcp" || ep.Path == "/graphql" { // they want more than a plain GET
			continue
		}
		resp, err := http.Get(base + ep.Path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", base+ep.Path, resp.StatusCode)
		}
	}
	if !strings.Contains(p.log, "loaded the example dataset") {
		t.Errorf("a new store on the default model did not get the example data:\n%s", p.log)
	}
}

// TestServeAddrFromEnv: LORE_ADDR gives the address when --addr is not
// given, and --addr wins over it; a bad LORE_ADDR is named as such.
func TestServeAddrFromEnv(t *testing.T) {
	p := startServeEnv(t, []string{"LORE_ADDR=127.0.0.1:0"}, "--store", newStore(t))
	if !strings.HasPrefix(p.urls["serving MCP"], "http://127.0.0.1:") || strings.Contains(p.urls["serving MCP"], ":8931/") {
		t.Errorf("LORE_ADDR=127.0.0.1:0: serving on %q", p.urls["serving MCP"])
	}
	// The flag overrides a LORE_ADDR that would fail.
	p = startServeEnv(t, []string{"LORE_ADDR=not-an-address"}, "--store", newStore(t), "--addr", "127.0.0.1:0")
	if !strings.HasPrefix(p.urls["serving MCP"], "http://127.0.0.1:") {
		t.Errorf("--addr over LORE_ADDR: serving on %q", p.urls["serving MCP"])
	}
	cmd := exec.Command(loreBin, "serve", "--store", t.TempDir())
	cmd.Env = append(testEnv(t), "LORE_ADDR=not-an-address")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 || !strings.Contains(string(out), `LORE_ADDR "not-an-address": want HOST:PORT`) {
		t.Errorf("bad LORE_ADDR: exit %d: %s", code, out)
	}
}

// TestServeAddrInUse: an address in use fails at once, saying which
// address, where it came from, and how to pick another; no store is
// created.
func TestServeAddrInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	for _, c := range []struct {
		from string
		args []string
		env  []string
	}{
		{"--addr", []string{"--addr", addr}, nil},
		{"LORE_ADDR", nil, []string{"LORE_ADDR=" + addr}},
	} {
		store := filepath.Join(t.TempDir(), "store")
		cmd := exec.Command(loreBin, append([]string{"serve", "--store", store}, c.args...)...)
		cmd.Env = append(testEnv(t), c.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		msg := stderr.String()
		if err == nil || cmd.ProcessState.ExitCode() != 1 {
			t.Errorf("%s: exit %v: %s", c.from, err, msg)
		}
		for _, want := range []string{"cannot listen on " + addr + " (" + c.from + ")", "in use", "--addr HOST:PORT", "LORE_ADDR", "make run ADDR="} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: the error lacks %q: %s", c.from, want, msg)
			}
		}
		if strings.Contains(msg, "serving MCP") || storeExists(store) {
			t.Errorf("%s: served or created a store: %s", c.from, msg)
		}
	}
}

// TestServeExampleOnlyOnDefaultModel: the example data loads into a new
// store on the default model (also when --model names a copy of it); a new
// store on another model, or with --no-example, starts empty, and the log
// says why.
func TestServeExampleOnlyOnDefaultModel(t *testing.T) {
	dir := t.TempDir()
	mine := filepath.Join(dir, "my.json")
	other := bytes.Replace(schema.DefaultJSON(), []byte(`"Lore default model"`), []byte(`"My model"`), 1)
	if bytes.Equal(other, schema.DefaultJSON()) {
		t.Fatal("the default model's title changed: adjust the test")
	}
	copyOfDefault := filepath.Join(dir, "default.json")
	for name, data := range map[string][]byte{mine: other, copyOfDefault: schema.DefaultJSON()} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		args  []string
		log   string
		nodes int
	}{
		{"another model", []string{"--model", mine}, "new store: starting empty, without the example data, which fits only the default model", 0},
		{"the default model by --model", []string{"--model", copyOfDefault}, "loaded the example dataset", 101},
		{"--no-example", []string{"--no-example"}, "new store: starting empty (--no-example)", 0},
	} {
		store := newStore(t)
		p := startServeEnv(t, nil, append([]string{"--store", store, "--addr", "127.0.0.1:0"}, c.args...)...)
		if !strings.Contains(p.log, c.log) {
			t.Errorf("%s: the log lacks %q:\n%s", c.name, c.log, p.log)
		}
		out, errOut, code := loreIn(t, dir, nil, "stats", "--json", "--store", store)
		var st struct{ Nodes int }
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Nodes != c.nodes {
			t.Errorf("%s: stats: exit %d, %s %s; want %d nodes", c.name, code, out, errOut, c.nodes)
		}
		p.cmd.Process.Signal(os.Interrupt)
		p.cmd.Wait()
	}
}

// TestMakeRunAddr: make run passes ADDR as --addr (and ARGS as flags):
// the command it prints, run with the test's binary, serves there.
func TestMakeRunAddr(t *testing.T) {
	cmd := exec.Command("make", "-s", "-n", "run", "GO=go", "ADDR=127.0.0.1:0", "ARGS=--no-example")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v: %s", err, out)
	}
	line := strings.TrimSpace(string(out))
	const prefix = "go run ./cmd/lore "
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("make run runs %q, want %s…", line, prefix)
	}
	var args []string
	for _, f := range strings.Fields(strings.TrimPrefix(line, prefix)) {
		args = append(args, strings.Trim(f, `'`))
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf("make run runs %q", line)
	}
	p := startServeEnv(t, nil, append(args[1:], "--store", newStore(t))...)
	if !strings.HasPrefix(p.urls["serving MCP"], "http://127.0.0.1:") || !strings.Contains(p.log, "--no-example") {
		t.Errorf("make run ADDR=127.0.0.1:0 ARGS=--no-example: %s", p.log)
	}
}
