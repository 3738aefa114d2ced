package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// withoutTimes drops createdAt and updatedAt from each line of an NDJSON
// export: a replay cannot reproduce the times of the writes it replays.
func withoutTimes(t *testing.T, data []byte) string {
	t.Helper()
	var out strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		delete(m, "createdAt")
		delete(m, "updatedAt")
		b, _ := json.Marshal(m)
		out.Write(append(b, '\n'))
	}
	return out.String()
}

// TestBackupDuringWriteStorm: three MCP sessions write through the
// background holder of a store (upserts and deletes, each a change) while
// lore backup, run by the holder for this process, copies the store. The
// backup restores with lore restore into a new directory, passes lore
// check, and equals the source at the backup's sequence number: the
// example load and the sessions' batches up to it, replayed in order into
// a new store, export the same elements, properties and revisions.
func TestBackupDuringWriteStorm(t *testing.T) {
	store := newStore(t)
	startHold(t, store, "--idle", "1h")
	const writers, batches = 3, 40
	var mu sync.Mutex
	applied := map[uint64]*graph.Batch{}
	progress := make(chan struct{}, writers*batches)
	backedUp := make(chan struct{}) // the writers keep their last quarter for after the backup

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		c := stdioClient(t, fmt.Sprintf("writer %d", w), store)
		wg.Go(func() {
			for i := range batches {
				if i == batches*3/4 {
					<-backedUp
				}
				b := &graph.Batch{Nodes: []graph.NodeInput{
					{ID: graph.ID(fmt.Sprintf("topic/w%d-%d", w, i)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("w%d %d", w, i)}},
					{ID: graph.ID(fmt.Sprintf("topic/w%d-shared", w)), Type: "Topic", Properties: graph.Props{"name": fmt.Sprintf("w%d at %d", w, i)}},
				}}
				call := &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: map[string]any{"nodes": []any{
					map[string]any{"id": string(b.Nodes[0].ID), "type": "Topic", "properties": b.Nodes[0].Properties},
					map[string]any{"id": string(b.Nodes[1].ID), "type": "Topic", "properties": b.Nodes[1].Properties},
				}}}
				if i%4 == 3 { // every fourth, a delete instead
					id := fmt.Sprintf("topic/w%d-%d", w, i-2)
					b = &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: graph.ID(id)}}}
					call = &mcpsdk.CallToolParams{Name: "delete_nodes", Arguments: map[string]any{"nodes": []any{map[string]any{"id": id}}, "confirm": true}}
				}
				res, err := c.cs.CallTool(context.Background(), call)
				if err == nil && res.IsError {
					err = fmt.Errorf("%s: %s", call.Name, resultText(res))
				}
				if err != nil {
					errs <- err
					return
				}
				var out struct {
					Seq uint64 `json:"seq"`
				}
				data, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(data, &out); err != nil || out.Seq == 0 {
					errs <- fmt.Errorf("%s: no seq in %s", call.Name, data)
					return
				}
				mu.Lock()
				applied[out.Seq] = b
				mu.Unlock()
				progress <- struct{}{}
			}
		})
	}
	for range writers * batches / 4 { // the storm is under way
		<-progress
	}
	dir := t.TempDir()
	out, errOut, code := loreIn(t, dir, nil, "backup", "--json", "--store", store, "bk")
	var m graph.BackupManifest
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("lore backup: exit %d: %s%s", code, out, errOut)
	}
	close(backedUp)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if last := uint64(1 + writers*batches); m.Seq <= 1 || m.Seq >= last {
		t.Errorf("the backup is at change %d, not during the storm (changes 2 to %d)", m.Seq, last)
	}

	if out, errOut, code := loreIn(t, dir, nil, "restore", "bk", "restored"); code != 0 || !strings.Contains(out, fmt.Sprintf("as of change %d", m.Seq)) {
		t.Fatalf("lore restore: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := loreIn(t, dir, nil, "check", "--store", "restored"); code != 0 {
		t.Fatalf("lore check of the restored store: exit %d: %s%s", code, out, errOut)
	}
	got, errOut, code := loreIn(t, dir, nil, "export", "--store", "restored", "-")
	if code != 0 {
		t.Fatalf("export: %s", errOut)
	}

	// The source at change m.Seq: the example load, then the batches.
	replay, err := openEmbedded(t.Context(), storeOptions{path: t.TempDir(), noSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer replay.Close()
	if _, err := graph.Import(t.Context(), replay, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	seqs := make([]uint64, 0, len(applied))
	for q := range applied {
		seqs = append(seqs, q)
	}
	slices.Sort(seqs)
	for _, q := range seqs {
		if q > m.Seq {
			break
		}
		if _, err := replay.Apply(t.Context(), applied[q]); err != nil {
			t.Fatalf("replaying change %d: %v", q, err)
		}
	}
	var want bytes.Buffer
	if _, err := graph.Export(t.Context(), replay, &want, graph.NDJSON); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(withoutTimes(t, want.Bytes()), withoutTimes(t, []byte(got))); diff != "" {
		t.Errorf("the restored store differs from the source at change %d (-replayed +restored):\n%s", m.Seq, diff)
	}

	// restore refuses a directory that holds a store, and a damaged backup.
	if _, errOut, code := loreIn(t, dir, nil, "restore", "bk", "restored"); code != 1 || !strings.Contains(errOut, "holds a store already") {
		t.Errorf("restore over a store: exit %d: %s", code, errOut)
	}
	f := filepath.Join(dir, "bk", "store.bolt")
	data, _ := os.ReadFile(f)
	data[len(data)/3] ^= 0x40
	os.WriteFile(f, data, 0o600)
	if _, errOut, code := loreIn(t, dir, nil, "restore", "bk", "again"); code != 1 || !strings.Contains(errOut, "the backup is damaged") {
		t.Errorf("restore of a damaged backup: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "again", "store.bolt")); err == nil {
		t.Error("a damaged backup was installed")
	}
}
