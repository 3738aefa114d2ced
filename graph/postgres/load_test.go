package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// topicLines returns n Topic node lines, topic/<prefix>0 … .
func topicLines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"kind":"node","id":"topic/%s%d","type":"Topic","properties":{"name":"topic %d"}}`+"\n", prefix, i, i)
	}
	return b.String()
}

// emptyStore fails the test unless s holds nothing, its derived tables
// included, and its change log gives out numbers after last.
func emptyStore(t *testing.T, s *postgres.Store, last uint64) {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil || st.Nodes != 0 || st.Edges != 0 || st.LastSeq != last {
		t.Errorf("stats: %+v %v, want an empty store whose last sequence number is %d", st, err, last)
	}
	if ch, err := s.Since(t.Context(), 0, 100); err != nil || len(ch) != 0 {
		t.Errorf("change log: %v %v, want none", ch, err)
	}
	res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "topic"}, graph.Limits{})
	if err != nil || len(res.Hits) != 0 {
		t.Errorf("search: %v %v, want no hit", res, err)
	}
	var n int
	if err := s.Pool().QueryRow(t.Context(), `SELECT (SELECT count(*) FROM lore_prop) + (SELECT count(*) FROM lore_postings) + (SELECT count(*) FROM lore_degrees)
		+ (SELECT count(*) FROM lore_counts WHERE n <> 0)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d derived rows left (%v)", n, err)
	}
	graphtest.CheckOK(t, s)
	keysPresent(t, s)
}

// keysPresent fails the test unless lore_prop and lore_postings have their
// keys, and the records their secondary indexes and the edge summaries
// their key (which a fast load defers).
func keysPresent(t *testing.T, s *postgres.Store) {
	t.Helper()
	var ok bool
	if err := s.Pool().QueryRow(t.Context(), `SELECT to_regclass('lore_postings_pkey') IS NOT NULL AND to_regclass('lore_prop_pkey') IS NOT NULL
		AND to_regclass('lore_nodes_type') IS NOT NULL AND to_regclass('lore_edges_in') IS NOT NULL AND to_regclass('lore_degrees_pkey') IS NOT NULL
		AND to_regclass('lore_nodes_pkey') IS NOT NULL AND to_regclass('lore_edges_pkey') IS NOT NULL
		AND to_regclass('lore_degrees_rank') IS NOT NULL`).Scan(&ok); err != nil || !ok {
		t.Errorf("a key or index a fast load defers is missing (%v)", err)
	}
}

