package graph_test

import (
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

func TestSmoke(t *testing.T) {
	s := graphtest.New(t)
	ctx := t.Context()
	res, err := s.Apply(ctx, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada"}},
			{ID: "team/core", Type: "Team", Properties: graph.Props{"name": "Core"}},
		},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "person/ada", Label: "memberOf", To: "team/core"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	n, err := s.Node(ctx, "person/ada")
	t.Logf("%+v %v", n, err)
	p, err := s.Edges(ctx, graph.EdgeQuery{Nodes: []graph.ID{"team/core"}, Direction: graph.Both})
	for _, e := range p.Edges { t.Logf("edge %+v", e) }
	t.Log(err)
	st, err := s.Stats(ctx)
	t.Logf("%+v %v", st, err)
	res, err = s.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "team/core"}}})
	t.Logf("%+v %v", res, err)
	st, err = s.Stats(ctx)
	t.Logf("%+v %v", st, err)
	ch, err := s.Since(ctx, 0, 10)
	t.Logf("%+v %v", ch, err)
}
