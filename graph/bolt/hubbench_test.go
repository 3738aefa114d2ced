package bolt

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/internal/cputime"
)

// The hub benchmarks run on a graph shaped like a package index around one
// popular package (writeHubGraph): service/hub has 20,000 direct
// dependants (L1, which also depend on one another), 16,000 packages
// depend on those (L2, three edges each), 9,000 on those (L3, three edges
// each), and every package also depends on one of 2,000 libraries. The
// reverse closure of the hub is 36,000 nodes at 2 hops and 45,000 at 3.
//
//	go test -run '^$' -bench HubReads -benchtime 1x ./graph/bolt
//
// Each figure is a median of several runs in one process; "ns/visited" is
// the elapsed time divided by the work the read counted (Stats.Visited:
// nodes and edges visited), the cost per visited element. The reads run
// under ceilings high enough for a slow store on a loaded machine to
// finish (hubCeilings); whether the 3-hop closure fits the default work
// ceiling is printed.
const (
	hubL1   = 20000
	hubL2   = 16000
	hubL3   = 9000
	hubLibs = 2000
)

// hubCeilings are the ceilings of the hub benchmarks' reads.
var hubCeilings = graph.Limits{MaxVisited: 1 << 30, TimeoutMs: 600_000}

var (
	hubStoreOnce sync.Once
	hubStore     *Store
	hubStoreErr  error
)

func hubBenchStore(b *testing.B) *Store {
	b.Helper()
	hubStoreOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lore-hubbench-")
		if err != nil {
			hubStoreErr = err
			return
		}
		file := filepath.Join(dir, "graph.ndjson")
		if hubStoreErr = writeHubGraph(file); hubStoreErr != nil {
			return
		}
		s, err := Open(context.Background(), Config{Path: filepath.Join(dir, "store"), NoSync: true})
		if err != nil {
			hubStoreErr = err
			return
		}
		f, err := os.Open(file)
		if err != nil {
			hubStoreErr = err
			return
		}
		defer f.Close()
		start := time.Now()
		if _, hubStoreErr = graph.Import(context.Background(), s, f, graph.ImportOptions{}); hubStoreErr != nil {
			return
		}
		fmt.Printf("built the hub store in %v\n", time.Since(start).Round(time.Millisecond))
		hubStore = s
	})
	if hubStoreErr != nil {
		b.Fatal(hubStoreErr)
	}
	return hubStore
}

