package bolt_test

import (
	"fmt"
	"strings"
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

// A bulk load (its index entries deferred and flushed several times, its
// edge summaries tallied) leaves the degree index as the edges imply.
func TestBulkLoadDegreeIndex(t *testing.T) {
	s, err := bolt.Open(t.Context(), bolt.Config{Path: t.TempDir(), NoSync: true, DeferAfter: -1, DeferFlush: 300})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var data strings.Builder
	for i := range 300 {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"s%d"}}`+"\n", i, i)
	}
	for i := range 300 {
		for j := range i % 7 {
			fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", (i+j+1)%300, i)
		}
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 100}); err != nil {
		t.Fatal(err)
	}
	graphtest.CheckDegreeIndex(t, s)
}
