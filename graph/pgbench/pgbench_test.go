package pgbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
)

var dbSeq atomic.Int64 // numbers the databases of one process

var (
	pgDSN  = flag.String("lore.pgdsn", DefaultDSN, "the PostgreSQL server to compare with (trust authentication; the test creates and drops its own database)")
	pgSeed = flag.Uint64("lore.pgseed", 1, "seed of the generated graph")
)

// open loads g into a new Lore store under t's temporary directory and into
// a new PostgreSQL database, both closed (and the database dropped) at the
// end of the test.
func open(tb testing.TB, g *Graph) (*Lore, *Postgres) {
	tb.Helper()
	ctx := tb.Context()
	l, err := LoadLore(ctx, tb.TempDir(), g)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	name := fmt.Sprintf("lore_bench_%d_%d", os.Getpid(), dbSeq.Add(1))
	p, err := LoadPostgres(ctx, *pgDSN, name, g)
	if err != nil {
		tb.Fatalf("%v\n(this test needs PostgreSQL at %s: start one, or point -lore.pgdsn at one)", err, *pgDSN)
	}
	tb.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	return l, p
}

// openLorePG loads g into Lore's own schema on PostgreSQL, in a database
// of its own, closed and dropped at the end of the test.
func openLorePG(tb testing.TB, g *Graph) *Lore {
	tb.Helper()
	name := fmt.Sprintf("lore_bench_store_%d_%d", os.Getpid(), dbSeq.Add(1))
	l, err := LoadLorePG(tb.Context(), *pgDSN, name, tb.TempDir(), g)
	if err != nil {
		tb.Fatalf("%v\n(this test needs PostgreSQL at %s: start one, or point -lore.pgdsn at one)", err, *pgDSN)
	}
	tb.Cleanup(func() {
		if err := l.Close(); err != nil {
			tb.Errorf("close Lore on PostgreSQL: %v", err)
		}
	})
	return l
}

func TestModel(t *testing.T) {
	m := Model()
	for _, prop := range []string{"section", "size"} {
		if nt, _ := m.Node("Package"); !nt.IsIndexed(prop) {
			t.Errorf("Package.%s is not indexed", prop)
		}
	}
}

// TestGenerateDeterministic: the same seed gives the same graph.
func TestGenerateDeterministic(t *testing.T) {
	var a, b strings.Builder
	if err := Generate(500, 7).WriteNDJSON(&a); err != nil {
		t.Fatal(err)
	}
	Generate(500, 7).WriteNDJSON(&b)
	if a.String() != b.String() {
		t.Error("two graphs of the same seed differ")
	}
}

// TestAnswersAgree is the equivalence test: a 2,000-node graph in Lore and
// in PostgreSQL, every question of the benchmark asked of both, and every
// pair of answers equal. It needs PostgreSQL (-lore.pgdsn) and fails
// without it.
func TestAnswersAgree(t *testing.T) {
	g := Generate(2000, *pgSeed)
	s := g.Choose()
	if s.PathLen < 2 || s.HubInDeg < 100 {
		t.Fatalf("the generated graph is too flat to test: %+v", s)
	}
	l, p := open(t, g)
	qs := Questions(g, s)
	if _, err := Agree(t.Context(), qs, l, p, Generous, 0); err != nil {
		t.Fatal(err)
	}
	// So does Lore on PostgreSQL, the benchmark's third side (-lore.pgstore).
	lpg := openLorePG(t, g)
	if _, err := Agree(t.Context(), qs, lpg, p, Generous, 0); err != nil {
		t.Fatalf("Lore on PostgreSQL: %v", err)
	}
	// The answers are not trivially empty.
	for _, q := range qs {
		a, err := q.PG(t.Context(), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Lines) == 0 || a.Lines[0] == "0" || a.Lines[0] == "no path" {
			t.Errorf("%s: PostgreSQL's answer is empty: %q", q.Name, a.Lines)
		}
	}
	// The size by part accounts for each side's size: all of PostgreSQL's,
	// and all of Lore's but its file's meta and freelist pages and the
	// owner file, every part holding something.
	for _, side := range []struct {
		name   string
		total  int64
		parts  []Part
		margin int64
	}{{"Lore", l.Bytes, l.Parts, 64 << 10}, {"PostgreSQL", p.Bytes, p.Parts, 0}, {"Lore on PostgreSQL", lpg.Bytes, lpg.Parts, 0}} {
		var sum int64
		for _, part := range side.parts {
			if part.Bytes <= 0 || part.Name == "other" {
				t.Errorf("%s: part %q holds %d bytes", side.name, part.Name, part.Bytes)
			}
			sum += part.Bytes
		}
		if sum > side.total || side.total-sum > side.margin {
			t.Errorf("%s: the parts hold %d of %d bytes: %v", side.name, sum, side.total, side.parts)
		}
	}
}

