package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWalkthroughLivingData keeps a small service index up to date as a
// user would: import v1, sync-import v2 (a service retired with its edges,
// a dependency dropped, a service added) with a dry run first, back the
// store up while its holder serves, restore the backup into a new
// directory, and export it: the export equals testdata/walkthrough/
// expected.ndjson byte for byte (every line carries its times and
// revision, and v2 changes no element it keeps, so nothing depends on the
// clock). The walkthrough also applies a model change (a rename
// and a new index) between the imports; model evolution is not built yet,
// so that step is left out here.
func TestWalkthroughLivingData(t *testing.T) {
	data, err := filepath.Abs(filepath.Join("testdata", "walkthrough"))
	if err != nil {
		t.Fatal(err)
	}
	store := newStore(t)
	dir := t.TempDir()
	step := func(want string, args ...string) string {
		t.Helper()
		out, errOut, code := loreIn(t, dir, nil, args...)
		if code != 0 || !strings.Contains(out+errOut, want) {
			t.Fatalf("lore %s: exit %d, want %q:\n%s%s", strings.Join(args, " "), code, want, out, errOut)
		}
		return out
	}
	step("imported 6 nodes and 7 edges", "import", "--store", store, filepath.Join(data, "v1.ndjson"))
	startHold(t, store, "--idle", "1h") // from here on, the commands run in the holder
	v2 := filepath.Join(data, "v2.ndjson")
	step("sync: would delete 1 node (Service 1) and 4 edges", "import", "--store", store, "--mode", "sync", "--scope", "type:Service", "--dry-run", v2)
	step("sync: deleted 1 node (Service 1) and 4 edges", "import", "--store", store, "--mode", "sync", "--scope", "type:Service", v2)
	step("backed up 6 nodes and 4 edges, as of change 3", "backup", "--store", store, "bk")
	step("restored 6 nodes and 4 edges, as of change 3", "restore", "bk", "restored")
	got := step("", "export", "--store", "restored", "-")
	want, err := os.ReadFile(filepath.Join(data, "expected.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the restored store's export differs from expected.ndjson:\ngot:\n%s\nwant:\n%s", got, want)
	}
}
