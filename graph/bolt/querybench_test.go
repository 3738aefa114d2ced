package bolt

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
)

// Query benchmarks run on generated graphs (writeBenchGraph: Service nodes
// with five properties, about two dependsOn edges each), built once per
// size per run:
//
//	go test -run '^$' -bench 'Search|Traversal|Bounds' -benchtime 1x ./graph/bolt -lore.qsizes 10000,100000,1000000
var querySizes = flag.String("lore.qsizes", "10000,100000", "comma-separated node counts for the query benchmarks")

// keepStores keeps the query benchmarks' stores in the temporary directory
// (lore-qbench-N-kept-vL, L the store layout) and reuses them in later
// runs: building the 1M-node store takes minutes.
var keepStores = flag.Bool("lore.qkeep", false, "keep the query benchmarks' stores and reuse them")

var (
	benchStores   = map[int]*Store{}
	benchStoresMu sync.Mutex
)

func benchStore(b *testing.B, n int) *Store {
	b.Helper()
	benchStoresMu.Lock()
	defer benchStoresMu.Unlock()
	if s, ok := benchStores[n]; ok {
		return s
	}
	var dir string
	var err error
	if *keepStores {
		// A store built by an earlier run (it wrote "built" last) is
		// opened again; else one is built here, and kept.
		dir = filepath.Join(os.TempDir(), fmt.Sprintf("lore-qbench-%d-kept-v%d", n, storeVersion))
		if _, err := os.Stat(filepath.Join(dir, "built")); err == nil {
			s, err := Open(context.Background(), Config{Path: filepath.Join(dir, "store")})
			if err != nil {
				b.Fatal(err)
			}
			benchStores[n] = s
			return s
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		err = os.MkdirAll(dir, 0o755)
	} else {
		dir, err = os.MkdirTemp("", fmt.Sprintf("lore-qbench-%d-", n))
	}
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, "graph.ndjson")
	if err := writeBenchGraph(file, n); err != nil {
		b.Fatal(err)
	}
	s, err := Open(context.Background(), Config{Path: filepath.Join(dir, "store")})
	if err != nil {
		b.Fatal(err)
	}
	f, _ := os.Open(file)
	start := time.Now()
	if _, err := graph.Import(context.Background(), s, f, graph.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	f.Close()
	fmt.Printf("built a %d-node store in %v\n", n, time.Since(start).Round(time.Second))
	if *keepStores {
		if err := os.WriteFile(filepath.Join(dir, "built"), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	benchStores[n] = s
	return s
}

func sizes(b *testing.B, list string, min int) []int {
	var out []int
	for s := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatal(err)
		}
		if n >= min {
			out = append(out, n)
		}
	}
	return out
}

// latencies runs f reps times and reports p50 and p99.
func latencies(b *testing.B, reps int, f func(i int)) (p50, p99 time.Duration) {
	lat := make([]time.Duration, reps)
	for i := range reps {
		t0 := time.Now()
		f(i)
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat[reps/2], lat[reps*99/100]
}

func report(b *testing.B, name string, p50, p99 time.Duration) {
	b.ReportMetric(float64(p50.Microseconds())/1000, name+"-p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, name+"-p99-ms")
	fmt.Printf("%-28s p50 %8.3f ms   p99 %8.3f ms\n", b.Name()+" "+name, float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000)
}

// BenchmarkSearch: two-term queries (a common word and a rare one) and
// single rare words; flat latency across sizes shows no full scan.
func BenchmarkSearch(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 0) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			rng := rand.New(rand.NewPCG(3, 4))
			for b.Loop() {
				for _, kind := range []string{"word+number", "number", "prefix"} {
					var misses int
					p50, p99 := latencies(b, 300, func(int) {
						i := rng.IntN(n)
						text := map[string]string{"word+number": fmt.Sprintf("service %d", i), "number": strconv.Itoa(i), "prefix": fmt.Sprintf("generated %d", i)}[kind]
						res, err := graph.Search(b.Context(), s, graph.SearchQuery{Text: text, Type: "Service", Limit: 10}, graph.Limits{})
						if err != nil {
							b.Fatal(err)
						}
						if len(res.Hits) == 0 || res.Hits[0].Node.ID != graph.ID("service/s"+strconv.Itoa(i)) {
							misses++
						}
					})
					if misses > 0 {
						b.Errorf("%s: %d of 300 searches missed the node named", kind, misses)
					}
					report(b, kind, p50, p99)
				}
				// Two words every node holds: the cost must not grow with
				// their posting lists.
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				before := ms.TotalAlloc
				const reps = 300
				var short int
				var last *graph.SearchResult
				p50, p99 := latencies(b, reps, func(int) {
					res, err := graph.Search(b.Context(), s, graph.SearchQuery{Text: "generated benchmark", Type: "Service", Limit: 10}, graph.Limits{})
					if err != nil {
						b.Fatal(err)
					}
					if len(res.Hits) != 10 {
						short++
					}
					last = res
				})
				runtime.ReadMemStats(&ms)
				if short > 0 {
					b.Errorf("two common words: %d of %d searches found fewer than 10 hits (last: %d, truncated %v %s)", short, reps, len(last.Hits), last.Truncated, last.Reason)
				}
				report(b, "two-common", p50, p99)
				perCall := float64(ms.TotalAlloc-before) / reps
				b.ReportMetric(perCall, "two-common-B/call")
				fmt.Printf("%-28s %10.0f B/call, %d hits, truncated %v, visited %d\n", b.Name()+" two-common", perCall, len(last.Hits), last.Truncated, last.Stats.Visited)
			}
		})
	}
}

