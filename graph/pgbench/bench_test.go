package pgbench

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
)

// The side-by-side benchmark (make bench-pg):
//
//	go test -run '^$' -bench PG -benchtime 1x -timeout 120m ./graph/pgbench -lore.pgsizes 100000,1000000
var (
	pgSizes    = flag.String("lore.pgsizes", "100000,1000000", "comma-separated node counts of the graphs BenchmarkPG compares on")
	pgRuns     = flag.Int("lore.pgruns", 30, "timed runs of each question on each side")
	pgCheckIDs = flag.Int("lore.pgcheckids", 100000, "largest closure whose IDs BenchmarkPG compares, beside its count (0: every one)")
	pgWarmup   = flag.Int("lore.pgwarmup", 3, "untimed runs of each question on each side before the timed ones")
	pgStore    = flag.Bool("lore.pgstore", false, "also load the graph into Lore's own schema on the same PostgreSQL (graph/postgres), and time it as a third side")
)

// BenchmarkPG loads the same generated graph into Lore and PostgreSQL,
// checks that every answer agrees (it fails otherwise), then times each
// question on both sides, interleaved run by run, and prints a table of
// p50 and p90 latencies and the ratio Lore ÷ PostgreSQL.
func BenchmarkPG(b *testing.B) {
	for s := range strings.SplitSeq(*pgSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatalf("-lore.pgsizes: %v", err)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchPG(b, n)
			}
		})
	}
}

// A row of the table.
type row struct {
	name, answer    string
	lore, pg, store []time.Duration // store: Lore on PostgreSQL's, with -lore.pgstore
	visited         int
	withinDefaults  string
}

func benchPG(b *testing.B, n int) {
	ctx := b.Context()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)) // progress; the table goes to stdout
	g := Generate(n, *pgSeed)
	s := g.Choose()
	log.Info("generated", "nodes", g.Nodes(), "edges", g.Edges())
	l, p := open(b, g)
	log.Info("loaded", "lore", l.Load.Round(time.Millisecond), "postgres", p.Load.Round(time.Millisecond))
	var lpg *Lore // Lore on PostgreSQL, the third side
	if *pgStore {
		lpg = openLorePG(b, g)
		log.Info("loaded", "lore on postgres", lpg.Load.Round(time.Millisecond))
	}
	qs := Questions(g, s)
	skipped, err := Agree(ctx, qs, l, p, Generous, *pgCheckIDs)
	if err != nil {
		b.Fatalf("Lore and PostgreSQL disagree:\n%v", err)
	}
	if lpg != nil {
		if _, err := Agree(ctx, qs, lpg, p, Generous, *pgCheckIDs); err != nil {
			b.Fatalf("Lore on PostgreSQL and PostgreSQL disagree:\n%v", err)
		}
	}
	log.Info("every answer agrees", "questions", len(qs)-len(skipped), "skipped", skipped)
	var rows []row
	for _, q := range qs {
		if q.CheckOnly {
			continue
		}
		r := row{name: q.Name}
		want, err := q.PG(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		r.answer = describe(want.Lines)
		def, err := q.Lore(ctx, l, graph.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		r.withinDefaults = "yes"
		if def.Truncated != "" {
			r.withinDefaults = fmt.Sprintf("no: cut by %s after %s", def.Truncated, def.Elapsed.Round(time.Millisecond))
		}
		check := func(side string, a Answer, err error) {
			if err != nil {
				b.Fatalf("%s: %s: %v", q.Name, side, err)
			}
			if !slices.Equal(a.Lines, want.Lines) || a.Truncated != "" {
				b.Fatalf("%s: %s's answer changed between runs: %q, then %q (truncated: %q)", q.Name, side, want.Lines, a.Lines, a.Truncated)
			}
		}
		runtime.GC()
		for i := range *pgWarmup + *pgRuns {
			// Interleaved, each side first in every other run.
			sides := []func(){
				func() {
					a, err := q.Lore(ctx, l, Generous)
					check("Lore", a, err)
					r.visited = a.Visited
					if i >= *pgWarmup {
						r.lore = append(r.lore, a.Elapsed)
					}
				},
				func() {
					a, err := q.PG(ctx, p)
					check("PostgreSQL", a, err)
					if i >= *pgWarmup {
						r.pg = append(r.pg, a.Elapsed)
					}
				},
			}
			if lpg != nil {
				sides = append(sides, func() {
					a, err := q.Lore(ctx, lpg, Generous)
					check("Lore on PostgreSQL", a, err)
					if i >= *pgWarmup {
						r.store = append(r.store, a.Elapsed)
					}
				})
			}
			// Each side first in turn.
			for j := range sides {
				sides[(i+j)%len(sides)]()
			}
		}
		rows = append(rows, r)
		log.Info("timed", "question", q.Name, "lore p50", percentile(r.lore, 50), "postgres p50", percentile(r.pg, 50))
	}

	fmt.Printf("\n### Lore vs PostgreSQL, %d nodes (seed %d)\n\n", g.Nodes(), g.Seed)
	fmt.Printf("%d packages, %d maintainers, %d sections; %d edges. Hub %s: %d dependents (top in-degrees %v; %d packages with 20,000+).\n",
		len(g.Packages), g.Maintainers, len(g.Sections), g.Edges(), g.PackageID(s.Hub), s.HubInDeg, s.MaxInDeg, s.Hubs20k)
	fmt.Printf("Lore: graph/bolt, stats.elapsedMs of graph.Run (graph.Paths for the path), under ceilings %+v. PostgreSQL: %s, pgx prepared statements, round trip on one connection.\n",
		Generous, strings.Fields(p.Version)[1])
	fmt.Printf("%d timed runs per question per side after %d warm-up runs, interleaved; GOMAXPROCS %d.\n", *pgRuns, *pgWarmup, runtime.GOMAXPROCS(0))
	fmt.Printf("Every answer agrees on both sides, and so do the IDs of the closures (not only their counts)")
	if len(skipped) > 0 {
		fmt.Printf(", except for closures of more than %d nodes, compared by count only: %s", *pgCheckIDs, strings.Join(skipped, "; "))
	}
	fmt.Print(".\n\n")
	fmt.Println("| question | answer | Lore p50 | Lore p90 | PG p50 | PG p90 | Lore ÷ PG (p50) | Lore visited | within Lore's default limits |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---|")
	for _, r := range rows {
		lp50, lp90 := percentile(r.lore, 50), percentile(r.lore, 90)
		pp50, pp90 := percentile(r.pg, 50), percentile(r.pg, 90)
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", r.name, r.answer, msec(lp50), msec(lp90), msec(pp50), msec(pp90),
			ratio(float64(lp50), float64(pp50)), r.visited, r.withinDefaults)
	}
	fmt.Printf("| load (Lore: import of the NDJSON file; PG: COPY, indexes, VACUUM ANALYZE) | %d elements | %.1f s | | %.1f s | | %s | | |\n",
		g.Nodes()+g.Edges(), l.Load.Seconds(), p.Load.Seconds(), ratio(l.Load.Seconds(), p.Load.Seconds()))
	fmt.Printf("| size on disk (Lore: store files; PG: both tables with indexes) | | %.0f MiB | | %.0f MiB | | %s | | |\n\n",
		mib(l.Bytes), mib(p.Bytes), ratio(float64(l.Bytes), float64(p.Bytes)))
	fmt.Printf("Size by part. Lore: %s. PostgreSQL: %s.\n\n", describeParts(l.Parts), describeParts(p.Parts))
	if lpg != nil {
		storeTable(rows, lpg, p)
	}
}

