package postgres

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// idemRec is what lore_idempotency keeps of a keyed batch.
type idemRec struct {
	hash   []byte
	at     time.Time
	result []byte
}

// Apply validates b and commits it atomically with one change-log entry
// (see the package documentation for the commit point).
func (s *Store) Apply(ctx context.Context, b *graph.Batch) (res *graph.Result, err error) {
	return s.apply(ctx, b, false)
}

// apply is Apply; inLoad says the batch is one of an all-or-nothing
// load's own (see BeginLoad), which commits on the load's connection. Any
// other write during a load is ErrConflict.
func (s *Store) apply(ctx context.Context, b *graph.Batch, inLoad bool) (res *graph.Result, err error) {
	if b == nil {
		return nil, fmt.Errorf("nil batch: %w", graph.ErrInvalid)
	}
	if len(b.IdempotencyKey) > graph.MaxIdempotencyKey {
		return nil, fmt.Errorf("idempotency key longer than %d bytes: %w", graph.MaxIdempotencyKey, graph.ErrInvalid)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.readOnly && !b.DryRun {
		return nil, fmt.Errorf("the store is open for reading only: %w", graph.ErrInvalid)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.check(); err != nil {
		return nil, err
	}
	var hash []byte
	if b.IdempotencyKey != "" {
		hash = batchHash(b)
	}
	var p *graph.Plan
	var replay *graph.Result
	ld := s.load
	if ld != nil && !inLoad && !b.DryRun {
		return nil, fmt.Errorf("an import is loading the store, all or nothing; write when it has finished: %w", graph.ErrConflict)
	}
	var tx pgx.Tx
	if ld != nil && inLoad {
		if err := ld.waitEarly(); err != nil {
			return nil, err
		}
		tx, err = ld.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	} else {
		tx, err = s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	}
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background()) // after Commit, a no-op
	m := s.Model()
	if !b.DryRun && (ld == nil || !inLoad) {
		// (A load's connection holds the commit lock for the whole load.)
		// The commit point: every writer of every process waits here.
		// Then, under it, a load still marked under way is a dead one,
		// and a model another replica put in use is this write's.
		lb := &pgx.Batch{}
		lb.Queue(`SELECT pg_advisory_xact_lock($1)`, lockCommit)
		var dead bool
		lb.Queue(loadMarkerSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&dead) })
		var modelSeq []byte
		lb.Queue(modelSeqSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&modelSeq) })
		if err := tx.SendBatch(ctx, lb).Close(); err != nil {
			return nil, fmt.Errorf("waiting for the commit lock: %w", err)
		}
		if m, err = s.followModel(ctx, tx, decodeModelSeq(modelSeq)); err != nil {
			return nil, err
		}
		if dead {
			tx.Rollback(ctx)
			// (Its session may be ending: its locks go one by one.)
			if live, err := undoLoad(ctx, s.pool, true); err != nil || live {
				return nil, errors.Join(err, fmt.Errorf("an import is loading the store, all or nothing; write when it has finished: %w", graph.ErrConflict))
			}
			s.wmu.Unlock()
			defer s.wmu.Lock()
			return s.apply(ctx, b, inLoad)
		}
	}
	if b.IdempotencyKey != "" {
		var rec idemRec
		err := tx.QueryRow(ctx, `SELECT hash, at, result FROM lore_idempotency WHERE key = $1`, []byte(b.IdempotencyKey)).Scan(&rec.hash, &rec.at, &rec.result)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return nil, err
		case !bytes.Equal(rec.hash, hash):
			return nil, fmt.Errorf("idempotency key %q was used for a different batch at %s; use a new key: %w",
				b.IdempotencyKey, rec.at.UTC().Format(time.RFC3339), graph.ErrConflict)
		default:
			replay = new(graph.Result)
			if err := json.Unmarshal(rec.result, replay); err != nil {
				return nil, fmt.Errorf("idempotency key %q: corrupt result: %w", b.IdempotencyKey, err)
			}
			replay.Replayed = true
			graph.RaiseMinSeq(ctx, replay.Seq)
			return replay, nil
		}
	}
	t := graph.NormalizeTime(time.Now())
	p, err = graph.PlanBatch(ctx, m, &pgSnap{tx: tx}, b, t)
	if err != nil {
		return nil, err
	}
	if b.DryRun || p.Empty() && b.IdempotencyKey == "" {
		return p.Result, nil
	}
	var seq uint64
	if !p.Empty() {
		if seq, err = s.lastSeq(ctx, tx); err != nil {
			return nil, err
		}
		seq++
		p.Result.Seq, p.Change.Seq = seq, seq
	}
	wr := planWrites(m, p, ld != nil && inLoad && ld.fast, new(derivedRows))
	// A write of a load through Apply (not ApplyStream) writes the rows the
	// load holds and builds the keys it deferred: its planning, and the
	// load's after it, read the records.
	wr.adds = false
	batch := wr.last
	if !p.Empty() {
		batch.Queue(`INSERT INTO lore_changes (seq, data) VALUES ($1, $2)`, int64(seq), graph.EncodeChange(p.Change))
		batch.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, fmt.Sprint(seq))
	}
	if b.IdempotencyKey != "" {
		r, _ := json.Marshal(p.Result)
		batch.Queue(`INSERT INTO lore_idempotency (key, hash, at, result) VALUES ($1, $2, $3, $4)`, []byte(b.IdempotencyKey), hash, t, r)
	}
	if err := ld.restoreKeys(ctx, tx, wr, inLoad); err != nil {
		return nil, err
	}
	if err := wr.exec(ctx, tx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	// Once the batch is written, a cancelled ctx no longer aborts the
	// commit: it would leave the outcome unknown to the caller.
	if err := tx.Commit(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	ld.committed(wr, inLoad)
	if seq > 0 {
		graph.RaiseMinSeq(ctx, seq)
		if s.rs == nil {
			s.announce(seq)
		} // else the listener announces it once the standby has replayed it (see Config.ReadURL)
	}
	return p.Result, nil
}

// batchHash identifies a batch for its idempotency key: equal batches have
// equal hashes.
func batchHash(b *graph.Batch) []byte {
	data, _ := json.Marshal(b)
	h := sha256.Sum256(data)
	return h[:]
}

// pgSnap is the planning snapshot: reads in the writer's transaction,
// under the commit lock (or, during a load, which holds the lock, reads
// of what it committed).
type pgSnap struct{ tx querier }

func idStrings(ids []graph.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

func (p *pgSnap) NodeRecords(ctx context.Context, ids []graph.ID) ([]*graph.NodeRecord, error) {
	return nodeRecords(ctx, p.tx, ids)
}

// nodeRecords reads the records of ids in one statement; missing ones are nil.
func nodeRecords(ctx context.Context, q querier, ids []graph.ID) ([]*graph.NodeRecord, error) {
	out := make([]*graph.NodeRecord, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT u.ord, n.type, n.props, n.created, n.updated, n.rev
		FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ord) JOIN lore_nodes n ON n.id = u.id`, idStrings(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var ord int64
		var props string
		r := new(graph.NodeRecord)
		if err := rows.Scan(&ord, &r.Type, &props, &r.Created, &r.Updated, &r.Rev); err != nil {
			return nil, err
		}
		r.Props = json.RawMessage(props)
		out[ord-1] = r
	}
	return out, rows.Err()
}

func (p *pgSnap) NodeTypes(ctx context.Context, ids []graph.ID) ([]string, error) {
	out := make([]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := p.tx.Query(ctx, `SELECT u.ord, n.type
		FROM unnest($1::text[]) WITH ORDINALITY AS u(id, ord) JOIN lore_nodes n ON n.id = u.id`, idStrings(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var ord int64
		var t string
		if err := rows.Scan(&ord, &t); err != nil {
			return nil, err
		}
		out[ord-1] = t
	}
	return out, rows.Err()
}

// keyColumns returns the columns of edge keys, for unnest.
func keyColumns(keys []graph.EdgeKey) (from, label, to, key []string) {
	from, label, to, key = make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		from[i], label[i], to[i], key[i] = string(k.From), k.Label, string(k.To), k.Key
	}
	return
}

func (p *pgSnap) EdgeRecords(ctx context.Context, keys []graph.EdgeKey) ([]*graph.EdgeRecord, error) {
	return edgeRecords(ctx, p.tx, keys)
}

func edgeRecords(ctx context.Context, q querier, keys []graph.EdgeKey) ([]*graph.EdgeRecord, error) {
	out := make([]*graph.EdgeRecord, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	f, l, t, k := keyColumns(keys)
	rows, err := q.Query(ctx, `SELECT u.ord, e.props, e.created, e.updated, e.rev
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS u(f, l, t, k, ord)
		JOIN lore_edges e ON e.from_id = u.f AND e.label = u.l AND e.to_id = u.t AND e.key = u.k`, f, l, t, k)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var ord int64
		var props string
		r := new(graph.EdgeRecord)
		if err := rows.Scan(&ord, &props, &r.Created, &r.Updated, &r.Rev); err != nil {
			return nil, err
		}
		if props != "" {
			r.Props = json.RawMessage(props)
		}
		out[ord-1] = r
	}
	return out, rows.Err()
}

func (p *pgSnap) Incident(ctx context.Context, id graph.ID) ([]graph.EdgeKey, error) {
	rows, err := p.tx.Query(ctx, `SELECT from_id, label, to_id, key FROM (
			SELECT false AS inbound, from_id, label, to_id, key FROM lore_edges WHERE from_id = $1
			UNION ALL
			SELECT true, from_id, label, to_id, key FROM lore_edges WHERE to_id = $1 AND from_id <> $1
		) x ORDER BY label, inbound, CASE WHEN inbound THEN from_id ELSE to_id END, key LIMIT $2`, string(id), graph.MaxBatch+1)
	if err != nil {
		return nil, err
	}
	keys, err := collectKeys(rows)
	if err != nil {
		return nil, err
	}
	if len(keys) > graph.MaxBatch {
		return nil, fmt.Errorf("node %q has more than %d edges; delete its edges in batches first: %w", id, graph.MaxBatch, graph.ErrInvalid)
	}
	return keys, nil
}

// IncidentLabels reads the labels of a node's edges from the edge indexes
// (a node's edges by label, each direction).
func (p *pgSnap) IncidentLabels(ctx context.Context, id graph.ID) (out, in []string, ok bool, err error) {
	rows, err := p.tx.Query(ctx, `SELECT DISTINCT false, label FROM lore_edges WHERE from_id = $1
		UNION SELECT DISTINCT true, label FROM lore_edges WHERE to_id = $1`, string(id))
	if err != nil {
		return nil, nil, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var inbound bool
		var label string
		if err := rows.Scan(&inbound, &label); err != nil {
			return nil, nil, false, err
		}
		if inbound {
			in = append(in, label)
		} else {
			out = append(out, label)
		}
	}
	return out, in, rows.Err() == nil, rows.Err()
}

func collectKeys(rows pgx.Rows) ([]graph.EdgeKey, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (graph.EdgeKey, error) {
		var k graph.EdgeKey
		var f, t string
		err := r.Scan(&f, &k.Label, &t, &k.Key)
		k.From, k.To = graph.ID(f), graph.ID(t)
		return k, err
	})
}

// Rows of the derived tables, gathered as columns for unnest.
type propRow struct {
	typ, prop string
	val       []byte
	id        string
}

type propRows struct {
	typ, prop, id []string
	val           [][]byte
}

func (r *propRows) add(p propRow) {
	r.typ, r.prop, r.val, r.id = append(r.typ, p.typ), append(r.prop, p.prop), append(r.val, p.val), append(r.id, p.id)
}

func (r *propRows) reset() { r.typ, r.prop, r.val, r.id = r.typ[:0], r.prop[:0], r.val[:0], r.id[:0] }

type postingRow struct {
	tok, typ, id string
	weight       int16
}

type postingRows struct {
	tok    [][]byte
	typ    []string
	id     []string
	weight []int16
	buf    []byte // the bytes of tok, one after the other
}

func (r *postingRows) add(p postingRow) {
	n := len(r.buf)
	r.buf = append(r.buf, p.tok...)
	r.tok, r.typ, r.id, r.weight = append(r.tok, r.buf[n:len(r.buf):len(r.buf)]), append(r.typ, p.typ), append(r.id, p.id), append(r.weight, p.weight)
}

func (r *postingRows) reset() {
	r.tok, r.typ, r.id, r.weight, r.buf = r.tok[:0], r.typ[:0], r.id[:0], r.weight[:0], r.buf[:0]
}

// derivedRows are the derived-index rows a commit deletes and adds. A
// load's commits reuse theirs (see load.rows): the rows of a batch of
// 50k nodes grew to a million slice elements, whose growth was 9%
// of the load's CPU time in Lore.
type derivedRows struct {
	propDel, propAdd propRows
	postDel, postAdd postingRows // postAdd upserts (a weight may change)
	postNew          postingRows // postings of tokens the node had not (with bulk: copied)
	copied           bool        // propAdd and postNew are copied, not queued
	// hold, if set, holds the derived rows of a plan that only adds
	// nodes and edges (see heldRows), instead of propAdd and postNew;
	// held says planWrites did.
	hold *heldRows
	held bool
	// deferred says a load deferred the keys: a plan that only adds
	// elements copies every new row (no upsert needs a key).
	deferred bool
}

func (w *derivedRows) reset() *derivedRows {
	w.propDel.reset()
	w.propAdd.reset()
	w.postDel.reset()
	w.postAdd.reset()
	w.postNew.reset()
	w.copied, w.hold, w.held, w.deferred = false, nil, false, false
	return w
}

func (w *derivedRows) queue(b *pgx.Batch) {
	if len(w.propDel.id) > 0 {
		b.Queue(`DELETE FROM lore_prop p USING unnest($1::text[], $2::text[], $3::bytea[], $4::text[]) AS d(t, p, v, i)
			WHERE p.type = d.t AND p.prop = d.p AND p.val = d.v AND p.id = d.i`, w.propDel.typ, w.propDel.prop, w.propDel.val, w.propDel.id)
	}
	if len(w.postDel.id) > 0 {
		b.Queue(`DELETE FROM lore_postings p USING unnest($1::bytea[], $2::text[], $3::text[]) AS d(k, t, i)
			WHERE p.token = d.k AND p.type = d.t AND p.id = d.i`, w.postDel.tok, w.postDel.typ, w.postDel.id)
	}
	if len(w.propAdd.id) > 0 && !w.copied {
		b.Queue(`INSERT INTO lore_prop (type, prop, val, id) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::text[])
			ON CONFLICT DO NOTHING`, w.propAdd.typ, w.propAdd.prop, w.propAdd.val, w.propAdd.id)
	}
	for _, r := range []*postingRows{&w.postAdd, &w.postNew} {
		if len(r.id) > 0 && (r != &w.postNew || !w.copied) {
			b.Queue(`INSERT INTO lore_postings (token, type, id, weight) SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::smallint[])
			ON CONFLICT (token, type, id) DO UPDATE SET weight = excluded.weight`, r.tok, r.typ, r.id, r.weight)
		}
	}
}

// copyOp is a COPY of n new rows into a table (into names its columns),
// which row encodes.
type copyOp struct {
	into string
	n    int
	row  func(i int, b *copyBuf)
}

// writes are a plan's statements: first (deletes and upserts), the
// COPYs of a large plan's new rows, then last (summaries, counts, the
// log entry); without COPYs, last is first, and the plan costs one round
// trip.
type writes struct {
	first, last *pgx.Batch
	copies      []copyOp
	// adds says the plan only adds elements: the writes need none of the
	// keys a fast load defers.
	adds bool
	// held says the plan's new derived rows are left to the load to hold
	// (see heldRows).
	held bool
}

func (w *writes) exec(ctx context.Context, tx pgx.Tx) error {
	if w.first.Len() > 0 {
		if err := tx.SendBatch(ctx, w.first).Close(); err != nil {
			return err
		}
	}
	for _, c := range w.copies {
		if c.n == 0 {
			continue
		}
		if err := copyRows(ctx, tx, c.into, c.n, c.row); err != nil {
			return fmt.Errorf("copy into %s: %w", c.into, err)
		}
	}
	if w.last != w.first && w.last.Len() > 0 {
		return tx.SendBatch(ctx, w.last).Close()
	}
	return nil
}

// copyMin is the fewest elements of a plan whose new rows are copied
// (COPY costs a round trip per table; below it, the INSERTs of one
// batch are faster).
const copyMin = 256

// indexRows returns the property index rows and search tokens of a node
// under model m.
func indexRows(m *schema.Model, id graph.ID, typ string, props graph.Props) ([]propRow, map[string]byte) {
	nt, ok := m.Node(typ)
	if !ok || len(nt.Indexed) == 0 && len(nt.Search) == 0 {
		return nil, nil
	}
	var rows []propRow
	for _, p := range nt.Indexed {
		v, ok := props[p]
		if !ok {
			continue
		}
		for _, enc := range graph.IndexEntries(v) {
			rows = append(rows, propRow{typ, p, enc, string(id)})
		}
	}
	return rows, graph.NodeTokens(nt, props)
}

func recordIndexRows(m *schema.Model, id graph.ID, r *graph.NodeRecord, props graph.Props) ([]propRow, map[string]byte) {
	if props == nil {
		var err error
		if props, err = graph.DecodeProps(r.Props); err != nil {
			return nil, nil
		}
	}
	return indexRows(m, id, r.Type, props)
}

func hasProp(rows []propRow, p propRow) bool {
	for _, r := range rows {
		if r.prop == p.prop && bytes.Equal(r.val, p.val) {
			return true
		}
	}
	return false
}

type degKey struct {
	id, label string
	in        bool
}

type countKey struct{ kind, name string }

// planAdds says a plan only adds elements.
func planAdds(p *graph.Plan) bool {
	return !slices.ContainsFunc(p.Nodes, func(op graph.NodeOp) bool { return op.Old != nil }) &&
		!slices.ContainsFunc(p.Edges, func(op graph.EdgeOp) bool { return op.Old != nil })
}

// planWrites returns the statements that write a plan's records and what
// is derived from them under model m (the plan's), gathering the derived
// rows in w (empty); extra statements go in last.
func planWrites(m *schema.Model, p *graph.Plan, noDegrees bool, w *derivedRows) *writes {
	wr := &writes{first: &pgx.Batch{}}
	wr.last = wr.first
	wr.adds = planAdds(p)
	bulk := len(p.Nodes)+len(p.Edges) >= copyMin || wr.adds && w.deferred
	if bulk {
		wr.last = &pgx.Batch{}
	}
	b := wr.first
	var (
		nodeNew, edgeNew []int // indexes in p.Nodes and p.Edges of the records copied
		nodeUp           struct {
			id, typ, props        []string
			created, updated, rev []int64
		}
		nodeDel []string
		edgeUp  struct {
			from, label, to, key, props []string
			created, updated, rev       []int64
		}
		edgeDel []graph.EdgeKey
		deg     = map[degKey]int64{}
		counts  = map[countKey]int64{}
		retyped []string // nodes re-typed: their summary rows move to the new type
	)
	w.held = w.hold != nil && wr.adds && bulk
	wr.held = w.held
	for i, op := range p.Nodes {
		id := op.ID
		if w.held {
			nodeNew = append(nodeNew, i)
			rows, toks := recordIndexRows(m, id, op.New, op.Props)
			w.hold.addNode(string(id), op.New.Type, rows, toks)
			counts[countKey{"node", op.New.Type}]++
			continue
		}
		var oldRows, newRows []propRow
		var oldToks, newToks map[string]byte
		if op.Old != nil {
			oldRows, oldToks = recordIndexRows(m, id, op.Old, nil)
		}
		if op.New != nil {
			newRows, newToks = recordIndexRows(m, id, op.New, op.Props)
		}
		switch {
		case op.New != nil && op.Old == nil && bulk:
			nodeNew = append(nodeNew, i)
		case op.New != nil:
			nodeUp.id = append(nodeUp.id, string(id))
			nodeUp.typ = append(nodeUp.typ, op.New.Type)
			nodeUp.props = append(nodeUp.props, string(op.New.Props))
			nodeUp.created = append(nodeUp.created, op.New.Created)
			nodeUp.updated = append(nodeUp.updated, op.New.Updated)
			nodeUp.rev = append(nodeUp.rev, op.New.Rev)
		default:
			nodeDel = append(nodeDel, string(id))
		}
		// A re-typed node's postings and property rows are keyed by its
		// new type: none of the old ones stays.
		retype := op.Old != nil && op.New != nil && op.Old.Type != op.New.Type
		if retype {
			retyped = append(retyped, string(id))
		}
		for tok, wt := range newToks {
			if old, ok := oldToks[tok]; !ok || retype {
				w.postNew.add(postingRow{tok, op.New.Type, string(id), int16(wt)})
			} else if old != wt {
				w.postAdd.add(postingRow{tok, op.New.Type, string(id), int16(wt)})
			}
		}
		for tok := range oldToks {
			if _, ok := newToks[tok]; !ok || retype {
				w.postDel.add(postingRow{tok: tok, typ: op.Old.Type, id: string(id)})
			}
		}
		for _, r := range oldRows {
			if !hasProp(newRows, r) || retype {
				w.propDel.add(r)
			}
		}
		for _, r := range newRows {
			if !hasProp(oldRows, r) || retype {
				w.propAdd.add(r)
			}
		}
		if op.Old != nil && (op.New == nil || retype) {
			counts[countKey{"node", op.Old.Type}]--
		}
		if op.New != nil && (op.Old == nil || retype) {
			counts[countKey{"node", op.New.Type}]++
		}
	}
	for i, op := range p.Edges {
		k := op.Key
		if op.New != nil && op.Old == nil && bulk {
			edgeNew = append(edgeNew, i)
		} else if op.New != nil {
			edgeUp.from = append(edgeUp.from, string(k.From))
			edgeUp.label = append(edgeUp.label, k.Label)
			edgeUp.to = append(edgeUp.to, string(k.To))
			edgeUp.key = append(edgeUp.key, k.Key)
			edgeUp.props = append(edgeUp.props, string(op.New.Props))
			edgeUp.created = append(edgeUp.created, op.New.Created)
			edgeUp.updated = append(edgeUp.updated, op.New.Updated)
			edgeUp.rev = append(edgeUp.rev, op.New.Rev)
			if op.Old != nil {
				continue
			}
		}
		if op.New == nil {
			edgeDel = append(edgeDel, k)
		}
		d := int64(1)
		if op.New == nil {
			d = -1
		}
		counts[countKey{"edge", k.Label}] += d
		if !noDegrees {
			deg[degKey{string(k.From), k.Label, false}] += d
			deg[degKey{string(k.To), k.Label, true}] += d
		}
	}
	// Deletes first: edges before the nodes they join.
	if len(edgeDel) > 0 {
		f, l, t, k := keyColumns(edgeDel)
		b.Queue(`DELETE FROM lore_edges e USING unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS d(f, l, t, k)
			WHERE e.from_id = d.f AND e.label = d.l AND e.to_id = d.t AND e.key = d.k`, f, l, t, k)
	}
	if len(nodeDel) > 0 {
		b.Queue(`DELETE FROM lore_nodes WHERE id = ANY($1::text[])`, nodeDel)
	}
	if len(nodeUp.id) > 0 {
		b.Queue(`INSERT INTO lore_nodes (id, type, props, created, updated, rev)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[])
			ON CONFLICT (id) DO UPDATE SET type = excluded.type, props = excluded.props, created = excluded.created, updated = excluded.updated, rev = excluded.rev`,
			nodeUp.id, nodeUp.typ, nodeUp.props, nodeUp.created, nodeUp.updated, nodeUp.rev)
	}
	if len(edgeUp.from) > 0 {
		b.Queue(`INSERT INTO lore_edges (from_id, label, to_id, key, props, created, updated, rev)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[])
			ON CONFLICT (from_id, label, to_id, key) DO UPDATE SET props = excluded.props, created = excluded.created, updated = excluded.updated, rev = excluded.rev`,
			edgeUp.from, edgeUp.label, edgeUp.to, edgeUp.key, edgeUp.props, edgeUp.created, edgeUp.updated, edgeUp.rev)
	}
	if bulk {
		// New records and their index rows are copied, after the deletes
		// and upserts of first.
		pa, pn := &w.propAdd, &w.postNew
		w.copied = true
		wr.copies = append(wr.copies,
			copyOp{`lore_nodes (id, type, props, created, updated, rev)`, len(nodeNew), func(i int, b *copyBuf) {
				op := &p.Nodes[nodeNew[i]]
				b.row(6)
				b.text(string(op.ID))
				b.text(op.New.Type)
				b.bytea(op.New.Props)
				b.int64(op.New.Created)
				b.int64(op.New.Updated)
				b.int64(op.New.Rev)
			}},
			copyOp{`lore_edges (from_id, label, to_id, key, props, created, updated, rev)`, len(edgeNew), func(i int, b *copyBuf) {
				op := &p.Edges[edgeNew[i]]
				b.row(8)
				b.text(string(op.Key.From))
				b.text(op.Key.Label)
				b.text(string(op.Key.To))
				b.text(op.Key.Key)
				b.bytea(op.New.Props)
				b.int64(op.New.Created)
				b.int64(op.New.Updated)
				b.int64(op.New.Rev)
			}},
			copyOp{`lore_prop (type, prop, val, id)`, len(pa.id), func(i int, b *copyBuf) {
				b.row(4)
				b.text(pa.typ[i])
				b.text(pa.prop[i])
				b.bytea(pa.val[i])
				b.text(pa.id[i])
			}},
			copyOp{`lore_postings (token, type, id, weight)`, len(pn.id), func(i int, b *copyBuf) {
				b.row(4)
				b.bytea(pn.tok[i])
				b.text(pn.typ[i])
				b.text(pn.id[i])
				b.int16(pn.weight[i])
			}})
	}
	w.queue(b)
	b = wr.last
	if len(deg) > 0 && !noDegrees {
		var ids, labels []string
		var ins []bool
		var ns []int64
		var fell struct { // the keys whose count fell, which may reach 0
			ids, labels []string
			ins         []bool
		}
		for k, n := range deg {
			if n != 0 {
				ids, labels, ins, ns = append(ids, k.id), append(labels, k.label), append(ins, k.in), append(ns, n)
			}
			if n < 0 {
				fell.ids, fell.labels, fell.ins = append(fell.ids, k.id), append(fell.labels, k.label), append(fell.ins, k.in)
			}
		}
		if len(ids) > 0 {
			// A new row takes its node's type (written above); a row that
			// exists keeps its own.
			b.Queue(`INSERT INTO lore_degrees AS d (node_id, label, inbound, n, type)
				SELECT u.i, u.l, u.b, u.n, coalesce((SELECT type FROM lore_nodes WHERE id = u.i), '')
				FROM unnest($1::text[], $2::text[], $3::boolean[], $4::bigint[]) AS u(i, l, b, n)
				ON CONFLICT (node_id, label, inbound) DO UPDATE SET n = d.n + excluded.n`, ids, labels, ins, ns)
		}
		if len(fell.ids) > 0 {
			b.Queue(`DELETE FROM lore_degrees d USING unnest($1::text[], $2::text[], $3::boolean[]) AS u(i, l, b)
				WHERE d.node_id = u.i AND d.label = u.l AND d.inbound = u.b AND d.n = 0`, fell.ids, fell.labels, fell.ins)
		}
	}
	if len(retyped) > 0 && !noDegrees {
		b.Queue(`UPDATE lore_degrees d SET type = n.type FROM lore_nodes n WHERE d.node_id = ANY($1::text[]) AND n.id = d.node_id AND d.type <> n.type`, retyped)
	}
	if len(counts) > 0 {
		var kinds, names []string
		var ns []int64
		for k, n := range counts {
			if n != 0 {
				kinds, names, ns = append(kinds, k.kind), append(names, k.name), append(ns, n)
			}
		}
		if len(kinds) > 0 {
			b.Queue(`INSERT INTO lore_counts AS c (kind, name, n) SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
				ON CONFLICT (kind, name) DO UPDATE SET n = c.n + excluded.n`, kinds, names, ns)
		}
	}
	return wr
}
