package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
)

// An all-or-nothing load (graph.AtomicLoader) into a store that holds,
// and held, nothing runs on a connection of its own, which holds two
// session advisory locks for the load's duration: lockLoad, which says a
// load is alive, and lockCommit, the commit point, so that every other
// writer of every process waits for the load to end. The load's batches
// commit on that connection and skip the transaction-level lock they
// already hold; any other write through this Store is ErrConflict.
//
// A row 'loading' in lore_meta, committed before the first batch and
// deleted by the commit that ends the load, marks the load. Undoing it
// (done(false), or a dead load found later) truncates every table a load
// fills and records in lore_meta's 'base' the last sequence number given
// out, so that the change log's numbers keep growing (see lastSeqSQL).
// The marker plus a free lockLoad means the loader died (its session
// ended, which released its locks): the next Open, the next load and the
// next writer to find it undo the load first.
//
// A fast load commits with synchronous_commit off on its connection: each
// commit is atomic but not flushed; the load's last commit, which deletes
// the marker, is synchronous and flushes them all (and those of
// buildDeferred). A crash of PostgreSQL may lose the load's last commits,
// never the marker, so the load is then undone whole.

// A fast load also defers the primary keys of lore_prop and
// lore_postings, its two largest tables, whose rows it copies in random
// key order: building a key once over the loaded rows costs a fraction
// of inserting each row into it (700k postings rows: 1.4 s without the
// key plus 1.2 s to build it, against 7.9 s with it; and see heldRows).
// Until the key is back, nothing may need it: the first commit of the
// load that does more than add elements (one given again in a later
// batch, or deleted), or its first write through Apply, builds the keys
// first, in its transaction, and the load goes on with them; else the
// load's end builds them (see buildDeferred, earlyBuild). Readers
// meanwhile scan the tables. The keys are dropped after the marker is
// committed, so a load that dies with them dropped is undone, which
// builds them again.
//
// The keys of the records (lore_nodes, lore_edges) are deferred the same
// way: while the load only adds elements, it knows that each is new (see
// loaded) and copies it, and nothing it does needs the keys but the
// planning of an element it wrote before (then a scan, once: that
// element's commit builds the keys). At 100k nodes, inserting into the
// two keys took 0.29 and 0.85 s of PostgreSQL's CPU against 0.09 and
// 0.29 s to build them over the rows.
const (
	dropKeys = `ALTER TABLE lore_postings DROP CONSTRAINT lore_postings_pkey;
		ALTER TABLE lore_prop DROP CONSTRAINT lore_prop_pkey;
		ALTER TABLE lore_nodes DROP CONSTRAINT lore_nodes_pkey;
		ALTER TABLE lore_edges DROP CONSTRAINT lore_edges_pkey`
	addPostingsKey = `ALTER TABLE lore_postings ADD CONSTRAINT lore_postings_pkey PRIMARY KEY (token, type, id)`
	addPropKey     = `ALTER TABLE lore_prop ADD CONSTRAINT lore_prop_pkey PRIMARY KEY (type, prop, val, id)`
	addNodesKey    = `ALTER TABLE lore_nodes ADD CONSTRAINT lore_nodes_pkey PRIMARY KEY (id)`
	addEdgesKey    = `ALTER TABLE lore_edges ADD CONSTRAINT lore_edges_pkey PRIMARY KEY (from_id, label, to_id, key)`
	// The edges' key, built as an index first: its build shares the
	// table with other reads and builds, the key's lock does not.
	addEdgesKeyIndex = `CREATE UNIQUE INDEX lore_edges_pkey ON lore_edges (from_id, label, to_id, key)`
	addEdgesKeyUsing = `ALTER TABLE lore_edges ADD CONSTRAINT lore_edges_pkey PRIMARY KEY USING INDEX lore_edges_pkey`
)

// A fast load also drops the secondary indexes of the records (nodes by
// type, edges by their end), which nothing the load does needs but the
// planning of a node delete (then a scan), and builds them at its end; an
// undone load builds them again if they are missing.
const (
	dropIndexes  = `DROP INDEX lore_nodes_type; DROP INDEX lore_edges_in`
	addNodesType = `CREATE INDEX IF NOT EXISTS lore_nodes_type ON lore_nodes (type, id)`
	addEdgesIn   = `CREATE INDEX IF NOT EXISTS lore_edges_in ON lore_edges (to_id, label, from_id, key)`
	addIndexes   = addNodesType + `; ` + addEdgesIn
)