// storeTable prints the third side's table: Lore on PostgreSQL (its own
// schema, in a database of its own on the same server) against the plain
// tables, question by question.
func storeTable(rows []row, lpg *Lore, p *Postgres) {
	fmt.Println("Lore on PostgreSQL (graph/postgres: Lore's own schema, in another database on the same server), timed in the same runs, interleaved with the two sides above:")
	fmt.Println()
	fmt.Println("| question | Lore on PG p50 | Lore on PG p90 | PG p50 | Lore on PG ÷ PG (p50) | Lore on PG ÷ Lore (p50) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range rows {
		sp50, pp50, lp50 := percentile(r.store, 50), percentile(r.pg, 50), percentile(r.lore, 50)
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", r.name, msec(sp50), msec(percentile(r.store, 90)), msec(pp50),
			ratio(float64(sp50), float64(pp50)), ratio(float64(sp50), float64(lp50)))
	}
	fmt.Printf("| load (import of the NDJSON file, then VACUUM ANALYZE of its tables) | %.1f s | | %.1f s | %s | |\n",
		lpg.Load.Seconds(), p.Load.Seconds(), ratio(lpg.Load.Seconds(), p.Load.Seconds()))
	fmt.Printf("| size (its tables with their indexes) | %.0f MiB | | %.0f MiB | %s | |\n\n",
		mib(lpg.Bytes), mib(p.Bytes), ratio(float64(lpg.Bytes), float64(p.Bytes)))
	fmt.Printf("Size by table: %s.\n\n", describeParts(lpg.Parts))
}

// describeParts lists a store's parts and their sizes.
func describeParts(ps []Part) string {
	var s []string
	for _, p := range ps {
		s = append(s, fmt.Sprintf("%s %.1f MiB", p.Name, mib(p.Bytes)))
	}
	return strings.Join(s, ", ")
}

// describe summarises an answer for the table.
func describe(lines []string) string {
	switch {
	case len(lines) == 1 && strings.HasSuffix(lines[0], " hops"):
		return lines[0]
	case len(lines) == 1:
		if _, err := strconv.Atoi(lines[0]); err == nil {
			return lines[0]
		}
	}
	if len(lines) == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", len(lines))
}

// percentile returns the p-th percentile (nearest rank) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := (p*len(s) + 99) / 100
	return s[max(0, min(len(s)-1, i-1))]
}

func msec(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.3f ms", ms)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	r := a / b
	if r >= 10 {
		return fmt.Sprintf("%.0f×", r)
	}
	return fmt.Sprintf("%.2f×", r)
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