// A fast load whose later batches give elements again (updates, which
// need the keys it deferred) ends with every element's last version, its
// derived rows and edge summaries right and its keys built.
func TestLoadUpdatesElements(t *testing.T) {
	for _, size := range []int{300, 3} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := open(t, pgtest.NewDatabase(t))
			var data strings.Builder
			for i := range 600 {
				fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d","tier":%d}}`+"\n", i, i, i%4)
			}
			for i := range 600 {
				fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, (i+1)%600)
			}
			for i := range 300 { // again, with other tokens and values
				fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"renamed %d","tier":%d}}`+"\n", i*2, i, 3-i%4)
			}
			if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: size}); err != nil {
				t.Fatal(err)
			}
			graphtest.CheckOK(t, s)
			graphtest.CheckDegreeIndex(t, s)
			keysPresent(t, s)
			if d, err := graph.Degrees(t.Context(), s, []graph.ID{"service/s0", "service/s599"}, nil, graph.Both); err != nil || d[0] != 2 || d[1] != 2 {
				t.Errorf("degrees: %v %v, want 2 and 2", d, err)
			}
			res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "renamed", Limit: 1000}, graph.Limits{MaxResults: 1000})
			if err != nil || len(res.Hits) != 300 {
				t.Errorf("search for the new names: %d hits, %v", len(res.Hits), err)
			}
		})
	}
}

// A failed import into an empty store leaves it empty and usable: it is
// read once (no check pass), its batches are undone, and the next
// import's change-log entries come after the undone ones.
func TestImportIntoEmptyStoreIsAllOrNothing(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			s := open(t, pgtest.NewDatabase(t))
			checking := false
			opt := graph.ImportOptions{BatchSize: 10, Durable: durable, Progress: func(st graph.ImportStats) { checking = checking || st.Checking }}
			data := topicLines("t", 25) + `{"kind":"node","id":"topic/bad","type":"Topic","properties":{"name":1}}` + "\n" + topicLines("u", 3)
			st, err := graph.Import(t.Context(), s, strings.NewReader(data), opt)
			var ie *graph.ImportError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), "line 26:") {
				t.Fatalf("Import = %v, want an ImportError saying nothing was written, naming line 26", err)
			}
			if st.Created != 0 || st.Batches != 0 || checking {
				t.Errorf("stats of the undone import: %+v (a check pass: %v)", st, checking)
			}
			emptyStore(t, s, 2)
			if _, err := graph.Import(t.Context(), s, strings.NewReader(topicLines("t", 25)), opt); err != nil {
				t.Fatal(err)
			}
			ch, err := s.Since(t.Context(), 0, 100)
			if err != nil || len(ch) != 3 || ch[0].Seq != 3 {
				t.Errorf("change log after the good import: %v %v, want 3 entries from 3", ch, err)
			}
			if checking {
				t.Error("an import into an empty store checked its input first")
			}
			graphtest.CheckOK(t, s)
		})
	}
}

// loadBatches commits n one-node batches through s's load.
func loadBatches(t *testing.T, s *postgres.Store, n int) {
	t.Helper()
	in := make(chan *graph.StreamBatch, n)
	for i := range n {
		in <- &graph.StreamBatch{Batch: &graph.Batch{Op: "import", Nodes: []graph.NodeInput{topic(fmt.Sprintf("topic/l%d", i), "loaded")}}}
	}
	close(in)
	s.ApplyStream(graph.WithinLoad(t.Context()), in, func(_ *graph.StreamBatch, _ *graph.Result, err error) bool {
		if err != nil {
			t.Fatal(err)
		}
		return true
	})
}

// An all-or-nothing load whose process dies (its connection ends) is
// undone: by the next open, or by a replica's writer, which waited for
// the load and writes after undoing it.
func TestInterruptedLoadIsUndone(t *testing.T) {
	for _, fast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast=%v/open", fast), func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			s := open(t, url)
			if _, ok, err := s.BeginLoad(fast); err != nil || !ok {
				t.Fatalf("an empty store did not start a load: %v", err)
			}
			if _, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{topic("topic/other", "o")}}); !errors.Is(err, graph.ErrConflict) {
				t.Fatalf("a write during a load: %v", err)
			}
			// Nor may another stream write into the load.
			other := make(chan *graph.StreamBatch, 1)
			other <- &graph.StreamBatch{Batch: &graph.Batch{Op: "import", Nodes: []graph.NodeInput{topic("topic/other", "o")}}}
			close(other)
			var streamErr error
			s.ApplyStream(t.Context(), other, func(_ *graph.StreamBatch, _ *graph.Result, err error) bool { streamErr = err; return err == nil })
			if !errors.Is(streamErr, graph.ErrConflict) {
				t.Fatalf("another stream during a load: %v", streamErr)
			}
			loadBatches(t, s, 3)
			s.Close() // as the process's death does, it ends the load's connection
			s = open(t, url)
			emptyStore(t, s, 3)
			res, err := s.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{topic("topic/z", "z")}})
			if err != nil || res.Seq != 4 {
				t.Errorf("the write after the undone load: %+v %v, want seq 4", res, err)
			}
		})
		t.Run(fmt.Sprintf("fast=%v/replica", fast), func(t *testing.T) {
			url := pgtest.NewDatabase(t)
			s, replica := open(t, url), open(t, url)
			if _, ok, err := s.BeginLoad(fast); err != nil || !ok {
				t.Fatalf("an empty store did not start a load: %v", err)
			}
			if _, ok, err := replica.BeginLoad(fast); ok || err != nil {
				t.Fatalf("a second load began during the first (or failed: %v)", err)
			}
			wrote := make(chan error, 1)
			go func() {
				_, err := replica.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{topic("topic/other", "o")}})
				wrote <- err
			}()
			waitForLockWaiter(t, s)
			loadBatches(t, s, 3)
			select {
			case err := <-wrote:
				t.Fatalf("a replica's write during the load returned: %v", err)
			default:
			}
			s.Close()
			if err := <-wrote; err != nil {
				t.Fatal(err)
			}
			st, err := replica.Stats(t.Context())
			if err != nil || st.Nodes != 1 || st.LastSeq != 4 {
				t.Errorf("after the replica's write: %+v %v, want its node alone, at seq 4", st, err)
			}
			graphtest.CheckOK(t, replica)
		})
	}
}

// waitForLockWaiter waits until a session waits for an advisory lock.
func waitForLockWaiter(t *testing.T, s *postgres.Store) {
	t.Helper()
	for range 500 {
		var n int
		err := s.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		waitBriefly(t.Context())
	}
	t.Fatal("no writer waited for the load's lock within 10 s")
}

// A load whose connection is lost (as a cancelled statement ends it)
// leaves the store empty and usable, whether the import then ends it as
// failed or as done (which then fails).
func TestLostLoadIsUndone(t *testing.T) {
	for _, ok := range []bool{false, true} {
		t.Run(fmt.Sprintf("done(%v)", ok), func(t *testing.T) {
			s := open(t, pgtest.NewDatabase(t))
			done, began, err := s.BeginLoad(true)
			if err != nil || !began {
				t.Fatalf("an empty store did not start a load: %v", err)
			}
			loadBatches(t, s, 2)
			// lockLoad is 0x6c6f7265_00000003: pg_locks shows it as classid,
			// objid, for every database of the server (the loads of other
			// tests, and of other packages' tests, hold it in theirs).
			var killed bool
			if err := s.Pool().QueryRow(t.Context(), `SELECT bool_or(pg_terminate_backend(pid)) FROM pg_locks
				WHERE locktype = 'advisory' AND classid = x'6c6f7265'::int AND objid = 3 AND granted
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&killed); err != nil || !killed {
				t.Fatalf("ending the load's connection: %v %v", killed, err)
			}
			if err := done(ok); (err != nil) != ok {
				t.Errorf("done(%v) = %v", ok, err)
			}
			emptyStore(t, s, 2)
			if _, err := graph.Import(t.Context(), s, strings.NewReader(topicLines("t", 5)), graph.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			var marked bool
			if err := s.Pool().QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM lore_meta WHERE key = 'loading')`).Scan(&marked); err != nil || marked {
				t.Errorf("the load marker is left after a good import (%v)", err)
			}
		})
	}
}

// A load's later batches are planned against what its earlier ones
// committed: an element given again with the same content is unchanged,
// with other content updated, and an edge whose end the load holds with
// a type its label does not allow, or does not hold, is refused (and
// the load undone).
func TestLoadPlansAgainstWhatItLoaded(t *testing.T) {
	s := open(t, pgtest.NewDatabase(t))
	var data strings.Builder
	for i := range 10 {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d"}}`+"\n", i, i)
	}
	data.WriteString(`{"kind":"node","id":"topic/t","type":"Topic","properties":{"name":"t"}}` + "\n")
	for i := range 10 {
		fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, (i+1)%10)
	}
	data.WriteString(`{"kind":"node","id":"service/s0","type":"Service","properties":{"name":"service 0"}}` + "\n")
	data.WriteString(`{"kind":"node","id":"service/s1","type":"Service","properties":{"name":"renamed"}}` + "\n")
	data.WriteString(`{"kind":"edge","from":"service/s2","label":"dependsOn","to":"service/s3"}` + "\n")
	data.WriteString(`{"kind":"edge","from":"service/s3","label":"dependsOn","to":"service/s4","properties":{"critical":true}}` + "\n")
	st, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	if st.Created != 21 || st.Updated != 2 || st.Unchanged != 2 {
		t.Errorf("created %d, updated %d, unchanged %d; want 21, 2, 2", st.Created, st.Updated, st.Unchanged)
	}
	if n, err := s.Node(t.Context(), "service/s1"); err != nil || n.Properties["name"] != "renamed" {
		t.Errorf("service/s1: %v %v, want it renamed", n, err)
	}
	if e, err := s.Edge(t.Context(), graph.EdgeKey{From: "service/s3", Label: "dependsOn", To: "service/s4"}); err != nil || e.Properties["critical"] != true {
		t.Errorf("edge s3->s4: %v %v, want critical", e, err)
	}
	graphtest.CheckOK(t, s)

	for name, bad := range map[string]string{
		"wrong type": `{"kind":"edge","from":"service/s0","label":"dependsOn","to":"topic/t"}`,
		"missing":    `{"kind":"edge","from":"service/s0","label":"dependsOn","to":"service/none"}`,
	} {
		t.Run(name, func(t *testing.T) {
			s := open(t, pgtest.NewDatabase(t))
			in := data.String() + bad + "\n"
			if _, err := graph.Import(t.Context(), s, strings.NewReader(in), graph.ImportOptions{BatchSize: 4}); err == nil {
				t.Fatal("the import succeeded")
			}
			emptyStore(t, s, 6) // the six batches before the bad one
		})
	}
}

