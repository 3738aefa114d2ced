package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

// pkgModel is a package index: packages that depend on packages, with a
// stub mark a placeholder may carry.
const pkgModel = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {
    "Package": {
      "x-lore-node": {"display": "name"},
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "version": {"type": "string"},
        "meta": {"type": "object"},
        "stub": {"type": "boolean"}
      },
      "additionalProperties": false
    },
    "Maintainer": {
      "x-lore-node": {"display": "name"},
      "type": "object",
      "properties": {"name": {"type": "string"}},
      "required": ["name"],
      "additionalProperties": false
    },
    "dependsOn": {"x-lore-edge": {"from": ["Package"], "to": ["Package"]}, "type": "object",
      "properties": {"range": {"type": "string"}, "opts": {"type": "object"}}},
    "maintainedBy": {"x-lore-edge": {"from": ["Package"], "to": ["Maintainer"]}, "type": "object"},
    "relates": {"x-lore-edge": {"from": ["Package"], "to": ["Package", "Maintainer"]}, "type": "object"}
  }
}`

func pkgStore(t *testing.T) graph.Store {
	t.Helper()
	m, err := schema.Load([]byte(pkgModel))
	if err != nil {
		t.Fatal(err)
	}
	return graphtest.Open(t, t.TempDir(), m)
}

func importWith(t *testing.T, s graph.Store, data string, opt graph.ImportOptions) *graph.ImportStats {
	t.Helper()
	st, err := graph.Import(t.Context(), s, strings.NewReader(data), opt)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return st
}

// dump lists the store's elements without their timestamps: nodes as
// "id type props revision", edges as "key props revision".
func dump(t *testing.T, s graph.Store) []string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := graph.Export(t.Context(), s, &buf, graph.NDJSON); err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "createdAt")
		delete(m, "updatedAt")
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return out
}

const pkgV1 = `{"kind":"node","id":"pkg/a","type":"Package","properties":{"name":"a","version":"1","meta":{"license":"MIT","tags":{"x":1,"y":2}}}}
{"kind":"node","id":"pkg/b","type":"Package","properties":{"name":"b","version":"1"}}
{"kind":"node","id":"pkg/c","type":"Package","properties":{"name":"c","version":"1"}}
{"kind":"node","id":"people/ann","type":"Maintainer","properties":{"name":"Ann"}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b","properties":{"range":"^1","opts":{"dev":false,"peer":true}}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/c"}
{"kind":"edge","from":"pkg/b","label":"dependsOn","to":"pkg/c"}
{"kind":"edge","from":"pkg/a","label":"maintainedBy","to":"people/ann"}
`

// TestImportModeMerge: --mode merge applies each line as an RFC 7396
// merge patch, nested objects merged and nulls removing members, for
// nodes and edges; a "merge": true line does so in upsert mode; a plain
// line in upsert mode replaces the properties.
func TestImportModeMerge(t *testing.T) {
	s := pkgStore(t)
	importWith(t, s, pkgV1, graph.ImportOptions{})
	patch := `{"kind":"node","id":"pkg/a","type":"Package","properties":{"version":"2","meta":{"tags":{"x":null,"z":3}}}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b","properties":{"opts":{"peer":null}}}
`
	st := importWith(t, s, patch, graph.ImportOptions{Mode: graph.ModeMerge})
	if st.Updated != 2 {
		t.Errorf("merge: %d updated, want 2", st.Updated)
	}
	n, _ := s.Node(t.Context(), "pkg/a")
	want := graph.Props{"name": "a", "version": "2", "meta": map[string]any{"license": "MIT", "tags": map[string]any{"y": json.Number("2"), "z": json.Number("3")}}}
	if diff := cmp.Diff(want, n.Properties); diff != "" {
		t.Errorf("merged node (-want +got):\n%s", diff)
	}
	e, _ := s.Edge(t.Context(), graph.EdgeKey{From: "pkg/a", Label: "dependsOn", To: "pkg/b"})
	if diff := cmp.Diff(graph.Props{"range": "^1", "opts": map[string]any{"dev": false}}, e.Properties); diff != "" {
		t.Errorf("merged edge (-want +got):\n%s", diff)
	}
	// A per-line merge in upsert mode; a plain line replaces.
	importWith(t, s, `{"kind":"node","id":"pkg/b","type":"Package","properties":{"version":"3"},"merge":true}
{"kind":"node","id":"pkg/c","type":"Package","properties":{"version":"3"}}
`, graph.ImportOptions{})
	b, _ := s.Node(t.Context(), "pkg/b")
	c, _ := s.Node(t.Context(), "pkg/c")
	if b.Properties["name"] != "b" || b.Properties["version"] != "3" || c.Properties["name"] != nil || c.Properties["version"] != "3" {
		t.Errorf("per-line merge: b %v, c %v", b.Properties, c.Properties)
	}
	graphtest.CheckOK(t, s)
}

// TestImportDuplicates: an element given twice in one file is reported,
// with both lines; the later line wins.
func TestImportDuplicates(t *testing.T) {
	s := pkgStore(t)
	data := pkgV1 + `{"kind":"node","id":"pkg/b","type":"Package","properties":{"name":"b2"}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/c"}
`
	st := importWith(t, s, data, graph.ImportOptions{})
	want := []graph.Duplicate{{Line: 9, First: 2, Element: `node "pkg/b"`}, {Line: 10, First: 6, Element: "edge dependsOn(pkg/a,pkg/c)"}}
	if st.Duplicates != 2 || !cmp.Equal(st.DuplicateLines, want) {
		t.Errorf("duplicates %d %+v, want %+v", st.Duplicates, st.DuplicateLines, want)
	}
	if n, _ := s.Node(t.Context(), "pkg/b"); n.Properties["name"] != "b2" {
		t.Errorf("the later line should win: %v", n.Properties)
	}
}

// TestImportDangling: error rejects an edge to a node nobody has, naming
// the line; skip leaves it out and counts it; stub makes a placeholder of
// the label's type marked stub: true, which the real line replaces later;
// a label allowing several types needs --stub-type.
func TestImportDangling(t *testing.T) {
	data := `{"kind":"node","id":"pkg/a","type":"Package","properties":{"name":"a"}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/ghost"}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b"}
{"kind":"node","id":"pkg/b","type":"Package","properties":{"name":"b"}}
`
	// pkg/b comes after its edge in this file: in batches of one line, the
	// edge is dangling when read (see StubProperty); in one batch, not.
	t.Run("error", func(t *testing.T) {
		s := pkgStore(t)
		_, err := graph.Import(t.Context(), s, strings.NewReader(data), graph.ImportOptions{})
		if err == nil || !strings.Contains(err.Error(), "line 2:") || !strings.Contains(err.Error(), "[dangling]") {
			t.Fatalf("Import = %v, want a dangling edge on line 2", err)
		}
	})
	t.Run("skip", func(t *testing.T) {
		s := pkgStore(t)
		st := importWith(t, s, data, graph.ImportOptions{Dangling: graph.DanglingSkip, BatchSize: 1})
		if st.Skipped != 2 || st.SkippedEdges[0] != "dependsOn(pkg/a,pkg/ghost)" {
			t.Errorf("skipped %d %v", st.Skipped, st.SkippedEdges)
		}
		stats, _ := s.Stats(t.Context())
		if stats.Nodes != 2 || stats.Edges != 0 {
			t.Errorf("store: %d nodes, %d edges", stats.Nodes, stats.Edges)
		}
		graphtest.CheckOK(t, s)
		// In one batch, pkg/b is there for its edge.
		s = pkgStore(t)
		if st := importWith(t, s, data, graph.ImportOptions{Dangling: graph.DanglingSkip}); st.Skipped != 1 {
			t.Errorf("one batch: skipped %d %v", st.Skipped, st.SkippedEdges)
		}
	})
	t.Run("stub", func(t *testing.T) {
		s := pkgStore(t)
		st := importWith(t, s, data, graph.ImportOptions{Dangling: graph.DanglingStub, BatchSize: 1})
		if st.Stubs != 2 || !cmp.Equal(st.StubNodes, []graph.ID{"pkg/ghost", "pkg/b"}) {
			t.Errorf("stubs %d %v", st.Stubs, st.StubNodes)
		}
		ghost, _ := s.Node(t.Context(), "pkg/ghost")
		if ghost == nil || ghost.Type != "Package" || ghost.Properties[graph.StubProperty] != true {
			t.Errorf("stub: %+v", ghost)
		}
		b, _ := s.Node(t.Context(), "pkg/b") // its real line came later
		if b.Properties[graph.StubProperty] != nil || b.Properties["name"] != "b" {
			t.Errorf("pkg/b: %v", b.Properties)
		}
		stats, _ := s.Stats(t.Context())
		if stats.Nodes != 3 || stats.Edges != 2 {
			t.Errorf("store: %d nodes, %d edges", stats.Nodes, stats.Edges)
		}
		// A stub of a type that does not take the mark is rejected, at the edge's line.
		_, err := graph.Import(t.Context(), s, strings.NewReader(`{"kind":"edge","from":"pkg/a","label":"maintainedBy","to":"people/nobody"}`+"\n"),
			graph.ImportOptions{Dangling: graph.DanglingStub})
		if err == nil || !strings.Contains(err.Error(), "line 1:") || !strings.Contains(err.Error(), `node "people/nobody"`) {
			t.Errorf("stub the model rejects: %v", err)
		}
		// A label with several types at the missing end needs --stub-type.
		rel := `{"kind":"edge","from":"pkg/a","label":"relates","to":"pkg/x"}` + "\n"
		if _, err := graph.Import(t.Context(), s, strings.NewReader(rel), graph.ImportOptions{Dangling: graph.DanglingStub}); err == nil || !strings.Contains(err.Error(), "--stub-type") {
			t.Errorf("ambiguous stub: %v", err)
		}
		importWith(t, s, rel, graph.ImportOptions{Dangling: graph.DanglingStub, StubType: "Package"})
		graphtest.CheckOK(t, s)
	})
}

// TestImportSync: a sync import deletes the elements of its scope that the
// file lacks, nodes with their edges and the edges of kept nodes; a dry
// run reports the same and writes nothing; every deletion is in the
// change log.
func TestImportSync(t *testing.T) {
	v2 := `{"kind":"node","id":"pkg/a","type":"Package","properties":{"name":"a","version":"2"}}
{"kind":"node","id":"pkg/b","type":"Package","properties":{"name":"b","version":"1"}}
{"kind":"edge","from":"pkg/a","label":"dependsOn","to":"pkg/b"}
`
	for _, tt := range []struct {
		scope      string
		nodes      []graph.ID // left after the sync
		edges      int64
		delNodes   int64
		delEdges   int64 // cascaded included
		firstNodes []graph.ID
	}{
		// pkg/c goes (and b→c, a→c with it); a→ann is not in the file.
		{"type:Package", []graph.ID{"people/ann", "pkg/a", "pkg/b"}, 1, 1, 3, []graph.ID{"pkg/c"}},
		{"prefix:pkg/", []graph.ID{"people/ann", "pkg/a", "pkg/b"}, 1, 1, 3, []graph.ID{"pkg/c"}},
		// Only the edges of the file's nodes: a→c, a→ann and b→c.
		{"file", []graph.ID{"people/ann", "pkg/a", "pkg/b", "pkg/c"}, 1, 0, 3, nil},
		{"prefix:people/", []graph.ID{"pkg/a", "pkg/b", "pkg/c"}, 3, 1, 1, []graph.ID{"people/ann"}},
	} {
		t.Run(tt.scope, func(t *testing.T) {
			s := pkgStore(t)
			importWith(t, s, pkgV1, graph.ImportOptions{})
			sc, err := graph.ParseSyncScope(tt.scope)
			if err != nil {
				t.Fatal(err)
			}
			opt := graph.ImportOptions{Mode: graph.ModeSync, Scopes: []graph.SyncScope{sc}, DryRun: true}
			before := dump(t, s)
			dry := importWith(t, s, v2, opt)
			if diff := cmp.Diff(before, dump(t, s)); diff != "" {
				t.Errorf("the dry run wrote (-before +after):\n%s", diff)
			}
			opt.DryRun = false
			st := importWith(t, s, v2, opt)
			for _, r := range []*graph.SyncReport{dry.Sync, st.Sync} {
				if r.DeletedNodes != tt.delNodes || r.DeletedEdges != tt.delEdges || !cmp.Equal(r.FirstNodes, tt.firstNodes) {
					t.Errorf("report (dry %v): %d nodes %v, %d edges %v; want %d nodes %v, %d edges", r.DryRun,
						r.DeletedNodes, r.FirstNodes, r.DeletedEdges, r.FirstEdges, tt.delNodes, tt.firstNodes, tt.delEdges)
				}
			}
			stats, _ := s.Stats(t.Context())
			if stats.Edges != tt.edges {
				t.Errorf("%d edges left, want %d", stats.Edges, tt.edges)
			}
			page, _ := s.ScanNodes(t.Context(), graph.Page{})
			var ids []graph.ID
			for _, n := range page.Nodes {
				ids = append(ids, n.ID)
			}
			if !cmp.Equal(ids, tt.nodes) {
				t.Errorf("nodes left %v, want %v", ids, tt.nodes)
			}
			if st.Sync.DeletedNodes+st.Sync.DeletedEdges > 0 {
				if st.Sync.Batches != 1 {
					t.Errorf("%d deletion batches, want 1", st.Sync.Batches)
				}
				ch, _ := s.Since(t.Context(), st.Sync.Seqs[0]-1, 1)
				if len(ch) != 1 || ch[0].Op != "import-sync" {
					t.Errorf("change log: %+v", ch)
				}
			}
			graphtest.CheckOK(t, s)
		})
	}
}

func TestImportModeOptions(t *testing.T) {
	s := pkgStore(t)
	for _, tt := range []struct {
		opt  graph.ImportOptions
		want string
	}{
		{graph.ImportOptions{Mode: graph.ModeSync}, "needs a scope"},
		{graph.ImportOptions{Scopes: []graph.SyncScope{{File: true}}}, "for a sync import only"},
		{graph.ImportOptions{Mode: graph.ModeSync, Scopes: []graph.SyncScope{{Type: "Nope"}}}, "no such node type"},
		{graph.ImportOptions{Mode: "replace"}, "use upsert, merge or sync"},
		{graph.ImportOptions{StubType: "Package"}, "--dangling stub only"},
	} {
		_, err := graph.Import(t.Context(), s, strings.NewReader(""), tt.opt)
		if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Import(%+v) = %v, want %q", tt.opt, err, tt.want)
		}
	}
	if _, err := graph.ParseSyncScope("type:"); err == nil {
		t.Error("ParseSyncScope(type:) accepted")
	}
}

// racingStore is a real store on which another writer deletes a node
// just before a sync import's deletions commit.
type racingStore struct {
	graph.Store
	victim graph.ID
	done   bool
}

func (r *racingStore) Apply(ctx context.Context, b *graph.Batch) (*graph.Result, error) {
	if b.Op == "import-sync" && !r.done {
		r.done = true
		if _, err := r.Store.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: r.victim}}}); err != nil {
			return nil, err
		}
	}
	return r.Store.Apply(ctx, b)
}

// TestImportSyncRace: a node of the scope that another writer deletes
// between the sync's reading of the scope and its deletions is left out
// of them; the others are deleted.
func TestImportSyncRace(t *testing.T) {
	s := pkgStore(t)
	importWith(t, s, pkgV1, graph.ImportOptions{})
	r := &racingStore{Store: s, victim: "pkg/c"}
	st := importWith(t, r, `{"kind":"node","id":"pkg/a","type":"Package","properties":{"name":"a"}}`+"\n",
		graph.ImportOptions{Mode: graph.ModeSync, Scopes: []graph.SyncScope{{Type: "Package"}}})
	if !r.done || st.Sync.DeletedNodes != 1 || !cmp.Equal(st.Sync.FirstNodes, []graph.ID{"pkg/b"}) {
		t.Errorf("sync beside a writer: %+v", st.Sync)
	}
	stats, _ := s.Stats(t.Context())
	if stats.NodeTypes["Package"] != 1 {
		t.Errorf("%d packages left, want 1", stats.NodeTypes["Package"])
	}
	graphtest.CheckOK(t, s)
}
