package graph_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

// topics returns n Topic node lines, topic/t0 … topic/t(n-1).
func topics(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", i, i)
	}
	return b.String()
}

// badTopic is a line the model rejects: a Topic's name is a string.
func badTopic(i int) string {
	return fmt.Sprintf(`{"kind":"node","id":"topic/bad%d","type":"Topic","properties":{"name":%d}}`+"\n", i, i)
}

// onlyReader hides every method but Read: the import cannot seek back.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func checkOK(t *testing.T, s graph.Store) {
	t.Helper()
	graphtest.CheckOK(t, s)
}

// A failed import into an empty store leaves it empty: the batches before
// the rejected line are undone, the indexes hold nothing, and the change
// log's sequence numbers are not given out again.
func TestImportIntoEmptyStoreIsAllOrNothing(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			s := graphtest.New(t)
			data := topics(25) + badTopic(1) + topics(3)
			st, err := graph.Import(t.Context(), s, strings.NewReader(data), graph.ImportOptions{BatchSize: 10, Durable: durable})
			var ie *graph.ImportError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), "line 26:") {
				t.Fatalf("Import = %v, want an ImportError saying nothing was written, naming line 26", err)
			}
			if st.Created != 0 || st.Batches != 0 {
				t.Errorf("stats of the undone import: %+v", st)
			}
			stats, _ := s.Stats(t.Context())
			if stats.Nodes != 0 || stats.Edges != 0 || stats.Quads != 0 {
				t.Errorf("the store holds %+v after a failed import", stats)
			}
			if ch, err := s.Since(t.Context(), 0, 100); err != nil || len(ch) != 0 {
				t.Errorf("change log after a failed import: %v %v", ch, err)
			}
			res, _ := graph.Search(t.Context(), s, graph.SearchQuery{Text: "topic"}, graph.Limits{})
			if len(res.Hits) != 0 {
				t.Errorf("search finds %d hits in an empty store", len(res.Hits))
			}
			checkOK(t, s)
			undone := stats.LastSeq
			if undone == 0 {
				t.Error("the undone batches gave out no sequence number")
			}
			// The next import is again a load into an empty store, and its
			// change-log entries come after the undone ones.
			if _, err := graph.Import(t.Context(), s, strings.NewReader(topics(25)), graph.ImportOptions{BatchSize: 10, Durable: durable}); err != nil {
				t.Fatal(err)
			}
			ch, err := s.Since(t.Context(), 0, 100)
			if err != nil || len(ch) != 3 || ch[0].Seq != undone+1 {
				t.Errorf("change log after the good import: %d entries from %v, want 3 from %d (%v)", len(ch), ch, undone+1, err)
			}
			checkOK(t, s)
		})
	}
}

// A failed import into a store that holds data writes nothing: the whole
// input is checked first, even one read from a pipe (copied aside to be
// read again), and a good one is written whole.
func TestImportIntoStoreWithDataIsAllOrNothing(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	before := snap(t, s)
	spool := t.TempDir()
	data := topics(25) + badTopic(1) + topics(3)
	_, err := graph.Import(t.Context(), s, onlyReader{strings.NewReader(data)}, graph.ImportOptions{BatchSize: 10, SpoolDir: spool})
	var ie *graph.ImportError
	if !errors.As(err, &ie) || ie.Partial || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("Import = %v, want an ImportError saying nothing was written", err)
	}
	if diff := cmp.Diff(before, snap(t, s)); diff != "" {
		t.Errorf("a rejected import changed the store (-before +after):\n%s", diff)
	}
	for _, in := range []io.Reader{onlyReader{strings.NewReader(topics(25))}, strings.NewReader(topics(30))} {
		st, err := graph.Import(t.Context(), s, in, graph.ImportOptions{BatchSize: 10, SpoolDir: spool})
		if err != nil {
			t.Fatal(err)
		}
		if st.Checking || st.Nodes == 0 {
			t.Errorf("stats of a written import: %+v", st)
		}
	}
	stats, _ := s.Stats(t.Context())
	if stats.NodeTypes["Topic"] != 30 {
		t.Errorf("%d topics, want 30", stats.NodeTypes["Topic"])
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Errorf("the spool directory keeps %d file(s)", len(left))
	}
	checkOK(t, s)
}

