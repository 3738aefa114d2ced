package bolt

import (
	"fmt"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// BenchmarkTopDegree times the top 5 Services by dependsOn in-degree
// (orderBy degree, which reads every Service and its degree: there is no
// degree index), beside the top 5 by name (which reads every Service too)
// and a filter on the in-degree, on the generated graphs:
//
//	go test -run '^$' -bench TopDegree -benchtime 1x ./graph/bolt -lore.qsizes 10000,100000
func BenchmarkTopDegree(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 0) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			for b.Loop() {
				for _, c := range []struct{ name, query string }{
					{"top5-by-in-degree", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5,"return":{"fields":["id"],"degrees":[{"edge":"dependsOn","direction":"in"}]}}`},
					{"top5-by-name", `{"from":{"type":"Service"},"orderBy":[{"field":"name","desc":true}],"limit":5,"return":{"fields":["id"]}}`},
					{"where-in-degree-gte-5", `{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","gte":5}}},"limit":5,"return":{"fields":["id"]}}`},
				} {
					q, err := graph.ParseQuery(s.Model(), []byte(c.query))
					if err != nil {
						b.Fatal(err)
					}
					var visited int
					var first map[string]any
					p50, p99 := latencies(b, 5, func(int) {
						res, err := graph.Run(b.Context(), s, q, graph.Limits{MaxVisited: 10_000_000, TimeoutMs: 60_000})
						if err != nil || res.Truncated {
							b.Fatalf("%v (truncated %v: %s)", err, res != nil && res.Truncated, res.Note)
						}
						visited = res.Stats.Visited
						if len(res.Nodes) > 0 {
							first = res.Nodes[0]
						}
					})
					report(b, c.name, p50, p99)
					fmt.Printf("  (visited %d; first %v)\n", visited, first)
				}
			}
		})
	}
}
