// Package graphtest provides fixtures for tests of Lore's graph: real stores
// in temporary directories.
package graphtest

import (
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// New opens an empty bolt store with the default model in a temporary
// directory, closed when the test ends. It skips fsync: a test's store
// outlives no power cut.
func New(t testing.TB) *graph.Bolt {
	t.Helper()
	return Open(t, t.TempDir(), nil)
}

// Open opens the store at dir with model (nil: the store's or the default),
// closed when the test ends.
func Open(t testing.TB, dir string, model *schema.Model) *graph.Bolt {
	t.Helper()
	s, err := graph.Open(t.Context(), graph.Config{Path: dir, Model: model, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