// A fast load writes no edge summaries (lore_degrees) as it commits: its
// end counts them from the edges at once (at 100k nodes, the commits'
// upserts of 200k summaries took 2.9 s of a 13 s load). Readers
// meanwhile see the edges, and no summaries of them. Nothing else writes
// the summaries during the load, so their key is dropped with the others
// and built after them: one scan of the edges and a key built once took
// a quarter less time than two scans inserting into the key (200k
// summaries, six interleaved runs on a shared machine: 1.1-2.5 s against
// 1.4-5.0 s).
const (
	dropDegreesKey = `ALTER TABLE lore_degrees DROP CONSTRAINT lore_degrees_pkey; DROP INDEX IF EXISTS lore_degrees_rank`
	addDegreesKey  = `ALTER TABLE lore_degrees ADD CONSTRAINT lore_degrees_pkey PRIMARY KEY (node_id, label, inbound);
	CREATE INDEX IF NOT EXISTS lore_degrees_rank ON lore_degrees (type, label, inbound, n DESC, node_id)`
	writeDegrees = `DELETE FROM lore_degrees;
	INSERT INTO lore_degrees (node_id, label, inbound, n, type) SELECT e.id, e.label, e.inbound, count(*), n.type
		FROM (SELECT from_id AS id, label, false AS inbound FROM lore_edges UNION ALL SELECT to_id, label, true FROM lore_edges) e
		JOIN lore_nodes n ON n.id = e.id GROUP BY e.id, e.label, e.inbound, n.type;
	` + addDegreesKey
)

// load is an all-or-nothing load under way.
type load struct {
	mu    sync.Mutex // held while a commit of the load uses conn (Close waits for it)
	conn  *pgx.Conn
	fast  bool        // the load writes the edge summaries at its end
	keys  []string    // the statements that build the keys of lore_nodes, lore_edges, lore_prop and lore_postings it deferred, not built yet
	early *earlyBuild // the build of what the load's nodes derive, begun when its edges began; nil if none
	rows  derivedRows // the derived rows of the commit under way
	held  *heldRows   // the derived rows the load holds; nil once it holds none
	// loaded is what the load committed, while ApplyStream planned all
	// its batches; nil once one was not (see loaded).
	loaded *loaded
}

// restoreKeys writes the rows the load holds in tx, unless the writes
// of a load's commit leave it to hold their rows too, and builds the
// deferred keys unless the writes only add elements. ld may be nil (no
// load).
func (ld *load) restoreKeys(ctx context.Context, tx pgx.Tx, wr *writes, inLoad bool) error {
	if ld == nil || !inLoad {
		return nil
	}
	if ld.held != nil && !wr.held || len(ld.keys) > 0 && !wr.adds {
		if _, err := tx.Exec(ctx, buildSettings); err != nil {
			return err
		}
	}
	if ld.held != nil && !wr.held {
		if err := ld.held.write(ctx, tx); err != nil {
			return fmt.Errorf("writing the rows a load held: %w", err)
		}
		ld.held = nil // (if the commit fails, so does the load)
	}
	if len(ld.keys) == 0 || wr.adds {
		return nil
	}
	if _, err := tx.Exec(ctx, strings.Join(ld.keys, "; ")); err != nil {
		return fmt.Errorf("building the keys a load deferred: %w", err)
	}
	return nil
}

// committed notes that a commit of the load built the deferred keys.
func (ld *load) committed(wr *writes, inLoad bool) {
	if ld != nil && inLoad && !wr.adds {
		ld.keys = nil
	}
}

// A fast load whose input gives its nodes first (as lore export writes
// them) builds what its nodes derive as soon as a batch of edges alone
// comes: the held postings and property index rows with their keys, the
// nodes' key and their index by type, in a transaction of its own on a
// connection of the pool, while the load goes on with its edges, which
// need none of it (at 100k nodes, half of the work of the load's end,
// which the edges' commits, copies into a table without keys, leave
// PostgreSQL time for). A commit of the load that writes nodes or needs
// the keys waits for it first, and so does the load's end; it commits on
// its own, and the load's marker keeps the load undoable meanwhile.
type earlyBuild struct {
	done chan struct{}
	err  error
}

// wait waits for the early build, if any, and returns its error.
func (ld *load) waitEarly() error {
	if ld == nil || ld.early == nil {
		return nil
	}
	<-ld.early.done
	return ld.early.err
}

