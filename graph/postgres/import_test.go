package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// BenchmarkImport imports the benchmark graph (-lore.pgsize nodes, about
// two edges each) into an empty PostgreSQL store alone, with lore
// import's collector settings, and reports elements/s (for profiles:
// -cpuprofile):
//
//	go test -run '^$' -bench '^BenchmarkImport$' -benchtime 1x ./graph/postgres -lore.pgsize 100000
func BenchmarkImport(b *testing.B) {
	file := filepath.Join(b.TempDir(), "graph.ndjson")
	if err := writeGraph(file, *pgSize); err != nil {
		b.Fatal(err)
	}
	defer graph.TuneGCForImport(false)()
	for b.Loop() {
		url := pgtest.NewDatabase(b)
		s := open(b, url)
		f, _ := os.Open(file)
		cpu := startCPU(url[strings.LastIndexByte(url, '/')+1 : strings.IndexByte(url, '?')])
		start := time.Now()
		var lastBatch time.Time // when the last batch committed
		var atLast cpuUsage     // the CPU time used then
		st, err := graph.Import(b.Context(), s, f, graph.ImportOptions{Progress: func(graph.ImportStats) {
			lastBatch, atLast = time.Now(), cpu.now()
		}})
		el := time.Since(start)
		u := cpu.end()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		n := float64(st.Elements())
		fmt.Printf("import %d elements in %v (batches %v, end %v): %.0f elements/s; %v; %.1f µs CPU/element\n", st.Elements(), el.Round(time.Millisecond),
			lastBatch.Sub(start).Round(time.Millisecond), start.Add(el).Sub(lastBatch).Round(time.Millisecond), n/el.Seconds(), u, float64((u.lore+u.pg).Microseconds())/n)
		fmt.Printf("  of which after the last batch (the load's end): PostgreSQL %.2f s, Lore %.2f s (with the meter's)\n",
			(u.pg - atLast.pg).Seconds(), (u.lore + cpu.self - atLast.lore).Seconds())
		b.ReportMetric(n/el.Seconds(), "elements/s")
		b.ReportMetric(float64((u.lore+u.pg).Microseconds())/n, "cpu-µs/element")
		b.ReportMetric(float64(u.lore.Microseconds())/n, "lore-cpu-µs/element")
		b.ReportMetric(float64(u.pg.Microseconds())/n, "pg-cpu-µs/element")
	}
}
