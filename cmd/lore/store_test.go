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
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// runLore runs the CLI in-process, as main does, with stdin.
func runLore(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	t.Setenv("LORE_STORE", "")
	t.Setenv("LORE_MODEL", "")
	var o, e bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	err = run(ctx, args, stdin, &o, &e)
	return o.String(), e.String(), err
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A read command on a path that holds no store fails, "no store at PATH",
// and creates nothing; a URL is opened as a PostgreSQL store, and a
// server that refuses the user is reported as such.
func TestReadCommandsNeedAStore(t *testing.T) {
	query := writeFile(t, "q.json", `{"from":{"type":"Service"}}`)
	cwd := t.TempDir()
	t.Chdir(cwd)
	for _, args := range [][]string{
		{"search", "billing"}, {"get", "service/billing"}, {"query", query}, {"neighbors", "service/billing"},
		{"paths", "service/a", "service/b"}, {"stats"}, {"export", "-"}, {"check"}, {"compact"},
	} {
		typo := filepath.Join(t.TempDir(), "typo")
		out, errOut, err := runLore(t, t.Context(), nil, append(args, "--store", typo)...)
		if err == nil || !strings.Contains(err.Error(), "no store at "+typo) || out != "" {
			t.Errorf("lore %s on a missing store: %v\n%s%s", args[0], err, out, errOut)
		}
		if _, serr := os.Stat(typo); !os.IsNotExist(serr) {
			t.Errorf("lore %s created %s", args[0], typo)
		}
		_, _, err = runLore(t, t.Context(), nil, append(args, "--store", "postgres://no_such_lore_role@127.0.0.1:5432/lore")...)
		if err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
			t.Errorf("lore %s on a URL: %v", args[0], err)
		}
	}
	_, _, err := runLore(t, t.Context(), strings.NewReader(`{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"}}`),
		"import", "--store", "postgres://no_such_lore_role@127.0.0.1/lore", "-")
	if err == nil || !strings.Contains(err.Error(), "open PostgreSQL store") {
		t.Errorf("import into a URL: %v", err)
	}
	if left, _ := os.ReadDir(cwd); len(left) != 0 {
		t.Errorf("the commands left %s in the working directory", left[0].Name())
	}
}