// derivedTables returns the rows of the derived tables, in key order.
func derivedTables(t *testing.T, s *postgres.Store) string {
	t.Helper()
	var out strings.Builder
	for _, q := range []string{
		`SELECT encode(token, 'hex'), type, id, weight::text FROM lore_postings ORDER BY token, type, id`,
		`SELECT type, prop, encode(val, 'hex'), id FROM lore_prop ORDER BY type, prop, val, id`,
		`SELECT node_id, label, inbound::text, n::text FROM lore_degrees ORDER BY node_id, label, inbound`,
	} {
		rows, err := s.Pool().Query(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var a, b, c, d string
			if err := rows.Scan(&a, &b, &c, &d); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&out, a, b, c, d)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		out.WriteString("--\n")
	}
	return out.String()
}

// A fast load holds its new postings and property index rows and writes
// them sorted when its edges begin, or at its end, or before a batch that
// does more than add elements: either way the derived tables end as a
// store written batch by batch (no load) has them. The tokens and values share prefixes of 8
// bytes and more, where the load's sort compares beyond its first 8 bytes.
func TestLoadHeldRowsAsWritten(t *testing.T) {
	words := []string{"internationalization", "internationalisation", "internal", "intern", "in", "abc", "abcdefgh", "abcdefghi", "zz", "ü", "日本語"}
	lifecycle := []string{"experimental", "production", "deprecated", "retired"}
	id := func(i int) string { return fmt.Sprintf("service/%s%d", words[i%9], i) } // (IDs are ASCII)
	node := func(i int) string {
		return fmt.Sprintf(`{"kind":"node","id":"%s","type":"Service","properties":{"name":"%s %s %d","description":"%s","tier":%d,"lifecycle":"%s"}}`+"\n",
			id(i), words[i%7], words[i%len(words)], i%13, words[(i*5)%len(words)], i%4, lifecycle[i%4])
	}
	edge := func(i, j int) string {
		return fmt.Sprintf(`{"kind":"edge","from":"%s","label":"dependsOn","to":"%s"}`+"\n", id(i), id(j))
	}
	var nodesFirst, interleaved, updates strings.Builder
	for i := range 700 {
		nodesFirst.WriteString(node(i))
		interleaved.WriteString(node(i) + edge(i, (i*7)%(i+1)))
	}
	for i := range 50 {
		topic := fmt.Sprintf(`{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"%s topic"}}`+"\n", i, words[i%len(words)])
		nodesFirst.WriteString(topic)
		interleaved.WriteString(topic)
	}
	for i := range 700 {
		nodesFirst.WriteString(edge(i, (i*3+1)%700))
	}
	for i := range 30 { // nodes again, renamed
		fmt.Fprintf(&updates, `{"kind":"node","id":"%s","type":"Service","properties":{"name":"renamed %d","tier":%d,"lifecycle":"retired"}}`+"\n", id(i*7), i, 3-i%4)
	}
	for name, in := range map[string]string{
		"nodes first":                               nodesFirst.String(),                     // built when the edges begin
		"nodes first, then updates":                 nodesFirst.String() + updates.String(),  // then the keys for the updates
		"nodes and edges interleaved":               interleaved.String(),                    // held to the end
		"nodes and edges interleaved, then updates": interleaved.String() + updates.String(), // written before the updates
	} {
		t.Run(name, func(t *testing.T) {
			load, batched := open(t, pgtest.NewDatabase(t)), open(t, pgtest.NewDatabase(t))
			if _, err := graph.Import(t.Context(), load, strings.NewReader(in), graph.ImportOptions{BatchSize: 400}); err != nil {
				t.Fatal(err)
			}
			if _, err := graph.Import(t.Context(), batched, strings.NewReader(in), graph.ImportOptions{BatchSize: 400, Partial: true}); err != nil {
				t.Fatal(err)
			}
			graphtest.CheckOK(t, load)
			keysPresent(t, load)
			if got, want := derivedTables(t, load), derivedTables(t, batched); got != want {
				t.Errorf("the load's derived tables differ from those written batch by batch:\n%s", diffLines(got, want))
			}
			res, err := graph.Search(t.Context(), load, graph.SearchQuery{Text: "internationalization", Limit: 1000}, graph.Limits{MaxResults: 1000})
			if err != nil || len(res.Hits) == 0 {
				t.Errorf("search: %d hits, %v", len(res.Hits), err)
			}
		})
	}
}