// BenchmarkTraversal: a 2-hop neighbourhood (about 20 neighbours), a 3-hop
// typed traversal with a filter, and the shortest path between nodes 4 hops apart.
func BenchmarkTraversal(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 100000) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			ctx := b.Context()
			rng := rand.New(rand.NewPCG(5, 6))
			q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":["X"]},"traverse":[{"edge":"dependsOn","hops":[1,3],"type":"Service","where":{"tier":{"lte":1}}}],"limit":100}`))
			if err != nil {
				b.Fatal(err)
			}
			// Pairs 4 hops apart along dependsOn.
			var pairs [][2]graph.ID
			for len(pairs) < 200 {
				from := graph.ID("service/s" + strconv.Itoa(rng.IntN(n)))
				nb, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: from, Labels: []string{"dependsOn"}, Direction: graph.Out, Depth: 4}, graph.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				for _, x := range nb.Nodes {
					if x.Depth == 4 {
						pairs = append(pairs, [2]graph.ID{from, x.Node.ID})
						break
					}
				}
			}
			for b.Loop() {
				var sizes int
				p50, p99 := latencies(b, 300, func(int) {
					res, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: graph.ID("service/s" + strconv.Itoa(rng.IntN(n))), Labels: []string{"dependsOn"}, Direction: graph.Both, Depth: 2}, graph.Limits{})
					if err != nil {
						b.Fatal(err)
					}
					sizes += len(res.Nodes)
				})
				report(b, "2hop", p50, p99)
				fmt.Printf("  (2-hop neighbourhoods average %.1f nodes)\n", float64(sizes)/300)
				p50, p99 = latencies(b, 300, func(int) {
					q.From.IDs = []graph.ID{graph.ID("service/s" + strconv.Itoa(rng.IntN(n)))}
					if _, err := graph.Run(ctx, s, q, graph.Limits{}); err != nil {
						b.Fatal(err)
					}
				})
				report(b, "3hop-typed-filtered", p50, p99)
				p50, p99 = latencies(b, len(pairs), func(i int) {
					res, err := graph.Paths(ctx, s, graph.PathsQuery{From: pairs[i][0], To: pairs[i][1], Labels: []string{"dependsOn"}, Direction: graph.Out}, graph.Limits{})
					if err != nil || res.Length != 4 {
						b.Fatalf("path %v: length %d, %v", pairs[i], res.Length, err)
					}
				})
				report(b, "shortest-path-4", p50, p99)
				var found int
				p50, p99 = latencies(b, len(pairs), func(i int) {
					res, err := graph.Paths(ctx, s, graph.PathsQuery{From: pairs[i][0], To: pairs[i][1], Labels: []string{"dependsOn"}, Direction: graph.Both, K: 5}, graph.Limits{})
					if err != nil || res.Length < 1 || res.Length > 4 {
						b.Fatalf("path %v: length %d, %v", pairs[i], res.Length, err)
					}
					found += len(res.Paths)
				})
				report(b, "5-shortest-paths-both", p50, p99)
				fmt.Printf("  (5-shortest-paths-both found %.1f paths on average)\n", float64(found)/float64(len(pairs)))
			}
		})
	}
}

