package bolt

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	ckv "github.com/cayleygraph/cayley/graph/kv"
	bbolt "go.etcd.io/bbolt"
)

// dumpFile hashes every bucket of the store's file, nested ones included:
// its path, then each key and value in order (a packed index's keys, not
// its blocks, which a rewrite may cut elsewhere).
func dumpFile(t *testing.T, s *Store) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	var walk func(path string, b *bbolt.Bucket)
	walk = func(path string, b *bbolt.Bucket) {
		h := sha256.New()
		if packedBucket([]byte(path)) {
			// Its keys, whatever blocks hold them.
			pc := newPackedCursor(b)
			for k := pc.First(); k != nil; k = pc.Next() {
				h.Write([]byte{0})
				h.Write(k)
			}
			if pc.err != nil {
				t.Fatal(pc.err)
			}
			out[path] = [32]byte(h.Sum(nil))
			return
		}
		if path == string(bOPS) {
			// Its entries, whatever blocks hold them.
			err := eachOPSEntry(b, func(k, v []byte) error {
				h.Write([]byte{0})
				h.Write(k)
				h.Write([]byte{1})
				h.Write(v)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			out[path] = [32]byte(h.Sum(nil))
			return
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				walk(path+"/"+string(k), b.Bucket(k))
				h.Write([]byte{2})
				h.Write(k)
				continue
			}
			h.Write([]byte{0})
			h.Write(k)
			h.Write([]byte{1})
			h.Write(v)
		}
		out[path] = [32]byte(h.Sum(nil))
	}
	err := s.read(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			walk(string(name), b)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func fileSize(t *testing.T, dir string) int64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// loadInput is n Service nodes and edges between them far apart, in an
// order that scatters the edges' keys, so that a load's commits rewrite
// their pages.
func loadInput(n int) string {
	var b strings.Builder
	b.Grow(n * 300)
	writeGraph(&b, n)
	return b.String()
}

func writeGraph(w *strings.Builder, n int) {
	for i := range n {
		w.WriteString(`{"kind":"node","id":"service/s` + itoa(i) + `","type":"Service","properties":{"name":"service ` + itoa(i) + `","tier":` + itoa(i%4) + `}}` + "\n")
	}
	for i := range 4 * n {
		from, to := (i*7919+1)%n, (i*104729+3)%n
		if from != to {
			w.WriteString(`{"kind":"edge","from":"service/s` + itoa(from) + `","label":"dependsOn","to":"service/s` + itoa(to) + `"}` + "\n")
		}
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	p := len(b)
	for ; i > 0; i /= 10 {
		p--
		b[p] = byte('0' + i%10)
	}
	return string(b[p:])
}

// A bulk load into an empty store ends with the file rewritten: the same
// keys and values in every bucket, in a smaller file, which the store goes
// on using (reads, writes, a reopen) under the same lock.
func TestLoadRewritesFile(t *testing.T) {
	input := loadInput(3000)
	opts := graph.ImportOptions{BatchSize: 2000}

	keptDir := t.TempDir()
	kept := openTest(t, keptDir, Config{KeepLoadFile: true})
	if _, err := graph.Import(t.Context(), kept, strings.NewReader(input), opts); err != nil {
		t.Fatal(err)
	}
	keptSize := fileSize(t, keptDir)
	want := dumpFile(t, kept)

	// The same store, rewritten as a load's end rewrites it.
	kept.wmu.Lock()
	kept.rw.Lock()
	err := kept.rewriteFile(fileMerge{})
	kept.rw.Unlock()
	kept.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	got := dumpFile(t, kept)
	if len(got) != len(want) {
		t.Fatalf("%d buckets after the rewrite, %d before", len(got), len(want))
	}
	for name, h := range want {
		if got[name] != h {
			t.Errorf("bucket %q differs after the rewrite", name)
		}
	}
	rewritten := fileSize(t, keptDir)
	t.Logf("file %d bytes as loaded, %d rewritten", keptSize, rewritten)
	// A quadLoad and the pending in-edge index write much of a load in
	// key order already; what is left to gain is the pages the commits
	// split and left half full (about 4 MB -> 2.9 MB here).
	if rewritten > keptSize*17/20 {
		t.Errorf("the rewritten file has %d bytes, the loaded one %d: want at most 85%%", rewritten, keptSize)
	}
	if _, err := os.Stat(filepath.Join(keptDir, FileName+rewriteSuffix)); !os.IsNotExist(err) {
		t.Errorf("the rewrite left its file behind: %v", err)
	}

	// The import's own rewrite, on a store of its own: same size, and the
	// store works on.
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	if _, err := graph.Import(t.Context(), s, strings.NewReader(input), opts); err != nil {
		t.Fatal(err)
	}
	if size := fileSize(t, dir); size > rewritten+8*4096 {
		t.Errorf("after the import the file has %d bytes, rewritten %d: the load did not rewrite it", size, rewritten)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check after the rewrite: %v %v", err, r)
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/new", Type: "Service", Properties: graph.Props{"name": "new"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/new", Label: "dependsOn", To: "service/s1"}}}})
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/s1"}, Direction: graph.In, Labels: []string{"dependsOn"}, Page: graph.Page{Limit: graph.MaxPageSize}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range page.Edges {
		found = found || e.From == "service/new"
	}
	if !found {
		t.Error("an edge written after the rewrite is not among its target's in-edges")
	}
	// A backup copies the file by its name (bbolt's Tx.WriteTo): the
	// rewritten one, with what was written since.
	var copy bytes.Buffer
	info, err := s.Backup(t.Context(), &copy)
	if err != nil {
		t.Fatalf("backup after the rewrite: %v", err)
	}
	if info.Nodes != 3001 {
		t.Errorf("the backup holds %d nodes, want 3001", info.Nodes)
	}
	if _, err := Open(t.Context(), Config{Path: dir, LockTimeout: 50e6}); err == nil {
		t.Error("a second open of the rewritten store did not find it locked")
	}
	after := exportString(t, s)
	s.Close()
	s = openTest(t, dir, Config{})
	if got := exportString(t, s); got != after {
		t.Error("the rewritten store lost writes across a reopen")
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check after reopening: %v %v", err, r)
	}
}

