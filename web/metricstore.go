package web

import (
	"context"
	"errors"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// Store returns s with every operation timed into
// lore_store_operation_duration_seconds{op} (failures counted in
// lore_store_operation_errors_total{op}) and each commit counted in
// lore_commits_total. The result implements graph.LogReader and
// graph.CursorKeyer exactly when s does, so change feeds and cursors work
// through it as through s; it hides s's other optional interfaces (a
// Checker, a Pipeliner, …), which the surfaces do not use: give those
// operations s itself.
func (m *Metrics) Store(s graph.Store) graph.Store {
	ms := &meteredStore{s: s, m: m}
	lr, log := s.(graph.LogReader)
	ck, key := s.(graph.CursorKeyer)
	switch {
	case log && key:
		return &meteredLogKey{meteredStore: ms, lr: lr, ck: ck}
	case log:
		return &meteredLog{meteredStore: ms, lr: lr}
	case key:
		return &meteredKey{meteredStore: ms, ck: ck}
	}
	return ms
}

// meteredStore times the Store methods of s.
type meteredStore struct {
	s graph.Store
	m *Metrics
}

// op times one operation; done records it with its error.
func (ms *meteredStore) op(name string) (done func(error)) {
	start := time.Now()
	return func(err error) {
		ms.m.storeSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
		if err != nil {
			ms.m.storeErrors.WithLabelValues(name).Inc()
		}
	}
}

func (ms *meteredStore) Model() *schema.Model { return ms.s.Model() }

func (ms *meteredStore) Apply(ctx context.Context, b *graph.Batch) (*graph.Result, error) {
	done := ms.op("apply")
	r, err := ms.s.Apply(ctx, b)
	done(err)
	if err == nil && r != nil && r.Seq > 0 {
		ms.m.commits.Inc()
	}
	return r, err
}

func (ms *meteredStore) Node(ctx context.Context, id graph.ID) (*graph.Node, error) {
	done := ms.op("node")
	n, err := ms.s.Node(ctx, id)
	done(ignoreNotFound(err))
	return n, err
}

func (ms *meteredStore) Nodes(ctx context.Context, ids []graph.ID) ([]*graph.Node, error) {
	done := ms.op("nodes")
	n, err := ms.s.Nodes(ctx, ids)
	done(err)
	return n, err
}

func (ms *meteredStore) Edge(ctx context.Context, k graph.EdgeKey) (*graph.Edge, error) {
	done := ms.op("edge")
	e, err := ms.s.Edge(ctx, k)
	done(ignoreNotFound(err))
	return e, err
}

func (ms *meteredStore) Edges(ctx context.Context, q graph.EdgeQuery) (*graph.EdgePage, error) {
	done := ms.op("edges")
	p, err := ms.s.Edges(ctx, q)
	done(err)
	return p, err
}

func (ms *meteredStore) NodesByType(ctx context.Context, typ string, pg graph.Page) (*graph.NodePage, error) {
	done := ms.op("nodes_by_type")
	p, err := ms.s.NodesByType(ctx, typ, pg)
	done(err)
	return p, err
}

func (ms *meteredStore) Lookup(ctx context.Context, q graph.IndexQuery) (*graph.IDPage, error) {
	done := ms.op("lookup")
	p, err := ms.s.Lookup(ctx, q)
	done(err)
	return p, err
}

func (ms *meteredStore) Postings(ctx context.Context, q graph.PostingQuery) (*graph.PostingPage, error) {
	done := ms.op("postings")
	p, err := ms.s.Postings(ctx, q)
	done(err)
	return p, err
}

func (ms *meteredStore) Terms(ctx context.Context, q graph.TermQuery) ([]graph.Term, error) {
	done := ms.op("terms")
	t, err := ms.s.Terms(ctx, q)
	done(err)
	return t, err
}

func (ms *meteredStore) ScanNodes(ctx context.Context, pg graph.Page) (*graph.NodePage, error) {
	done := ms.op("scan_nodes")
	p, err := ms.s.ScanNodes(ctx, pg)
	done(err)
	return p, err
}

func (ms *meteredStore) ScanEdges(ctx context.Context, pg graph.Page) (*graph.EdgePage, error) {
	done := ms.op("scan_edges")
	p, err := ms.s.ScanEdges(ctx, pg)
	done(err)
	return p, err
}

func (ms *meteredStore) Stats(ctx context.Context) (*graph.Stats, error) {
	done := ms.op("stats")
	st, err := ms.s.Stats(ctx)
	done(err)
	return st, err
}

func (ms *meteredStore) Since(ctx context.Context, seq uint64, limit int) ([]graph.Change, error) {
	done := ms.op("since")
	c, err := ms.s.Since(ctx, seq, limit)
	done(err)
	return c, err
}

func (ms *meteredStore) Changed() <-chan struct{} { return ms.s.Changed() }

func (ms *meteredStore) Close() error { return ms.s.Close() }

// ignoreNotFound keeps a lookup of a missing element out of the error count.
func ignoreNotFound(err error) error {
	if errors.Is(err, graph.ErrNotFound) {
		return nil
	}
	return err
}

func readRawLog(ms *meteredStore, lr graph.LogReader, ctx context.Context, seq uint64, newest bool, limit int) ([]graph.LogEntry, error) {
	done := ms.op("read_log")
	e, err := lr.ReadRawLog(ctx, seq, newest, limit)
	done(err)
	return e, err
}

type meteredLog struct {
	*meteredStore
	lr graph.LogReader
}

func (s *meteredLog) ReadRawLog(ctx context.Context, seq uint64, newest bool, limit int) ([]graph.LogEntry, error) {
	return readRawLog(s.meteredStore, s.lr, ctx, seq, newest, limit)
}

type meteredKey struct {
	*meteredStore
	ck graph.CursorKeyer
}

func (s *meteredKey) CursorKey() []byte { return s.ck.CursorKey() }

type meteredLogKey struct {
	*meteredStore
	lr graph.LogReader
	ck graph.CursorKeyer
}

func (s *meteredLogKey) ReadRawLog(ctx context.Context, seq uint64, newest bool, limit int) ([]graph.LogEntry, error) {
	return readRawLog(s.meteredStore, s.lr, ctx, seq, newest, limit)
}

func (s *meteredLogKey) CursorKey() []byte { return s.ck.CursorKey() }
