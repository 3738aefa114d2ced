package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// randomGraph returns NDJSON lines of n services with random properties
// and random dependsOn edges between them (and to the example's).
func randomGraph(r *rand.Rand, n int) string {
	var b strings.Builder
	langs := []string{"Go", "Java", "Python", "Rust", "Kotlin"}
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"node","id":"service/rand-%d","type":"Service","properties":{"name":"rand-%d","description":"random service %d, ünïcode %x","tier":%d,"lifecycle":"production","language":%q}}`+"\n",
			i, i, i, r.Uint64(), r.IntN(4), langs[r.IntN(len(langs))])
	}
	seen := map[[2]int]bool{}
	for range 3 * n {
		from, to := r.IntN(n), r.IntN(n)
		if from == to || seen[[2]int{from, to}] {
			continue
		}
		seen[[2]int{from, to}] = true
		fmt.Fprintf(&b, `{"kind":"edge","from":"service/rand-%d","label":"dependsOn","to":"service/rand-%d","properties":{"kind":"sync","critical":%t}}`+"\n",
			from, to, r.IntN(2) == 0)
	}
	fmt.Fprintf(&b, `{"kind":"edge","from":"service/rand-0","label":"dependsOn","to":"service/auth","properties":{"kind":"async","critical":false}}`+"\n")
	return b.String()
}

// TestMigrateRoundTrip copies the example dataset plus a random graph from
// the embedded store into PostgreSQL and back into another embedded
// store: every export is byte-identical (timestamps and revisions
// included), migrate reports its verification, and it refuses a
// destination that holds data.
func TestMigrateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	a, c := filepath.Join(dir, "a"), filepath.Join(dir, "c")
	data := writeFile(t, "data.ndjson", string(schema.ExampleData())+randomGraph(rand.New(rand.NewPCG(19, 6)), 500))
	if _, errOut, code := lore(t, "import", "--store", a, data); code != 0 {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	// A second write, so revisions above 1 travel too.
	more := writeFile(t, "more.ndjson", `{"kind":"node","id":"service/rand-1","type":"Service","properties":{"name":"rand-1","tier":2,"lifecycle":"deprecated"}}`+"\n")
	if _, errOut, code := lore(t, "import", "--store", a, more); code != 0 {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	export := func(store string) string {
		t.Helper()
		out, errOut, code := lore(t, "export", "--store", store, "-")
		if code != 0 {
			t.Fatalf("export %s: exit %d, %s", store, code, errOut)
		}
		return out
	}
	want := export(a)
	if !strings.Contains(want, `"revision":2`) {
		t.Fatalf("the source has no element at revision 2:\n%.500s", want)
	}

	pg := pgtest.NewDatabase(t)
	_, errOut, code := lore(t, "migrate", "--from", a, "--to", pg)
	if code != 0 {
		t.Fatalf("migrate to PostgreSQL: exit %d, %s", code, errOut)
	}
	t.Logf("embedded → PostgreSQL:\n%s", errOut)
	for _, s := range []string{"migrate: copying", "migrate: exported", "migrate: imported", "migrate: verified"} {
		if !strings.Contains(errOut, s) {
			t.Errorf("migrate's stderr lacks %q", s)
		}
	}
	if got := export(pg); got != want {
		t.Errorf("PostgreSQL's export differs from the source's (%d bytes against %d)", len(got), len(want))
	}

	if _, errOut, code := lore(t, "migrate", "--from", pg, "--to", c); code != 0 {
		t.Fatalf("migrate from PostgreSQL: exit %d, %s", code, errOut)
	}
	if got := export(c); got != want {
		t.Errorf("the round trip's export differs from the source's (%d bytes against %d)", len(got), len(want))
	}

	// A destination with data is refused, and keeps its data.
	if _, errOut, code := lore(t, "migrate", "--from", a, "--to", pg); code == 0 || !strings.Contains(errOut, "empty store only") {
		t.Errorf("migrate into a database with data: exit %d, %s", code, errOut)
	}
	if _, errOut, code := lore(t, "migrate", "--from", pg, "--to", c); code == 0 || !strings.Contains(errOut, "empty store only") {
		t.Errorf("migrate into a store with data: exit %d, %s", code, errOut)
	}
	if got := export(pg); got != want {
		t.Error("a refused migrate changed the destination")
	}
	if _, errOut, code := lore(t, "migrate", "--from", filepath.Join(dir, "none"), "--to", filepath.Join(dir, "d")); code == 0 || !strings.Contains(errOut, "holds no store") {
		t.Errorf("migrate from nothing: exit %d, %s", code, errOut)
	}
	if storeExists(filepath.Join(dir, "d")) {
		t.Error("a refused migrate created its destination")
	}
}
