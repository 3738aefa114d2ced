package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
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
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(graph.ImportMemoryLimit()))
	for b.Loop() {
		s := open(b, pgtest.NewDatabase(b))
		f, _ := os.Open(file)
		start := time.Now()
		st, err := graph.Import(b.Context(), s, f, graph.ImportOptions{TuneGC: true})
		el := time.Since(start)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		fmt.Printf("import %d elements in %v: %.0f elements/s\n", st.Elements(), el.Round(time.Millisecond), float64(st.Elements())/el.Seconds())
		b.ReportMetric(float64(st.Elements())/el.Seconds(), "elements/s")
	}
}
