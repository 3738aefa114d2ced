package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

func cmdImport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "import", "import [--format ndjson|nquads|memory] [--mode upsert|merge|sync --scope S] [--dangling error|skip|stub [--stub-type T]] [--batch N] [--dry-run | --partial] [--durable] [--progress] [--max-depth N] FILE|-")
	var sf storeFlags
	sf.register(fs, e)
	format := fs.String("format", "ndjson", "input `format`: ndjson, nquads or memory (the MCP memory server's JSONL)")
	batch := fs.Int("batch", 0, fmt.Sprintf("elements per transaction, at most %d (default %d, reached by doubling from a 25th of it)", graph.MaxImportBatch, graph.DefaultImportBatch))
	dry := fs.Bool("dry-run", false, "check every line against the store and write nothing; every problem is counted, the first 100 listed by line")
	partial := fs.Bool("partial", false, "commit batch by batch and stop at the first rejected batch, keeping the batches before it (by default an import is all or nothing)")
	progress := fs.Bool("progress", false, "report progress after every batch, even when stderr is not a terminal")
	durable := fs.Bool("durable", false, "fsync every batch even into an empty store (by default an import into an empty store is a bulk load, flushed once at the end)")
	maxDepth := fs.Int("max-depth", schema.DefaultMaxDepth, "deepest nesting of a line's JSON")
	mode := fs.String("mode", "upsert", "how to write: upsert (replace properties), merge (RFC 7396 merge patch per element), sync (upsert, then delete what --scope holds and the file lacks)")
	var scopes []graph.SyncScope
	fs.Func("scope", "what a sync import answers for, repeatable: type:TYPE, prefix:ID-PREFIX, or file (the file's nodes: only their edges)", func(v string) error {
		sc, err := graph.ParseSyncScope(v)
		scopes = append(scopes, sc)
		return err
	})
	dangling := fs.String("dangling", "error", "an edge to a node neither the store nor the file has: error, skip (leave it out), stub (create the node, marked stub: true)")
	stubType := fs.String("stub-type", "", "the `type` of a stub when the edge's label allows several")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "import takes one file (- for stdin)")
	}
	if *dry && *partial {
		return usageErr(fs, "--dry-run writes nothing and --partial writes part: pick one")
	}
	f, err := graph.ParseFormat(*format)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	m, err := graph.ParseImportMode(*mode)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	dg, err := graph.ParseDangling(*dangling)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	switch {
	case m == graph.ModeSync && len(scopes) == 0:
		return usageErr(fs, "--mode sync needs --scope: type:TYPE, prefix:ID-PREFIX or file")
	case m != graph.ModeSync && len(scopes) > 0:
		return usageErr(fs, "--scope is for --mode sync")
	case *stubType != "" && dg != graph.DanglingStub:
		return usageErr(fs, "--stub-type is for --dangling stub")
	}
	in, closeIn, err := openInput(e, pos[0])
	if err != nil {
		return err
	}
	defer closeIn()
	o, err := sf.options(e, *dry)
	if err != nil {
		return err
	}
	opt := graph.ImportOptions{Format: f, BatchSize: *batch, DryRun: *dry, Partial: *partial, Durable: *durable, MaxDepth: *maxDepth, SpoolDir: o.path,
		Mode: m, Scopes: scopes, Dangling: dg, StubType: *stubType}
	tty := e.tty
	switch {
	case *progress:
		opt.Progress = func(st graph.ImportStats) {
			if st.Checking || *dry {
				fmt.Fprintf(e.stderr, "progress: checking, %d elements checked, nothing written yet, %s\n", st.Elements(), st.Elapsed.Round(time.Millisecond))
				return
			}
			fmt.Fprintf(e.stderr, "progress: %d elements committed, %.0f/s, %s\n", st.Elements(), st.Rate(), st.Elapsed.Round(time.Millisecond))
		}
	case tty:
		var last time.Time
		opt.Progress = func(st graph.ImportStats) {
			if time.Since(last) < 250*time.Millisecond {
				return
			}
			last = time.Now()
			verb := ""
			if st.Checking || *dry {
				verb = "checked "
			}
			fmt.Fprintf(e.stderr, "\r%s%s, %.0f/s, %s   ", verb, plural(st.Elements(), "element"), st.Rate(), st.Elapsed.Round(100*time.Millisecond))
		}
	}
	var s graph.Store
	release := func() {}
	var remove func() // removes a store this import created, if it fails
	switch {
	case *dry && e.held == nil && !storeExists(o.path):
		// Nothing to check against but the model: a temporary store.
		dir, err := os.MkdirTemp("", "lore-dry-run-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if s, err = openEmbedded(ctx, storeOptions{path: dir, model: o.model, noSync: true}); err != nil {
			return err
		}
		release = func() { s.Close() }
	default:
		if !*dry && e.held == nil && !storeExists(o.path) {
			remove = removeNew(o.path)
		}
		// A holder serves others meanwhile: its collector is not this import's to tune.
		if e.held == nil && !*dry {
			defer tuneGCForImport(e)()
		}
		if s, release, err = openWith(ctx, e, o); err != nil {
			var he *heldError
			if remove != nil && !errors.Is(err, graph.ErrLocked) && !errors.As(err, &he) {
				remove() // never a store another process holds
			}
			return err
		}
	}
	defer func() { release() }()
	st, err := graph.Import(ctx, s, in, opt)
	if tty && !*progress {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		var we *graph.WriteError
		if errors.Is(err, context.Canceled) && !errors.As(err, &we) {
			if *partial && st != nil {
				err = fmt.Errorf("import interrupted; the %d batches before it were committed: %w", st.Batches, err)
			} else {
				err = fmt.Errorf("import interrupted; nothing was written: %w", err)
			}
		}
		if remove != nil && !*partial {
			release()
			release = func() {}
			remove()
			err = fmt.Errorf("%w\n(the store this import created at %s was removed)", err, o.path)
		}
		return err
	}
	if *dry {
		fmt.Fprintf(e.stderr, "checked (dry run, nothing written) %s and %s from %s: no problem; the import would create %d, update %d and leave %d unchanged\n",
			plural(st.Nodes, "node"), plural(st.Edges, "edge"), plural(st.Lines, "line"), st.Created, st.Updated, st.Unchanged)
	} else {
		fmt.Fprintf(e.stderr, "imported %s and %s from %s in %s (%.0f elements/s): %d created, %d updated, %d unchanged\n",
			plural(st.Nodes, "node"), plural(st.Edges, "edge"), plural(st.Lines, "line"), st.Elapsed.Round(time.Millisecond),
			st.Rate(), st.Created, st.Updated, st.Unchanged)
	}
	reportImport(e, st)
	return nil
}

