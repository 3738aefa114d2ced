package postgres

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// # The model in use, across replicas
//
// The model in use is the database's: lore_meta's 'model'. Putting another
// one in use (adoptModel) commits, under the commit lock and in the
// transaction that saves it, a change-log entry of its own (graph.OpModel)
// and its sequence number as lore_meta's 'modelSeq'. Each Store keeps the
// model it uses with that number, and takes the database's again when the
// number grows:
//
//   - Apply (and Repair) read 'modelSeq' in the statement batch that takes
//     the commit lock, so a write is planned, validated and derived with
//     the model in use when it commits, never one another replica has
//     replaced: a model change and a write are ordered by the lock, as two
//     writes are. The check costs no round trip.
//   - The listener, before it wakes Changed's waiters for a newer entry,
//     reads 'modelSeq' and reloads the model if it grew, so a subscriber
//     that learns of the model's entry finds the new model in Model().
//
// A sequence number rather than the model's version (its hash): numbers
// only grow, so a Store that reloads twice at once keeps the newer model
// whatever order the loads end in, and a model put in use again later
// (A, B, then A) is a change like any other.

// inUse is the model a Store uses and the change-log entry that put it in
// use (0: the store's first model, or one no entry recorded).
type inUse struct {
	m   *schema.Model
	seq uint64
}

// modelSeqSQL reads the entry that put the model in use (NULL if none did).
const modelSeqSQL = `SELECT (SELECT value FROM lore_meta WHERE key = 'modelSeq')`

// decodeModelSeq decodes lore_meta's 'modelSeq' (nil: 0).
func decodeModelSeq(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// setModel makes u the model in use unless the Store already uses one put
// in use later: concurrent reloads keep the newest.
func (s *Store) setModel(u *inUse) {
	s.modelMu.Lock()
	defer s.modelMu.Unlock()
	if cur := s.model.Load(); cur == nil || u.seq >= cur.seq {
		s.model.Store(u)
	}
}

// followModel reloads the model from q if dbSeq, the database's
// 'modelSeq', is newer than the model the Store uses, and returns the
// model to use.
func (s *Store) followModel(ctx context.Context, q querier, dbSeq uint64) (*schema.Model, error) {
	cur := s.model.Load()
	if dbSeq <= cur.seq {
		return cur.m, nil
	}
	var raw, seq []byte
	if err := q.QueryRow(ctx, `SELECT (SELECT value FROM lore_meta WHERE key = 'model'), (SELECT value FROM lore_meta WHERE key = 'modelSeq')`).Scan(&raw, &seq); err != nil {
		return nil, fmt.Errorf("reading the model another replica put in use: %w", err)
	}
	m, err := schema.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("the model another replica put in use (change %d): %w", decodeModelSeq(seq), err)
	}
	s.setModel(&inUse{m: m, seq: decodeModelSeq(seq)})
	return s.model.Load().m, nil
}

// refreshModel reads the database's 'modelSeq' and follows it (see
// followModel).
func (s *Store) refreshModel(ctx context.Context, q querier) (*schema.Model, error) {
	var v []byte
	if err := q.QueryRow(ctx, modelSeqSQL).Scan(&v); err != nil {
		return nil, err
	}
	return s.followModel(ctx, q, decodeModelSeq(v))
}

// modelChange is the change-log entry of a model change.
func modelChange(seq uint64) *graph.Change {
	return &graph.Change{Seq: seq, Time: graph.NormalizeTime(time.Now()), Op: graph.OpModel}
}

// UseModel puts m in use for every replica (see graph.ModelSwitcher and
// adoptModel): under the commit lock, it rebuilds what m changes in the
// derived indexes and commits m with its change-log entry.
func (s *Store) UseModel(ctx context.Context, m *schema.Model, at uint64) (seq uint64, err error) {
	defer wrap(&err, "UseModel")
	if s.readOnly {
		return 0, fmt.Errorf("the store is open for reading only: %w", graph.ErrInvalid)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.check(); err != nil {
		return 0, err
	}
	if s.load != nil {
		return 0, fmt.Errorf("an import is loading the store, all or nothing; change the model when it has finished: %w", graph.ErrConflict)
	}
	before := s.model.Load().seq
	if err := s.adoptModel(ctx, m, &at); err != nil {
		return 0, err
	}
	if seq = s.model.Load().seq; seq == before {
		return 0, nil // m was in use already
	}
	graph.RaiseMinSeq(ctx, seq)
	if s.rs == nil {
		s.announce(seq)
	}
	return seq, nil
}
