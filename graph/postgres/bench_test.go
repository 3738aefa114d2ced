package postgres_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// The benchmark against the embedded store, both sides in one run,
// interleaved, so that their ratio holds on a shared machine:
//
//	go test -run '^$' -bench VsEmbedded -benchtime 1x ./graph/postgres -lore.pgsize 100000
var pgSize = flag.Int("lore.pgsize", 100000, "nodes of the graph BenchmarkVsEmbedded loads (about two edges each)")

// writeGraph writes n Service nodes with 5 properties and about two
// dependsOn edges per node, as NDJSON (graph/bolt's benchmark graph).
func writeGraph(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	lifecycle := []string{"experimental", "production", "deprecated", "retired"}
	lang := []string{"Go", "Kotlin", "Rust", "Python", "TypeScript"}
	for i := range n {
		fmt.Fprintf(w, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d","description":"generated service number %d for the import benchmark","tier":%d,"lifecycle":"%s","language":"%s"}}`+"\n",
			i, i, i, i%4, lifecycle[i%4], lang[i%5])
	}
	for i := range n {
		for _, j := range []int{(i*7919 + 1) % n, (i*104729 + 3) % n} {
			if j != i {
				fmt.Fprintf(w, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, j)
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// p50 returns the median of lat.
func p50(lat []time.Duration) time.Duration {
	slices.Sort(lat)
	return lat[len(lat)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// interleaved runs f reps times on each of two stores, alternating, and
// returns each one's median.
func interleaved(reps int, stores [2]graph.Store, f func(s graph.Store, i int)) [2]time.Duration {
	lat := [2][]time.Duration{}
	for i := range reps {
		for k, s := range stores {
			t0 := time.Now()
			f(s, i)
			lat[k] = append(lat[k], time.Since(t0))
		}
	}
	return [2]time.Duration{p50(lat[0]), p50(lat[1])}
}

func BenchmarkVsEmbedded(b *testing.B) {
	n := *pgSize
	ctx := context.Background()
	dir := b.TempDir()
	file := filepath.Join(dir, "graph.ndjson")
	if err := writeGraph(file, n); err != nil {
		b.Fatal(err)
	}
	emb, err := bolt.Open(ctx, bolt.Config{Path: filepath.Join(dir, "store")})
	if err != nil {
		b.Fatal(err)
	}
	defer emb.Close()
	url := pgtest.NewDatabase(b)
	pg, err := postgres.Open(ctx, postgres.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	defer pg.Close()
	stores := [2]graph.Store{emb, pg}
	names := [2]string{"embedded", "postgres"}

	// Import, as lore import does.
	var rate [2]float64
	for k, s := range stores {
		f, _ := os.Open(file)
		start := time.Now()
		st, err := graph.Import(ctx, s, f, graph.ImportOptions{})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		rate[k] = float64(st.Nodes+st.Edges) / time.Since(start).Seconds()
		fmt.Printf("import %-9s %d elements in %v: %.0f elements/s\n", names[k], st.Nodes+st.Edges, time.Since(start).Round(time.Millisecond), rate[k])
	}
	b.ReportMetric(rate[1], "pg-import-elem/s")
	b.ReportMetric(rate[1]/rate[0], "pg/embedded-import")
	if _, err := pg.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	id := func() graph.ID { return graph.ID("service/s" + strconv.Itoa(rng.IntN(n))) }
	report := func(what string, m [2]time.Duration) {
		fmt.Printf("%-22s embedded p50 %7.3f ms   postgres p50 %7.3f ms   ratio %.1f\n", what, ms(m[0]), ms(m[1]), float64(m[1])/float64(m[0]))
		b.ReportMetric(ms(m[1]), "pg-"+what+"-p50-ms")
		b.ReportMetric(float64(m[1])/float64(m[0]), "pg/embedded-"+what)
	}
	for b.Loop() {
		var ids []graph.ID
		for range 2000 {
			ids = append(ids, id())
		}
		report("get-node", interleaved(1000, stores, func(s graph.Store, i int) {
			if _, err := s.Node(ctx, ids[i]); err != nil {
				b.Fatal(err)
			}
		}))
		report("2-hop", interleaved(300, stores, func(s graph.Store, i int) {
			if _, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: ids[i], Labels: []string{"dependsOn"}, Direction: graph.Both, Depth: 2}, graph.Limits{}); err != nil {
				b.Fatal(err)
			}
		}))
		// A shortest path between two random services, both ways: the
		// search asks the degrees of its frontiers (graph.DegreeCounter) to
		// choose the side to grow.
		report("path-both", interleaved(300, stores, func(s graph.Store, i int) {
			if _, err := graph.Paths(ctx, s, graph.PathsQuery{From: ids[i], To: ids[(i+1)%len(ids)], Labels: []string{"dependsOn"}, Direction: graph.Both}, graph.Limits{}); err != nil {
				b.Fatal(err)
			}
		}))
		q, err := graph.ParseQuery(pg.Model(), []byte(`{"from":{"ids":["X"]},"traverse":[{"edge":"dependsOn","hops":[1,3],"type":"Service","where":{"tier":{"lte":1}}}],"limit":100}`))
		if err != nil {
			b.Fatal(err)
		}
		report("3-hop-query", interleaved(300, stores, func(s graph.Store, i int) {
			q.From.IDs = []graph.ID{ids[i]}
			if _, err := graph.Run(ctx, s, q, graph.Limits{}); err != nil {
				b.Fatal(err)
			}
		}))
		// The degree index: the top 5 by in-degree, and the 5 lowest
		// nonzero in-degrees (the recursive skip over the counts).
		for _, c := range []struct{ name, query string }{
			{"top5-by-in-degree", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5,"return":{"fields":["id"]}}`},
			{"low5-by-in-degree", `{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","gte":1}}},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"}}],"limit":5,"return":{"fields":["id"]}}`},
		} {
			q, err := graph.ParseQuery(pg.Model(), []byte(c.query))
			if err != nil {
				b.Fatal(err)
			}
			report(c.name, interleaved(300, stores, func(s graph.Store, i int) {
				if res, err := graph.Run(ctx, s, q, graph.Limits{}); err != nil || len(res.Nodes) != 5 || res.Stats.Visited > 6 {
					b.Fatalf("%s: %v %+v", c.name, err, res)
				}
			}))
		}
		report("apply-1-node", interleaved(300, stores, func(s graph.Store, i int) {
			if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(fmt.Sprintf("topic/bench-%d", i)), Type: "Topic", Properties: graph.Props{"name": "x"}}}}); err != nil {
				b.Fatal(err)
			}
		}))
		commitPoint(b, ctx, url, pg)
	}
}

// commitPoint measures the advisory lock that is the commit point: a
// transaction that takes it against one that does not (uncontended), and
// single-node commits per second from 1 and 4 writers on two Stores.
func commitPoint(b *testing.B, ctx context.Context, url string, pg *postgres.Store) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var with, without []time.Duration
	for range 500 {
		for _, lock := range []bool{true, false} {
			t0 := time.Now()
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if lock {
					_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(1)`)
					return err
				}
				_, err := tx.Exec(ctx, `SELECT 1`)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			if lock {
				with = append(with, time.Since(t0))
			} else {
				without = append(without, time.Since(t0))
			}
		}
	}
	fmt.Printf("commit point: a transaction taking the advisory lock p50 %.3f ms, one not taking it %.3f ms (uncontended)\n", ms(p50(with)), ms(p50(without)))
	pg2, err := postgres.Open(ctx, postgres.Config{URL: url})
	if err != nil {
		b.Fatal(err)
	}
	defer pg2.Close()
	for _, writers := range []int{1, 4} {
		const per = 200
		start := time.Now()
		var wg sync.WaitGroup
		for w := range writers {
			s := []*postgres.Store{pg, pg2}[w%2]
			wg.Go(func() {
				for i := range per {
					if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(fmt.Sprintf("topic/c%d-%d-%d", writers, w, i)), Type: "Topic", Properties: graph.Props{"name": "x"}}}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		rate := float64(writers*per) / time.Since(start).Seconds()
		fmt.Printf("commits/s with %d writer(s) on two Stores: %.0f\n", writers, rate)
		b.ReportMetric(rate, fmt.Sprintf("pg-commits/s-%dw", writers))
	}
}

// BenchmarkHubPage pages through the 20,000 in-edges of one node, 100 at
// a time, and reports the median page.
func BenchmarkHubPage(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.NewDatabase(b))
	const n = 20000
	batch := &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/hub", Type: "Service", Properties: graph.Props{"name": "hub"}}}}
	for i := range n {
		id := graph.ID(fmt.Sprintf("service/s%05d", i))
		batch.Nodes = append(batch.Nodes, graph.NodeInput{ID: id, Type: "Service", Properties: graph.Props{"name": "s"}})
		batch.Edges = append(batch.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: id, Label: "dependsOn", To: "service/hub"}})
	}
	if _, err := graph.Import(ctx, s, strings.NewReader(ndjson(batch)), graph.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, "VACUUM ANALYZE"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var lat []time.Duration
		q := graph.EdgeQuery{Nodes: []graph.ID{"service/hub"}, Direction: graph.Both, Page: graph.Page{Limit: 100}, KeysOnly: true}
		for {
			t0 := time.Now()
			p, err := s.Edges(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
			if p.Next == "" {
				break
			}
			q.After = p.Next
		}
		fmt.Printf("hub of %d in-edges: %d pages, p50 %.3f ms a page\n", n, len(lat), ms(p50(lat)))
		b.ReportMetric(ms(p50(lat)), "page-p50-ms")
	}
}

// ndjson renders a batch's nodes and edges as import lines.
func ndjson(b *graph.Batch) string {
	var sb strings.Builder
	for _, n := range b.Nodes {
		fmt.Fprintf(&sb, `{"kind":"node","id":%q,"type":%q,"properties":{"name":"s"}}`+"\n", n.ID, n.Type)
	}
	for _, e := range b.Edges {
		fmt.Fprintf(&sb, `{"kind":"edge","from":%q,"label":%q,"to":%q}`+"\n", e.From, e.Label, e.To)
	}
	return sb.String()
}