// A rewrite that cannot write its new file leaves the load standing in the
// old one.
func TestFailedRewriteKeepsLoad(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	// A directory that is not empty where the new file goes: neither
	// removed nor opened.
	blocker := filepath.Join(dir, FileName+rewriteSuffix)
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(loadInput(500)), graph.ImportOptions{BatchSize: 400}); err != nil {
		t.Fatalf("the load failed with its rewrite: %v", err)
	}
	if n, err := s.Node(t.Context(), "service/s499"); err != nil || n == nil {
		t.Fatalf("the last node after a failed rewrite: %v %v", n, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r)
	}
	before := exportString(t, s)
	s.Close()
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Config{})
	if got := exportString(t, s); got != before {
		t.Error("the store changed across a reopen")
	}
}

// Open removes what a rewrite that died before its rename left.
func TestOpenRemovesDeadRewrite(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, Config{}).Close()
	left := filepath.Join(dir, FileName+rewriteSuffix)
	if err := os.WriteFile(left, []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTest(t, dir, Config{})
	defer s.Close()
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("Open left a dead rewrite's file: %v", err)
	}
}

// An all-or-nothing load whose rewrite merges what waits into the new file
// (see loadRest) leaves the same buckets, key for key, as one that writes
// it all into its file and keeps that file (KeepLoadFile), no load's mark
// among them; so does one whose rewrite fails once it has written the new
// file, having read all the load left for it (its runs, Cayley's kept
// log), and which then writes it all into the old file.
func TestMergedLoadMatchesKeptFile(t *testing.T) {
	input := loadInput(3000)
	opts := graph.ImportOptions{BatchSize: 700}
	dumps := make([]map[string][32]byte, 3)
	metas := make([]map[string]string, 3)
	recs := make([][]string, 3) // with no times, which differ
	for i, keep := range []string{"kept", "merged", "failed late"} {
		dir := t.TempDir()
		cfg, failed := Config{KeepLoadFile: keep == "kept"}, false
		if keep == "failed late" {
			cfg.beforeRename = func() {
				// The rename finds no new file.
				failed = os.Remove(filepath.Join(dir, FileName+rewriteSuffix)) == nil
			}
		}
		s := openTest(t, dir, cfg)
		if _, err := graph.Import(t.Context(), s, strings.NewReader(input), opts); err != nil {
			t.Fatal(err)
		}
		if keep == "failed late" && !failed {
			t.Fatal("the load's end did not rewrite the file")
		}
		dumps[i] = dumpFile(t, s)
		recs[i] = recordDump(t, s)
		// Lore's meta, but for the store's own cursor key.
		metas[i] = map[string]string{}
		_ = s.db.DB().View(func(tx *bbolt.Tx) error {
			return tx.Bucket(bMeta).ForEach(func(k, v []byte) error {
				if !bytes.Equal(k, metaCursorKey) {
					metas[i][string(k)] = string(v)
				}
				return nil
			})
		})
		for _, mark := range [][]byte{metaLoading, metaQuadsPending, metaDeferred} {
			if _, ok := metas[i][string(mark)]; ok {
				t.Errorf("%s: the store is still marked %q", keep, mark)
			}
		}
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("%s: check: %v %v", keep, err, r)
		}
	}
	for i, other := range []string{"merged", "failed late"} {
		i++
		if len(dumps[0]) != len(dumps[i]) {
			t.Fatalf("%d buckets kept, %d %s", len(dumps[0]), len(dumps[i]), other)
		}
		for name, h := range dumps[0] {
			timed := name == string(bNodes) || name == string(bEdges) || name == string(bLog)
			if dumps[i][name] != h && name != string(bMeta) && !timed {
				t.Errorf("bucket %q differs between the kept file and the %s one", name, other)
			}
		}
		if !maps.Equal(metas[0], metas[i]) {
			t.Errorf("Lore's meta differs between the kept file and the %s one", other)
		}
		if !slices.Equal(recs[0], recs[i]) {
			t.Errorf("the records differ between the kept file and the %s one:\n%s", other, lineDiff(recs[0], recs[i]))
		}
	}
}

