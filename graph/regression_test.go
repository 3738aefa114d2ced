package graph_test

// The cases of issues 15 and 16 as they were filed, written against the API
// of the time (they ran, and failed, on the code before the fixes).

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

func regTopics(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", i, i)
	}
	return b.String()
}

func regBad(i int) string {
	return fmt.Sprintf(`{"kind":"node","id":"topic/bad%d","type":"Topic","properties":{"name":%d}}`+"\n", i, i)
}

func TestRegression15_9ModelChange(t *testing.T) {
	dir := t.TempDir()
	s := graphtest.Open(t, dir, nil)
	if _, err := graph.Import(t.Context(), s, strings.NewReader(string(schema.ExampleData())), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	meta := doc["$defs"].(map[string]any)["Service"].(map[string]any)["x-lore-node"].(map[string]any)
	meta["indexed"] = append(meta["indexed"].([]any), "name")
	data, _ := json.Marshal(doc)
	m, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	s = graphtest.Open(t, dir, m)
	q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"type":"Service","where":{"name":"billing"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := graph.Run(t.Context(), s, q, graph.Limits{})
	if err != nil || len(res.Nodes) != 1 {
		t.Errorf("where name = billing after indexing name: %d nodes, %v", len(res.Nodes), err)
	}
}

func TestRegression15_10FailedImportIntoEmptyStore(t *testing.T) {
	s := graphtest.New(t)
	graph.Import(t.Context(), s, strings.NewReader(regTopics(25)+regBad(1)+regTopics(3)), graph.ImportOptions{BatchSize: 10})
	if st, _ := s.Stats(t.Context()); st.Nodes != 0 {
		t.Errorf("a failed import left %d nodes", st.Nodes)
	}
}

func TestRegression15_10FailedImportIntoStoreWithData(t *testing.T) {
	s := graphtest.New(t)
	graph.Import(t.Context(), s, strings.NewReader(regTopics(1)), graph.ImportOptions{})
	graph.Import(t.Context(), s, strings.NewReader(regTopics(25)+regBad(1)), graph.ImportOptions{BatchSize: 10})
	if st, _ := s.Stats(t.Context()); st.Nodes != 1 {
		t.Errorf("a failed import into a store with data left %d nodes, want 1", st.Nodes)
	}
}

func TestRegression15_10DryRunCountsAll(t *testing.T) {
	s := graphtest.New(t)
	var b strings.Builder
	for i := range 250 {
		b.WriteString(regBad(i))
	}
	_, err := graph.Import(t.Context(), s, strings.NewReader(b.String()), graph.ImportOptions{BatchSize: 1000, DryRun: true})
	if err == nil || !strings.Contains(err.Error(), "250 problems") || strings.Contains(err.Error(), "committed") {
		t.Errorf("dry run of 250 bad lines: %.300v", err)
	}
}

func TestRegression15_11RevisionOverflow(t *testing.T) {
	s := graphtest.New(t)
	_, err := graph.Import(t.Context(), s, strings.NewReader(`{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"},"revision":9223372036854775807}`), graph.ImportOptions{})
	if err == nil {
		n, _ := s.Node(t.Context(), "topic/a")
		s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "b"}}}})
		n2, _ := s.Node(t.Context(), "topic/a")
		t.Errorf("revision 2^63-1 accepted (%d); the next update gives %d", n.Revision, n2.Revision)
	}
}

func TestRegression15_11SinceWraps(t *testing.T) {
	s := graphtest.New(t)
	graph.Import(t.Context(), s, strings.NewReader(regTopics(2)), graph.ImportOptions{})
	ch, err := s.Since(t.Context(), math.MaxUint64, 10)
	if err != nil || len(ch) != 0 {
		t.Errorf("Since(2^64-1) = %d changes, %v; want nothing (it wrapped and replayed from 1)", len(ch), err)
	}
}

