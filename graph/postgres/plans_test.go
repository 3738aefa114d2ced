package postgres_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// TestRankByDegreeReadsOnlyThePage asks PostgreSQL how many index and
// table rows each kind of page of the degree index reads (EXPLAIN ANALYZE
// of the statement RankByDegree runs) on a store whose statistics do not
// know its rows yet, as after any large write: lowest first, the
// smallest count was min(n), which the planner then answered by reading
// every row of the type and label (2.4 ms a page through 10,000 nodes of
// one count, against 0.07 ms highest first).
func TestRankByDegreeReadsOnlyThePage(t *testing.T) {
	ctx := t.Context()
	s := open(t, pgtest.NewDatabase(t))
	// No analyze may give the planner the statistics while the test runs.
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE lore_degrees SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	bt := &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/hub", Type: "Topic", Properties: graph.Props{"name": "Hub"}}}}
	for i := range n {
		id := graph.ID(fmt.Sprintf("document/d%05d", i))
		bt.Nodes = append(bt.Nodes, graph.NodeInput{ID: id, Type: "Document", Properties: graph.Props{"title": fmt.Sprint("d", i)}})
		bt.Edges = append(bt.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "about", To: "topic/hub"}})
		if i%3 == 0 { // a second count, so that pages cross from one count to the next
			bt.Edges = append(bt.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "about", To: "topic/other"}})
		}
	}
	bt.Nodes = append(bt.Nodes, graph.NodeInput{ID: "topic/other", Type: "Topic", Properties: graph.Props{"name": "Other"}})
	if _, err := s.Apply(ctx, bt); err != nil {
		t.Fatal(err)
	}
	mid := &graph.DegreeEntry{ID: "document/d01500", Degree: 1}
	for _, c := range []struct {
		name string
		q    graph.DegreeQuery
	}{
		{"lowest first", graph.DegreeQuery{}},
		{"lowest first, after an entry", graph.DegreeQuery{After: mid}},
		{"lowest first, from a count", graph.DegreeQuery{Min: 2}},
		{"highest first", graph.DegreeQuery{Desc: true}},
		{"highest first, after an entry", graph.DegreeQuery{Desc: true, After: mid}},
	} {
		q := c.q
		q.Type, q.Label, q.Direction, q.Limit = "Document", "about", graph.Out, 2
		page, err := s.RankByDegree(ctx, q)
		if err != nil || len(page) != 2 {
			t.Fatalf("%s: %v, %v; want a page of 2", c.name, page, err)
		}
		// A page of 2 reads a few rows per count it visits: the page's,
		// one past it, and each count's first.
		sql, args := postgres.RankSQL(q)
		if read, plan := rowsRead(t, s, sql, args); read > 10 {
			t.Errorf("%s: a page of %d read %.0f rows of %d nodes: %s", c.name, q.Limit, read, n, plan)
		}
	}
}

