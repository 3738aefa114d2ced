package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"time"

	"github.com/lore-dev/lore/graph"
)

// cmdMigrate copies a store into an empty one, either kind into either
// (embedded ↔ PostgreSQL): the source's canonical NDJSON export, with
// timestamps and revisions, imported all or nothing into the destination
// with the source's model; then it verifies the copy (counts per type and
// label, and the SHA-256 of both sides' exports, and of the source again,
// which catches a write to the source during the copy).
func cmdMigrate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "migrate", "migrate --from DIR|URL --to URL|DIR [--batch N] [--progress] [--lock-timeout D]")
	from := fs.String("from", "", "the source store: a `directory` or a postgres:// URL; stop its writers first")
	to := fs.String("to", "", "the destination: a new or empty store `directory`, or a postgres:// URL of a database with no Lore data")
	batch := fs.Int("batch", 0, fmt.Sprintf("elements per transaction, at most %d (default %d)", graph.MaxImportBatch, graph.DefaultImportBatch))
	progress := fs.Bool("progress", false, "report progress every second even when stderr is not a terminal (always at each step)")
	lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for another process holding an embedded store")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 || *from == "" || *to == "" {
		return usageErr(fs, "migrate takes --from and --to, and no arguments")
	}
	src := storeFlags{store: *from, lockTimeout: *lockTimeout}
	dst := storeFlags{store: *to, lockTimeout: *lockTimeout}
	so, err := src.options(e, true)
	if err != nil {
		return err
	}
	do, err := dst.options(e, false)
	if err != nil {
		return err
	}
	if so.path == do.path {
		return usageErr(fs, "--from and --to name the same store")
	}
	if !isRemote(so.path) && !storeExists(so.path) {
		return fmt.Errorf("--from %s holds no store", so.path)
	}
	m := migration{e: e, verbose: *progress || e.tty, batch: *batch}
	return m.run(ctx, so, do)
}

// A migration copies one store into another.
type migration struct {
	e       *env
	verbose bool // report progress as it goes, not only at each step
	batch   int
	last    time.Time // of the last progress report
}

// say reports a step on stderr.
func (m *migration) say(format string, args ...any) {
	fmt.Fprintf(m.e.stderr, "migrate: "+format+"\n", args...)
}

// tick reports progress within a step, at most once a second.
func (m *migration) tick(format string, args ...any) {
	if !m.verbose || time.Since(m.last) < time.Second {
		return
	}
	m.last = time.Now()
	m.say(format, args...)
}

func (m *migration) run(ctx context.Context, so, do storeOptions) (err error) {
	start := time.Now()
	s, err := openExclusive(ctx, m.e, so, "lore migrate")
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	total := st.Nodes + st.Edges
	m.say("copying %s and %s (change log at %d) from %s to %s", plural(st.Nodes, "node"), plural(st.Edges, "edge"), st.LastSeq,
		displayStore(so.path), displayStore(do.path))

	// The destination, with the source's model; it must hold nothing.
	do.model = s.Model()
	var remove func()
	if !isRemote(do.path) && !storeExists(do.path) {
		remove = removeNew(do.path)
	}
	d, err := openExclusive(ctx, m.e, do, "lore migrate")
	if err != nil {
		if remove != nil && !errors.Is(err, graph.ErrLocked) {
			remove()
		}
		return err
	}
	closeD := func() {
		if d != nil {
			d.Close()
			d = nil
		}
	}
	defer closeD()
	if dt, err := d.Stats(ctx); err != nil {
		return err
	} else if dt.Nodes+dt.Edges > 0 {
		return &exitError{1, fmt.Errorf("--to %s holds %s and %s: migrate copies into an empty store only; pick a new directory or an empty database",
			displayStore(do.path), plural(dt.Nodes, "node"), plural(dt.Edges, "edge"))}
	}
	defer func() {
		if err != nil && remove != nil {
			closeD()
			remove()
		}
	}()

	// 1. The source's export, into a temporary file (which the import can
	// read twice), hashed as it is written.
	tmp, err := os.CreateTemp("", "lore-migrate-*.ndjson")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	lines := &lineCounter{tick: func(n int64) { m.tick("exported %d of %d elements", n, total) }}
	h := sha256.New()
	ex, err := graph.Export(ctx, s, io.MultiWriter(tmp, h, lines), graph.NDJSON)
	if err != nil {
		return fmt.Errorf("export of the source: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	m.say("exported %s and %s, sha256 %s", plural(ex.Nodes, "node"), plural(ex.Edges, "edge"), sum)
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}

	// 2. All or nothing into the destination.
	opt := graph.ImportOptions{Format: graph.NDJSON, BatchSize: m.batch, Progress: func(is graph.ImportStats) {
		if is.Checking {
			m.tick("checked %d of %d elements", is.Elements(), ex.Nodes+ex.Edges)
			return
		}
		m.tick("committed %d of %d elements, %.0f/s", is.Elements(), ex.Nodes+ex.Edges, is.Rate())
	}}
	is, err := graph.Import(ctx, d, tmp, opt)
	if err != nil {
		return fmt.Errorf("import into the destination (which holds nothing of it): %w", err)
	}
	m.say("imported %d elements in %s", is.Elements(), is.Elapsed.Round(time.Millisecond))

	// 3. Verify: counts, and the destination's export against the source's.
	dt, err := d.Stats(ctx)
	if err != nil {
		return err
	}
	if dt.Nodes != ex.Nodes || dt.Edges != ex.Edges || !maps.Equal(dt.NodeTypes, st.NodeTypes) || !maps.Equal(dt.EdgeLabels, st.EdgeLabels) {
		return fmt.Errorf("the copy's counts differ: the source has %s and %s (by type %v, by label %v), the destination %s and %s (%v, %v); "+
			"empty the destination and migrate again with the source's writers stopped",
			plural(ex.Nodes, "node"), plural(ex.Edges, "edge"), st.NodeTypes, st.EdgeLabels,
			plural(dt.Nodes, "node"), plural(dt.Edges, "edge"), dt.NodeTypes, dt.EdgeLabels)
	}
	dsum, err := exportSum(ctx, d)
	if err != nil {
		return fmt.Errorf("export of the destination: %w", err)
	}
	if dsum != sum {
		return fmt.Errorf("the copy differs from the source: its export's sha256 is %s, the source's %s; empty the destination and migrate again", dsum, sum)
	}
	again, err := exportSum(ctx, s)
	if err != nil {
		return fmt.Errorf("export of the source: %w", err)
	}
	if again != sum {
		return fmt.Errorf("the source changed during the copy (its export's sha256 is now %s, was %s): stop its writers, empty the destination and migrate again", again, sum)
	}
	m.say("verified: %s and %s on both sides, exports' sha256 %s on both sides; done in %s",
		plural(dt.Nodes, "node"), plural(dt.Edges, "edge"), sum, time.Since(start).Round(time.Millisecond))
	return nil
}

// exportSum returns the SHA-256 of s's NDJSON export, which lists every
// element with its properties, timestamps and revision in a fixed order:
// equal graphs have equal sums.
func exportSum(ctx context.Context, s graph.Store) (string, error) {
	h := sha256.New()
	if _, err := graph.Export(ctx, s, h, graph.NDJSON); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// A lineCounter counts the lines written to it and calls tick with the
// count after each write.
type lineCounter struct {
	n    int64
	tick func(int64)
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += int64(bytes.Count(p, []byte{'\n'}))
	c.tick(c.n)
	return len(p), nil
}
