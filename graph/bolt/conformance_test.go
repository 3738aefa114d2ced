package bolt_test

import (
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/graphtest"
)

// TestConformance runs the Store conformance suite against the embedded store.
func TestConformance(t *testing.T) {
	graphtest.Run(t, graphtest.Backend{
		Open: func(t *testing.T) graph.Store {
			s, err := bolt.Open(t.Context(), bolt.Config{Path: t.TempDir(), NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
		Reopen: func(t *testing.T, s graph.Store) graph.Store {
			t.Helper()
			path := s.(*bolt.Store).Path()
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s, err := bolt.Open(t.Context(), bolt.Config{Path: path, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		},
	})
}
