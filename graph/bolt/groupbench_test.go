package bolt

import (
	"fmt"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// BenchmarkGroupBy times counts and groupings over the generated graphs'
// Services: counts the store's counts or the index answer (a whole type;
// an indexed lifecycle) beside one that reads every node (language is not
// indexed), and groupings by an indexed and an unindexed property, by
// type and by in-degree (exact, and in buckets):
//
//	go test -run '^$' -bench GroupBy -benchtime 1x ./graph/bolt -lore.qsizes 10000,100000
func BenchmarkGroupBy(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 0) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			for b.Loop() {
				for _, c := range []struct{ name, query string }{
					{"count-type", `{"from":{"type":"Service"},"return":{"count":true}}`},
					{"count-indexed-eq", `{"from":{"type":"Service","where":{"lifecycle":"production"}},"return":{"count":true}}`},
					{"count-indexed-in", `{"from":{"type":"Service","where":{"lifecycle":{"in":["production","retired"]}}},"return":{"count":true}}`},
					{"count-unindexed-eq", `{"from":{"type":"Service","where":{"language":"Go"}},"return":{"count":true}}`},
					{"group-type", `{"from":{"type":"Service"},"groupBy":{"field":"type"}}`},
					{"group-indexed-prop", `{"from":{"type":"Service"},"groupBy":{"field":"lifecycle"}}`},
					{"group-unindexed-prop", `{"from":{"type":"Service"},"groupBy":{"field":"language"}}`},
					{"group-in-degree-top10", `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOn","direction":"in"}},"limit":10}`},
					{"group-in-degree-buckets", `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOn","direction":"in"},"buckets":[1,2,5,10],"order":"key"}}`},
					{"group-type-2hop-20-ids", `{"from":{"ids":["service/s1","service/s2","service/s3","service/s4","service/s5","service/s6","service/s7","service/s8","service/s9","service/s10","service/s11","service/s12","service/s13","service/s14","service/s15","service/s16","service/s17","service/s18","service/s19","service/s20"]},"traverse":[{"edge":"dependsOn","hops":2}],"groupBy":{"field":"lifecycle"}}`},
				} {
					q, err := graph.ParseQuery(s.Model(), []byte(c.query))
					if err != nil {
						b.Fatal(err)
					}
					var res *graph.QueryResult
					p50, p99 := latencies(b, 5, func(int) {
						res, err = graph.Run(b.Context(), s, q, graph.Limits{MaxVisited: 10_000_000, TimeoutMs: 60_000})
						if err != nil || res.Truncated {
							b.Fatalf("%s: %v (truncated %v: %s)", c.name, err, res != nil && res.Truncated, res.Note)
						}
					})
					report(b, c.name, p50, p99)
					fmt.Printf("  (visited %d; count %d; groups %v)\n", res.Stats.Visited, *res.Count, res.Groups[:min(len(res.Groups), 3)])
				}
			}
		})
	}
}
