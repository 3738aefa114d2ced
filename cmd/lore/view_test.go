package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden with the output of the tests that compare with them")

// exampleStore imports the example dataset into a new store.
func exampleStore(t *testing.T) string {
	t.Helper()
	store := newStore(t)
	example, err := filepath.Abs(filepath.Join("..", "..", "schema", "models", "example.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := lore(t, "import", "--store", store, example); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	return store
}

// What differs from run to run: timestamps, cursors (signed with the
// store's key), the store's path.
var (
	timeRE   = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	cursorRE = regexp.MustCompile(`(--cursor |"cursor": ")[A-Za-z0-9_-]+`)
)

// golden compares got with testdata/name.golden, or writes it there with
// -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/lore -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s (-update rewrites it):\ngot:\n%s\nwant:\n%s", t.Name(), path, got, want)
	}
}

// TestHumanViewGolden: the human view (-o table) of get, search,
// neighbors, paths, query and stats on the example data, against
// testdata/*.golden.
func TestHumanViewGolden(t *testing.T) {
	store := exampleStore(t)
	dir := t.TempDir()
	queries := map[string]string{
		"owners.json": `{"from":{"type":"Service","where":{"tier":0}},"traverse":[{"edge":"owns","direction":"in","type":"Team"}],` +
			`"return":{"paths":true},"limit":3}`,
		"fields.json": `{"from":{"type":"Service"},"return":{"fields":["id","name","tier"]},"orderBy":[{"field":"name"}],"limit":4}`,
		"count.json":  `{"from":{"type":"Decision"},"where":{"status":"accepted"},"return":{"count":true}}`,
	}
	for name, q := range queries {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(q), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"get_node", []string{"get", "service/checkout"}},
		{"get_edge", []string{"get", "memberOf(person/ada-okafor,team/payments)"}},
		{"search", []string{"search", "--limit", "5", "payments"}},
		{"search_type", []string{"search", "--type", "Person", "ada"}},
		{"neighbors", []string{"neighbors", "--depth", "2", "--edge", "owns,leads,memberOf", "team/payments"}},
		{"neighbors_truncated", []string{"neighbors", "--max-results", "3", "service/checkout"}},
		{"paths", []string{"paths", "--k", "2", "person/ada-okafor", "service/ledger"}},
		{"paths_none", []string{"paths", "--edge", "supersedes", "person/ada-okafor", "service/ledger"}},
		{"query", []string{"query", filepath.Join(dir, "owners.json")}},
		{"query_fields", []string{"query", filepath.Join(dir, "fields.json")}},
		{"query_count", []string{"query", filepath.Join(dir, "count.json")}},
		{"stats", []string{"stats"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, c.args...), "-o", "table", "--store", store)
			out, errOut, code := lore(t, args...)
			if code != 0 {
				t.Fatalf("lore %s: exit %d: %s", strings.Join(args, " "), code, errOut)
			}
			out = strings.ReplaceAll(out, store, "STORE")
			out = timeRE.ReplaceAllString(out, "TIME")
			out = cursorRE.ReplaceAllString(out, "${1}CURSOR")
			golden(t, c.name, out)
		})
	}
}

// TestOutputChoice: JSON goes to a pipe unless -o table asks for the
// human view; --json and -o json give the same JSON.
func TestOutputChoice(t *testing.T) {
	store := exampleStore(t)
	for _, args := range [][]string{{}, {"--json"}, {"-o", "json"}, {"--output", "json"}} {
		out, errOut, code := lore(t, append([]string{"get", "--store", store, "team/payments"}, args...)...)
		var n struct{ ID, Type string }
		if code != 0 || json.Unmarshal([]byte(out), &n) != nil || n.ID != "team/payments" || n.Type != "Team" {
			t.Errorf("get %v: exit %d, %q %s", args, code, out, errOut)
		}
	}
	out, _, code := lore(t, "get", "--store", store, "-o", "table", "team/payments")
	if code != 0 || !strings.HasPrefix(out, "Team  team/payments  Payments\n") {
		t.Errorf("get -o table: exit %d, %q", code, out)
	}
}
