package main

// The CLI cases of issue 15 as they were filed, through run, written against
// the API of the time (they ran, and failed, on the code before the fixes).

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/schema"
)

func regRun(t *testing.T, args ...string) (string, error) {
	t.Setenv("LORE_STORE", "")
	t.Setenv("LORE_MODEL", "")
	var o, e bytes.Buffer
	err := run(t.Context(), args, strings.NewReader(""), &o, &e)
	return o.String() + e.String(), err
}

func TestRegression15_13ReadOnMissingStore(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	_, err := regRun(t, "search", "--store", typo, "billing")
	if err == nil || !strings.Contains(err.Error(), "no store at") {
		t.Errorf("search on a missing store: %v", err)
	}
	if _, serr := os.Stat(typo); !os.IsNotExist(serr) {
		t.Errorf("search created %s", typo)
	}
}

func TestRegression15_13URL(t *testing.T) {
	t.Chdir(t.TempDir())
	_, err := regRun(t, "stats", "--store", "postgres://x@localhost/lore")
	if err == nil {
		t.Errorf("a postgres URL was opened")
	}
	if _, serr := os.Stat("postgres:"); !os.IsNotExist(serr) {
		t.Errorf("a directory postgres: was created")
	}
}

func TestRegression15_9ReadKeepsNoModel(t *testing.T) {
	store := t.TempDir()
	data := filepath.Join(t.TempDir(), "d.ndjson")
	os.WriteFile(data, schema.ExampleData(), 0o644)
	if out, err := regRun(t, "import", "--store", store, data); err != nil {
		t.Fatal(err, out)
	}
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	meta := doc["$defs"].(map[string]any)["Service"].(map[string]any)["x-lore-node"].(map[string]any)
	meta["indexed"] = append(meta["indexed"].([]any), "name")
	m, _ := json.Marshal(doc)
	model := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(model, m, 0o644)
	q := filepath.Join(t.TempDir(), "q.json")
	os.WriteFile(q, []byte(`{"from":{"type":"Service","where":{"name":"billing"}}}`), 0o644)
	out, err := regRun(t, "query", "--store", store, "--model", model, q)
	if err == nil && !strings.Contains(out, "service/billing") {
		t.Errorf("a read with an index-changing model answered wrongly without an error:\n%.300s", out)
	}
	out, _ = regRun(t, "query", "--store", store, q)
	if strings.Contains(out, `"nodes": []`) {
		t.Errorf("after the read, queries answer wrongly:\n%.300s", out)
	}
}

func TestRegression15_10DryRunCreatesNoStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "new")
	data := filepath.Join(t.TempDir(), "d.ndjson")
	os.WriteFile(data, []byte(`{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"}}`+"\n"), 0o644)
	regRun(t, "import", "--dry-run", "--store", store, data)
	if _, serr := os.Stat(store); !os.IsNotExist(serr) {
		t.Errorf("a dry run created %s", store)
	}
}

func TestRegression15_10FailedImportLeavesNoStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "new")
	var b strings.Builder
	for i := range 300 {
		b.WriteString(`{"kind":"node","id":"topic/t` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","type":"Topic","properties":{"name":"a"}}` + "\n")
	}
	b.WriteString(`{"kind":"node","id":"topic/bad","type":"Topic","properties":{"name":1}}` + "\n")
	data := filepath.Join(t.TempDir(), "d.ndjson")
	os.WriteFile(data, []byte(b.String()), 0o644)
	regRun(t, "import", "--batch", "100", "--store", store, data)
	if _, serr := os.Stat(store); !os.IsNotExist(serr) {
		t.Errorf("a failed import left a store at %s", store)
	}
}