// startEarly begins the early build of what the load's nodes derive if
// the plan p, the next to commit, is the load's first of edges alone.
func (s *Store) startEarly(ctx context.Context, ld *load, p *graph.Plan) {
	h := ld.held
	if ld.early != nil || h == nil || len(h.ids) == 0 || len(p.Nodes) > 0 || len(p.Edges) == 0 || !ld.fast {
		return
	}
	steps := []string{addPostingsKey, addPropKey, addNodesKey}
	if !slices.Equal(ld.keys, []string{addNodesKey, addEdgesKey, addPostingsKey, addPropKey}) {
		return
	}
	ld.keys = []string{addEdgesKey}
	ld.held = nil
	eb := &earlyBuild{done: make(chan struct{})}
	ld.early = eb
	// The import's context ends with its reading, before the load's end
	// waits for this build.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(eb.done)
		eb.err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, buildSettings); err != nil {
				return err
			}
			h.ranks()
			if err := h.writePostings(ctx, tx); err != nil {
				return err
			}
			if err := h.writeProps(ctx, tx); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, strings.Join(append(steps, addNodesType), "; "))
			return err
		})
		if eb.err != nil {
			eb.err = fmt.Errorf("building what the load's nodes derive: %w", eb.err)
		} else {
			committed(ld.conn.Config().Database)
		}
	}()
}

// baseSQL is the last sequence number an undone load gave out (0 if none).
const baseSQL = `(SELECT coalesce(max(convert_from(value, 'UTF8')::bigint), 0) FROM lore_meta WHERE key = 'base')`

// lastSeqSQL is the last sequence number given out: the newest entry of
// the change log, or the base an undone load left.
const lastSeqSQL = `greatest((SELECT coalesce(max(seq), 0) FROM lore_changes), ` + baseSQL + `)`

// loadMarkerSQL says whether a load is marked under way.
const loadMarkerSQL = `SELECT EXISTS (SELECT 1 FROM lore_meta WHERE key = 'loading')`

// BeginLoad starts an all-or-nothing load if the store holds, and held,
// nothing (see graph.AtomicLoader); fast defers the flush of its commits
// to its end. It waits for the commits under way in other processes.
func (s *Store) BeginLoad(fast bool) (done func(ok bool) error, ok bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.check() != nil || s.readOnly || s.load != nil {
		return nil, false, nil
	}
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, false, err
	}
	// Closing the connection ends its locks: a marker it committed is
	// then a dead load's, which the next writer or open undoes.
	if ok, err := beginLoad(ctx, conn, fast); err != nil || !ok {
		conn.Close(ctx)
		return nil, false, err
	}
	// The load holds the commit lock: no model is put in use until it
	// ends, and it writes with the one in use now.
	if _, err := s.refreshModel(ctx, conn); err != nil {
		conn.Close(ctx)
		return nil, false, err
	}
	ld := &load{conn: conn, fast: fast, loaded: newLoaded()}
	if fast {
		ld.held = newHeldRows()
		ld.keys = []string{addNodesKey, addEdgesKey, addPostingsKey, addPropKey}
	}
	s.load = ld
	return func(ok bool) error {
		err := s.endLoad(ld, ok)
		if ok && err == nil {
			s.settleLoad()
		}
		return err
	}, true, nil
}

// loadTables are the tables a load fills, which settleLoad analyzes.
const loadTables = `lore_nodes, lore_edges, lore_prop, lore_postings, lore_degrees, lore_counts, lore_changes`

// settleLoad analyzes the tables a load filled, once it has committed and
// released its locks, as PostgreSQL's manual advises after a bulk load:
// until autovacuum gets to them (a minute or more), the planner knows
// nothing of their rows and plans for empty tables. Two plans fixed
// already (RankByDegree, WalkIndex) read every row of a type that way.
// It samples each table: 0.26 s after a 7.3 s load of 100k nodes. VACUUM as
// well, which marks pages all-visible for index-only scans (a 2-hop
// closure at 20k nodes then took 71 ms rather than 131), cost 1-1.4 s
// of a 9 s load at 100k nodes, and autovacuum does it soon after an
// insert-only load anyway. The load stands if analyzing fails.
func (s *Store) settleLoad() {
	if _, err := s.pool.Exec(context.Background(), `ANALYZE `+loadTables); err != nil {
		s.log.Warn("postgres store: cannot analyze the tables after the load; autovacuum will", "err", err)
	}
}

