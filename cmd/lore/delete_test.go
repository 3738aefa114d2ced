package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

func storeStats(t *testing.T, store string) graph.Stats {
	t.Helper()
	var st graph.Stats
	out, stderr, code := loreIn(t, "", nil, "stats", "--json", "--store", store)
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil {
		t.Fatalf("lore stats: exit %d: %s%s", code, out, stderr)
	}
	return st
}

// TestDeleteCLI: lore delete by query, by IDs and by a file, with the
// store opened by the command and through a holder: it shows what goes
// (the cascade included) and deletes nothing without --yes when stdin is
// not a terminal, nor on a dry run; with --yes it deletes in one batch and
// reports in the delete tools' shape; a selection over the batch limit is
// refused unless --batch splits it; a missing node deletes nothing.
func TestDeleteCLI(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			store := exampleStore(t)
			if held {
				startHold(t, store, "--idle", "1h")
			}
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "decisions.json"), []byte(`{"from":{"type":"Decision"}}`), 0o644)
			run := func(stdin string, args ...string) (string, string, int) {
				t.Helper()
				return loreIn(t, dir, strings.NewReader(stdin), append(args, "--store", store)...)
			}
			_, errOut, code := run("", "delete", "--query", "decisions.json")
			if code != 1 || !strings.Contains(errOut, "will delete 19 nodes and 109 edges") || !strings.Contains(errOut, "pass --yes") {
				t.Errorf("without --yes: exit %d: %s", code, errOut)
			}
			_, errOut, code = run("", "delete", "--query", "decisions.json", "--dry-run")
			if code != 0 || !strings.Contains(errOut, "nodes: adr/0001-record-architecture-decisions") || !strings.Contains(errOut, "nothing was deleted") {
				t.Errorf("dry run: exit %d: %s", code, errOut)
			}
			if st := storeStats(t, store); st.Nodes != 101 || st.Edges != 282 {
				t.Fatalf("something was deleted: %d nodes, %d edges", st.Nodes, st.Edges)
			}
			out, errOut, code := run("", "delete", "--query", "decisions.json", "--yes")
			var got deleteOut
			if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
				t.Fatalf("delete --yes: exit %d: %s%s", code, out, errOut)
			}
			if got.Seq != 2 || got.DeletedNodeCount != 19 || got.DeletedEdgeCount != 109 || len(got.DeletedNodes) != 19 || got.Truncated {
				t.Errorf("report: %+v", got)
			}
			if st := storeStats(t, store); st.Nodes != 82 || st.Edges != 173 || st.LastSeq != 2 {
				t.Errorf("after the delete: %d nodes, %d edges, change %d", st.Nodes, st.Edges, st.LastSeq)
			}
			// By IDs: a node and an edge as arguments, the query on stdin.
			out, errOut, code = run(`{"from":{"ids":["topic/observability"]}}`, "delete", "--yes", "--query", "-", "person/ada-okafor", "memberOf(person/grace-mwangi,team/platform)", "-o", "table")
			if code != 0 || !strings.Contains(out, "deleted 2 nodes and ") || !strings.Contains(out, "committed as change 3") {
				t.Errorf("delete IDs: exit %d: %s%s", code, out, errOut)
			}
			// A file of IDs, split into batches of one, each a change.
			os.WriteFile(filepath.Join(dir, "ids.txt"), []byte("# people\nperson/wei-zhang\n\nperson/mei-lin\nperson/daniel-kim\n"), 0o644)
			out, errOut, code = run("", "delete", "--yes", "--file", "ids.txt", "--batch", "1")
			if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got.Seqs) != 3 || got.DeletedNodeCount != 3 {
				t.Errorf("delete --file --batch 1: exit %d: %s%s", code, out, errOut)
			}
			// Over the batch limit: refused without --batch.
			var many strings.Builder
			for i := range graph.MaxBatch + 1 {
				fmt.Fprintf(&many, "topic/t%d\n", i)
			}
			_, errOut, code = run(many.String(), "delete", "--yes", "--file", "-")
			if code != 1 || !strings.Contains(errOut, "10001 elements to delete, and one batch holds at most 10000") {
				t.Errorf("over the limit: exit %d: %s", code, errOut)
			}
			// A missing node: nothing is deleted.
			before := storeStats(t, store)
			_, errOut, code = run("", "delete", "--yes", "team/platform", "team/nobody")
			if code != 1 || !strings.Contains(errOut, "nothing was deleted: 1 node not found: team/nobody") {
				t.Errorf("missing node: exit %d: %s", code, errOut)
			}
			if after := storeStats(t, store); after.Nodes != before.Nodes || after.LastSeq != before.LastSeq {
				t.Errorf("a failed delete changed the store: %+v -> %+v", before, after)
			}
			if _, errOut, code := run("", "check"); code != 0 {
				t.Errorf("check: %s", errOut)
			}
		})
	}
}

// TestDeleteAsksOnTerminal: with stdin on a terminal, lore delete asks,
// and deletes on "y", nothing on anything else, also when a holder runs
// it (the client says its stdin is a terminal, and streams the answer).
func TestDeleteAsksOnTerminal(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			store := exampleStore(t)
			if held {
				startHold(t, store, "--idle", "1h")
			}
			ask := func(answer, id string) string {
				ctl, term := openPTY(t)
				cmd := exec.Command(loreBin, "delete", "--store", store, id)
				cmd.Env = testEnv(t)
				var stdout bytes.Buffer
				cmd.Stdin, cmd.Stdout, cmd.Stderr = term, &stdout, term
				read := make(chan []byte)
				go func() {
					b, _ := io.ReadAll(ctl)
					read <- b
				}()
				if _, err := ctl.Write([]byte(answer + "\n")); err != nil { // the terminal keeps it until asked
					t.Fatal(err)
				}
				err := cmd.Run()
				term.Close()
				screen := string(<-read)
				if err != nil {
					t.Fatalf("lore delete: %v: %s", err, screen)
				}
				return screen + stdout.String()
			}
			if screen := ask("n", "team/payments"); !strings.Contains(screen, "delete them? [y/N]") || !strings.Contains(screen, "nothing was deleted") {
				t.Errorf("answered n: %s", screen)
			}
			if st := storeStats(t, store); st.Nodes != 101 {
				t.Errorf("answered n, and %d nodes are left", st.Nodes)
			}
			if screen := ask("y", "team/payments"); !strings.Contains(screen, `"deletedNodeCount": 1`) {
				t.Errorf("answered y: %s", screen)
			}
			if st := storeStats(t, store); st.Nodes != 100 {
				t.Errorf("answered y, and %d nodes are left", st.Nodes)
			}
		})
	}
}
