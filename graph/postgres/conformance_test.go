package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// open opens a store on url, closed when the test ends.
func open(t testing.TB, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the Store conformance suite against PostgreSQL,
// each test on a database of its own.
func TestConformance(t *testing.T) {
	var urls sync.Map // store -> its database
	graphtest.Run(t, graphtest.Backend{
		Open: func(t *testing.T) graph.Store {
			url := pgtest.NewDatabase(t)
			s := open(t, url)
			urls.Store(s, url)
			checkAtEnd(t, s)
			return s
		},
		Reopen: func(t *testing.T, s graph.Store) graph.Store {
			t.Helper()
			url, _ := urls.Load(s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s2 := open(t, url.(string))
			urls.Store(s2, url)
			checkAtEnd(t, s2)
			return s2
		},
	})
}

// checkAtEnd checks the store's derived tables against its records when
// the test ends, unless the test closed it.
func checkAtEnd(t *testing.T, s *postgres.Store) {
	t.Cleanup(func() {
		r, err := s.Check(context.Background())
		if errors.Is(err, graph.ErrClosed) {
			return
		}
		if err != nil || !r.OK() {
			t.Errorf("check at the end: %v %v", err, r)
		}
	})
}