// The index entries an all-or-nothing load merges into its rewritten file
// (indexRuns) are the ones it would have written into the file it keeps:
// random loads that write nodes again with other properties (deleting
// entries the load wrote before it deferred them, and ones
// waiting in its runs), in small batches, deferring early and draining
// often, leave the same type, property and search indexes and counts
// either way, the same records (edge summaries included), and a store
// that checks.
func TestMergedIndexEntriesMatchKeptFile(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 77))
		var b strings.Builder
		b.WriteString(randomLoad(rng))
		nAgain := 1 + rng.IntN(8)
		for i := range nAgain {
			fmt.Fprintf(&b, `{"kind":"node","id":"entity/x%d","type":"Entity","properties":{"name":"loose %d","entityType":"kind%d"}}`+"\n", i, i, rng.IntN(3))
		}
		for range rng.IntN(3 * nAgain) { // with another name or kind, or both
			i := rng.IntN(nAgain)
			fmt.Fprintf(&b, `{"kind":"node","id":"entity/x%d","type":"Entity","properties":{"name":"loose %d","entityType":"kind%d"}}`+"\n", i, rng.IntN(3), rng.IntN(3))
		}
		input := b.String()
		opts := graph.ImportOptions{BatchSize: 1 + rng.IntN(24)}
		var dumps [2]map[string][32]byte
		var metas [2]map[string]string
		var recs [2][]string // with no times, which differ
		for i, keep := range []bool{true, false} {
			s := openTest(t, t.TempDir(), Config{KeepLoadFile: keep, DeferAfter: 1 + rng.IntN(30), DeferFlush: 1 + rng.IntN(60)})
			if _, err := graph.Import(t.Context(), s, strings.NewReader(input), opts); err != nil {
				t.Fatalf("seed %d, keep=%v: %v", seed, keep, err)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("seed %d, keep=%v: check: %v %v", seed, keep, err, r)
			}
			dumps[i] = dumpFile(t, s)
			recs[i] = recordDump(t, s)
			metas[i] = map[string]string{}
			_ = s.read(func(tx *bbolt.Tx) error {
				return tx.Bucket(bMeta).ForEach(func(k, v []byte) error {
					if bytes.HasPrefix(k, []byte("count/")) || bytes.HasPrefix(k, []byte(dfPrefix)) {
						metas[i][string(k)] = string(v)
					}
					return nil
				})
			})
		}
		for _, name := range indexBuckets {
			if bytes.Equal(name, bNodes) {
				continue // timed: compared below
			}
			if dumps[0][string(name)] != dumps[1][string(name)] {
				t.Errorf("seed %d: bucket %q differs between the kept file and the merged one", seed, name)
			}
		}
		if !maps.Equal(metas[0], metas[1]) {
			t.Errorf("seed %d: the counts differ between the kept file and the merged one", seed)
		}
		if !slices.Equal(recs[0], recs[1]) {
			t.Errorf("seed %d: the records differ between the kept file and the merged one:\n%s", seed, lineDiff(recs[0], recs[1]))
		}
	}
}

