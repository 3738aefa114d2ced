// Package graphtest provides fixtures for tests of Lore's graph: real stores
// in temporary directories.
package graphtest

import (
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/schema"
)

// New opens an empty embedded store with the default model in a temporary
// directory, closed when the test ends. It skips fsync: a test's store
// outlives no power cut.
func New(t testing.TB) graph.Store {
	t.Helper()
	return Open(t, t.TempDir(), nil)
}

// Open opens the embedded store at dir with model (nil: the store's or the
// default), closed when the test ends.
func Open(t testing.TB, dir string, model *schema.Model) graph.Store {
	t.Helper()
	s, err := bolt.Open(t.Context(), bolt.Config{Path: dir, Model: model, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Reopen closes s, an embedded store Open or New opened, and opens it again
// with the model it holds.
func Reopen(t testing.TB, s graph.Store) graph.Store {
	t.Helper()
	p, ok := s.(graph.Pather)
	if !ok {
		t.Fatalf("Reopen: %T keeps no directory", s)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return Open(t, p.Path(), nil)
}

// CheckOK fails the test if s, when it can check itself (graph.Checker),
// finds a problem.
func CheckOK(t testing.TB, s graph.Store) {
	t.Helper()
	c, ok := s.(graph.Checker)
	if !ok {
		return
	}
	if r, err := c.Check(t.Context()); err != nil || !r.OK() {
		var problems []string
		if r != nil {
			problems = r.Problems
		}
		t.Fatalf("check: %v %v", err, problems)
	}
}