// writeHubGraph writes the hub graph as NDJSON.
func writeHubGraph(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	node := func(id string, i int) {
		fmt.Fprintf(w, `{"kind":"node","id":"service/%s","type":"Service","properties":{"name":"service %s","tier":%d,"language":"Go"}}`+"\n", id, id, i%4)
	}
	edge := func(from, to string) {
		fmt.Fprintf(w, `{"kind":"edge","from":"service/%s","label":"dependsOn","to":"service/%s"}`+"\n", from, to)
	}
	node("hub", 0)
	for i := range hubLibs {
		node(fmt.Sprintf("l%d", i), i)
	}
	for i := range hubL1 {
		node(fmt.Sprintf("p%d", i), i)
	}
	for i := range hubL2 {
		node(fmt.Sprintf("q%d", i), i)
	}
	for i := range hubL3 {
		node(fmt.Sprintf("r%d", i), i)
	}
	for i := range hubL1 {
		p := fmt.Sprintf("p%d", i)
		edge(p, "hub")
		if j := (i*13 + 7) % hubL1; j != i {
			edge(p, fmt.Sprintf("p%d", j))
		}
		edge(p, fmt.Sprintf("l%d", i%hubLibs))
	}
	for i := range hubL2 {
		q := fmt.Sprintf("q%d", i)
		for _, j := range []int{i * 7919 % hubL1, (i*104729 + 3) % hubL1, (i*31 + 11) % hubL1} {
			edge(q, fmt.Sprintf("p%d", j))
		}
		edge(q, fmt.Sprintf("l%d", i%hubLibs))
	}
	for i := range hubL3 {
		r := fmt.Sprintf("r%d", i)
		for _, j := range []int{i * 7919 % hubL2, (i*104729 + 3) % hubL2, (i*31 + 11) % hubL2} {
			edge(r, fmt.Sprintf("q%d", j))
		}
		edge(r, fmt.Sprintf("l%d", i%hubLibs))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// BenchmarkHub: the count of the hub's direct dependants (1 hop in), the
// distinct reverse closure of the hub at 2 and 3 hops (counts, under the
// default ceilings), the count of its direct dependants of one tier (an
// indexed property), and the shortest path from an L3 package into the
// hub (3 hops), out along dependsOn and in both directions.
func BenchmarkHubReads(b *testing.B) {
	s := hubBenchStore(b)
	ctx := b.Context()
	count := func(hops string) (*graph.QueryResult, error) {
		q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":["service/hub"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":`+hops+`}],"return":{"count":true}}`))
		if err != nil {
			return nil, err
		}
		return graph.Run(ctx, s, q, hubCeilings)
	}
	for b.Loop() {
		for _, c := range []struct {
			name, hops string
			want       int
			reps       int
		}{{"count-1hop-in", "1", hubL1, 30}, {"closure-2hop-in", "[1,2]", hubL1 + hubL2, 5}, {"closure-3hop-in", "[1,3]", hubL1 + hubL2 + hubL3, 3}} {
			var res *graph.QueryResult
			p50, p99 := latencies(b, c.reps, func(int) {
				var err error
				if res, err = count(c.hops); err != nil {
					b.Fatal(err)
				}
			})
			report(b, c.name, p50, p99)
			perVisited := float64(p50.Nanoseconds()) / float64(max(res.Stats.Visited, 1))
			b.ReportMetric(perVisited, c.name+"-ns/visited")
			fmt.Printf("  (count %d of %d, truncated=%v %s, visited %d (within the default work ceiling: %v): %.0f ns/visited, %.0f ns/result)\n",
				*res.Count, c.want, res.Truncated, res.Reason, res.Stats.Visited, res.Stats.Visited <= graph.DefaultCeilings.MaxVisited, perVisited, float64(p50.Nanoseconds())/float64(max(*res.Count, 1)))
		}
		// A where on an indexed property: the tier index (11,750 entries
		// of tier 1) narrows the 20,000 dependants to the 5,000 it counts.
		var filtered *graph.QueryResult
		p50, p99 := latencies(b, 30, func(int) {
			q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":["service/hub"]},"traverse":[{"edge":"dependsOn","direction":"in","where":{"tier":1}}],"return":{"count":true}}`))
			if err == nil {
				filtered, err = graph.Run(ctx, s, q, hubCeilings)
			}
			if err != nil {
				b.Fatal(err)
			}
		})
		report(b, "count-1hop-in-where", p50, p99)
		fmt.Printf("  (count %d of %d)\n", *filtered.Count, hubL1/4)
		for _, dir := range []graph.Direction{graph.Out, graph.Both} {
			var visited, length int
			p50, p99 := latencies(b, 50, func(i int) {
				res, err := graph.Paths(ctx, s, graph.PathsQuery{From: graph.ID(fmt.Sprintf("service/r%d", i*97%hubL3)), To: "service/hub", Labels: []string{"dependsOn"}, Direction: dir}, hubCeilings)
				if err != nil {
					b.Fatal(err)
				}
				visited, length = res.Stats.Visited, res.Length
			})
			report(b, "path-into-hub-"+string(dir), p50, p99)
			fmt.Printf("  (length %d, visited %d)\n", length, visited)
		}
	}
}

// BenchmarkHubClosure runs the 2-hop reverse closure of the hub over and
// over, for a CPU profile of the traversal's inner loop:
//
//	go test -run '^$' -bench HubClosure -benchtime 10x -cpuprofile cpu.out ./graph/bolt
//	go tool pprof -top -focus 'graph.Run' cpu.out
func BenchmarkHubClosure(b *testing.B) {
	s := hubBenchStore(b)
	q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":["service/hub"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[1,2]}],"return":{"count":true}}`))
	if err != nil {
		b.Fatal(err)
	}
	visited := 0
	cpu0 := cputime.Process()
	for b.Loop() {
		res, err := graph.Run(b.Context(), s, q, hubCeilings)
		if err != nil {
			b.Fatal(err)
		}
		if *res.Count != hubL1+hubL2 || res.Truncated {
			b.Fatalf("count %d, truncated %v", *res.Count, res.Truncated)
		}
		visited += res.Stats.Visited
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(visited), "ns/visited")
	// On a shared machine the wall time includes waiting for a core; the
	// process's CPU time (every thread: the collector's too) does not.
	if cpu := cputime.Process(); cpu > 0 {
		b.ReportMetric(float64((cpu-cpu0).Nanoseconds())/float64(visited), "cpu-ns/visited")
	}
}
