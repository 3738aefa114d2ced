package bolt

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// BenchmarkStepIndexFilter times a step whose where names an indexed
// property (the index narrows the nodes the step reached before they are
// read) against the same step on an unindexed copy of that property (each
// node reached is read and tested), in one run: 20,000 Package nodes in
// 200 sections, 40 maintainers of 500 packages each; a maintainer's
// packages in one section (about 2.5 of the 500):
//
//	go test -run '^$' -bench StepIndexFilter -benchtime 1x ./graph/bolt
func BenchmarkStepIndexFilter(b *testing.B) {
	const n, sections, maintainers, each = 20000, 200, 40, 500
	m, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/stepbench.json", "$defs": {
	  "Package": {"type": "object", "x-lore-node": {"display": "name", "indexed": ["section"]},
	    "properties": {"name": {"type": "string"}, "section": {"type": "string"}, "sectionCopy": {"type": "string"}, "size": {"type": "integer"}}},
	  "Maintainer": {"type": "object", "x-lore-node": {"display": "name"}, "properties": {"name": {"type": "string"}}},
	  "maintains": {"type": "object", "x-lore-edge": {"from": ["Maintainer"], "to": ["Package"]}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "store"), Model: m})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var data strings.Builder
	for i := range n {
		sec := fmt.Sprintf("s%03d", i*7%sections)
		fmt.Fprintf(&data, `{"kind":"node","id":"p/%05d","type":"Package","properties":{"name":"p%d","section":%q,"sectionCopy":%q,"size":%d}}`+"\n", i, i, sec, sec, i*31%1000)
	}
	for j := range maintainers {
		fmt.Fprintf(&data, `{"kind":"node","id":"m/%02d","type":"Maintainer","properties":{"name":"m%d"}}`+"\n", j, j)
		for k := range each {
			fmt.Fprintf(&data, `{"kind":"edge","from":"m/%02d","label":"maintains","to":"p/%05d"}`+"\n", j, (j*each+k*37)%n)
		}
	}
	if _, err := graph.Import(b.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for _, field := range []string{"section", "sectionCopy"} {
			var results, visited int
			p50, p99 := latencies(b, 200, func(i int) {
				doc := fmt.Sprintf(`{"from":{"ids":["m/%02d"]},"traverse":[{"edge":"maintains","where":{%q:"s%03d"}}],"orderBy":[{"field":"size","desc":true}],"return":{"fields":["id","size"]},"limit":10}`,
					i%maintainers, field, i*13%sections)
				q, err := graph.ParseQuery(s.Model(), []byte(doc))
				if err != nil {
					b.Fatal(err)
				}
				res, err := graph.Run(b.Context(), s, q, graph.Limits{})
				if err != nil || res.Truncated {
					b.Fatalf("%v (truncated %v)", err, res != nil && res.Truncated)
				}
				results += len(res.Nodes)
				visited += res.Stats.Visited
			})
			report(b, field, p50, p99)
			fmt.Printf("  (%.1f results, %.0f visited on average)\n", float64(results)/200, float64(visited)/200)
		}
	}
}