// beginLoad takes a load's locks on conn, undoes a dead load, checks that
// the store is empty and marks the load.
func beginLoad(ctx context.Context, conn *pgx.Conn, fast bool) (bool, error) {
	var free bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, lockLoad).Scan(&free); err != nil || !free {
		return false, err // another load is under way
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockCommit); err != nil {
		return false, err
	}
	if _, err := undoLoad(ctx, conn, false); err != nil {
		return false, err
	}
	var empty bool
	err := conn.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM lore_nodes) AND NOT EXISTS (SELECT 1 FROM lore_edges)
		AND `+lastSeqSQL+` = `+baseSQL).Scan(&empty)
	if err != nil || !empty {
		return false, err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO lore_meta (key, value) VALUES ('loading', '\x01')`); err != nil {
		return false, err
	}
	committed(conn.Config().Database)
	if fast {
		if _, err := conn.Exec(ctx, dropKeys+`; `+dropDegreesKey+`; `+dropIndexes+`; SET synchronous_commit = off`); err != nil {
			return false, err
		}
		committed(conn.Config().Database)
	}
	return true, nil
}

// endLoad ends the load ld: it keeps what the load wrote (ok) or empties
// the store again, then ends the load's connection and its locks.
func (s *Store) endLoad(ld *load, ok bool) (err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.load != ld {
		return graph.ErrClosed // Close ended the load: the next open undoes it
	}
	s.load = nil
	ctx := context.Background()
	eerr := ld.waitEarly()
	if ok {
		err = eerr
		if err == nil {
			err = s.buildDeferred(ctx, ld)
		}
		if err == nil {
			_, err = ld.conn.Exec(ctx, `SET synchronous_commit = on; DELETE FROM lore_meta WHERE key = 'loading'`)
		}
		if err == nil {
			committed(ld.conn.Config().Database)
		}
		ld.conn.Close(ctx) // which releases the locks
		if err == nil {
			return nil
		}
		err = fmt.Errorf("ending the load: %w", err)
	}
	_, uerr := undoLoad(ctx, ld.conn, false)
	ld.conn.Close(ctx)
	if uerr != nil {
		// The load's connection may be lost (a cancelled statement ends
		// it): undo the load as a dead one, on another, once its session
		// has ended.
		var live bool
		if live, uerr = undoLoad(ctx, s.pool, true); live {
			uerr = errors.New("another load holds the store") // which undoes this one as it begins
		}
	}
	if uerr != nil {
		return errors.Join(err, fmt.Errorf("emptying the store of an import that failed: %w", uerr))
	}
	s.changed.Notify()
	return err
}

// buildDeferred builds what the load ld deferred to its end: the keys,
// the secondary indexes and the edge summaries. It builds them in two
// lanes, each a transaction of its own, one on the load's connection and
// one on a connection of the pool, so that PostgreSQL builds two at a
// time: at 100k nodes, one after the other took 3.2 s, with Lore waiting
// and one core idle. Each lane commits on its own; the load's marker,
// deleted after both, keeps the load undoable until then, and undoing it
// builds what is missing.
func (s *Store) buildDeferred(ctx context.Context, ld *load) error {
	type step func(tx pgx.Tx) error
	exec := func(sql string) step {
		return func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, sql)
			return err
		}
	}
	degrees := exec(writeDegrees)
	var lanes [2][]step
	if h := ld.held; h != nil {
		h.ranks()
		lanes[0] = append(lanes[0], func(tx pgx.Tx) error { return h.writePostings(ctx, tx) })
		lanes[1] = append(lanes[1], func(tx pgx.Tx) error { return h.writeProps(ctx, tx) })
	}
	switch {
	case ld.early != nil:
		// What the nodes derive is built: the rest is of the edges. Both
		// lanes read lore_edges, so its key (unless a commit built it) is
		// an index until the other lane has committed, then the key (whose
		// lock would have them wait for each other).
		if len(ld.keys) > 0 {
			lanes[0] = append(lanes[0], exec(addEdgesKeyIndex))
		}
		lanes[0] = append(lanes[0], exec(addEdgesIn))
		if len(ld.keys) > 0 {
			lanes[0] = append(lanes[0], exec(addEdgesKeyUsing))
		}
		lanes[1] = append(lanes[1], degrees)
	default:
		if len(ld.keys) > 0 {
			lanes[0] = append(lanes[0], exec(addPostingsKey), exec(addNodesKey))
			lanes[1] = append(lanes[1], exec(addPropKey), exec(addEdgesKey))
		}
		if ld.fast {
			lanes[0] = append(lanes[0], exec(addNodesType))
			lanes[1] = append(lanes[1], degrees, exec(addEdgesIn))
		}
	}
	run := func(q beginner, steps []step) error {
		if len(steps) == 0 {
			return nil
		}
		err := pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, buildSettings); err != nil {
				return err
			}
			for _, st := range steps {
				if err := st(tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil {
			committed(ld.conn.Config().Database)
		}
		return err
	}
	var err1 error
	var wg sync.WaitGroup
	wg.Go(func() { err1 = run(s.pool, lanes[1]) })
	err0 := run(ld.conn, lanes[0])
	wg.Wait()
	if err := errors.Join(err0, err1); err != nil {
		return fmt.Errorf("building what the load deferred: %w", err)
	}
	return nil
}

