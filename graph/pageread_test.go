package graph_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

// nodeCounter is the real store, counting the nodes read whole (Nodes).
type nodeCounter struct {
	graph.Store
	read atomic.Int64
}

func (s *nodeCounter) Nodes(ctx context.Context, ids []graph.ID) ([]*graph.Node, error) {
	s.read.Add(int64(len(ids)))
	return s.Store.Nodes(ctx, ids)
}

// TestPageReadsWhatItReturns: a page of 10 of 300 ordered results reads
// 11 nodes whole, the one after the page telling that a result follows;
// and a page as large as the results reads them all, once.
func TestPageReadsWhatItReturns(t *testing.T) {
	s := &nodeCounter{Store: graphtest.New(t)}
	var b graph.Batch
	for i := range 300 {
		b.Nodes = append(b.Nodes, topic(i))
	}
	mustApply(t, s, &b)
	for _, tt := range []struct {
		doc        string
		page, read int
		more       bool
	}{
		{`{"from":{"type":"Topic"},"orderBy":[{"field":"name","desc":true}],"limit":10}`, 10, 11, true},
		{`{"from":{"type":"Topic"},"orderBy":[{"field":"name"}],"limit":1}`, 1, 2, true},
		{`{"from":{"type":"Topic"},"orderBy":[{"field":"name"}],"limit":300}`, 300, 300, false},
	} {
		q, err := graph.ParseQuery(s.Model(), []byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		s.read.Store(0)
		res, err := graph.Run(t.Context(), s, q, graph.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(len(res.Nodes), s.read.Load(), res.More); got != fmt.Sprint(tt.page, tt.read, tt.more) {
			t.Errorf("%s: (results, nodes read, more) = %s, want %d %d %v", tt.doc, got, tt.page, tt.read, tt.more)
		}
	}
}