// A model that indexes another property: a read refuses it, saying how to
// adopt it, and keeps none; a command that writes adopts it, rebuilding the
// index with progress on stderr, after which the query answers.
func TestModelFlag(t *testing.T) {
	store := t.TempDir()
	if _, errOut, err := runLore(t, t.Context(), bytes.NewReader(schema.ExampleData()), "import", "--store", store, "-"); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut)
	}
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	meta := doc["$defs"].(map[string]any)["Service"].(map[string]any)["x-lore-node"].(map[string]any)
	meta["indexed"] = append(meta["indexed"].([]any), "name")
	data, _ := json.Marshal(doc)
	model := writeFile(t, "model.json", string(data))
	query := writeFile(t, "q.json", `{"from":{"type":"Service","where":{"name":"billing"}},"return":{"fields":["id"]}}`)

	_, _, err := runLore(t, t.Context(), nil, "query", "--store", store, "--model", model, query)
	if err == nil || !strings.Contains(err.Error(), "Service indexed: adds name") || !strings.Contains(err.Error(), "lore check --repair --model FILE") {
		t.Fatalf("query with an index-changing model: %v", err)
	}
	stored := func() []byte {
		s, err := openEmbedded(t.Context(), storeOptions{path: store, readOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Model().JSON()
	}
	if !bytes.Equal(stored(), schema.DefaultJSON()) {
		t.Fatal("a read kept its model")
	}
	// A model the store already has is fine for a read.
	same := writeFile(t, "same.json", string(schema.DefaultJSON()))
	if out, _, err := runLore(t, t.Context(), nil, "query", "--store", store, "--model", same, query); err != nil || !strings.Contains(out, "service/billing") {
		t.Fatalf("query with the stored model: %v %s", err, out)
	}
	// A write adopts it and rebuilds the indexes.
	_, errOut, err := runLore(t, t.Context(), nil, "check", "--repair", "--store", store, "--model", model)
	if err != nil || !strings.Contains(errOut, "rebuilding indexes (the model changed what is indexed)") {
		t.Fatalf("check --repair --model: %v\n%s", err, errOut)
	}
	if !bytes.Equal(stored(), []byte(data)) {
		t.Error("the writer did not keep the model")
	}
	out, _, err := runLore(t, t.Context(), nil, "query", "--store", store, query)
	if err != nil || !strings.Contains(out, `"id": "service/billing"`) {
		t.Errorf("query on the new index: %v\n%s", err, out)
	}
}

// A failed import into a new store leaves no store; a dry run writes
// nothing, not even a store, and counts every problem; --partial keeps the
// batches before the rejected one.
func TestImportAllOrNothingCLI(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t"}}`+"\n", i)
		if i >= 150 && i%2 == 1 {
			fmt.Fprintf(&b, `{"kind":"node","id":"topic/bad%d","type":"Topic","properties":{"name":%d}}`+"\n", i, i)
		}
	}
	file := writeFile(t, "bad.ndjson", b.String())
	parent := t.TempDir()
	store := filepath.Join(parent, "new")

	_, _, err := runLore(t, t.Context(), nil, "import", "--store", store, "--batch", "100", file)
	var ie *graph.ImportError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("import: %v", err)
	}
	if _, serr := os.Stat(store); !os.IsNotExist(serr) {
		t.Errorf("a failed import into a new store left %s", store)
	}

	_, errOut, err := runLore(t, t.Context(), nil, "import", "--store", store, "--dry-run", "--batch", "100", file)
	if !errors.As(err, &ie) || ie.Total != 125 || len(ie.Lines) != 100 || !strings.Contains(err.Error(), "dry run: 125 problems found; nothing was written") ||
		!strings.Contains(err.Error(), "… and 25 more") || strings.Contains(err.Error()+errOut, "committed") || strings.Contains(errOut, "created") {
		t.Fatalf("dry run: %v\n%s", err, errOut)
	}
	if _, serr := os.Stat(store); !os.IsNotExist(serr) {
		t.Errorf("a dry run created %s", store)
	}

	_, _, err = runLore(t, t.Context(), nil, "import", "--store", store, "--partial", "--batch", "100", file)
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "the 1 batch before them (100 elements) were committed") {
		t.Fatalf("partial import: %v", err)
	}
	out, _, _ := runLore(t, t.Context(), nil, "stats", "--json", "--store", store)
	if !strings.Contains(out, `"nodes": 100`) {
		t.Errorf("after the partial import: %s", out)
	}
	// Into a store with data: checked whole first, then nothing written.
	_, _, err = runLore(t, t.Context(), strings.NewReader(b.String()), "import", "--store", store, "-")
	if !errors.As(err, &ie) || ie.Total != 125 || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("import into a store with data: %v", err)
	}
	out, _, _ = runLore(t, t.Context(), nil, "stats", "--json", "--store", store)
	if !strings.Contains(out, `"nodes": 100`) {
		t.Errorf("after the rejected import: %s", out)
	}
}

// An import stops when its context is cancelled (SIGINT or SIGTERM in
// main), even while it waits for input, and a new store is removed.
func TestImportCancelledCLI(t *testing.T) {
	store := filepath.Join(t.TempDir(), "new")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		for i := range 300 {
			fmt.Fprintf(pw, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t"}}`+"\n", i)
		}
		// Then the input stalls, as a pipe from a slow producer does.
	}()
	er, ew := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"import", "--store", store, "--batch", "100", "--progress", "-"}, pr, io.Discard, ew)
		ew.Close()
	}()
	sc := bufio.NewScanner(er)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "progress: 200 elements committed") {
			cancel()
			break
		}
	}
	go io.Copy(io.Discard, er)
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("cancelled import: %v", err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("a cancelled import into a new store left %s", store)
	}
}
