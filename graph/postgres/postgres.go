// Package postgres is a graph.Store on PostgreSQL, through pgx v5: Lore's
// own schema (nodes, edges, derived indexes, edge summaries, the change log
// and idempotency keys in plain tables), so that several stateless Lore
// replicas can share one database.
//
// # Schema and its choices
//
// Properties are kept as their canonical JSON text (props text), not as
// JSONB: a NodeRecord's Props must come back byte for byte as PlanBatch
// made them (an upsert with equal bytes is Unchanged), and JSONB rewrites
// them (it orders keys by length, reformats numbers such as 1e2 as 100,
// and refuses "\u0000" in strings). SQL users cast props::jsonb.
//
// The property index is a value table (lore_prop: type, property, value,
// ID), the value encoded by graph.EncodeIndexValue as bytea, not expression
// indexes over JSONB: Lookup must list values in EncodeIndexValue's order
// (null < false < true < numbers < strings, numbers as float64, strings
// bytewise, arrays by their elements), which no JSONB operator class
// gives, and a model's indexed properties change at run time, which would
// need DDL per property. Measured on PostgreSQL 15 with 100k nodes and two
// indexed properties (pgbench, 2,000 runs each, on this 2-core machine
// under load): equality lookups of 100 IDs took 0.335 ms on the value
// table against 0.409 ms on a (type, props->'tier', id) expression index,
// and 0.242 against 0.282 ms on a unique name; a range of 100, 1.015
// against 1.039 ms. Loading the 100k rows took 3.8 s (records, then
// value rows) against 4.8 s (records with two expression indexes). The
// value table is larger: 34 MB against 20 MB of expression indexes.
//
// Every text column that Lore compares is COLLATE "C", so comparisons are
// bytewise as the Store contract says, whatever the database's collation.
//
// # Writes
//
// Apply runs one READ COMMITTED transaction that first takes a
// transaction-level advisory lock (the commit point: it serialises writers
// across every process on the database), then plans the batch with
// graph.PlanBatch over a Snapshot read inside that transaction (so expected
// revisions are checked under the lock), writes the plan, its derived rows,
// the change-log entry (seq = last + 1: gapless, since only the lock holder
// writes one) and the idempotency key, NOTIFYs the channel and commits.
// READ COMMITTED, not REPEATABLE READ, because a repeatable-read snapshot
// would be taken by the statement that waits for the lock, before the
// previous writer committed.
//
// # Loads
//
// An all-or-nothing import into an empty store (graph.AtomicLoader) is
// read once and committed as it is read, on a connection that holds the
// commit lock for the whole load (other processes' writers wait; this
// Store's are ErrConflict), each batch planned while the one before it
// commits, against what the load committed (which the load keeps track
// of, so that planning reads only elements given again), and undone
// (TRUNCATE) if it fails or its process dies. A fast load (the default)
// flushes its commits once, at its end; it copies its records into tables
// without keys, holds its postings and property index rows in memory, and
// builds the keys, secondary indexes and edge summaries at its end, two
// at a time, over rows it writes sorted by key where it can, or, for
// what its nodes derive, as soon as its edges begin. See load.go,
// loadheld.go and loadsnap.go.
//
// # Reads
//
// A read that needs one statement runs it alone (a statement sees one
// snapshot); one that needs several runs them in a REPEATABLE READ, read
// only transaction. Context deadlines cancel statements (pgx), and
// Config.StatementTimeout is a ceiling set on every connection.
//
// # Changed across processes
//
// A listener goroutine holds a dedicated connection that LISTENs on the
// channel; a notification, or a poll of the newest sequence number (every
// PollMin, backing off to PollMax while nothing changes), compares the
// log's newest entry with the last one this Store announced and wakes
// Changed's waiters if it is newer. The log table is the truth; a lost
// notification costs at most one poll interval.
//
// # The model in use
//
// The model is the database's, not a replica's: putting another in use
// commits a change-log entry (graph.OpModel), and every Store takes the
// new model before it writes again and before it announces that entry.
// See model.go.
//
// # Reads from a standby
//
// With Config.ReadURL, a Store reads from a hot standby of its database
// and writes to the primary. The standby replays the primary's commits a
// little later (a few milliseconds on a local network); two rules keep
// that lag from showing:
//
//   - Changed follows the standby's replay, not the primary's log: the
//     listener hears the primary's NOTIFY (a standby cannot LISTEN) and
//     then polls the standby's newest change-log entry every ReplayPoll
//     until it has replayed it, and only then wakes Changed's waiters,
//     this Store's own commits included. A subscriber woken by Changed
//     therefore finds the change with Since, and the changed nodes with
//     Node, on the standby where its reads go.
//   - A read sees at least the change-log entry graph.MinSeq(ctx) (the
//     client's own last write: read-your-writes, across replicas too,
//     since the sequence number travels with the client) and at least the
//     newest one Changed announced (monotonic reads on this Store). If the
//     standby has not replayed it, the read polls the standby's newest
//     entry every ReplayPoll for up to ReadWait, then reads from the
//     primary. Apply raises ctx's floor (graph.RaiseMinSeq) to the entry
//     it committed.
//
// A commit's change-log entry is in the same transaction as its rows, and
// a standby replays transactions atomically, so "the standby has entry N"
// means "the standby shows every write up to N". The standby must be one
// server (or a URL that always reaches the same one): the check and the
// read must meet the same replay position.
//
// When the standby fails (connection refused or lost, shutting down,
// starting up, or a read cancelled by a recovery conflict), the read is
// retried once on the primary, and reads go to the primary, with a
// warning logged, until the listener reaches the standby again (within
// PollMax). A standby outage therefore costs no failed read, only the
// primary's load; an error of the read itself (a timeout, a bad query) is
// returned as it is.
package postgres

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// Config configures Open.
type Config struct {
	// URL is the database, as pgx takes it: postgres://user@host:port/db?….
	// Required.
	URL string
	// Model is the model to validate against. Nil means the model stored
	// in the database, or the default model for a new store. Another
	// model than the stored one must have every node type and edge label
	// the store holds; if it changes what is indexed, Open rebuilds the
	// derived indexes, and saves the model.
	Model *schema.Model
	// StatementTimeout is the longest any statement may run, a ceiling
	// behind the read limits (which cancel through ctx); 0 means
	// DefaultStatementTimeout.
	StatementTimeout time.Duration
	// PollMin and PollMax bound how often a Store polls the change log for
	// other processes' commits when no notification wakes it: from PollMin
	// after a change, doubling to PollMax while nothing changes. 0 means
	// DefaultPollMin and DefaultPollMax.
	PollMin, PollMax time.Duration
	// ReadOnly opens the store for reading: Open fails with an error
	// wrapping graph.ErrNoStore if the database holds no Lore schema, and
	// with another if its schema is older than this Lore's (a writer
	// upgrades it); it creates and upgrades nothing. A Model other than
	// the stored one is used by this Store only, never saved, and refused
	// if it changes what is indexed. Apply refuses writes (but dry runs).
	ReadOnly bool
	// MaxConns is the pool's size; 0 means pgxpool's default (the larger
	// of 4 and the number of CPUs).
	MaxConns int32
	// ReadURL, if set, is a hot standby of URL's database (streaming
	// replication) that serves this Store's reads, while Apply and the
	// change-log listener use URL. See "Reads from a standby" in the
	// package documentation.
	ReadURL string
	// ReadWait is the longest a read waits for the standby to replay the
	// change-log entry it must see (graph.MinSeq) before it reads from
	// the primary instead; 0 means DefaultReadWait.
	ReadWait time.Duration
	// ReplayPoll is how often the standby's newest sequence number is
	// polled while it is behind the primary (a read waiting for it polls
	// after 250 µs first, doubling up to ReplayPoll); 0 means
	// DefaultReplayPoll.
	ReplayPoll time.Duration
	// Logger receives the listener's connection problems; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Defaults of Config's fields.
const (
	DefaultStatementTimeout = 60 * time.Second
	DefaultPollMin          = 50 * time.Millisecond
	DefaultPollMax          = time.Second
	DefaultReadWait         = 100 * time.Millisecond
	DefaultReplayPoll       = 5 * time.Millisecond
)

// notifyChannel is the channel commits NOTIFY, with the new sequence number as payload.
const notifyChannel = "lore_changes"

// Advisory lock keys: the commit point and the migrations. Arbitrary
// constants ("lore" and a number), the same in every process.
const (
	lockCommit  int64 = 0x6c6f7265_00000001
	lockMigrate int64 = 0x6c6f7265_00000002
	lockLoad    int64 = 0x6c6f7265_00000003 // held by a live all-or-nothing load (see BeginLoad)
)

// A Store is a graph.Store on PostgreSQL.
type Store struct {
	pool      *pgxpool.Pool
	cursorKey []byte
	log       *slog.Logger

	// model is the model in use (see model.go); modelMu orders its reloads.
	model   atomic.Pointer[inUse]
	modelMu sync.Mutex

	wmu      sync.Mutex // one Apply at a time in this process (the advisory lock orders processes)
	closed   atomic.Bool
	readOnly bool

	// seen is the newest sequence number Changed's waiters were woken for.
	seenMu  sync.Mutex
	seen    uint64
	changed *graph.Notifier

	rs *readStore // nil: reads go to pool

	load *load // the all-or-nothing load under way, if any (guarded by wmu; see BeginLoad)

	stop     context.CancelFunc // stops the listener
	listener sync.WaitGroup
}

// IsURL reports whether location names a PostgreSQL database (a
// postgres:// or postgresql:// URL) rather than a directory.
func IsURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// Open connects to the database at cfg.URL, brings its schema up to date
// (migrations run under an advisory lock, so replicas starting together
// never race), and starts the change-log listener.
func Open(ctx context.Context, cfg Config) (_ *Store, err error) {
	defer wrap(&err, "open PostgreSQL store %s", Redact(cfg.URL))
	if cfg.URL == "" {
		return nil, fmt.Errorf("no database URL given: %w", graph.ErrInvalid)
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, graph.ErrInvalid)
	}
	timeout := cmp.Or(cfg.StatementTimeout, DefaultStatementTimeout)
	pc.ConnConfig.RuntimeParams["statement_timeout"] = fmt.Sprint(timeout.Milliseconds())
	pc.ConnConfig.RuntimeParams["application_name"] = cmp.Or(pc.ConnConfig.RuntimeParams["application_name"], "lore")
	// Lore's statements are few, fixed and selective (index lookups by
	// equality or range), so one generic plan each serves: re-planning at
	// every execution, as custom plans do, cost a third of a 3-hop query
	// (BenchmarkPlanCache: 2.04 ms against 3.05 ms at 20k nodes). A URL
	// parameter plan_cache_mode=auto restores PostgreSQL's default.
	pc.ConnConfig.RuntimeParams["plan_cache_mode"] = cmp.Or(pc.ConnConfig.RuntimeParams["plan_cache_mode"], "force_generic_plan")
	if cfg.MaxConns > 0 {
		pc.MaxConns = cfg.MaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w; is PostgreSQL running there, and may this user connect?", err)
	}
	s := &Store{pool: pool, changed: graph.NewNotifier(), log: cmp.Or(cfg.Logger, slog.Default()), readOnly: cfg.ReadOnly}
	if err := s.init(ctx, cfg.Model); err != nil {
		pool.Close()
		return nil, err
	}
	if cfg.ReadURL != "" {
		if s.rs, err = openReadStore(ctx, cfg, pc, s.cursorKey); err != nil {
			pool.Close()
			return nil, err
		}
		if seq, err := s.lastSeq(ctx, s.rs.pool); err == nil {
			s.rs.replayed.Store(seq)
			s.seen = min(s.seen, seq)
		}
	}
	lctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.listener.Add(1)
	go s.listen(lctx, pc.ConnConfig.Copy(), cmp.Or(cfg.PollMin, DefaultPollMin), cmp.Or(cfg.PollMax, DefaultPollMax))
	return s, nil
}

