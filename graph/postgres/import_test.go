package postgres_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// BenchmarkImport imports the benchmark graph into PostgreSQL alone (for
// profiles: -cpuprofile).
func BenchmarkImport(b *testing.B) {
	file := filepath.Join(b.TempDir(), "graph.ndjson")
	if err := writeGraph(file, *pgSize); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s := open(b, pgtest.NewDatabase(b))
		f, _ := os.Open(file)
		start := time.Now()
		st, err := graph.Import(b.Context(), s, f, graph.ImportOptions{})
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(st.Nodes+st.Edges)/time.Since(start).Seconds(), "elements/s")
	}
}