// BenchmarkBounds expands everything to 6 hops with a 200 ms deadline, and
// again with maxVisited 10,000: both must stop by their bound.
func BenchmarkBounds(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 100000) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			for b.Loop() {
				for _, tc := range []struct {
					limits, reason string
				}{{`{"timeoutMs":200,"maxVisited":100000000}`, graph.ReasonDeadline}, {`{"maxVisited":10000}`, graph.ReasonWork}} {
					q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"type":"Service"},"traverse":[{"direction":"both","hops":[1,6]}],"return":{"count":true},"limits":`+tc.limits+`}`))
					if err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					res, err := graph.Run(b.Context(), s, q, graph.Limits{MaxVisited: 1 << 30, TimeoutMs: 10000})
					el := time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					if !res.Truncated || res.Reason != tc.reason {
						b.Errorf("%s: truncated %v, reason %q", tc.limits, res.Truncated, res.Reason)
					}
					fmt.Printf("%-28s %s: %v, truncated=%v reason=%s visited=%d count=%d\n", b.Name(), tc.limits, el.Round(time.Millisecond), res.Truncated, res.Reason, res.Stats.Visited, *res.Count)
					b.ReportMetric(float64(el.Milliseconds()), tc.reason+"-ms")
				}
			}
		})
	}
}

// BenchmarkQuery runs query_graph shapes from many start nodes, with the
// latency of each: a page of a type (the start set is the result), a
// count over one hop from an indexed type filter (5,000 start nodes), two
// hops from 20 IDs, an ordered page two hops in from 100 IDs, a two-step
// query whose first step starts at 2 hops, and paths.
func BenchmarkQuery(b *testing.B) {
	for _, n := range sizes(b, *querySizes, 100000) {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s := benchStore(b, n)
			ctx := b.Context()
			rng := rand.New(rand.NewPCG(7, 8))
			ids := func(k int) string {
				var out []string
				for range k {
					out = append(out, strconv.Quote("service/s"+strconv.Itoa(rng.IntN(n))))
				}
				return "[" + strings.Join(out, ",") + "]"
			}
			cases := []struct {
				name  string
				query func() string
				reps  int
			}{
				{"type-page", func() string { return `{"from":{"type":"Service"},"limit":50}` }, 100},
				{"count-1hop-5000-starts", func() string {
					return `{"from":{"type":"Service","where":{"tier":0,"language":"Go"}},"traverse":[{"edge":"dependsOn"}],"return":{"count":true}}`
				}, 10},
				{"2hop-20-ids", func() string {
					return `{"from":{"ids":` + ids(20) + `},"traverse":[{"edge":"dependsOn","hops":2}],"limit":100}`
				}, 300},
				{"ordered-2hop-in-100-ids", func() string {
					return `{"from":{"ids":` + ids(100) + `},"traverse":[{"edge":"dependsOn","direction":"in","hops":2}],"orderBy":[{"field":"name","desc":true}],"limit":20}`
				}, 100},
				{"2step-min2-5-ids", func() string {
					return `{"from":{"ids":` + ids(5) + `},"traverse":[{"edge":"dependsOn","hops":[2,3]},{"edge":"dependsOn","direction":"in"}],"limit":100}`
				}, 300},
				{"paths-3hop-10-ids", func() string {
					return `{"from":{"ids":` + ids(10) + `},"traverse":[{"edge":"dependsOn","hops":3}],"return":{"paths":true},"limit":100}`
				}, 300},
			}
			for b.Loop() {
				for _, c := range cases {
					var results int
					p50, p99 := latencies(b, c.reps, func(int) {
						q, err := graph.ParseQuery(s.Model(), []byte(c.query()))
						if err != nil {
							b.Fatal(err)
						}
						res, err := graph.Run(ctx, s, q, graph.Limits{})
						if err != nil {
							b.Fatal(err)
						}
						if res.Truncated {
							b.Fatalf("%s: truncated (%s)", c.name, res.Reason)
						}
						results += len(res.Nodes)
						if res.Count != nil {
							results += *res.Count
						}
					})
					report(b, c.name, p50, p99)
					fmt.Printf("  (%.1f results per query)\n", float64(results)/float64(c.reps))
				}
			}
		})
	}
}