// Partial keeps the batches before the rejected one, and says so.
func TestImportPartial(t *testing.T) {
	s := graphtest.New(t)
	data := topics(25) + badTopic(1) + topics(3)
	st, err := graph.Import(t.Context(), s, strings.NewReader(data), graph.ImportOptions{BatchSize: 10, Partial: true})
	var ie *graph.ImportError
	if !errors.As(err, &ie) || !ie.Partial || !strings.Contains(err.Error(), "the 2 batches before them (20 elements) were committed") {
		t.Fatalf("Import = %v", err)
	}
	if stats, _ := s.Stats(t.Context()); stats.Nodes != 20 || st.Batches != 2 {
		t.Errorf("a partial import kept %d nodes in %d batches, want 20 in 2", stats.Nodes, st.Batches)
	}
	checkOK(t, s)
}

// A dry run writes nothing, counts every problem however many there are,
// and lists the first MaxProblems by line.
func TestDryRunReportsEveryProblem(t *testing.T) {
	s := graphtest.New(t)
	var b strings.Builder
	want := 0
	for i := range 300 {
		switch {
		case i%3 == 0:
			b.WriteString(badTopic(i))
			want++
		case i%7 == 0:
			b.WriteString("{not json\n")
			want++
		default:
			fmt.Fprintf(&b, `{"kind":"node","id":"topic/ok%d","type":"Topic","properties":{"name":"t"}}`+"\n", i)
		}
	}
	// An edge between nodes of earlier batches, and one to a node no line creates.
	b.WriteString(`{"kind":"edge","from":"topic/ok1","label":"about","to":"topic/ok2"}` + "\n")
	b.WriteString(`{"kind":"edge","from":"topic/ok1","label":"references","to":"topic/nowhere"}` + "\n")
	want += 2
	st, err := graph.Import(t.Context(), s, strings.NewReader(b.String()), graph.ImportOptions{BatchSize: 10, DryRun: true})
	var ie *graph.ImportError
	if !errors.As(err, &ie) || !ie.DryRun {
		t.Fatalf("dry run = %v", err)
	}
	if ie.Total != want || len(ie.Lines) != graph.MaxProblems {
		t.Errorf("dry run counted %d problems and listed %d, want %d and %d", ie.Total, len(ie.Lines), want, graph.MaxProblems)
	}
	for i, l := range ie.Lines {
		if i > 0 && l.Line < ie.Lines[i-1].Line {
			t.Fatalf("problems not in line order: line %d after line %d", l.Line, ie.Lines[i-1].Line)
		}
	}
	if ie.Lines[0].Line != 1 || !strings.Contains(err.Error(), fmt.Sprintf("… and %d more", want-graph.MaxProblems)) ||
		!strings.Contains(err.Error(), "dry run: ") || strings.Contains(err.Error(), "committed") {
		t.Errorf("dry run error:\n%.600s", err)
	}
	if st.Lines != 302 || st.Elements() == 0 {
		t.Errorf("dry-run stats: %+v", st)
	}
	if stats, _ := s.Stats(t.Context()); stats.Nodes != 0 || stats.LastSeq != 0 {
		t.Errorf("the dry run wrote: %+v", stats)
	}
}

// One batch with more problems than a BatchError lists: the dry run still
// lists the first ones by line, and counts them all.
func TestDryRunManyProblemsInOneBatch(t *testing.T) {
	s := graphtest.New(t)
	var b strings.Builder
	for i := range 150 {
		// An edge between missing nodes (two problems, found late in
		// planning) on even lines, a bad property (found early) on odd ones.
		if i%2 == 0 {
			fmt.Fprintf(&b, `{"kind":"edge","from":"topic/x%d","label":"references","to":"topic/y"}`+"\n", i)
		} else {
			b.WriteString(badTopic(i))
		}
	}
	_, err := graph.Import(t.Context(), s, strings.NewReader(b.String()), graph.ImportOptions{BatchSize: 1000, DryRun: true})
	var ie *graph.ImportError
	if !errors.As(err, &ie) || ie.Total != 225 || len(ie.Lines) != graph.MaxProblems {
		t.Fatalf("dry run = %v", err)
	}
	// 100 problems: lines 1 to 67, two on each odd line.
	for i, l := range ie.Lines {
		if want := int64(i/3*2 + 1 + i%3/2); l.Line != want {
			t.Fatalf("problem %d is on line %d, want %d: the first problems by line, in order", i, l.Line, want)
		}
	}
}