// Redact returns a database URL without its password, for messages and
// pages.
func Redact(url string) string {
	if pc, err := pgconn.ParseConfig(url); err == nil && pc.Password != "" {
		return strings.Replace(url, ":"+pc.Password+"@", ":***@", 1)
	}
	return url
}

// init migrates the schema, then loads (or stores) the cursor key and the
// model, and the newest sequence number.
func (s *Store) init(ctx context.Context, model *schema.Model) error {
	if s.readOnly {
		if err := schemaCurrent(ctx, s.pool); err != nil {
			return err
		}
		if err := s.pool.QueryRow(ctx, `SELECT value FROM lore_meta WHERE key = 'cursorKey'`).Scan(&s.cursorKey); err != nil {
			return fmt.Errorf("cursor key: %w", err)
		}
	} else if err := migrate(ctx, s.pool); err != nil {
		return err
	} else if _, err := undoLoad(ctx, s.pool, false); err != nil {
		return fmt.Errorf("undoing an import that did not finish: %w", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	if !s.readOnly {
		var err error
		for range 2 {
			// A replica starting at the same time may insert the key after
			// this statement's snapshot: the insert then waits for it and
			// does nothing, and the select does not see it. The next
			// statement does.
			err = s.pool.QueryRow(ctx, `WITH ins AS (INSERT INTO lore_meta (key, value) VALUES ('cursorKey', $1) ON CONFLICT (key) DO NOTHING RETURNING value)
		SELECT value FROM ins UNION ALL SELECT value FROM lore_meta WHERE key = 'cursorKey'`, key).Scan(&s.cursorKey)
			if err != pgx.ErrNoRows {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("cursor key: %w", err)
		}
	}
	if err := s.adoptModel(ctx, model, nil); err != nil {
		return err
	}
	if !s.readOnly {
		if err := s.reindexSearch(ctx); err != nil {
			return fmt.Errorf("re-indexing the search postings: %w", err)
		}
	}
	seq, err := s.lastSeq(ctx, s.pool)
	if err != nil {
		return err
	}
	s.seen = seq
	return nil
}

// querier is what reads run on: the pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (s *Store) lastSeq(ctx context.Context, q querier) (uint64, error) {
	var seq int64
	err := q.QueryRow(ctx, `SELECT `+lastSeqSQL).Scan(&seq)
	return uint64(seq), err
}

// Model returns the model the store validates against.
// It follows the database's: a model another process puts in use
// replaces it (see model.go).
func (s *Store) Model() *schema.Model { return s.model.Load().m }

// CursorKey returns the store's cursor key, kept in the database so that
// every replica authenticates the others' cursors (see graph.CursorKeyer).
func (s *Store) CursorKey() []byte { return s.cursorKey }

// Changed returns a channel closed when a commit newer than the last one
// announced is seen: at once for this Store's own commits, through
// LISTEN/NOTIFY or polling for other processes'.
func (s *Store) Changed() <-chan struct{} { return s.changed.Wait() }

// announce wakes Changed's waiters if seq is newer than the last commit
// they were woken for.
func (s *Store) announce(seq uint64) {
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	if seq > s.seen {
		s.seen = seq
		s.changed.Notify()
	}
}

// Close waits for the write under way, stops the listener, closes the
// pool and wakes Changed's waiters.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	if ld := s.load; ld != nil {
		// The next open, load or writer undoes the load: unlocked now, it
		// is a dead one.
		ld.mu.Lock()
		ld.conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockLoad)
		ld.conn.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`)
		ld.conn.Close(context.Background())
		ld.mu.Unlock()
		s.load = nil
	}
	s.stop()
	s.listener.Wait()
	s.pool.Close()
	if s.rs != nil {
		s.rs.pool.Close()
	}
	s.changed.Notify()
	return nil
}

// check returns ErrClosed after Close.
func (s *Store) check() error {
	if s.closed.Load() {
		return graph.ErrClosed
	}
	return nil
}

// listen wakes Changed's waiters for commits made by other processes: a
// dedicated connection LISTENs for notifications, and the log's newest
// sequence number is polled after each one, and every interval (PollMin
// after a change, doubling up to PollMax while nothing changes).
func (s *Store) listen(ctx context.Context, cc *pgx.ConnConfig, pollMin, pollMax time.Duration) {
	defer s.listener.Done()
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	wait := pollMin
	var retryAt time.Time // when to try to LISTEN again after a failure
	for ctx.Err() == nil {
		if conn == nil && time.Now().After(retryAt) {
			c, err := pgx.ConnectConfig(ctx, cc)
			if err == nil {
				if _, err = c.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
					c.Close(context.Background())
				}
			}
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("postgres store: cannot LISTEN for other replicas' commits; polling the change log instead", "err", err, "retry", pollMax)
				retryAt = time.Now().Add(pollMax)
			} else {
				conn = c
			}
		}
		if conn != nil {
			wctx, cancel := context.WithTimeout(ctx, wait)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
				s.log.Warn("postgres store: the LISTEN connection failed; polling the change log until it is back", "err", err)
				conn.Close(context.Background())
				conn, retryAt = nil, time.Now().Add(pollMax)
			}
		} else {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		seq, behind, err := s.visibleSeq(ctx)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("postgres store: polling the change log", "err", err)
			}
			wait = pollMax
			continue
		}
		s.seenMu.Lock()
		newer := seq > s.seen
		s.seenMu.Unlock()
		if newer {
			// A model another replica put in use is this Store's before
			// the entry that records it is announced.
			if _, err := s.refreshModel(ctx, s.pool); err != nil && ctx.Err() == nil {
				s.log.Warn("postgres store: reloading the model in use", "err", err)
			}
			s.announce(seq)
			wait = pollMin
		} else {
			wait = min(wait*2, pollMax)
		}
		if behind {
			wait = s.rs.poll // the standby is replaying a commit Changed has yet to announce
		}
	}
}

// wrap adds context to a non-nil error: defer wrap(&err, "Apply").
func wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}

// list names the names of a model's types or labels for an error message.
func list(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Pool returns the store's connection pool, for maintenance and
// measurements (VACUUM, ANALYZE) beside the Store's own statements.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
