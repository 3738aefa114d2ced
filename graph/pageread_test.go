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

// TestPageReadsWhatItReturns: a page of 10 of more ordered results than
// a collection keeps (graph.KeptStarts) reads 11 nodes whole, the one
// after the page telling that a result follows; and a page of a few
// hundred takes the nodes its scan read, reading none again.
func TestPageReadsWhatItReturns(t *testing.T) {
	s := &nodeCounter{Store: graphtest.New(t)}
	var b graph.Batch
	for i := range graph.KeptStarts + 1 {
		b.Nodes = append(b.Nodes, topic(i))
	}
	for i := range 300 {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("service/s%d", i)), Type: "Service", Properties: graph.Props{"name": fmt.Sprint(i)}})
	}
	mustApply(t, s, &b)
	for _, tt := range []struct {
		doc        string
		page, read int
		more       bool
	}{
		{`{"from":{"type":"Topic"},"orderBy":[{"field":"name","desc":true}],"limit":10}`, 10, 11, true},
		{`{"from":{"type":"Topic"},"orderBy":[{"field":"name"}],"limit":1}`, 1, 2, true},
		{`{"from":{"type":"Service"},"orderBy":[{"field":"name"}],"limit":10}`, 10, 0, true},
		{`{"from":{"type":"Service"},"orderBy":[{"field":"name"}],"limit":300}`, 300, 0, false},
	} {
		s.read.Store(0)
		res := run(t, s, tt.doc, graph.Limits{})
		if got := fmt.Sprint(len(res.Nodes), s.read.Load(), res.More); got != fmt.Sprint(tt.page, tt.read, tt.more) {
			t.Errorf("%s: (results, nodes read, more) = %s, want %d %d %v", tt.doc, got, tt.page, tt.read, tt.more)
		}
	}
}

// TestStartNodesReadOnce: a query whose results are its start IDs reads
// each node once, and returns what that read found: the page does not
// read them again (on a server store, a second round trip). A start ID
// that names no node is left out.
func TestStartNodesReadOnce(t *testing.T) {
	s := &nodeCounter{Store: graphtest.New(t)}
	var b graph.Batch
	for i := range 5 {
		b.Nodes = append(b.Nodes, topic(i))
	}
	mustApply(t, s, &b)
	for _, tt := range []struct {
		doc   string
		ids   []graph.ID
		reads int
		named bool // the results return their names
	}{
		{`{"from":{"ids":["topic/t1"]}}`, []graph.ID{"topic/t1"}, 1, false},
		{`{"from":{"ids":["topic/t3","topic/t1","topic/none","topic/t3"]},"return":{"fields":["id","name"]}}`, []graph.ID{"topic/t1", "topic/t3"}, 3, true},
		{`{"from":{"ids":["topic/t4","topic/t2"]},"where":{"name":"2"}}`, []graph.ID{"topic/t2"}, 2, false},
		{`{"from":{"ids":["topic/t4","topic/t2"]},"orderBy":[{"field":"name","desc":true}]}`, []graph.ID{"topic/t4", "topic/t2"}, 2, false},
	} {
		s.read.Store(0)
		res := run(t, s, tt.doc, graph.Limits{})
		var got []graph.ID
		for _, n := range res.Nodes {
			got = append(got, graph.ID(fmt.Sprint(n["id"])))
			if _, ok := n["name"]; !ok && tt.named {
				t.Errorf("%s: result %v lacks its name", tt.doc, n)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tt.ids) || s.read.Load() != int64(tt.reads) {
			t.Errorf("%s: results %v after reading %d nodes, want %v after %d", tt.doc, got, s.read.Load(), tt.ids, tt.reads)
		}
	}
}

// TestTraversalIDsReadNoNode: a page of the IDs a traversal reached reads
// no node (each is the far end of an edge read during the call, so it
// existed then), only its start node; a page that returns more than IDs
// reads its nodes, once each.
func TestTraversalIDsReadNoNode(t *testing.T) {
	s := &nodeCounter{Store: example(t)}
	const start = `{"from":{"ids":["service/api-gateway"]},"traverse":[{"edge":"dependsOn","hops":[0,2]}]`
	ids := run(t, s, start+`,"return":{"fields":["id"]}}`, graph.Limits{})
	s.read.Store(0)
	again := run(t, s, start+`,"return":{"fields":["id"]}}`, graph.Limits{})
	if len(again.Nodes) < 3 || s.read.Load() != 1 || fmt.Sprint(ids.Nodes) != fmt.Sprint(again.Nodes) {
		t.Errorf("a page of %d IDs read %d nodes, want the start's alone: %v", len(again.Nodes), s.read.Load(), again.Nodes)
	}
	s.read.Store(0)
	named := run(t, s, start+`,"return":{"fields":["id","name"]}}`, graph.Limits{})
	if len(named.Nodes) != len(again.Nodes) || s.read.Load() != int64(1+len(named.Nodes)) {
		t.Errorf("a page of %d results with their names read %d nodes, want %d", len(named.Nodes), s.read.Load(), 1+len(named.Nodes))
	}
	for _, n := range named.Nodes {
		if n["name"] == nil {
			t.Errorf("result %v lacks its name", n)
		}
	}
	// From one hop on, the start nodes are not read at all: one that does
	// not exist reaches nothing either way.
	const hop = `{"from":{"ids":["service/api-gateway","service/missing"]},"traverse":[{"edge":"dependsOn","hops":2}]`
	s.read.Store(0)
	ids = run(t, s, hop+`,"return":{"fields":["id"]}}`, graph.Limits{})
	if len(ids.Nodes) < 3 || s.read.Load() != 0 {
		t.Errorf("a page of %d IDs two hops from given IDs read %d nodes, want none", len(ids.Nodes), s.read.Load())
	}
	s.read.Store(0)
	named = run(t, s, hop+`,"return":{"fields":["id","name"]}}`, graph.Limits{})
	if len(named.Nodes) != len(ids.Nodes) || s.read.Load() != int64(len(named.Nodes)) {
		t.Errorf("a page of %d results with their names read %d nodes, want %d", len(named.Nodes), s.read.Load(), len(named.Nodes))
	}
}