// diffLines returns the first lines where got and want differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var out strings.Builder
	for i := 0; i < max(len(g), len(w)) && out.Len() < 2000; i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			fmt.Fprintf(&out, "line %d: got %q, want %q\n", i+1, a, b)
		}
	}
	return out.String()
}

// An import into an empty store ends by analyzing what it wrote, with
// autovacuum off for the tables: the planner knows their rows and has
// statistics of their columns (pg_stats, which only ANALYZE writes; a
// fast load's index builds count the rows too).
func TestImportSettlesTables(t *testing.T) {
	const n = 2000
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d","tier":%d}}`+"\n", i, i, i%4)
	}
	for i := range n - 1 {
		fmt.Fprintf(&in, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", i, i+1)
	}
	for _, durable := range []bool{false, true} { // a bulk load, and one of durable commits
		s := open(t, pgtest.NewDatabase(t))
		if _, err := s.Pool().Exec(t.Context(), `ALTER TABLE lore_nodes SET (autovacuum_enabled = false);
			ALTER TABLE lore_edges SET (autovacuum_enabled = false)`); err != nil {
			t.Fatal(err)
		}
		if _, err := graph.Import(t.Context(), s, strings.NewReader(in.String()), graph.ImportOptions{Durable: durable}); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			table string
			rows  int
		}{{"lore_nodes", n}, {"lore_edges", n - 1}} {
			var tuples float64
			var stats bool
			if err := s.Pool().QueryRow(t.Context(), `SELECT reltuples, EXISTS (SELECT 1 FROM pg_stats WHERE tablename = $1) FROM pg_class WHERE relname = $1`, c.table).Scan(&tuples, &stats); err != nil {
				t.Fatal(err)
			}
			if int(tuples) != c.rows || !stats {
				t.Errorf("durable %v: %s after the import: the planner counts %.0f rows (of %d); column statistics: %v", durable, c.table, tuples, c.rows, stats)
			}
		}
	}
}