// TestWalkIndexReadsOnlyTheStretch is TestRankByDegreeReadsOnlyThePage
// for the walks of a property index (WalkIndex: a query ordered by an
// indexed property): highest first, the entries of the stretch's lowest
// value were found by a join that, without statistics, read every entry
// of the type and property.
func TestWalkIndexReadsOnlyTheStretch(t *testing.T) {
	ctx := t.Context()
	s := open(t, pgtest.NewDatabase(t))
	if _, err := s.Pool().Exec(ctx, `ALTER TABLE lore_prop SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	bt := &graph.Batch{}
	for i := range n {
		id := graph.ID(fmt.Sprintf("decision/d%05d", i))
		bt.Nodes = append(bt.Nodes, graph.NodeInput{ID: id, Type: "Decision", Properties: graph.Props{"title": string(id), "status": "accepted", "date": "2026-12-04", "number": 1 + i/3}})
	}
	if _, err := s.Apply(ctx, bt); err != nil {
		t.Fatal(err)
	}
	mid, _ := graph.EncodeIndexValue(float64(500))
	low, _ := graph.EncodeIndexValue(float64(10))
	for _, c := range []struct {
		name string
		w    graph.IndexWalk
	}{
		{"lowest first", graph.IndexWalk{}},
		{"lowest first, after an entry", graph.IndexWalk{AfterValue: mid, AfterID: "decision/d01501"}},
		{"highest first", graph.IndexWalk{Desc: true}},
		{"highest first, from a value", graph.IndexWalk{Desc: true, From: low}},
		{"highest first, after an entry", graph.IndexWalk{Desc: true, AfterValue: mid, AfterID: "decision/d01501"}},
	} {
		w := c.w
		w.Type, w.Property, w.Limit = "Decision", "number", 10
		page, err := s.WalkIndex(ctx, w)
		if err != nil || len(page) != 10 {
			t.Fatalf("%s: %v, %v; want 10 entries", c.name, page, err)
		}
		sql, args := postgres.WalkSQL(w)
		if read, plan := rowsRead(t, s, sql, args); read > 30 {
			t.Errorf("%s: a stretch of %d read %.0f entries of %d: %s", c.name, w.Limit, read, n, plan)
		}
	}
}

// TestEdgesReadOnlyTheirLabels: a node's edges of one label (or a few)
// are read from the edge indexes by node and label, whatever its edges of
// other labels: with the labels a filter (label = ANY) behind the node's
// index condition, a team's two leaders were found by reading its 3,000
// members' edges too.
func TestEdgesReadOnlyTheirLabels(t *testing.T) {
	ctx := t.Context()
	s := open(t, pgtest.NewDatabase(t))
	const n = 3000
	bt := &graph.Batch{Nodes: []graph.NodeInput{{ID: "team/big", Type: "Team", Properties: graph.Props{"name": "Big"}}}}
	for i := range n {
		id := graph.ID(fmt.Sprintf("person/p%05d", i))
		bt.Nodes = append(bt.Nodes, graph.NodeInput{ID: id, Type: "Person", Properties: graph.Props{"name": string(id)}})
		bt.Edges = append(bt.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "memberOf", To: "team/big"}})
		if i%1000 == 999 {
			bt.Edges = append(bt.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "leads", To: "team/big"}})
		}
	}
	if _, err := s.Apply(ctx, bt); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		labels []string
		dir    graph.Direction
		want   int
	}{
		{[]string{"leads"}, graph.In, 3},
		{[]string{"leads", "owns"}, graph.In, 3},
		{[]string{"leads"}, graph.Both, 3},
		{[]string{"leads", "memberOf"}, graph.In, 10}, // a page of 10
	} {
		q := graph.EdgeQuery{Nodes: []graph.ID{"team/big"}, Labels: c.labels, Direction: c.dir, Page: graph.Page{Limit: 10}}
		page, err := s.Edges(ctx, q)
		if err != nil || len(page.Edges) != c.want {
			t.Fatalf("%v %s: %d edges, %v; want %d", c.labels, c.dir, len(page.Edges), err, c.want)
		}
		sql, args := postgres.EdgesSQL(q)
		if read, plan := rowsRead(t, s, sql, args); read > 30 {
			t.Errorf("%v %s: a page of %d read %.0f index rows of %d edges: %s", c.labels, c.dir, len(page.Edges), read, n+3, plan)
		}
	}
}

// rowsRead runs EXPLAIN ANALYZE of sql and returns the rows its scans of
// tables and indexes read (see planNode.rowsRead), and the plan.
func rowsRead(t *testing.T, s *postgres.Store, sql string, args []any) (float64, []byte) {
	t.Helper()
	var plan []struct{ Plan planNode }
	var out []byte
	if err := s.Pool().QueryRow(t.Context(), "EXPLAIN (ANALYZE, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
		t.Fatalf("plan %s: %v", out, err)
	}
	return plan[0].Plan.rowsRead(), out
}

// A planNode is a node of EXPLAIN's plan in JSON.
type planNode struct {
	Type    string     `json:"Node Type"`
	Rows    float64    `json:"Actual Rows"`
	Removed float64    `json:"Rows Removed by Filter"`
	Loops   float64    `json:"Actual Loops"`
	Plans   []planNode `json:"Plans"`
}

// rowsRead is the number of rows the plan's scans of tables and indexes
// read (returned, or removed by their filters), over all their loops.
func (p planNode) rowsRead() float64 {
	var n float64
	if strings.HasSuffix(p.Type, "Scan") && !strings.HasPrefix(p.Type, "CTE") && !strings.HasPrefix(p.Type, "WorkTable") {
		n = (p.Rows + p.Removed) * p.Loops // a filter's rows were read too
	}
	for _, c := range p.Plans {
		n += c.rowsRead()
	}
	return n
}