// A process that dies while a load's end rewrites the file, after the new
// file is written but before it replaces the old one, leaves a store that
// the next Open empties: the old file still bears the "loading" mark,
// which only the new file lacks, and what the load left for the rewrite
// was never written into the old file. (The crash is a copy of the
// directory at that moment, as the disk holds it.)
func TestCrashBeforeRewriteRenameUndoesLoad(t *testing.T) {
	dir, crashed := t.TempDir(), t.TempDir()
	copied := false
	s := openTest(t, dir, Config{beforeRename: func() {
		for _, name := range []string{FileName, FileName + rewriteSuffix} {
			data, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Error(err)
				return
			}
			if err := os.WriteFile(filepath.Join(crashed, name), data, 0o600); err != nil {
				t.Error(err)
				return
			}
		}
		copied = true
	}})
	if _, err := graph.Import(t.Context(), s, strings.NewReader(loadInput(500)), graph.ImportOptions{BatchSize: 400}); err != nil {
		t.Fatal(err)
	}
	if !copied {
		t.Fatal("the load's end did not rewrite the file")
	}
	if _, err := s.Node(t.Context(), "service/s499"); err != nil {
		t.Fatalf("the load's last node: %v", err)
	}
	// A read-only open (lore check, say) has the file to itself: it undoes
	// the load as a writer's would, leaving the layout a writer's leaves.
	ro, err := Open(t.Context(), Config{Path: crashed, NoSync: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Node(t.Context(), "service/s0"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("after a crash before the rename, a read-only open finds the load's first node: %v", err)
	}
	_ = ro.read(func(tx *bbolt.Tx) error {
		var inds []ckv.QuadIndex
		if err := json.Unmarshal(tx.Bucket(cayleyMeta).Get(cayleyIndexesKey), &inds); err != nil || len(inds) != 1 || !equalIndex(inds[0], opsIndex) {
			t.Errorf("Cayley's indexes after a read-only open undid the load: %+v %v", inds, err)
		}
		return nil
	})
	ro.Close()
	after := openTest(t, crashed, Config{})
	if _, err := after.Node(t.Context(), "service/s0"); !errors.Is(err, graph.ErrNotFound) {
		t.Errorf("after a crash before the rename, the load's first node: %v, want none", err)
	}
	if got := exportString(t, after); strings.Contains(got, `"kind":"node"`) || strings.Contains(got, `"kind":"edge"`) {
		t.Errorf("after a crash before the rename, the store holds:\n%.500s", got)
	}
	if r, err := after.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r)
	}
	if _, err := os.Stat(filepath.Join(crashed, FileName+rewriteSuffix)); !os.IsNotExist(err) {
		t.Errorf("Open left the dead rewrite's file: %v", err)
	}
	// The store loads again.
	if _, err := graph.Import(t.Context(), after, strings.NewReader(loadInput(50)), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
}

// An all-or-nothing load that rewrites its file folds its tally of edge
// summaries into the node records as the rewrite begins (loadRest.fold).
// A fold that fails fails the load whole: the store is empty again, passes
// its check, and takes the same load again. The fold fails here on a
// summary that does not decode, put in between two commits.
func TestFailedFoldUndoesLoad(t *testing.T) {
	data := topicsAndDocs()
	for _, tc := range []struct{ name, tail string }{
		{"flush", ""}, // the input ends with a full batch
		{"last batch", `{"kind":"node","id":"topic/last","type":"Topic","properties":{"name":"last"}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir, Config{DeferAfter: -1})
			batches := 0
			progress := func(graph.ImportStats) {
				if batches++; batches == 1 {
					spoilSummary(t, s, "topic/t5")
				}
			}
			_, err := graph.Import(t.Context(), s, strings.NewReader(data+tc.tail), graph.ImportOptions{BatchSize: 100, Progress: progress})
			if err == nil || !strings.Contains(err.Error(), `"topic/t5": edge summary does not decode`) {
				t.Fatalf("a load whose fold fails: %v", err)
			}
			if n, err := s.Node(t.Context(), "topic/t42"); !errors.Is(err, graph.ErrNotFound) {
				t.Errorf("a node of the failed load: %v, %v", n, err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*"+rewriteSuffix)); len(left) > 0 {
				t.Errorf("the failed rewrite left %v", left)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check after the failed load: %v %v", err, r)
			}
			if _, err := graph.Import(t.Context(), s, strings.NewReader(data+tc.tail), graph.ImportOptions{BatchSize: 100}); err != nil {
				t.Fatalf("the load again: %v", err)
			}
			n, err := s.Node(t.Context(), "topic/t5")
			if err != nil || len(n.Edges) != 1 || n.Edges[0].Count != 1 || n.Edges[0].Direction != graph.In {
				t.Fatalf("topic/t5 after the load: %+v, %v", n, err)
			}
			if r, err := s.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check after the load: %v %v", err, r)
			}
		})
	}
}