func TestRegression15_12SilentChanges(t *testing.T) {
	for _, tt := range []struct {
		f    graph.Format
		data string
	}{
		{graph.NDJSON, "{\"kind\":\"node\",\"id\":\"topic/a\",\"type\":\"Topic\",\"properties\":{\"name\":\"caf\xe9\"}}"},
		{graph.NDJSON, `{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a","name":"b"}}`},
		{graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"caf\xe9\" .\n"},
		{graph.NQuads, "<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"\\uD800\" .\n"},
		{graph.Memory, `{"type":"entity","name":"a","name":"b","entityType":"t","observations":[]}`},
	} {
		s := graphtest.New(t)
		if _, err := graph.Import(t.Context(), s, strings.NewReader(tt.data), graph.ImportOptions{Format: tt.f}); err == nil {
			t.Errorf("%s input %q accepted", tt.f, tt.data)
		}
	}
}

func TestRegression16_3DeepLineRefused(t *testing.T) {
	s := graphtest.New(t)
	line := `{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a","x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}}`
	start := time.Now()
	_, err := graph.Import(t.Context(), s, strings.NewReader(line), graph.ImportOptions{})
	if err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Errorf("a line nested 200 deep: %v (%v)", err, time.Since(start))
	}
}

func TestRegression16_8GoTypeNames(t *testing.T) {
	s := graphtest.New(t)
	_, err := graph.Import(t.Context(), s, strings.NewReader(`{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"a"},"createdAt":5}`), graph.ImportOptions{})
	if err == nil || strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "ndjsonLine") {
		t.Errorf("error: %v", err)
	}
}

func TestRegression15_14EdgesOrder(t *testing.T) {
	s := graphtest.New(t)
	b := &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/hub", Type: "Topic", Properties: graph.Props{"name": "h"}}}}
	for _, d := range []string{"m", "b", "z", "a", "q"} {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID("doc/" + d), Type: "Document", Properties: graph.Props{"title": d}})
	}
	s.Apply(t.Context(), b)
	for _, d := range []string{"m", "b", "z", "a", "q"} {
		s.Apply(t.Context(), &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: graph.ID("doc/" + d), Label: "about", To: "topic/hub"}}}})
	}
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"topic/hub"}, Direction: graph.In})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range page.Edges {
		got = append(got, string(e.From))
	}
	if strings.Join(got, " ") != "doc/a doc/b doc/m doc/q doc/z" {
		t.Errorf("in-edges in order %v, want by other end", got)
	}
}

// TestCountOfOneHopKeepsTheFilter: the count of one hop from one node,
// which the embedded store answers from its edge summary, still applies
// the query's where (found by TestQueryOracle, seed 1796166443994787132:
// the summary's count was returned unfiltered).
func TestCountOfOneHopKeepsTheFilter(t *testing.T) {
	s := graphtest.New(t)
	b := &graph.Batch{Nodes: []graph.NodeInput{
		{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a", "tier": json.Number("1")}},
		{ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b", "tier": json.Number("0")}},
		{ID: "service/c", Type: "Service", Properties: graph.Props{"name": "c", "tier": json.Number("2")}},
	}, Edges: []graph.EdgeInput{
		{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}},
		{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/c"}},
	}}
	if _, err := s.Apply(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]int{
		`{"from":{"ids":["service/a"]},"traverse":[{"edge":"dependsOn"}],"return":{"count":true}}`:                            2,
		`{"from":{"ids":["service/a"]},"traverse":[{"edge":"dependsOn"}],"where":{"tier":0},"return":{"count":true}}`:         1,
		`{"from":{"ids":["service/a"]},"traverse":[{"edge":"dependsOn"}],"where":{"tier":{"gte":3}},"return":{"count":true}}`: 0,
	} {
		q, err := graph.ParseQuery(s.Model(), []byte(query))
		if err != nil {
			t.Fatal(err)
		}
		res, err := graph.Run(t.Context(), s, q, graph.Limits{})
		if err != nil || res.Count == nil {
			t.Fatalf("%s: %v", query, err)
		}
		if *res.Count != want {
			t.Errorf("%s: count %d, want %d", query, *res.Count, want)
		}
	}
}
