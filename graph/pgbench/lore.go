package pgbench

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
)

// A Lore is a Lore side: a store holding a generated graph, loaded the
// way lore import loads a file: the embedded store (graph/bolt, LoadLore),
// or Lore's own schema on PostgreSQL (graph/postgres, LoadLorePG).
type Lore struct {
	Store graph.Store
	// Load is how long opening the new store and importing the file took.
	Load time.Duration
	// Bytes is the store's size on disk after the load.
	Bytes int64
	// Parts is what the store's parts take of Bytes (the embedded store's
	// buckets grouped by loreParts, or the PostgreSQL store's tables).
	Parts []Part
	// close closes the store, and drops what it made.
	close func() error
}

// A Part is a share of a store's size on disk.
type Part struct {
	Name  string
	Bytes int64
}

// loreParts groups the embedded store's buckets (bolt.Store.Footprint)
// into what each holds, in the order printed.
var loreParts = []struct {
	name    string
	buckets []string
}{
	{"Cayley's quads and values", []string{"clog", "opsb", "v", "meta"}},
	{"node and edge records", []string{"lore.node", "lore.edge"}},
	{"in-edge index", []string{"lore.in"}},
	{"type, property, search and degree indexes, counts", []string{"lore.type", "lore.prop", "lore.tok", "lore.degx", "lore.deg", "lore.meta"}},
	{"change log and idempotency keys", []string{"lore.log", "lore.idem"}},
}

// parts groups a store's footprint by loreParts; a bucket they do not
// name is counted as "other".
func parts(footprint map[string]int64) []Part {
	var out []Part
	for _, p := range loreParts {
		part := Part{Name: p.name}
		for _, b := range p.buckets {
			part.Bytes += footprint[b]
			delete(footprint, b)
		}
		out = append(out, part)
	}
	other := Part{Name: "other"}
	for _, n := range footprint {
		other.Bytes += n
	}
	if other.Bytes > 0 {
		out = append(out, other)
	}
	return out
}

// LoadLore writes g as NDJSON into dir (not timed: the user has the file),
// then opens a new store in dir/store and imports the file into it with
// the options lore import uses, timed. The caller closes the store.
func LoadLore(ctx context.Context, dir string, g *Graph) (_ *Lore, err error) {
	f, err := writeInput(dir, g)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// lore import's collector settings (cmd/lore tuneGCForImport).
	defer graph.TuneGCForImport(false)()

	storeDir := filepath.Join(dir, "store")
	start := time.Now()
	s, err := bolt.Open(ctx, bolt.Config{Path: storeDir, Model: Model()})
	if err != nil {
		return nil, err
	}
	if _, err := graph.Import(ctx, s, f, graph.ImportOptions{Format: graph.NDJSON, SpoolDir: storeDir}); err != nil {
		s.Close()
		return nil, fmt.Errorf("import into Lore: %w", err)
	}
	l := &Lore{Store: s, Load: time.Since(start), close: s.Close}
	if l.Bytes, err = diskUsage(storeDir); err != nil {
		s.Close()
		return nil, err
	}
	footprint, err := s.Footprint()
	if err != nil {
		s.Close()
		return nil, err
	}
	l.Parts = parts(footprint)
	return l, nil
}

// writeInput writes g as NDJSON into dir, and returns the file open at its
// start.
func writeInput(dir string, g *Graph) (*os.File, error) {
	f, err := os.Create(filepath.Join(dir, "graph.ndjson"))
	if err != nil {
		return nil, err
	}
	if err := g.WriteNDJSON(f); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Close closes the store.
func (l *Lore) Close() error { return l.close() }

// Query parses doc as a user's query and runs it under ceilings.
func (l *Lore) Query(ctx context.Context, doc string, ceilings graph.Limits) (*graph.QueryResult, error) {
	q, err := graph.ParseQuery(l.Store.Model(), []byte(doc))
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", doc, err)
	}
	res, err := graph.Run(ctx, l.Store, q, ceilings)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", doc, err)
	}
	return res, nil
}

// diskUsage returns the size of the files under dir.
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}