// reportImport writes what an import noticed beside its counts:
// duplicates, dangling edges skipped, stubs made, and a sync's deletions.
func reportImport(e *env, st *graph.ImportStats) {
	if st.Duplicates > 0 {
		fmt.Fprintf(e.stderr, "%s given more than once in the file (the later line wins):\n", plural(st.Duplicates, "element"))
		for _, d := range st.DuplicateLines {
			fmt.Fprintf(e.stderr, "  line %d repeats line %d: %s\n", d.Line, d.First, d.Element)
		}
		more(e, st.Duplicates, len(st.DuplicateLines))
	}
	if st.Skipped > 0 {
		fmt.Fprintf(e.stderr, "%s left out (--dangling skip: an endpoint is in neither the store nor the file):\n", plural(st.Skipped, "edge"))
		for _, k := range st.SkippedEdges {
			fmt.Fprintf(e.stderr, "  %s\n", k)
		}
		more(e, st.Skipped, len(st.SkippedEdges))
	}
	if st.Stubs > 0 {
		fmt.Fprintf(e.stderr, "%s made (--dangling stub: properties {\"stub\": true}; the node's own line replaces them):\n", plural(st.Stubs, "stub"))
		for _, id := range st.StubNodes {
			fmt.Fprintf(e.stderr, "  %s\n", id)
		}
		more(e, st.Stubs, len(st.StubNodes))
	}
	if r := st.Sync; r != nil {
		verb := "deleted"
		if r.DryRun {
			verb = "would delete"
		}
		var types []string
		for _, t := range slices.Sorted(maps.Keys(r.NodeTypes)) {
			types = append(types, fmt.Sprintf("%s %d", t, r.NodeTypes[t]))
		}
		by := ""
		if len(types) > 0 {
			by = " (" + strings.Join(types, ", ") + ")"
		}
		fmt.Fprintf(e.stderr, "sync: %s %s%s and %s (the deleted nodes' edges counted)", verb, plural(r.DeletedNodes, "node"), by, plural(r.DeletedEdges, "edge"))
		if r.Batches > 0 {
			fmt.Fprintf(e.stderr, ", in %d atomic batch(es) (changes %v)", r.Batches, r.Seqs)
		}
		fmt.Fprintln(e.stderr)
		for _, id := range r.FirstNodes {
			fmt.Fprintf(e.stderr, "  node %s\n", id)
		}
		more(e, r.DeletedNodes, len(r.FirstNodes))
		for _, k := range r.FirstEdges {
			fmt.Fprintf(e.stderr, "  edge %s\n", k)
		}
		more(e, r.DeletedEdges, len(r.FirstEdges))
	}
}

func more(e *env, total int64, listed int) {
	if n := total - int64(listed); n > 0 {
		fmt.Fprintf(e.stderr, "  … and %d more\n", n)
	}
}

