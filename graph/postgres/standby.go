package postgres

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lore-dev/lore/graph"
)

// readStore is the standby a Store reads from.
type readStore struct {
	pool     *pgxpool.Pool
	url      string        // redacted, for messages
	wait     time.Duration // Config.ReadWait
	poll     time.Duration // Config.ReplayPoll
	replayed atomic.Uint64 // the standby's newest change-log entry, last seen
	down     atomic.Bool   // the standby failed; reads go to the primary until the listener reaches it

	standby, behind, failed atomic.Int64 // ReadCounts
}

// ReadCounts counts a Store's reads by where they went, for metrics and
// tests. All are 0 without Config.ReadURL.
type ReadCounts struct {
	Standby int64 // served by the standby
	Behind  int64 // served by the primary: the standby had not replayed the entry the read must see within ReadWait
	Failed  int64 // served by the primary: the standby was failing
}

// ReadCounts returns how many reads went where since Open.
func (s *Store) ReadCounts() ReadCounts {
	if s.rs == nil {
		return ReadCounts{}
	}
	return ReadCounts{Standby: s.rs.standby.Load(), Behind: s.rs.behind.Load(), Failed: s.rs.failed.Load()}
}

// openReadStore connects to cfg.ReadURL with the primary's session
// settings and checks that it holds the same Lore store as the primary
// (the cursor key, made once per store, is its identity).
func openReadStore(ctx context.Context, cfg Config, primary *pgxpool.Config, cursorKey []byte) (_ *readStore, err error) {
	defer wrap(&err, "open the read store %s", Redact(cfg.ReadURL))
	pc, err := pgxpool.ParseConfig(cfg.ReadURL)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, graph.ErrInvalid)
	}
	for k, v := range primary.ConnConfig.RuntimeParams {
		if _, set := pc.ConnConfig.RuntimeParams[k]; !set {
			pc.ConnConfig.RuntimeParams[k] = v
		}
	}
	pc.MaxConns = primary.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	var key []byte
	var standby bool
	err = pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), (SELECT value FROM lore_meta WHERE key = 'cursorKey')`).Scan(&standby, &key)
	switch {
	case err == nil && key == nil:
		err = errors.New("it holds no Lore store yet")
	case err == nil && !bytes.Equal(key, cursorKey):
		err = errors.New("it holds another Lore store than the primary")
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w; give it a hot standby of the store's database (streaming replication), running and caught up", err)
	}
	rs := &readStore{pool: pool, url: Redact(cfg.ReadURL), wait: cmp.Or(cfg.ReadWait, DefaultReadWait), poll: cmp.Or(cfg.ReplayPoll, DefaultReplayPoll)}
	if !standby {
		cmp.Or(cfg.Logger, slog.Default()).Warn("postgres store: the read store is not a standby (pg_is_in_recovery() is false); reads go there all the same", "read_store", rs.url)
	}
	return rs, nil
}

// raise records that the standby has replayed entry seq.
func (rs *readStore) raise(seq uint64) {
	for {
		old := rs.replayed.Load()
		if seq <= old || rs.replayed.CompareAndSwap(old, seq) {
			return
		}
	}
}

// fail records that the standby failed with err, logging the first
// failure of an outage.
func (rs *readStore) fail(log *slog.Logger, err error) {
	if !rs.down.Swap(true) {
		log.Warn("postgres store: the read store failed; reading from the primary until it is back", "read_store", rs.url, "err", err)
	}
}

// up records that the standby answered, logging the end of an outage.
func (rs *readStore) up(log *slog.Logger) {
	if rs.down.Swap(false) {
		log.Info("postgres store: the read store is back; reading from it again", "read_store", rs.url)
	}
}

// standbyFailed reports whether err, from a read on the standby, is the
// standby's failure (worth retrying on the primary) rather than the
// read's own.
func standbyFailed(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	for _, e := range []error{graph.ErrNotFound, graph.ErrInvalid, graph.ErrConflict, graph.ErrClosed} {
		if errors.Is(err, e) {
			return false
		}
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P: the server is shutting down or
		// starting up; 53: out of resources (too many connections);
		// 40001: a read cancelled by a conflict with recovery.
		return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "53") || pe.Code == "40001"
	}
	return !pgconn.Timeout(err) // not a server's answer: the connection failed
}

// reader returns where a read made with ctx goes: the standby if it has
// replayed the entry the read must see (waiting for it up to ReadWait),
// else the primary.
func (s *Store) reader(ctx context.Context) querier {
	rs := s.rs
	if rs == nil {
		return s.pool
	}
	if rs.down.Load() {
		rs.failed.Add(1)
		return s.pool
	}
	s.seenMu.Lock()
	floor := max(s.seen, graph.MinSeq(ctx))
	s.seenMu.Unlock()
	if floor <= rs.replayed.Load() {
		return rs.pool
	}
	deadline := time.Now().Add(rs.wait)
	// A standby replays a commit within about a millisecond here: poll
	// soon, then less often, up to ReplayPoll.
	pause := min(rs.poll, 250*time.Microsecond)
	for {
		seq, err := s.lastSeq(ctx, rs.pool)
		if err != nil {
			if standbyFailed(ctx, err) {
				rs.fail(s.log, err)
			}
			rs.failed.Add(1)
			return s.pool
		}
		rs.raise(seq)
		if seq >= floor {
			return rs.pool
		}
		left := time.Until(deadline)
		if left <= 0 {
			rs.behind.Add(1)
			return s.pool
		}
		t := time.NewTimer(min(pause, left))
		pause = min(2*pause, rs.poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return s.pool // the read then fails with ctx's error
		case <-t.C:
		}
	}
}

// readOn runs a read: on the standby or the primary as reader says, and
// again on the primary if the standby fails under it. f must not keep
// state between calls.
func readOn[T any](ctx context.Context, s *Store, f func(db querier) (T, error)) (T, error) {
	db := s.reader(ctx)
	v, err := f(db)
	if db == querier(s.pool) {
		return v, err
	}
	if err != nil && standbyFailed(ctx, err) {
		s.rs.fail(s.log, err)
		s.rs.failed.Add(1)
		return f(s.pool)
	}
	s.rs.standby.Add(1)
	return v, err
}

// visibleSeq returns the newest change-log entry this Store's reads see,
// for the listener: the primary's, or, with a standby, the standby's, and
// whether the standby is behind the primary.
func (s *Store) visibleSeq(ctx context.Context) (seq uint64, behind bool, err error) {
	seq, err = s.lastSeq(ctx, s.pool)
	if err != nil || s.rs == nil {
		return seq, false, err
	}
	rseq, rerr := s.lastSeq(ctx, s.rs.pool)
	if rerr != nil {
		if ctx.Err() == nil {
			s.rs.fail(s.log, rerr)
		}
		return seq, false, nil // reads go to the primary meanwhile
	}
	s.rs.up(s.log)
	s.rs.raise(rseq)
	if rseq < seq {
		return rseq, true, nil
	}
	return seq, false, nil
}
