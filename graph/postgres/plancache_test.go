package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// BenchmarkPlanCache compares PostgreSQL's plan cache modes on the
// engine's reads at 20k nodes, interleaved: custom plans (auto) against
// the generic plans the store asks for (see Open).
func BenchmarkPlanCache(b *testing.B) {
	ctx := context.Background()
	n := 20000
	file := filepath.Join(b.TempDir(), "g.ndjson")
	writeGraph(file, n)
	url := pgtest.NewDatabase(b)
	s := open(b, url)
	f, _ := os.Open(file)
	graph.Import(ctx, s, f, graph.ImportOptions{})
	f.Close()
	s.Pool().Exec(ctx, "VACUUM ANALYZE")
	auto, err := postgres.Open(ctx, postgres.Config{URL: url + "&plan_cache_mode=auto"})
	if err != nil {
		b.Fatal(err)
	}
	defer auto.Close()
	gen, err := postgres.Open(ctx, postgres.Config{URL: url + "&plan_cache_mode=force_generic_plan"})
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	q, _ := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":["X"]},"traverse":[{"edge":"dependsOn","hops":[1,3],"type":"Service","where":{"tier":{"lte":1}}}],"limit":100}`))
	for b.Loop() {
		m := interleaved(300, [2]graph.Store{auto, gen}, func(s graph.Store, i int) {
			q.From.IDs = []graph.ID{graph.ID("service/s" + strconv.Itoa(rng.IntN(n)))}
			if _, err := graph.Run(ctx, s, q, graph.Limits{}); err != nil {
				b.Fatal(err)
			}
		})
		fmt.Printf("3-hop: auto %.3f ms, generic %.3f ms\n", ms(m[0]), ms(m[1]))
		m = interleaved(300, [2]graph.Store{auto, gen}, func(s graph.Store, i int) {
			if _, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: graph.ID("service/s" + strconv.Itoa(rng.IntN(n))), Labels: []string{"dependsOn"}, Direction: graph.Both, Depth: 2}, graph.Limits{}); err != nil {
				b.Fatal(err)
			}
		})
		fmt.Printf("2-hop: auto %.3f ms, generic %.3f ms\n", ms(m[0]), ms(m[1]))
		m = interleaved(1000, [2]graph.Store{auto, gen}, func(s graph.Store, i int) {
			if _, err := s.Node(ctx, graph.ID("service/s"+strconv.Itoa(rng.IntN(n)))); err != nil {
				b.Fatal(err)
			}
		})
		fmt.Printf("get-node: auto %.3f ms, generic %.3f ms\n", ms(m[0]), ms(m[1]))
	}
}