// buildSettings are the settings of a load's builds: the server's
// defaults (64 MB, 4 MB) had the keys' sorts and the edge summaries'
// grouping spill to disk (at 100k nodes the summaries took 1.56 s of CPU
// at 4 MB, 0.64 s at 256 MB); PostgreSQL takes only the memory a sort
// or a grouping needs. The statement timeout that bounds reads (see
// Config.StatementTimeout) does not bound them: at 1M nodes, on a busy
// machine, counting the edge summaries took longer than its 60 s, and
// the load failed at its end.
const buildSettings = `SET LOCAL maintenance_work_mem = '1GB'; SET LOCAL work_mem = '512MB'; SET LOCAL statement_timeout = 0`

// crashPoints, set by a test, is called after every commit of an
// all-or-nothing load (and of its begin and end), with the database's
// name: a point where the loading process may die. A package variable, as
// in graph/bolt; a test that sets it skips other tests' databases.
var crashPoints atomic.Pointer[func(database string)]

func committed(database string) {
	if f := crashPoints.Load(); f != nil {
		(*f)(database)
	}
}

// beginner is what undoLoad runs its transaction on.
type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// undoLoad empties the store of a load marked under way, unless the load
// is alive on another connection (then it reports live); wait waits up to
// 10 s for it to end instead. q may be the load's own connection.
func undoLoad(ctx context.Context, q beginner, wait bool) (live bool, err error) {
	err = pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
		var marked bool
		if err := tx.QueryRow(ctx, loadMarkerSQL).Scan(&marked); err != nil || !marked {
			return err
		}
		lock := `SELECT pg_try_advisory_xact_lock($1)`
		if wait {
			if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '10s'`); err != nil {
				return err
			}
			lock = `SELECT true FROM pg_advisory_xact_lock($1)`
		}
		var free bool
		if err := tx.QueryRow(ctx, lock, lockLoad).Scan(&free); err != nil || !free {
			live = true
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockCommit); err != nil {
			return err
		}
		var last int64
		err := tx.QueryRow(ctx, `SELECT `+lastSeqSQL+`, EXISTS (SELECT 1 FROM lore_meta WHERE key = 'loading')`).Scan(&last, &marked)
		if err != nil || !marked {
			return err
		}
		_, err = tx.Exec(ctx, `TRUNCATE lore_nodes, lore_edges, lore_prop, lore_postings, lore_degrees, lore_counts, lore_changes;
			DELETE FROM lore_meta WHERE key = 'loading';
			INSERT INTO lore_meta (key, value) VALUES ('base', convert_to(`+strconv.FormatInt(last, 10)+`::text, 'UTF8'))
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, addIndexes); err != nil {
			return err
		}
		var noNodesKey, noEdgesKey, noPostingsKey, noPropKey, noDegreesKey bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('lore_nodes_pkey') IS NULL, to_regclass('lore_edges_pkey') IS NULL,
			to_regclass('lore_postings_pkey') IS NULL, to_regclass('lore_prop_pkey') IS NULL, to_regclass('lore_degrees_pkey') IS NULL`).
			Scan(&noNodesKey, &noEdgesKey, &noPostingsKey, &noPropKey, &noDegreesKey); err != nil {
			return err
		}
		for _, add := range []struct {
			missing bool
			sql     string
		}{{noNodesKey, addNodesKey}, {noEdgesKey, addEdgesKey}, {noPostingsKey, addPostingsKey}, {noPropKey, addPropKey}, {noDegreesKey, addDegreesKey}} {
			if add.missing {
				if _, err := tx.Exec(ctx, add.sql); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return live, err
}

// ApplyStream applies the batches of in one after another, as Apply does
// (see graph.Pipeliner). During an all-or-nothing load they are the
// load's own, and each is planned while the one before it commits: no
// other writer can commit meanwhile, so what the load committed plus the
// plan in flight is the state the batch applies to, and the load knows
// which elements it committed (see loaded).
func (s *Store) ApplyStream(ctx context.Context, in <-chan *graph.StreamBatch, handle func(*graph.StreamBatch, *graph.Result, error) bool) {
	s.wmu.Lock()
	ld := s.load
	s.wmu.Unlock()
	if ld != nil && !graph.InLoad(ctx) {
		// Only the load's own stream writes while it is under way, as
		// Apply refuses other writes: undoing the load would undo them.
		select {
		case sb, ok := <-in:
			if ok {
				handle(sb, nil, fmt.Errorf("an import is loading the store, all or nothing; write when it has finished: %w", graph.ErrConflict))
			}
		case <-ctx.Done():
		}
		return
	}
	type flight struct {
		sb   *graph.StreamBatch
		p    *graph.Plan
		done chan error
	}
	var cur *flight
	var l *loaded
	if ld != nil {
		l = ld.loaded
	}
	// finish waits for the batch in flight and reports it.
	finish := func() bool {
		f := cur
		cur = nil
		if err := <-f.done; err != nil {
			handle(f.sb, nil, err)
			return false
		}
		if l != nil {
			l.add(f.p)
		}
		return handle(f.sb, f.p.Result, nil)
	}
	for {
		var sb *graph.StreamBatch
		var ok bool
		select {
		case sb, ok = <-in:
		case <-ctx.Done(): // the reader may be blocked on its input
		}
		if !ok {
			break
		}
		b := sb.Batch
		if ld == nil || b == nil || b.Len() == 0 || len(b.DeleteNodes) > 0 || b.IdempotencyKey != "" || b.DryRun {
			if cur != nil && !finish() {
				return
			}
			if l != nil {
				l, ld.loaded = nil, nil // a write planned without it
			}
			var res *graph.Result
			var err error
			if b != nil && b.Len() > 0 {
				res, err = s.apply(ctx, b, true)
			}
			if !handle(sb, res, err) {
				return
			}
			continue
		}
		var snap graph.Snapshot = &pgSnap{tx: s.pool}
		if l != nil {
			snap = loadSnap{&pgSnap{tx: s.pool}, l}
		}
		if cur != nil {
			snap = graph.OverlaySnapshot(snap, cur.p)
		}
		t := graph.NormalizeTime(time.Now())
		p, err := graph.PlanBatch(ctx, s.Model(), snap, b, t)
		if cur != nil && !finish() {
			return
		}
		if err != nil || p.Empty() {
			var res *graph.Result
			if p != nil {
				res = p.Result
			}
			if !handle(sb, res, err) {
				return
			}
			continue
		}
		cur = &flight{sb: sb, p: p, done: make(chan error, 1)}
		go func(f *flight) { f.done <- s.commitLoad(ctx, ld, f.p) }(cur)
	}
	if cur != nil {
		finish()
	}
}

// commitLoad commits a plan of the load ld on its connection.
func (s *Store) commitLoad(ctx context.Context, ld *load, p *graph.Plan) error {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	s.startEarly(ctx, ld, p)
	if len(p.Nodes) > 0 || !planAdds(p) {
		if err := ld.waitEarly(); err != nil {
			return err
		}
	}
	tx, err := ld.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background()) // after Commit, a no-op
	seq, err := s.lastSeq(ctx, tx)
	if err != nil {
		return err
	}
	seq++
	p.Result.Seq, p.Change.Seq = seq, seq
	rows := ld.rows.reset()
	if ld.held != nil && !ld.held.full() {
		rows.hold = ld.held
	}
	rows.deferred = len(ld.keys) > 0
	wr := planWrites(s.Model(), p, ld.fast, rows)
	wr.last.Queue(`INSERT INTO lore_changes (seq, data) VALUES ($1, $2)`, int64(seq), graph.EncodeChange(p.Change))
	wr.last.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, fmt.Sprint(seq))
	if err := ld.restoreKeys(ctx, tx, wr, true); err != nil {
		return err
	}
	if err := wr.exec(ctx, tx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	committed(ld.conn.Config().Database)
	ld.committed(wr, true)
	graph.RaiseMinSeq(ctx, seq)
	if s.rs == nil {
		s.announce(seq)
	}
	return nil
}

var (
	_ graph.AtomicLoader = (*Store)(nil)
	_ graph.Pipeliner    = (*Store)(nil)
)
