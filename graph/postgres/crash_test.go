package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// crashInput is an import of nodes then edges (so that a fast load builds
// what its nodes derive early, beside its edges), with an element given
// twice (so that a commit needs the deferred keys).
func crashInput() string {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d","tier":%d}}`+"\n", i, i, i%4)
	}
	for i := range 10 {
		fmt.Fprintf(&b, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", i, i)
	}
	for i := range 120 {
		fmt.Fprintf(&b, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i%40, (i%40+1+i/40)%40)
	}
	b.WriteString(`{"kind":"node","id":"service/s3","type":"Service","properties":{"name":"service 3, again"}}` + "\n")
	return b.String()
}

// dieAt runs an all-or-nothing import of input into a new database; after
// the commit numbered at (from 1) of the load, it ends every connection of
// the database but its own and refuses new ones until the import has
// failed and its store is closed, as the loading process's death would. It returns the database's URL and the number of commits
// the load made (all of them if at is 0).
func dieAt(t *testing.T, input string, durable bool, at int) (url string, commits int) {
	t.Helper()
	url, commits, _ = endConnsAt(t, input, durable, at, true)
	return url, commits
}

// endConnsAt is dieAt, whose refusing of new connections is refuse; it
// also returns the import's error.
func endConnsAt(t *testing.T, input string, durable bool, at int, refuse bool) (url string, commits int, importErr error) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	s := open(t, url)
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	database := cfg.Database
	admin, err := pgx.Connect(t.Context(), pgtest.AdminURL()) // another database: this one's connections end
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var mu sync.Mutex
	hook := func(db string) {
		if db != database {
			return // another test's load
		}
		mu.Lock()
		defer mu.Unlock()
		commits++
		if commits != at {
			return
		}
		// The process is dead: nothing of it may write again, through the
		// connections it has or through new ones. (Not the test's context:
		// a failed test must still end them.)
		sql := `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + database + `' AND pid <> pg_backend_pid()`
		if refuse {
			sql = `ALTER DATABASE ` + database + ` ALLOW_CONNECTIONS false; ` + sql
		}
		_, err := admin.Exec(context.Background(), sql)
		if err != nil {
			t.Errorf("ending the load's connections: %v", err)
		}
	}
	postgres.CrashPoints.Store(&hook)
	defer postgres.CrashPoints.Store(nil)
	_, importErr = graph.Import(t.Context(), s, strings.NewReader(input), graph.ImportOptions{Format: graph.NDJSON, BatchSize: 25, Durable: durable})
	if at == 0 && importErr != nil {
		t.Fatal(importErr)
	}
	s.Close()
	if _, err := admin.Exec(t.Context(), `ALTER DATABASE `+database+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return url, commits, importErr
}

// An all-or-nothing load whose process dies after any of its commits (its
// marker's, the dropping of its keys, each batch's, each build of what it
// deferred, the deletion of its marker) leaves a store that the next Open
// finds empty, or whole after the last: a store that checks, whose
// indexes answer, and that takes the same import again.
func TestLoadDiesAtEveryCommit(t *testing.T) {
	input := crashInput()
	for _, durable := range []bool{false, true} {
		_, total := dieAt(t, input, durable, 0)
		if total < 5 {
			t.Fatalf("durable %v: %d commits", durable, total)
		}
		for at := 1; at <= total; at++ {
			name := fmt.Sprintf("durable %v, dead after commit %d of %d", durable, at, total)
			url, _ := dieAt(t, input, durable, at)
			s := open(t, url)
			st, err := s.Stats(t.Context())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			whole := st.Nodes == 50 && st.Edges == 120
			switch {
			case at == total && !whole:
				t.Fatalf("%s: the finished load left %d nodes and %d edges", name, st.Nodes, st.Edges)
			case at < total && (st.Nodes != 0 || st.Edges != 0):
				t.Fatalf("%s: the store holds %d nodes and %d edges of a load that did not end", name, st.Nodes, st.Edges)
			}
			graphtest.CheckOK(t, s)
			if !whole {
				if _, err := graph.Import(t.Context(), s, strings.NewReader(input), graph.ImportOptions{Format: graph.NDJSON, BatchSize: 25}); err != nil {
					t.Fatalf("%s: importing again: %v", name, err)
				}
			}
			res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "again"}, graph.Limits{})
			if err != nil || len(res.Hits) != 1 {
				t.Fatalf("%s: search after the load: %v %v", name, res, err)
			}
			graphtest.CheckOK(t, s)
			s.Close()
		}
	}
}

// A load that fails to begin (here its connections end right after it
// committed its marker, and the process goes on) fails its import: the
// import does not go on to write batch by batch, which an interruption
// would leave half written. The store is empty again at the next open.
func TestImportFailsWhenItsLoadCannotBegin(t *testing.T) {
	url, _, err := endConnsAt(t, crashInput(), false, 1, false)
	if err == nil || !strings.Contains(err.Error(), "beginning the load") {
		t.Fatalf("the import: %v, want its load's failure to begin", err)
	}
	s := open(t, url)
	emptyStore(t, s, 0)
	graphtest.CheckOK(t, s)
}
