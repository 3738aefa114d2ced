package bolt

import (
	"fmt"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
)

// BenchmarkIndexOrder times index-ordered scans on the generated graphs'
// Services (tier and lifecycle are indexed, each with four values, so a
// value holds a quarter of the type): orderBy on an indexed property with
// limit 10, ascending and descending, beside the same order through the
// sort path (written as two keys, tier then id, which the index walk does
// not take, so the same run shows before and after); ten pages of 10
// through a type in ID order, through an indexed filter, and through an
// index-ordered result (each page p50 and the ten pages' total); a
// prefix filter, ordered and not:
//
//	go test -run '^$' -bench IndexOrder -benchtime 1x ./graph/bolt -lore.qsizes 10000,100000,1000000
func BenchmarkIndexOrder(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 0) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			lim := graph.Limits{MaxVisited: 100_000_000, TimeoutMs: 600_000, MaxResults: 1000}
			run := func(name, query string) *graph.QueryResult {
				q, err := graph.ParseQuery(s.Model(), []byte(query))
				if err != nil {
					b.Fatal(err)
				}
				res, err := graph.Run(b.Context(), s, q, lim)
				if err != nil || res.Truncated {
					b.Fatalf("%s: %v (truncated %v: %s)", name, err, res != nil && res.Truncated, res.Note)
				}
				return res
			}
			for b.Loop() {
				for _, c := range []struct {
					name, query string
					reps        int
				}{
					{"orderBy-tier-asc-10", `{"from":{"type":"Service"},"orderBy":[{"field":"tier"}],"limit":10}`, 50},
					{"orderBy-tier-desc-10", `{"from":{"type":"Service"},"orderBy":[{"field":"tier","desc":true}],"limit":10}`, 50},
					{"orderBy-tier-desc-10-sortpath", `{"from":{"type":"Service"},"orderBy":[{"field":"tier","desc":true},{"field":"id"}],"limit":10}`, 50},
					{"prefix-ordered-10", `{"from":{"type":"Service","where":{"lifecycle":{"prefix":"PROD"}}},"orderBy":[{"field":"lifecycle"}],"limit":10}`, 50},
					{"range-ordered-desc-10", `{"from":{"type":"Service","where":{"tier":{"gte":1,"lt":3}}},"orderBy":[{"field":"tier","desc":true}],"limit":10}`, 50},
					{"prefix-unordered-10", `{"from":{"type":"Service","where":{"lifecycle":{"prefix":"PROD"}}},"limit":10}`, 50},
				} {
					var res *graph.QueryResult
					p50, p99 := boundedLatencies(c.reps, func() { res = run(c.name, c.query) })
					report(b, c.name, p50, p99)
					fmt.Printf("  (visited %d; %d results; index %q)\n", res.Stats.Visited, len(res.Nodes), statsIndex(res))
				}
				for _, c := range []struct{ name, query string }{
					{"page-type-10x10", `{"from":{"type":"Service"},"limit":10}`},
					{"page-type-where-10x10", `{"from":{"type":"Service","where":{"lifecycle":"production"}},"limit":10}`},
					{"page-orderBy-tier-desc-10x10", `{"from":{"type":"Service"},"orderBy":[{"field":"tier","desc":true}],"limit":10}`},
					{"page-orderBy-id-10x10", `{"from":{"type":"Service"},"orderBy":[{"field":"id"}],"limit":10}`},
				} {
					var pages []time.Duration
					var visited int
					total, _ := boundedLatencies(5, func() {
						cursor := ""
						for range 10 {
							q := c.query
							if cursor != "" {
								q = q[:len(q)-1] + fmt.Sprintf(`,"cursor":%q}`, cursor)
							}
							t0 := time.Now()
							res := run(c.name, q)
							pages = append(pages, time.Since(t0))
							visited += res.Stats.Visited
							if res.Cursor == "" {
								b.Fatalf("%s: no cursor after %d results", c.name, len(res.Nodes))
							}
							cursor = res.Cursor
						}
					})
					p50, p99 := pct(pages)
					report(b, c.name+"-page", p50, p99)
					fmt.Printf("  (ten pages p50 %.3f ms; visited %d per page)\n", float64(total.Microseconds())/1000, visited/len(pages))
				}
			}
		})
	}
}

// boundedLatencies runs f up to reps times, but not again once
// the runs took 5 s (the sort path at 1M takes seconds a run), and
// reports p50 and p99.
func boundedLatencies(reps int, f func()) (p50, p99 time.Duration) {
	var lat []time.Duration
	start := time.Now()
	for i := 0; i < reps && (i == 0 || time.Since(start) < 5*time.Second); i++ {
		t0 := time.Now()
		f()
		lat = append(lat, time.Since(t0))
	}
	return pct(lat)
}

func pct(lat []time.Duration) (p50, p99 time.Duration) {
	l := append([]time.Duration(nil), lat...)
	for i := 1; i < len(l); i++ {
		for j := i; j > 0 && l[j] < l[j-1]; j-- {
			l[j], l[j-1] = l[j-1], l[j]
		}
	}
	return l[len(l)/2], l[len(l)*99/100]
}

// statsIndex names the index a query's stats say it used.
func statsIndex(res *graph.QueryResult) string { return res.Stats.Index }