// A cancelled import stops between batches, or while its reader waits for
// input, and leaves the store as it was.
func TestImportCancelled(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed bool
	}{{"empty store", false}, {"store with data", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := graphtest.New(t)
			if tc.seed {
				seed(t, s)
			}
			before := snap(t, s)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			pr, pw := io.Pipe()
			defer pw.Close()
			go func() {
				// Three batches, then the writer stalls: the reader is
				// left blocked on the pipe.
				io.WriteString(pw, topics(30))
			}()
			batches := 0
			opt := graph.ImportOptions{BatchSize: 10, SpoolDir: t.TempDir(), Progress: func(graph.ImportStats) {
				if batches++; batches == 2 {
					cancel()
				}
			}}
			done := make(chan error, 1)
			go func() {
				_, err := graph.Import(ctx, s, pr, opt)
				done <- err
			}()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Import = %v, want context.Canceled", err)
			}
			if diff := cmp.Diff(before.Export, snap(t, s).Export); diff != "" {
				t.Errorf("a cancelled import changed the store (-before +after):\n%s", diff)
			}
			checkOK(t, s)
		})
	}
}

// Revisions stay within what every JSON client keeps exactly.
func TestRevisionBounds(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	for _, tt := range []struct {
		name string
		b    *graph.Batch
		want string
	}{
		{"restored revision", &graph.Batch{Restore: true, Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}, Revision: graph.MaxRevision + 1}}},
			"/nodes/0/revision: revision 9007199254740992 is out of range"},
		{"negative revision", &graph.Batch{Restore: true, Edges: []graph.EdgeInput{{EdgeKey: ek("person/ada", "memberOf", "team/core"), Revision: -1}}},
			"/edges/0/revision: revision -1 is out of range"},
		{"expected revision", &graph.Batch{Nodes: []graph.NodeInput{{ID: "team/core", Type: "Team", Properties: graph.Props{"name": "x"}, ExpectedRevision: rev(math.MaxInt64)}}},
			"/nodes/0/expectedRevision: expected revision 9223372036854775807 is out of range"},
		{"delete expected revision", &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "team/core", ExpectedRevision: rev(-5)}}},
			"/deleteNodes/0/expectedRevision"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Apply(t.Context(), tt.b)
			if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Apply = %v, want ErrInvalid containing %q", err, tt.want)
			}
		})
	}
	// An element at the highest revision cannot change again: the next
	// revision would not fit.
	top := `{"kind":"node","id":"topic/top","type":"Topic","properties":{"name":"top"},"revision":9007199254740991}` + "\n" +
		`{"kind":"edge","from":"topic/top","label":"about","to":"topic/top","revision":9007199254740991}` + "\n"
	if _, err := graph.Import(t.Context(), s, strings.NewReader(top), graph.ImportOptions{}); err == nil || !strings.Contains(err.Error(), "about edges join") {
		// about joins documents to topics: a topic's self-edge is refused,
		// which leaves only the node.
		t.Fatalf("import: %v", err)
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(strings.SplitAfter(top, "\n")[0]), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	n, _ := s.Node(t.Context(), "topic/top")
	if n.Revision != graph.MaxRevision {
		t.Fatalf("revision %d, want %d", n.Revision, int64(graph.MaxRevision))
	}
	_, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/top", Type: "Topic", Properties: graph.Props{"name": "again"}}}})
	if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "cannot change again") {
		t.Errorf("update at the highest revision = %v", err)
	}
	if n2, _ := s.Node(t.Context(), "topic/top"); n2.Revision != graph.MaxRevision || n2.Properties["name"] != "top" {
		t.Errorf("after the refused update: %+v", n2)
	}
	// An NDJSON revision past 2^53-1 is refused on its line.
	_, err = graph.Import(t.Context(), s, strings.NewReader(`{"kind":"node","id":"topic/big","type":"Topic","properties":{"name":"b"},"revision":9223372036854775807}`), graph.ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 1: node \"topic/big\" at /revision: revision 9223372036854775807 is out of range") {
		t.Errorf("import of a revision past 2^53-1: %v", err)
	}
}

// The change feed never wraps: a cursor past the end is refused.
func TestSinceNeverWraps(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	for _, seq := range []uint64{2, math.MaxUint64, math.MaxUint64 - 1} {
		ch, err := s.Since(t.Context(), seq, 10)
		if err != nil || len(ch) != 0 {
			t.Errorf("Since(%d) = %d changes, %v; want nothing", seq, len(ch), err)
		}
	}
	if ch, err := s.Since(t.Context(), 1, 10); err != nil || len(ch) != 0 {
		t.Errorf("Since(last) = %v, %v; want nothing", ch, err)
	}
}