func cmdExport(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "export", "export [--format ndjson|nquads|memory] FILE|-")
	var sf storeFlags
	sf.register(fs, e)
	format := fs.String("format", "ndjson", "output `format`: ndjson, nquads or memory (Entity nodes and relations only)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "export takes one file (- for stdout)")
	}
	f, err := graph.ParseFormat(*format)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	s, release, err := sf.openRead(ctx, e)
	if err != nil {
		return err
	}
	defer release()
	out, closeOut, err := openOutput(e, pos[0])
	if err != nil {
		return err
	}
	st, err := graph.Export(ctx, s, out, f)
	if cerr := closeOut(err == nil); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "exported %s and %s\n", plural(st.Nodes, "node"), plural(st.Edges, "edge"))
	return nil
}

// cmdValidate checks a model and, optionally, a data file against it: a dry
// run of the import into an empty temporary store.
func cmdValidate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "validate", "validate [--model FILE] [--format ndjson|nquads|memory] [DATAFILE|-]")
	model := fs.String("model", e.getenv("LORE_MODEL"), "model `file` to check (default: the built-in default model)")
	format := fs.String("format", "ndjson", "data file `format`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usageErr(fs, "validate takes at most one data file")
	}
	m := schema.Default()
	name := "the default model"
	if *model != "" {
		if m, err = loadModel(*model); err != nil {
			return err
		}
		name = *model
	}
	fmt.Fprintf(e.stdout, "%s: valid (%s, %s)\n", name, plural(int64(len(m.NodeTypeNames())), "node type"), plural(int64(len(m.EdgeLabels())), "edge label"))
	if len(pos) == 0 {
		writeModelSummary(e.stdout, m)
		return nil
	}
	f, err := graph.ParseFormat(*format)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	in, closeIn, err := openInput(e, pos[0])
	if err != nil {
		return err
	}
	defer closeIn()
	dir, err := os.MkdirTemp("", "lore-validate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s, err := openEmbedded(ctx, storeOptions{path: dir, model: m, noSync: true})
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := graph.Import(ctx, s, in, graph.ImportOptions{Format: f, DryRun: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: valid (%s, %s)\n", pos[0], plural(st.Nodes, "node"), plural(st.Edges, "edge"))
	return nil
}

// tuneGCForImport sets the process up for a bulk load
// (graph.TuneGCForImport), but for the limit GOMEMLIMIT sets, and returns
// what sets it back.
func tuneGCForImport(e *env) (restore func()) {
	return graph.TuneGCForImport(e.getenv("GOMEMLIMIT") != "")
}

func openInput(e *env, name string) (io.Reader, func(), error) {
	if name == "-" {
		return e.stdin, func() {}, nil
	}
	name, err := e.abs(name)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// openOutput opens name for writing; a file is written beside its final
// name and renamed into place on success, so a failed export leaves no torn file.
func openOutput(e *env, name string) (io.Writer, func(ok bool) error, error) {
	if name == "-" {
		return e.stdout, func(bool) error { return nil }, nil
	}
	name, err := e.abs(name)
	if err != nil {
		return nil, nil, err
	}
	tmp := name + ".partial"
	f, err := os.Create(tmp)
	if err != nil {
		return nil, nil, err
	}
	return f, func(ok bool) error {
		err := f.Close()
		if !ok || err != nil {
			os.Remove(tmp)
			return err
		}
		return os.Rename(tmp, name)
	}, nil
}

// loadExample imports the embedded example dataset.
func loadExample(ctx context.Context, s graph.Store) (*graph.ImportStats, error) {
	return graph.Import(ctx, s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON})
}

// writeModelSummary lists a model's node types and edge labels with what
// the model says of each, then its warnings.
func writeModelSummary(w io.Writer, m *schema.Model) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range m.NodeTypes() {
		n := t.Name
		var parts []string
		if t.Display != "" {
			parts = append(parts, "display "+t.Display)
		}
		if len(t.Indexed) > 0 {
			parts = append(parts, "indexed "+strings.Join(t.Indexed, ", "))
		}
		if len(t.Search) > 0 {
			parts = append(parts, "search "+strings.Join(t.Search, ", "))
		}
		parts = append(parts, fmt.Sprintf("%s (%d required)", plural(int64(len(t.Properties)), "property"), len(t.Required)))
		fmt.Fprintf(tw, "  node\t%s\t%s\n", n, strings.Join(parts, "; "))
	}
	for _, t := range m.EdgeTypes() {
		l := t.Name
		desc := strings.Join(t.From, "|") + " -> " + strings.Join(t.To, "|")
		if t.Keyed {
			desc += "; keyed"
		}
		if len(t.Properties) > 0 {
			desc += "; " + plural(int64(len(t.Properties)), "property")
		}
		fmt.Fprintf(tw, "  edge\t%s\t%s\n", l, desc)
	}
	tw.Flush()
	for _, v := range m.Warnings() {
		fmt.Fprintf(w, "warning: %s: %s\n", v.Pointer, v.Message)
	}
}
