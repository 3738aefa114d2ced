package bolt

import (
	"fmt"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// BenchmarkDegreeIndex times what the degree index answers, at each size
// in one run, so that the ratios between sizes hold on a busy machine:
// the top 5 Services by dependsOn in-degree (issue 21's acceptance
// query), a range of in-degrees no Service has (the start set from the
// index: empty, read at once), and a grouping of every Service by exact
// in-degree. Keep the stores to rerun it without rebuilding them:
//
//	go test -run '^$' -bench DegreeIndex -benchtime 1x ./graph/bolt -lore.qsizes 10000,100000,1000000 -lore.qkeep
func BenchmarkDegreeIndex(b *testing.B) {
	p50s := map[string][]float64{}
	for _, n := range sizes(b, *querySizes, 0) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			for b.Loop() {
				for _, c := range []struct {
					name, query string
					reps        int
				}{
					{"top5-by-in-degree", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5,"return":{"fields":["id"],"degrees":[{"edge":"dependsOn","direction":"in"}]}}`, 200},
					{"next-5-by-in-degree", ``, 200},
					{"where-in-degree-gte-3", `{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","gte":3}}},"limit":5,"return":{"fields":["id"]}}`, 200},
					{"group-by-in-degree", `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOn","direction":"in"}},"limit":10}`, 5},
				} {
					query := c.query
					if query == "" { // the second page of the top 5
						res := runQuery(b, s, `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5}`, "")
						query = fmt.Sprintf(`{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5,"cursor":%q}`, res.Cursor)
					}
					var res *graph.QueryResult
					runQuery(b, s, query, "") // warm the pages it reads
					p50, p99 := latencies(b, c.reps, func(int) { res = runQuery(b, s, query, c.name) })
					report(b, c.name, p50, p99)
					p50s[c.name] = append(p50s[c.name], float64(p50.Microseconds())/1000)
					fmt.Printf("  (visited %d; %d nodes, %d groups)\n", res.Stats.Visited, len(res.Nodes), len(res.Groups))
				}
			}
		})
	}
	for name, ms := range p50s {
		if len(ms) > 1 && ms[0] > 0 {
			fmt.Printf("%-24s p50 at the largest size / p50 at the smallest: %.1f\n", name, ms[len(ms)-1]/ms[0])
		}
	}
}

func runQuery(b *testing.B, s *Store, query, name string) *graph.QueryResult {
	q, err := graph.ParseQuery(s.Model(), []byte(query))
	if err != nil {
		b.Fatal(err)
	}
	res, err := graph.Run(b.Context(), s, q, graph.Limits{MaxVisited: 10_000_000, TimeoutMs: 60_000})
	if err != nil || res.Truncated {
		b.Fatalf("%s: %v (truncated %v: %s)", name, err, res != nil && res.Truncated, res.Note)
	}
	return res
}