// Input the decoders used to change silently (invalid UTF-8 turned into
// U+FFFD, a repeated key keeping the last value) is refused, naming the
// line and the place; so is JSON nested past the depth limit, at once.
func TestImportRefusesSilentChanges(t *testing.T) {
	node := func(props string) string {
		return `{"kind":"node","id":"topic/a","type":"Topic","properties":` + props + "}\n"
	}
	for _, tt := range []struct {
		name   string
		format graph.Format
		data   string
		depth  int
		want   string
	}{
		{"ndjson invalid UTF-8", graph.NDJSON, topics(1) + node("{\"name\":\"caf\xe9\"}"), 0, "line 2: invalid UTF-8 in a string at /properties/name"},
		{"ndjson lone surrogate", graph.NDJSON, node(`{"name":"\ud800"}`), 0, "line 1: an unpaired UTF-16 surrogate"},
		{"ndjson duplicate key", graph.NDJSON, node(`{"name":"a","name":"b"}`), 0, "line 1: the same key appears twice in one object at /properties/name"},
		{"ndjson duplicate field", graph.NDJSON, `{"kind":"node","kind":"edge","id":"topic/a","type":"Topic","properties":{"name":"a"}}`, 0, "line 1: the same key appears twice in one object at /kind"},
		{"ndjson deep", graph.NDJSON, node(`{"name":"a","x":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`), 0, "line 1: nested deeper than 64 levels"},
		{"ndjson depth option", graph.NDJSON, node(`{"name":"a","x":[[[[1]]]]}`), 4, "line 1: nested deeper than 4 levels at /properties/x/0/0"},
		{"memory invalid UTF-8", graph.Memory, "{\"type\":\"entity\",\"name\":\"\xff\",\"entityType\":\"t\",\"observations\":[]}\n", 0, "line 1: invalid UTF-8 in a string at /name"},
		{"memory duplicate key", graph.Memory, `{"type":"entity","name":"a","name":"b","entityType":"t","observations":[]}`, 0, "line 1: the same key appears twice in one object at /name"},
		{"nquads invalid UTF-8", graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"caf\xe9\" .\n", 0, "line 2: invalid UTF-8 at byte 26"},
		{"nquads surrogate escape", graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"\\uD800\" .\n", 0, `line 2: escape \uD800 at byte 23 is not a Unicode character`},
		{"nquads json duplicate key", graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"a\" .\n<n:topic/a> <p:x> \"{\\\"k\\\":1,\\\"k\\\":2}\"^^<lore:json> .\n", 0, "line 3: lore:json literal: the same key appears twice in one object at /k"},
		{"nquads json deep", graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:x> \"" + strings.Repeat("[", 70) + strings.Repeat("]", 70) + "\"^^<lore:json> .\n", 0, "line 2: lore:json literal: nested deeper than 64 levels"},
		// Errors of the decoders name the field and what it takes, in the input's terms.
		{"ndjson field type", graph.NDJSON, `{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"},"createdAt":5}`, 0, "line 1: at /createdAt: want an RFC 3339 time string, such as 2024-05-01T12:00:00Z, got 5"},
		{"ndjson revision type", graph.NDJSON, `{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"},"revision":"3"}`, 0, `line 1: at /revision: want an integer`},
		{"memory observation type", graph.Memory, `{"type":"entity","name":"a","entityType":"t","observations":["x",2]}`, 0, "line 1: at /observations/1: want a string, got 2"},
		{"nquads revision", graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <pg:revision> \"99999999999999999999\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n", 0, "line 2: pg:revision must be an xsd:integer from 1 to 9007199254740991"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := graphtest.New(t)
			_, err := graph.Import(t.Context(), s, strings.NewReader(tt.data), graph.ImportOptions{Format: tt.format, MaxDepth: tt.depth})
			var ie *graph.ImportError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import = %v\nwant an ImportError containing %q", err, tt.want)
			}
			for _, leak := range []string{"Go ", "graph.", "ndjsonLine", "memoryLine", "int64", "time.Time", "[]string"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error names %q, a Go detail: %v", leak, err)
				}
			}
			if st, _ := s.Stats(t.Context()); st.Nodes != 0 {
				t.Errorf("a refused import wrote %d nodes", st.Nodes)
			}
		})
	}
}

// Nothing of a spool is left when the input cannot be copied aside.
func TestImportSpoolDirMissing(t *testing.T) {
	s := graphtest.New(t)
	seed(t, s)
	_, err := graph.Import(t.Context(), s, onlyReader{strings.NewReader(topics(3))}, graph.ImportOptions{SpoolDir: filepath.Join(t.TempDir(), "none")})
	if err == nil || !strings.Contains(err.Error(), "a copy of the input to read it twice") {
		t.Errorf("Import with a missing spool directory = %v", err)
	}
}
