package graphtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
)

// testRetype: a migration re-types a node with edges and properties. It
// keeps the node's ID, creation time and edges (their properties, times
// and revisions), takes a revision, and moves everything the store
// derives from the type: listings by type, the property index, search
// postings, Stats' counts per type and the store's own check. An ordinary
// batch still cannot change a type, and a re-type that leaves an edge
// joining types its label does not allow changes nothing.
func testRetype(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	budget := graph.ID("document/retry-budget")
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "person/ada", Type: "Person", Properties: graph.Props{"name": "Ada"}},
			{ID: "team/core", Type: "Team", Properties: graph.Props{"name": "Core"}},
			topic("topic/retries", "Retry"),
			{ID: budget, Type: "Document", Properties: graph.Props{"title": "Retry budget", "updated": "2026-01-02"}},
			{ID: "document/other", Type: "Document", Properties: graph.Props{"title": "Other notes", "updated": "2026-01-02"}},
		},
		Edges: []graph.EdgeInput{
			{EdgeKey: graph.EdgeKey{From: "person/ada", Label: "authored", To: budget}},
			{EdgeKey: graph.EdgeKey{From: budget, Label: "about", To: "topic/retries"}},
			{EdgeKey: graph.EdgeKey{From: budget, Label: "references", To: "document/other"}},
			{EdgeKey: graph.EdgeKey{From: "document/other", Label: "references", To: budget}},
			{EdgeKey: graph.EdgeKey{From: "team/core", Label: "owns", To: "document/other"}},
		},
	})
	// The edges change once, so their revisions and times differ from the node's.
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: budget, Label: "about", To: "topic/retries"}, Merge: true}}})
	before, err := s.Node(ctx, budget)
	if err != nil {
		t.Fatal(err)
	}
	edgesBefore := nodeEdges(t, s, budget)
	if len(edgesBefore) != 4 {
		t.Fatalf("%d edges of %s, want 4", len(edgesBefore), budget)
	}
	seq0 := lastSeq(t, s)

	// An ordinary batch cannot change a type.
	_, err = s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: budget, Type: "Decision",
		Properties: graph.Props{"title": "Retry budget", "status": "accepted", "date": "2026-01-02"}}}})
	if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "a node's type cannot change") {
		t.Fatalf("an ordinary batch changing a type: %v", err)
	}
	// A re-type that leaves an edge outside its label's endpoint types
	// (owns joins teams and people to services and documents) is refused.
	toDecision := `{"retypeNodes": {"from": "Document", "to": "Decision"%s}},
	  {"renameProperty": {"type": "Decision", "from": "updated", "to": "date"}},
	  {"setDefault": {"type": "Decision", "property": "status", "value": "accepted"}}`
	bad := migration(t, `{"steps": [`+strings.Replace(toDecision, "%s", `, "ids": ["document/other"]`, 1)+`]}`)
	if _, err := graph.Migrate(ctx, s, bad, graph.MigrationOptions{}); !errors.Is(err, graph.ErrInvalid) ||
		!strings.Contains(err.Error(), "owns(team/core,document/other) would join Team to Decision") {
		t.Fatalf("a re-type that breaks an edge: %v", err)
	}
	if lastSeq(t, s) != seq0 {
		t.Fatal("a refused re-type wrote")
	}

	mig := migration(t, `{"steps": [`+strings.Replace(toDecision, "%s", `, "where": {"title": {"prefix": "retry"}}`, 1)+`]}`)
	rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{})
	if err != nil || rep.Changed != 1 || rep.Batches != 1 {
		t.Fatalf("Migrate: %+v, %v", rep, err)
	}
	n, err := s.Node(ctx, budget)
	if err != nil {
		t.Fatal(err)
	}
	if n.Type != "Decision" || n.Revision != before.Revision+1 || !n.CreatedAt.Equal(before.CreatedAt) || !n.UpdatedAt.After(before.UpdatedAt) ||
		!jsonEq(n.Properties, graph.Props{"title": "Retry budget", "date": "2026-01-02", "status": "accepted"}) {
		t.Errorf("the re-typed node: %+v, before %+v", n, before)
	}
	if diff := cmp.Diff(before.Edges, n.Edges); diff != "" {
		t.Errorf("the re-typed node's edge counts (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(edgesBefore, nodeEdges(t, s, budget)); diff != "" {
		t.Errorf("the re-typed node's edges (-before +after):\n%s", diff)
	}
	for typ, want := range map[string][]graph.ID{"Document": {"document/other"}, "Decision": {budget}} {
		page, err := s.NodesByType(ctx, typ, graph.Page{})
		if err != nil {
			t.Fatal(err)
		}
		var got []graph.ID
		for _, n := range page.Nodes {
			got = append(got, n.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("NodesByType(%s) = %v, want %v", typ, got, want)
		}
	}
	for _, q := range []struct {
		typ, prop, val string
		want           []graph.ID
	}{
		{"Document", "updated", "2026-01-02", []graph.ID{"document/other"}},
		{"Decision", "date", "2026-01-02", []graph.ID{budget}},
		{"Decision", "status", "accepted", []graph.ID{budget}},
	} {
		page, err := s.Lookup(ctx, graph.IndexQuery{Type: q.typ, Property: q.prop, Eq: q.val})
		if err != nil || !slices.Equal(page.IDs, q.want) {
			t.Errorf("Lookup(%s.%s = %s) = %+v, %v; want %v", q.typ, q.prop, q.val, page, err, q.want)
		}
	}
	page, err := s.Postings(ctx, graph.PostingQuery{Prefix: "retri", Exact: true}) // the stem of retry and retries
	if err != nil {
		t.Fatal(err)
	}
	var posted []string
	for _, p := range page.Postings {
		posted = append(posted, p.Type+" "+string(p.ID))
	}
	if want := []string{"Decision " + string(budget), "Topic topic/retries"}; !slices.Equal(posted, want) {
		t.Errorf("postings of retry: %v, want %v", posted, want)
	}
	for _, typ := range []string{"Document", "Decision"} {
		page, err := s.Postings(ctx, graph.PostingQuery{Prefix: "budget", Exact: true, Type: typ})
		want := 0
		if typ == "Decision" {
			want = 1
		}
		if err != nil || len(page.Postings) != want {
			t.Errorf("postings of budget for %s: %+v, %v; want %d", typ, page, err, want)
		}
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Nodes != 5 || st.Edges != 5 || st.NodeTypes["Document"] != 1 || st.NodeTypes["Decision"] != 1 || st.NodeTypes["Topic"] != 1 {
		t.Errorf("Stats after the re-type: %+v", st)
	}
	changes := since(t, s, seq0, 10)
	want := []graph.NodeChange{{ID: budget, Type: "Decision", Action: graph.Updated, Revision: n.Revision}}
	if len(changes) != 1 || changes[0].Op != "migrate" || len(changes[0].Edges) != 0 || !slices.Equal(changes[0].Nodes, want) {
		t.Errorf("the change log after the re-type: %+v, want one migrate entry with %+v", changes, want)
	}
	CheckDegreeIndex(t, s)
	if c, ok := s.(graph.Checker); ok {
		r, err := c.Check(ctx)
		if err != nil || len(r.Problems) > 0 {
			t.Errorf("Check after the re-type: %+v, %v", r, err)
		}
	}
	// Running the migration again changes nothing.
	if rep, err := graph.Migrate(ctx, s, mig, graph.MigrationOptions{}); err != nil || rep.Changed != 0 {
		t.Errorf("the migration again: %+v, %v", rep, err)
	}
}

func migration(t *testing.T, doc string) *graph.Migration {
	t.Helper()
	m, err := graph.ParseMigration([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// nodeEdges returns every edge of id, both directions.
func nodeEdges(t *testing.T, s graph.Store, id graph.ID) []*graph.Edge {
	t.Helper()
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{id}, Direction: graph.Both})
	if err != nil {
		t.Fatal(err)
	}
	return page.Edges
}

func lastSeq(t *testing.T, s graph.Store) uint64 {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.LastSeq
}

// testRetypeHub: a node with more edges than a batch may hold is re-typed
// when its new type may end every label it has (the planner need not read
// its edges one by one), and its edges stay.
func testRetypeHub(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx := t.Context()
	hub := graph.ID("topic/hub")
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{topic(string(hub), "Hub")}})
	const n = graph.MaxBatch + 1
	for lo := 0; lo < n; lo += graph.MaxBatch / 2 {
		var bt graph.Batch
		for i := lo; i < min(n, lo+graph.MaxBatch/2); i++ {
			id := graph.ID(fmt.Sprintf("document/d%05d", i))
			bt.Nodes = append(bt.Nodes, graph.NodeInput{ID: id, Type: "Document", Properties: graph.Props{"title": fmt.Sprint("d", i)}})
			bt.Edges = append(bt.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "about", To: hub}})
		}
		apply(t, s, &bt)
	}
	// about joins documents to topics, services and teams: a team may end
	// them. A dry run (lore model diff) says so too.
	toTeam := migration(t, `{"steps": [{"retypeNodes": {"from": "Topic", "to": "Team", "ids": ["topic/hub"]}}]}`)
	if rep, err := graph.Migrate(ctx, s, toTeam, graph.MigrationOptions{DryRun: true}); err != nil || rep.Changed != 1 || rep.Failed != 0 {
		t.Fatalf("a dry run re-typing a node with %d edges: %+v, %v", n, rep, err)
	}
	rep, err := graph.Migrate(ctx, s, toTeam, graph.MigrationOptions{})
	if err != nil || rep.Changed != 1 {
		t.Fatalf("re-typing a node with %d edges: %+v, %v", n, rep, err)
	}
	got, err := s.Node(ctx, hub)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != "Team" || len(got.Edges) != 1 || got.Edges[0].Count != n {
		t.Errorf("the re-typed hub: type %s, edges %+v; want Team with %d about edges in", got.Type, got.Edges, n)
	}
	CheckDegreeIndex(t, s)
	// A type that may not end them is refused, saying why (the edges are
	// then read, and there are too many to list).
	_, err = graph.Migrate(ctx, s, migration(t, `{"steps": [{"retypeNodes": {"from": "Team", "to": "Person", "ids": ["topic/hub"]}}]}`), graph.MigrationOptions{})
	if !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("re-typing the hub to a type about may not end: %v", err)
	}
}
