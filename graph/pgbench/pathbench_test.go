package pgbench

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/graph/internal/cputime"
)

var (
	pathN   = flag.Int("lore.pathn", 100000, "node count of the graph BenchmarkLorePath asks")
	pathDir = flag.String("lore.pathdir", "", "directory where BenchmarkLorePath keeps its loaded graph, to reuse it (a new temporary one if empty)")
)

// BenchmarkLorePath asks Lore the side-by-side benchmark's path question
// (a shortest dependsOn path from a package into the hub) in a loop, on a
// graph loaded once, without PostgreSQL: for profiles of graph.Paths, and
// to compare two builds on the same store (-lore.pathdir).
//
//	go test -run '^$' -bench LorePath -cpuprofile cpu.out -memprofile mem.out ./graph/pgbench
func BenchmarkLorePath(b *testing.B) {
	g := Generate(*pathN, *pgSeed)
	s := g.Choose()
	dir := *pathDir
	if dir == "" {
		dir = b.TempDir()
	}
	var l *Lore
	if _, err := os.Stat(filepath.Join(dir, "store")); err == nil {
		st, err := bolt.Open(b.Context(), bolt.Config{Path: filepath.Join(dir, "store"), Model: Model()})
		if err != nil {
			b.Fatal(err)
		}
		l = &Lore{Store: st}
	} else if l, err = LoadLore(b.Context(), dir, g); err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	ask := lorePath(g, g.PackageID(s.PathFrom), g.PackageID(s.Hub))
	a, err := ask(b.Context(), l, Generous)
	if err != nil || a.Truncated != "" {
		b.Fatalf("the path question: %+v, %v", a, err)
	}
	b.ReportAllocs()
	cpu := cputime.Process()
	for b.Loop() {
		if _, err := ask(b.Context(), l, Generous); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cputime.Process()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(a.Visited), "visited")
}