// TestMismatchFails: an answer that differs is reported, with what differs.
func TestMismatchFails(t *testing.T) {
	g := Generate(2000, *pgSeed)
	s := g.Choose()
	l, p := open(t, g)
	q := Questions(g, s)[2] // the hub's reverse count
	wrong := q
	wrong.PG = pgRows("in_count", g.PackageID(s.Leaf), "dependsOn")
	_, err := Agree(t.Context(), []Question{wrong}, l, p, Generous, 0)
	if err == nil || !strings.Contains(err.Error(), "the answers differ") {
		t.Fatalf("Agree = %v, want a mismatch", err)
	}
	// Under a work bound too small for it, Lore's answer is cut: a mismatch.
	// (The hub's count costs one read of its edge summary: the 2-hop
	// closure is cut.)
	i := slices.IndexFunc(Questions(g, s), func(q Question) bool { return strings.HasPrefix(q.Name, "distinct 2-hop") })
	if i < 0 {
		t.Fatal("no question of the 2-hop closure")
	}
	closure := Questions(g, s)[i]
	_, err = Agree(t.Context(), []Question{closure}, l, p, graph.Limits{MaxVisited: 10}, 0)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("Agree under maxVisited 10 = %v, want a truncated mismatch", err)
	}
}

// TestRank: every package's ID leads back to its rank.
func TestRank(t *testing.T) {
	for _, n := range []int{500, 2000, 9999} {
		g := Generate(n, 3)
		for i := range g.Packages {
			if r, ok := g.rank(g.PackageID(int32(i))); !ok || r != int32(i) {
				t.Fatalf("n=%d: rank(%s) = %d, %v; want %d", n, g.PackageID(int32(i)), r, ok, i)
			}
		}
		if _, ok := g.rank("package/p" + strconv.Itoa(len(g.Packages))); ok {
			t.Errorf("n=%d: an ID past the last package has a rank", n)
		}
	}
}

// TestWithDatabase: the DSN of another database on the same server, from
// a URL or from keyword/value pairs.
func TestWithDatabase(t *testing.T) {
	for _, tt := range []struct{ dsn, want string }{
		{"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "postgres://postgres@127.0.0.1:5432/other?sslmode=disable"},
		{"postgresql://u:p@h/db", "postgresql://u:p@h/other"},
		{"postgres://h", "postgres://h/other"},
		{"host=127.0.0.1 dbname=postgres user=postgres", "host=127.0.0.1 dbname=postgres user=postgres dbname=other"},
	} {
		got, err := withDatabase(tt.dsn, "other")
		if err != nil || got != tt.want {
			t.Errorf("withDatabase(%q) = %q, %v; want %q", tt.dsn, got, err, tt.want)
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil || cfg.Database != "other" {
			t.Errorf("withDatabase(%q) = %q, which names database %q (%v)", tt.dsn, got, cfg.Database, err)
		}
	}
}
