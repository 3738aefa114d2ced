package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
)

var loreBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lore-bin-")
	if err != nil {
		panic(err)
	}
	loreBin = filepath.Join(dir, "lore")
	if out, err := exec.Command("go", "build", "-o", loreBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building lore: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lore runs the binary to completion.
func lore(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), loreBin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_DATA_HOME=", "LORE_STORE=", "LORE_MODEL=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// bigFile writes n topics and documents with edges between them, as NDJSON.
func bigFile(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d","description":"generated"}}`+"\n", i, i)
		fmt.Fprintf(w, `{"kind":"node","id":"doc/d%d","type":"Document","properties":{"title":"doc %d","kind":"guide"}}`+"\n", i, i)
		fmt.Fprintf(w, `{"kind":"edge","from":"doc/d%d","label":"about","to":"topic/t%d"}`+"\n", i, i)
		if i > 0 {
			fmt.Fprintf(w, `{"kind":"edge","from":"doc/d%d","label":"references","to":"doc/d%d"}`+"\n", i, i-1)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// startImport starts "lore import --progress" and returns a channel of its
// committed element counts, one per batch.
func startImport(t *testing.T, ctx context.Context, store, file string, extra ...string) (*exec.Cmd, <-chan int64, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"import", "--store", store, "--batch", "1000", "--progress", file}, extra...)
	cmd := exec.CommandContext(ctx, loreBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := make(chan int64, 1000)
	rest := new(bytes.Buffer)
	go func() {
		defer close(progress)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var n int64
			if _, err := fmt.Sscanf(sc.Text(), "progress: %d elements committed", &n); err == nil {
				progress <- n
			} else {
				rest.WriteString(sc.Text() + "\n")
			}
		}
	}()
	return cmd, progress, rest
}

// Five times: SIGKILL a partial import mid-way; the store opens, passes
// check, and holds only whole batches.
func TestImportSurvivesSIGKILL(t *testing.T) {
	store := t.TempDir()
	file := bigFile(t, 15000) // 59,999 elements, 60 batches
	for round := 1; round <= 5; round++ {
		cmd, progress, _ := startImport(t, t.Context(), store, file, "--partial")
		// Let a few more batches commit each round, then kill without warning.
		for range round * 2 {
			if _, ok := <-progress; !ok {
				t.Fatalf("round %d: import ended before it could be killed", round)
			}
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		for range progress {
		}
		if out, errOut, code := lore(t, "check", "--store", store); code != 0 {
			t.Fatalf("round %d: check failed (exit %d):\n%s%s", round, code, out, errOut)
		}
		s, err := openEmbedded(t.Context(), storeOptions{path: store})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		st, _ := s.Stats(t.Context())
		changes, _ := s.Since(t.Context(), 0, graph.MaxPageSize)
		s.Close()
		// Every committed batch is whole: 1,000 elements each, and the store
		// holds exactly the elements its batches created.
		var created int64
		for _, c := range changes {
			if n := len(c.Nodes) + len(c.Edges); n != 1000 {
				t.Errorf("round %d: change %d holds %d elements, not a whole batch of 1000", round, c.Seq, n)
			}
			for _, n := range c.Nodes {
				if n.Action == graph.Created {
					created++
				}
			}
			for _, e := range c.Edges {
				if e.Action == graph.Created {
					created++
				}
			}
		}
		if st.Nodes+st.Edges != created || created%1000 != 0 || created == 0 {
			t.Errorf("round %d: the store holds %d elements, its change log created %d", round, st.Nodes+st.Edges, created)
		}
		t.Logf("round %d: killed with %d elements committed in %d batches", round, created, len(changes))
	}
	// A last, uninterrupted import completes the file.
	if out, errOut, code := lore(t, "import", "--store", store, file); code != 0 {
		t.Fatalf("final import: %s%s", out, errOut)
	}
	out, _, code := lore(t, "stats", "--store", store, "--json")
	if code != 0 || !strings.Contains(out, `"nodes": 30000`) || !strings.Contains(out, `"edges": 29999`) {
		t.Errorf("after the final import: %s", out)
	}
}

// A second import on a held store fails fast, naming the lock; with a
// longer --lock-timeout it waits its turn. Nothing is lost. The first import
// reads from a pipe the test controls, so it holds the store until then.
func TestTwoImportsOneStore(t *testing.T) {
	store := t.TempDir()
	other := filepath.Join(t.TempDir(), "other.ndjson")
	os.WriteFile(other, []byte(`{"kind":"node","id":"topic/other","type":"Topic","properties":{"name":"other"}}`+"\n"), 0o644)

	first := exec.CommandContext(t.Context(), loreBin, "import", "--store", store, "--batch", "100", "--progress", "-")
	stdin, _ := first.StdinPipe()
	stderr, _ := first.StderrPipe()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	progress := bufio.NewScanner(stderr)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			fmt.Fprintf(stdin, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t%d"}}`+"\n", i, i)
		}
	}
	write(0, 100)
	if !progress.Scan() || !strings.HasPrefix(progress.Text(), "progress: 100 elements") {
		t.Fatalf("first import: %q", progress.Text())
	}
	// The first import holds the store, waiting for more input.
	start := time.Now()
	_, errOut, code := lore(t, "import", "--store", store, other)
	if code != 1 || !strings.Contains(errOut, "store locked") || !strings.Contains(errOut, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Errorf("second import: exit %d, %q; want exit 1 naming the lock and pid %d", code, errOut, first.Process.Pid)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second import took %v to fail", d)
	}
	// One willing to wait gets its turn once the first finishes.
	waiter := exec.Command(loreBin, "import", "--store", store, "--lock-timeout", "5m", other)
	var wout bytes.Buffer
	waiter.Stderr = &wout
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	write(100, 250)
	stdin.Close()
	for progress.Scan() {
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("first import: %v", err)
	}
	if err := waiter.Wait(); err != nil {
		t.Fatalf("waiting import: %v\n%s", err, wout.String())
	}
	out, _, _ := lore(t, "stats", "--store", store, "--json")
	if !strings.Contains(out, `"nodes": 251`) {
		t.Errorf("after both imports: %s", out)
	}
	if out, errOut, code := lore(t, "check", "--store", store); code != 0 {
		t.Errorf("check: %s%s", out, errOut)
	}
}

// SIGKILL an all-or-nothing import into an empty store mid-way: the next
// command to open the store finds it empty, as the import left nothing.
func TestKilledImportLeavesNothing(t *testing.T) {
	store := t.TempDir()
	cmd, progress, _ := startImport(t, t.Context(), store, bigFile(t, 5000))
	for range 3 {
		if _, ok := <-progress; !ok {
			t.Fatal("import ended before it could be killed")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for range progress {
	}
	if out, errOut, code := lore(t, "check", "--store", store); code != 0 || !strings.Contains(out, "0 nodes, 0 edges, 0 quads") {
		t.Fatalf("check after the killed import (exit %d):\n%s%s", code, out, errOut)
	}
}

// SIGKILL an all-or-nothing import into an empty store in the load's end:
// as its last batch commits (the end writes what waited and folds the
// summaries), once the rewrite's new file exists (it is being written),
// and once that file has been renamed over the old one. The next command
// to open the store finds it either empty or holding the whole file, and
// check passes; after the rename, only whole. The test watches the store's
// directory for the new file without pausing, so the import goes on at its
// pace meanwhile.
func TestImportKilledAtItsEndIsWholeOrEmpty(t *testing.T) {
	file := bigFile(t, 5000) // 19,999 elements, 20 batches
	const nodes, edges = 10000, 9999
	for _, at := range []string{"last batch", "rewriting", "renamed"} {
		store := t.TempDir()
		tmp := filepath.Join(store, bolt.FileName+".rewrite")
		cmd, progress, _ := startImport(t, t.Context(), store, file)
		// seen polls the directory until the new file is there (or gone
		// again, after it was), or the import has exited.
		seen := func(there bool) bool {
			for {
				if _, err := os.Stat(tmp); (err == nil) == there {
					return true
				}
				select {
				case _, ok := <-progress:
					if !ok {
						return false
					}
				default:
				}
			}
		}
		killed := false
		switch at {
		case "last batch":
			for n := range progress {
				if n >= nodes+edges {
					break
				}
			}
			killed = true
		case "rewriting":
			killed = seen(true)
		case "renamed":
			killed = seen(true) && seen(false)
		}
		if killed {
			// The import may have ended on its own since.
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Fatal(err)
			}
		}
		cmd.Wait()
		for range progress {
		}
		out, errOut, code := lore(t, "check", "--store", store)
		if code != 0 {
			t.Fatalf("killed at %q: check (exit %d):\n%s%s", at, code, out, errOut)
		}
		switch {
		case strings.Contains(out, "0 nodes, 0 edges, 0 quads") && at == "renamed":
			t.Fatalf("killed once the new file took the old one's place: the store is empty, the load undone:\n%s%s", out, errOut)
		case strings.Contains(out, "0 nodes, 0 edges, 0 quads"):
			t.Logf("killed at %q (%v): the store is empty", at, killed)
		case strings.Contains(out, fmt.Sprintf("%d nodes, %d edges", nodes, edges)):
			t.Logf("killed at %q (%v): the store holds the whole file", at, killed)
		default:
			t.Fatalf("killed at %q: the store is neither empty nor whole:\n%s%s", at, out, errOut)
		}
	}
}

func TestServeLoadsTheExample(t *testing.T) {
	store := t.TempDir()
	cmd := exec.CommandContext(t.Context(), loreBin, "serve", "--store", store, "--addr", "127.0.0.1:0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "store open") {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "loaded the example dataset") || !strings.Contains(log.String(), "nodes=101") {
		t.Errorf("serve log:\n%s", log.String())
	}
	// A second start finds the data and loads nothing.
	out, _, _ := lore(t, "stats", "--store", store, "--json")
	if !strings.Contains(out, `"nodes": 101`) || !strings.Contains(out, `"lastSeq": 1`) {
		t.Errorf("stats: %s", out)
	}
}

func TestCLI(t *testing.T) {
	store := t.TempDir()
	data := filepath.Join(t.TempDir(), "d.ndjson")
	os.WriteFile(data, []byte(`{"kind":"node","id":"person/ada","type":"Person","properties":{"name":"Ada"}}
{"kind":"node","id":"team/core","type":"Team","properties":{"name":"Core"}}
{"kind":"edge","from":"person/ada","label":"memberOf","to":"team/core","properties":{"role":"lead"}}
`), 0o644)
	bad := filepath.Join(t.TempDir(), "bad.ndjson")
	os.WriteFile(bad, []byte(`{"kind":"node","id":"person/bob","type":"Person","properties":{"name":"Bob"}}
{"kind":"node","id":"person/eve","type":"Person","properties":{"name":7}}
`), 0o644)
	suspicious := filepath.Join(t.TempDir(), "model.json")
	os.WriteFile(suspicious, []byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {
		"Part": {"type": "object", "x-lore-node": {"display": "name", "search": ["name", "weight"]},
			"properties": {"name": {"type": "string"}, "weight": {"type": "number"}}}}}`), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"help", []string{"--help"}, 0, "Commands:"},
		{"command help", []string{"import", "--help"}, 0, "-dry-run"},
		{"no command", nil, 2, "no command given"},
		{"unknown command", []string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{"validate default model", []string{"validate"}, 0, "the default model: valid (7 node types, 10 edge labels)"},
		{"validate default model lists it", []string{"validate"}, 0, "  edge  relation    Entity -> Entity; keyed\n"},
		{"validate model warns", []string{"validate", "--model", suspicious}, 0, "node  Part  display name; search name, weight; 2 properties (0 required)\n" +
			`warning: /$defs/Part/x-lore-node/search/1: names "weight", which holds no text`},
		// (There is no store there: the model is loaded, and warned of, first.)
		{"store opened with a suspicious model warns", []string{"stats", "--store", t.TempDir(), "--model", suspicious}, 1,
			`msg="the model may not say what you meant" file=` + suspicious + ` at=/$defs/Part/x-lore-node/search/1`},
		{"validate data", []string{"validate", data}, 0, "valid (2 nodes, 1 edge)"},
		{"validate bad data", []string{"validate", bad}, 1, `line 2: node "person/eve" at /properties/name`},
		{"dry run", []string{"import", "--store", store, "--dry-run", data}, 0, "checked (dry run, nothing written) 2 nodes and 1 edge from 3 lines: no problem; the import would create 3"},
		{"import", []string{"import", "--store", store, data}, 0, "imported 2 nodes and 1 edge from 3 lines"},
		{"import bad", []string{"import", "--store", store, bad}, 1, "line 2"},
		{"get node", []string{"get", "--store", store, "person/ada"}, 0, `"label": "memberOf"`},
		{"get edge", []string{"get", "--store", store, "memberOf(person/ada,team/core)"}, 0, `"role": "lead"`},
		{"get missing", []string{"get", "--store", store, "person/nobody"}, 1, `node "person/nobody": not found`},
		{"stats", []string{"stats", "--store", store}, 0, `"memberOf": 1`},
		{"stats table", []string{"stats", "-o", "table", "--store", store}, 0, "  edge  memberOf  1"},
		{"stats json and table", []string{"stats", "--json", "-o", "table", "--store", store}, 2, "--json and -o table ask for different outputs"},
		{"bad output", []string{"get", "-o", "yaml", "--store", store, "person/ada"}, 2, `-o "yaml": want table or json`},
		{"check", []string{"check", "--store", store}, 0, "2 nodes, 1 edge, 3 quads, 1 change: ok"},
		{"export", []string{"export", "--store", store, "--format", "nquads", "-"}, 0, "<n:person/ada> <e:memberOf> <n:team/core> ."},
		{"compact", []string{"compact", "--store", store}, 0, "compacted"},
		{"bad format", []string{"import", "--store", store, "--format", "xml", data}, 2, `format "xml"`},
		{"flags after args", []string{"export", "-", "--store", store, "--format", "memory"}, 0, "exported 0 nodes and 0 edges"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := lore(t, tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("lore %s: exit %d, want %d; output:\n%s%s\nwant it to contain %q", strings.Join(tt.args, " "), code, tt.code, out, errOut, tt.want)
			}
		})
	}
}

func TestDefaultStoreIsXDG(t *testing.T) {
	e := &env{getenv: func(k string) string { return map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}[k] }}
	if p, _ := defaultStore(e); p != "/x/data/lore" {
		t.Errorf("with XDG_DATA_HOME: %s", p)
	}
	e.getenv = func(k string) string { return map[string]string{"HOME": "/home/u"}[k] }
	if p, _ := defaultStore(e); p != "/home/u/.local/share/lore" {
		t.Errorf("without: %s", p)
	}
	var sf storeFlags
	fs := newFlagSet(&env{stderr: io.Discard, getenv: func(k string) string {
		return map[string]string{"LORE_STORE": "/from/env"}[k]
	}}, "x", "x")
	sf.register(fs, &env{getenv: func(k string) string { return map[string]string{"LORE_STORE": "/from/env"}[k] }})
	if sf.store != "/from/env" {
		t.Errorf("LORE_STORE not read: %q", sf.store)
	}
}

func TestReadCommands(t *testing.T) {
	store := t.TempDir()
	if out, errOut, code := lore(t, "import", "--store", store, "../../schema/models/example.ndjson"); code != 0 {
		t.Fatalf("import: %s%s", out, errOut)
	}
	query := filepath.Join(t.TempDir(), "q.json")
	os.WriteFile(query, []byte(`{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[1,3]}],"return":{"fields":["id"]}}`), 0o644)
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependson"}]}`), 0o644)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"query", []string{"query", "--store", store, query}, 0, `"id": "service/checkout"`},
		{"query error", []string{"query", "--store", store, bad}, 1, `/traverse/0/edge: unknown edge label "dependson"`},
		{"query ceiling", []string{"query", "--store", store, "--max-visited", "3", query}, 0, `"reason": "work"`},
		{"search", []string{"search", "--store", store, "--type", "Service", "billing"}, 0, `"id": "service/billing"`},
		{"neighbors", []string{"neighbors", "--store", store, "--edge", "supersedes", "--depth", "2", "adr/0016-run-postgresql-on-a-managed-ha-cluster"}, 0, `"id": "adr/0002-use-mysql-for-transactional-data"`},
		{"neighbors limit", []string{"neighbors", "--store", store, "--limit", "1", "service/billing"}, 0, `"more": true`},
		{"neighbors bad cursor", []string{"neighbors", "--store", store, "--cursor", "nope", "service/billing"}, 1, "cursor"},
		{"paths bad cursor", []string{"paths", "--store", store, "--cursor", "nope", "service/checkout", "service/billing"}, 1, "cursor"},
		{"neighbors limit capped", []string{"neighbors", "--store", store, "--limit", "99999", "service/billing"}, 0, `"capped": [`},
		{"paths", []string{"paths", "--store", store, "--edge", "dependsOn", "--direction", "out", "service/checkout", "service/postgres-cluster"}, 0, `"length": 2`},
		{"paths missing", []string{"paths", "--store", store, "service/checkout", "service/nope"}, 1, "not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := lore(t, tt.args...)
			if code != tt.code || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("lore %s: exit %d, want %d; output:\n%s%s\nwant it to contain %q", strings.Join(tt.args, " "), code, tt.code, out, errOut, tt.want)
			}
		})
	}
	// lore neighbors and lore paths page with --cursor: the pages, one
	// node or path each, are those of one call.
	for _, tt := range []struct {
		name       string
		flags, pos []string
		one        string // the flag for pages of one
		items      func(map[string]any) []any
	}{
		{"neighbors", []string{"neighbors", "--store", store, "--depth", "2", "--json"}, []string{"service/billing"}, "--limit=1",
			func(v map[string]any) []any { return v["nodes"].([]any) }},
		{"paths", []string{"paths", "--store", store, "--k", "6", "--json"}, []string{"person/ada-okafor", "service/billing"}, "--k=1",
			func(v map[string]any) []any { return v["paths"].([]any) }},
	} {
		t.Run(tt.name+" pages", func(t *testing.T) {
			call := func(args ...string) map[string]any {
				all := append(append(slices.Clone(tt.flags), args...), tt.pos...)
				out, errOut, code := lore(t, all...)
				var v map[string]any
				if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
					t.Fatalf("lore %s: exit %d: %s%s", strings.Join(all, " "), code, out, errOut)
				}
				return v
			}
			whole := tt.items(call())
			var paged []any
			for cursor := ""; len(paged) < len(whole); {
				args := []string{tt.one}
				if cursor != "" {
					args = append(args, "--cursor", cursor)
				}
				v := call(args...)
				paged = append(paged, tt.items(v)...)
				if cursor, _ = v["cursor"].(string); cursor == "" {
					break
				}
			}
			if len(whole) < 2 || !reflect.DeepEqual(whole, paged) {
				t.Errorf("pages of one: %v\nwhole: %v", paged, whole)
			}
		})
	}
}
