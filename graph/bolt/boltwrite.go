package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/lore-dev/lore/graph"

	cgraph "github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/quad"
	bbolt "go.etcd.io/bbolt"
)

// idemRec remembers the result of a batch applied with an idempotency key.
type idemRec struct {
	Hash   []byte        `json:"h"`
	Time   time.Time     `json:"t"`
	Result *graph.Result `json:"r"`
}

// errLoading refuses a write while an all-or-nothing load is under way.
var errLoading = fmt.Errorf("an import is loading the store, all or nothing; write when it has finished: %w", graph.ErrConflict)

// Apply validates b and commits it atomically with one change-log entry.
func (s *Store) Apply(ctx context.Context, b *graph.Batch) (res *graph.Result, err error) {
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
	if s.loading && !b.DryRun && !graph.InLoad(ctx) {
		return nil, errLoading
	}
	// Planning a node's delete or re-type reads its edges.
	if len(b.DeleteNodes) > 0 || b.Retype {
		if err := s.flushPending(); err != nil {
			return nil, err
		}
	}

	var hash []byte
	if b.IdempotencyKey != "" {
		hash = batchHash(b)
		prev, err := s.idempotent(b.IdempotencyKey)
		if err != nil {
			return nil, err
		}
		if prev != nil {
			if !bytes.Equal(prev.Hash, hash) {
				return nil, fmt.Errorf("idempotency key %q was used for a different batch at %s; use a new key: %w",
					b.IdempotencyKey, prev.Time.Format(time.RFC3339), graph.ErrConflict)
			}
			r := *prev.Result
			r.Replayed = true
			return &r, nil
		}
	}

	t := now()
	var p *graph.Plan
	err = s.read(func(tx *bbolt.Tx) error {
		var err error
		p, err = graph.PlanBatch(ctx, s.Model(), &boltSnap{s: s, tx: tx}, b, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	if b.DryRun || p.Empty() && b.IdempotencyKey == "" {
		return p.Result, nil
	}
	if err := s.commit(newCommitPlan(p), b.IdempotencyKey, hash, t); err != nil {
		return nil, err
	}
	return p.Result, nil
}

// A commitPlan is a plan as this store commits it.
type commitPlan struct {
	*graph.Plan
	deltas []cgraph.Delta // the quads it adds and removes (see deltas)
	// last marks a bulk load's last batch: its commit also writes all the
	// deferred index entries, sorted beside Cayley's part of the commit
	// rather than in a transaction of their own after it.
	last    bool
	drained bool // its commit carries the deferred index entries
	tallied bool // its summary changes are in the load's degTally
	// edgeRecs holds the keys and records of the edges it writes, and
	// inKeys the in-edge index keys of those it creates, each in key
	// order: made where it is planned, off the path of the commit before
	// it (a pipelined load plans a batch while that one commits).
	edgeRecs, inKeys []kv
	// df, in a load that holds its search term counts back (dfCounts),
	// is what this commit changes of them, added to the load's once it
	// has committed.
	df map[string]int64
}

func newCommitPlan(p *graph.Plan) *commitPlan {
	cp := &commitPlan{Plan: p, deltas: deltas(p)}
	for _, op := range p.Edges {
		if op.New == nil {
			continue
		}
		if cp.edgeRecs == nil {
			cp.edgeRecs = make([]kv, 0, len(p.Edges))
		}
		cp.edgeRecs = append(cp.edgeRecs, kv{op.Key.Bytes(), encodeEdge(op.New)})
		if op.Old == nil {
			if cp.inKeys == nil {
				cp.inKeys = make([]kv, 0, len(p.Edges))
			}
			cp.inKeys = append(cp.inKeys, kv{k: inKey(op.Key)})
		}
	}
	cp.edgeRecs = sortByKey(cp.edgeRecs, kvKey)
	cp.inKeys = sortByKey(cp.inKeys, kvKey)
	return cp
}

// commit writes a plan: Cayley's quads and Lore's records in one bbolt
// transaction, then wakes subscribers. The caller holds wmu.
func (s *Store) commit(p *commitPlan, idemKey string, hash []byte, t time.Time) (err error) {
	if s.ending {
		return fmt.Errorf("commit: an import is writing the end of its load; write when it has finished: %w", graph.ErrConflict)
	}
	if s.deferred != nil && removesEdges(p.Plan) {
		// The records and in-edge entries it removes may be waiting (see
		// runSet).
		flush := s.flushPending
		if s.stream.flush != nil {
			flush = func() error { return s.stream.flush(s.flushPending) }
		}
		if err := flush(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
	}
	seq := s.lastSeq
	if !p.Empty() {
		seq++
		p.Result.Seq, p.Change.Seq = seq, seq
	}
	var mark deferMark
	if s.deferred != nil {
		mark = s.deferred.mark()
	}
	// Lore's writes are prepared on another goroutine while Cayley does its
	// part of the commit (prepareWrites reads committed state only); the
	// hook at Cayley's commit waits for them and writes them into Cayley's
	// transaction.
	ready := make(chan prepared, 1)
	go func() {
		ops, err := s.prepareWrites(p, idemKey, hash, t)
		ready <- prepared{ops, err}
	}()
	// wait returns the prepared writes; the commit calls it before it
	// returns, so that no preparing outlives it.
	wait := sync.OnceValue(func() prepared { return <-ready })
	write := func(tx *bbolt.Tx) error {
		w := wait()
		if w.err != nil {
			return w.err
		}
		return writeOps(tx, w.ops)
	}

	s.rw.Lock()
	if len(p.deltas) > 0 && s.qload != nil && addsOnly(p.deltas) {
		err = updateDB(s.db.DB(), func(tx *bbolt.Tx) error {
			if err := s.qload.write(tx, p.deltas); err != nil {
				return err
			}
			return write(tx)
		})
		if err != nil {
			s.qload.rollback()
		}
	} else if len(p.deltas) > 0 && s.qload != nil {
		// Cayley writes the rest of the load, once it has what the
		// quadLoad kept back.
		if err = s.endQuadLoad(); err != nil {
			err = fmt.Errorf("writing Cayley's quads before a batch that removes some: %w", err)
		} else {
			err = s.cayleyCommit(p, write)
		}
	} else if len(p.deltas) > 0 {
		err = s.cayleyCommit(p, write)
	} else {
		err = updateDB(s.db.DB(), write)
	}
	wait()
	if err == nil && !p.Empty() {
		s.lastSeq = seq // under the write lock: Stats reads it under the read lock
	}
	if err == nil && p.df != nil {
		s.deferred.df.add(p.df)
	}
	if d := s.deferred; d != nil {
		switch {
		case err == nil:
		case p.drained:
			d.lost = true // the deferred entries this commit carried are gone
			d.truncateRuns(mark)
		case p.tallied:
			d.lost = true // its summary changes are in the tally: rebuild them all
			d.rollback(mark)
		default:
			d.rollback(mark) // nothing of the commit stays
		}
	}
	s.rw.Unlock()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if !p.Empty() {
		s.changed.Notify()
	}
	return nil
}

// cayleyCommit commits a plan through Cayley's ApplyDeltas, whose commit
// runs Lore's writes (write) in the same transaction. The caller holds
// rw's write side.
func (s *Store) cayleyCommit(p *commitPlan, write func(*bbolt.Tx) error) error {
	s.kv.setHook(write)
	err := s.applyDeltas(splitDeltas(p.deltas))
	s.kv.takeHook() // still set if Cayley failed before its commit
	if err != nil {
		// A failed ApplyDeltas leaves Cayley's caches and buffered index
		// entries behind; a fresh QuadStore over the same file drops them.
		err = errors.Join(err, s.newQuadStore())
	}
	return err
}

// kvKey is a pair's key, for sortByKey.
func kvKey(p *kv) []byte { return p.k }

// prepared is Lore's part of a commit, prepared beside Cayley's.
type prepared struct {
	ops []kvOp
	err error
}

// splitDeltas returns the quads deltas removes and those it adds.
func splitDeltas(deltas []cgraph.Delta) (dels, adds []cgraph.Delta) {
	for _, d := range deltas {
		if d.Action == cgraph.Delete {
			dels = append(dels, d)
		} else {
			adds = append(adds, d)
		}
	}
	return dels, adds
}

// applyDeltas has Cayley remove and add quads in one bbolt transaction,
// which Lore's hook commits. Cayley's ApplyDeltas drops a quad's
// direction from an added quad whose value a batch's deletes use more
// often than its adds (graph/log.SplitDeltas counts the value among those
// to decrement, and the adds resolve only those to increment): creating a
// node and deleting two in one call stored the new node's quad without
// its predicate, and no delete of it could succeed afterwards. So the
// removals run first, in a call of their own whose transaction is held
// open (hookKV.holdNext), and the additions run in a second call on the
// same transaction, whose commit writes Lore's records too.
func (s *Store) applyDeltas(dels, adds []cgraph.Delta) error {
	if len(dels) == 0 || len(adds) == 0 {
		return s.qs.ApplyDeltas(append(dels, adds...), cgraph.IgnoreOpts{})
	}
	s.kv.holdNext()
	err := s.qs.ApplyDeltas(dels, cgraph.IgnoreOpts{})
	if err == nil {
		err = s.qs.ApplyDeltas(adds, cgraph.IgnoreOpts{})
	}
	s.kv.dropHeld() // if the second call failed before it took the transaction
	return err
}

// pipelineable reports whether a batch may be planned while the previous
// one commits: planning it reads one bbolt transaction and nothing else
// (node deletes and re-types read a node's edges, which an overlay of the
// plan in flight cannot answer), and it has no idempotency key to look up.
func pipelineable(b *graph.Batch) bool {
	return len(b.DeleteNodes) == 0 && !b.Retype && b.IdempotencyKey == "" && !b.DryRun
}

// ApplyStream applies batches in order like Apply, but plans each while
// the one before it commits: against the committed state plus the plan in
// flight (see graph.Pipeliner).
func (s *Store) ApplyStream(ctx context.Context, batches <-chan *graph.StreamBatch, handle func(*graph.StreamBatch, *graph.Result, error) bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.loading && !graph.InLoad(ctx) {
		// Only the load's own stream writes while it is under way, as
		// Apply refuses other writes: undoing the load would undo them.
		select {
		case sb, ok := <-batches:
			if ok {
				handle(sb, nil, errLoading)
			}
		case <-ctx.Done():
		}
		return
	}
	type flight struct {
		sb   *graph.StreamBatch
		p    *commitPlan
		done chan error
	}
	var cur *flight
	// report reports the batch in flight, which ended with err.
	report := func(err error) bool {
		f := cur
		cur = nil
		if err != nil {
			handle(f.sb, nil, err)
			return false
		}
		return handle(f.sb, f.p.Result, nil)
	}
	// finish waits for the batch in flight and reports it.
	finish := func() bool { return report(<-cur.done) }
	for {
		var sb *graph.StreamBatch
		var ok bool
		if cur == nil {
			select {
			case sb, ok = <-batches:
			case <-ctx.Done(): // the reader may be blocked on its input
			}
		} else {
			// Plan the next batch as soon as it arrives, and report the
			// one in flight as soon as it commits, whichever comes first.
			select {
			case sb, ok = <-batches:
			case err := <-cur.done:
				if !report(err) {
					return
				}
				continue
			case <-ctx.Done():
			}
		}
		if !ok {
			break
		}
		if s.closed {
			handle(sb, nil, graph.ErrClosed)
			return
		}
		b := sb.Batch
		if b == nil || b.Len() == 0 || !pipelineable(b) {
			if cur != nil && !finish() {
				return
			}
			var res *graph.Result
			var err error
			if b != nil && b.Len() > 0 {
				s.wmu.Unlock()
				res, err = s.Apply(ctx, b)
				s.wmu.Lock()
			}
			if !handle(sb, res, err) {
				return
			}
			continue
		}
		if cur != nil && s.deferred != nil && removesEdges(cur.p.Plan) {
			// Its commit writes the records that wait (see runSet),
			// which planning reads: from its snapshot of the file and
			// from the runs, so a flush in between would hide them.
			if s.stream.waiting != nil {
				s.stream.waiting()
			}
			if !finish() {
				return
			}
		}
		var prev *graph.Plan
		if cur != nil {
			prev = cur.p.Plan
		}
		t := now()
		var p *commitPlan
		err := s.db.DB().View(func(tx *bbolt.Tx) error {
			var snap graph.Snapshot = &boltSnap{s: s, tx: tx}
			if prev != nil {
				snap = graph.OverlaySnapshot(snap, prev)
			}
			if s.stream.planning != nil {
				s.stream.planning(b)
			}
			gp, err := graph.PlanBatch(ctx, s.Model(), snap, b, t)
			if err == nil {
				p = newCommitPlan(gp)
			}
			return err
		})
		if cur != nil && !finish() {
			return
		}
		if err == nil && !p.Empty() {
			// Nothing plans nor commits now: a load that holds more than
			// its buffer writes it (see spill), before this batch holds more.
			if serr := s.spill(); serr != nil {
				handle(sb, nil, fmt.Errorf("writing what the load held in memory into the store: %w", serr))
				return
			}
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
		p.last = sb.Last
		cur = &flight{sb: sb, p: p, done: make(chan error, 1)}
		go func(f *flight) { f.done <- s.commit(f.p, "", nil, t) }(cur)
	}
	if cur != nil {
		finish()
	}
}

func batchHash(b *graph.Batch) []byte {
	data, _ := json.Marshal(b)
	h := sha256.Sum256(data)
	return h[:]
}

func (s *Store) idempotent(key string) (*idemRec, error) {
	var rec *idemRec
	err := s.read(func(tx *bbolt.Tx) error {
		v := tx.Bucket(bIdem).Get([]byte(key))
		if v == nil {
			return nil
		}
		rec = new(idemRec)
		return json.Unmarshal(v, rec)
	})
	return rec, err
}

// Quad mapping (see the package documentation).
func nodeIRI(id graph.ID) quad.IRI { return quad.IRI("n:" + string(id)) }
func typeIRI(t string) quad.IRI    { return quad.IRI("t:" + t) }
func labelIRI(l string) quad.IRI   { return quad.IRI("e:" + l) }
func keyIRI(k string) quad.IRI     { return quad.IRI("k:" + graph.EscapeSegment(k)) }
func metaIRI(name string) quad.IRI { return quad.IRI("pg:" + name) }

var predType = metaIRI("type")

func nodeQuad(id graph.ID, typ string) quad.Quad {
	return quad.Quad{Subject: nodeIRI(id), Predicate: predType, Object: typeIRI(typ)}
}

func edgeQuad(k graph.EdgeKey) quad.Quad {
	q := quad.Quad{Subject: nodeIRI(k.From), Predicate: labelIRI(k.Label), Object: nodeIRI(k.To)}
	if k.Key != "" {
		q.Label = keyIRI(k.Key)
	}
	return q
}

// edgeOfQuad returns the edge of an edge quad whose predicate names label.
func edgeOfQuad(q quad.Quad, label string) (graph.EdgeKey, error) {
	from, ok1 := q.Subject.(quad.IRI)
	to, ok2 := q.Object.(quad.IRI)
	f, ok3 := strings.CutPrefix(string(from), "n:")
	t, ok4 := strings.CutPrefix(string(to), "n:")
	if !(ok1 && ok2 && ok3 && ok4) {
		return graph.EdgeKey{}, fmt.Errorf("an edge quad joins <n:FROM> to <n:TO>")
	}
	k := graph.EdgeKey{From: graph.ID(f), Label: label, To: graph.ID(t)}
	if q.Label != nil {
		l, ok := q.Label.(quad.IRI)
		key, ok2 := strings.CutPrefix(string(l), "k:")
		if !ok || !ok2 {
			return graph.EdgeKey{}, fmt.Errorf("an edge's graph label must be <k:KEY>")
		}
		var err error
		if k.Key, err = graph.UnescapeSegment(key); err != nil {
			return graph.EdgeKey{}, err
		}
	}
	return k, nil
}

// deltas returns the quads a plan adds and removes. Planning checked every
// one against Lore's records, so ApplyDeltas never meets an existing add or
// a missing delete (either would make it fail, and a failed ApplyDeltas
// corrupts Cayley's KV indexes; re-adding an existing quad leaks refcounts).
func deltas(p *graph.Plan) []cgraph.Delta {
	ds := make([]cgraph.Delta, 0, len(p.Nodes)+len(p.Edges))
	for _, op := range p.Nodes {
		switch {
		case op.Old == nil:
			ds = append(ds, cgraph.Delta{Quad: nodeQuad(op.ID, op.New.Type), Action: cgraph.Add})
		case op.New == nil:
			ds = append(ds, cgraph.Delta{Quad: nodeQuad(op.ID, op.Old.Type), Action: cgraph.Delete})
		case op.Old.Type != op.New.Type: // a migration's re-type
			ds = append(ds, cgraph.Delta{Quad: nodeQuad(op.ID, op.Old.Type), Action: cgraph.Delete},
				cgraph.Delta{Quad: nodeQuad(op.ID, op.New.Type), Action: cgraph.Add})
		}
	}
	for _, op := range p.Edges {
		switch {
		case op.Old == nil:
			ds = append(ds, cgraph.Delta{Quad: edgeQuad(op.Key), Action: cgraph.Add})
		case op.New == nil:
			ds = append(ds, cgraph.Delta{Quad: edgeQuad(op.Key), Action: cgraph.Delete})
		}
	}
	return ds
}

// A kvOp is one write: a put, a delete, or, as a delete with no key, the
// emptying of a whole bucket.
type kvOp struct {
	bucket, key, val []byte
	del              bool
	ord              int // among writes of one key, the later has the higher ord
}

type counterKey struct {
	bucket string
	key    string
}

// prepareWrites turns a plan into Lore's writes: records, index entries,
// counters (read and updated here: the writer lock keeps them still), the
// change-log entry and the idempotency key, sorted so that the commit
// touches each page once and in order. It reads committed state only, so
// it may run while Cayley prepares its own part of the same commit.
func (s *Store) prepareWrites(p *commitPlan, idemKey string, hash []byte, t time.Time) ([]kvOp, error) {
	ops := make([]kvOp, 0, len(p.Edges)+2*len(p.Nodes)+4)
	counters := map[counterKey]int64{}
	recs := map[graph.ID]*nodeRec{}  // the node records this commit writes
	var updated []graph.ID           // those of them that exist: their summaries carry over
	gone := map[graph.ID]bool{}      // the nodes it deletes
	retyped := map[graph.ID]string{} // the nodes it re-types, and their old types
	primary := func(op kvOp) { ops = append(ops, op) }
	d := s.deferred // a bulk load's deferred entries, if any
	hold := d       // where this commit's index entries go; nil: with the commit
	if d != nil && (d.done || !d.startCommit(len(p.Nodes)+len(p.Edges))) {
		hold = nil // once the load's last commit wrote them all, no more wait
	}
	put := func(b, k, v []byte) {
		if hold != nil && hold.holds(b) {
			hold.add(kvOp{bucket: b, key: k, val: v})
			return
		}
		primary(kvOp{bucket: b, key: k, val: v})
	}
	del := func(b, k []byte) {
		if hold != nil && hold.holds(b) {
			hold.add(kvOp{bucket: b, key: k, del: true})
			return
		}
		primary(kvOp{bucket: b, key: k, del: true})
	}
	count := func(b, k []byte, n int64) { counters[counterKey{string(b), string(k)}] += n }
	countDF := func(tok, typ string, n int64) { count(bMeta, dfKey(tok, typ), n) }
	if hold != nil && hold.df != nil {
		p.df = map[string]int64{}
		countDF = func(tok, typ string, n int64) { p.df[dfPrefix+tok+"\x00"+typ] += n }
	}

	for i, op := range p.Nodes {
		if i == 1 {
			// A node writes a dozen entries or more (its tokens): make room
			// for the rest at the first one's rate, not by doubling, which
			// copies the writes again and again (a tenth of the preparing).
			ops = slices.Grow(ops, len(ops)*(len(p.Nodes)-1)+len(p.Edges)+4)
		}
		id := op.ID
		var oldKeys, newKeys [][]byte
		var oldToks, newToks map[string]byte
		if op.Old != nil {
			oldKeys, oldToks = s.nodeIndexKeys(id, op.Old, nil)
		}
		if op.New != nil {
			newKeys, newToks = s.nodeIndexKeys(id, op.New, op.Props)
			recs[id] = &nodeRec{NodeRecord: *op.New} // the summary is set below
			if op.Old != nil {
				updated = append(updated, id)
			}
		} else if op.Old != nil {
			gone[id] = true
		}
		// A re-typed node's postings are keyed by its new type: none of
		// the old ones stays.
		retype := op.Old != nil && op.New != nil && op.Old.Type != op.New.Type
		if retype {
			retyped[id] = op.Old.Type
		}
		for tok, w := range newToks {
			if old, ok := oldToks[tok]; !ok || old != w || retype {
				put(bTok, tokenKey(tok, op.New.Type, id, w), nil)
				put(bTok, impKey(tok, w, id, op.New.Type), nil)
				if ok && !retype { // a new weight: both keys name it
					del(bTok, tokenKey(tok, op.Old.Type, id, old))
					del(bTok, impKey(tok, old, id, op.Old.Type))
				}
			}
			if _, ok := oldToks[tok]; !ok || retype {
				countDF(tok, op.New.Type, 1)
			}
		}
		for tok, w := range oldToks {
			if _, ok := newToks[tok]; !ok || retype {
				del(bTok, tokenKey(tok, op.Old.Type, id, w))
				del(bTok, impKey(tok, w, id, op.Old.Type))
				countDF(tok, op.Old.Type, -1)
			}
		}
		if op.Old != nil && (op.New == nil || retype) {
			del(bType, typeKey(op.Old.Type, id))
			count(bMeta, countKey("node", op.Old.Type), -1)
		}
		if op.New != nil && (op.Old == nil || retype) {
			put(bType, typeKey(op.New.Type, id), nil)
			count(bMeta, countKey("node", op.New.Type), 1)
		}
		if op.New == nil {
			del(bNodes, []byte(id))
		}
		for _, k := range diffKeys(oldKeys, newKeys) {
			del(bProp, k)
		}
		for _, k := range diffKeys(newKeys, oldKeys) {
			put(bProp, k, nil)
		}
	}
	// countDeg counts n edges k in the summaries of its ends.
	countDeg := func(k graph.EdgeKey, n int64) {
		if hold != nil {
			hold.deg.addEdge(k, n)
			p.tallied = true
			return
		}
		count(bDeg, degKey(k.From, 'o', k.Label), n)
		count(bDeg, degKey(k.To, 'i', k.Label), n)
	}
	// The edges counted by label, then by key: a key made per edge was a
	// string to build and hash per edge.
	byLabel := map[string]int64{}
	for _, op := range p.Edges {
		k := op.Key
		switch {
		case op.New != nil:
			if op.Old != nil {
				continue
			}
			byLabel[k.Label]++
			countDeg(k, 1)
		default:
			del(bEdges, k.Bytes())
			primary(kvOp{bucket: bIn, key: inKey(k), del: true})
			byLabel[k.Label]--
			countDeg(k, -1)
		}
	}
	for label, n := range byLabel {
		count(bMeta, countKey("edge", label), n)
	}
	if hold != nil {
		for id := range gone {
			hold.deg.forget(id)
			p.tallied = true
		}
		hold.in.add(p.inKeys, false) // what waits (see runSet)
	} else {
		for _, r := range p.inKeys {
			primary(kvOp{bucket: bIn, key: r.k})
		}
	}
	if hold != nil && hold.edges != nil {
		hold.edges.add(p.edgeRecs)
	} else {
		for _, r := range p.edgeRecs {
			primary(kvOp{bucket: bEdges, key: r.k, val: r.v})
		}
	}
	if !p.Empty() {
		put(bLog, u64(p.Change.Seq), graph.EncodeChange(p.Change))
		put(bMeta, []byte("seq"), u64(p.Change.Seq))
	}
	if idemKey != "" {
		rec, _ := json.Marshal(idemRec{Hash: hash, Time: t, Result: p.Result})
		put(bIdem, []byte(idemKey), rec)
	}
	if d != nil && (d.n >= d.flush || p.last) {
		// This commit also writes the deferred index entries, with room
		// for the counters and records still to come.
		ops = d.drain(ops, len(counters)+2*len(recs)+4)
		p.drained = true
		if p.last {
			// All of them; but in-edge entries and edge records that wait
			// for the load's end (see runSet) are written after this
			// commit, and until then the mark stays: a process that dies
			// in between leaves a store whose next Open rebuilds them.
			if !d.waits() {
				del(bMeta, metaDeferred)
			} else {
				d.markLeft = true
			}
			d.done = true
		}
	}
	err := s.db.DB().View(func(tx *bbolt.Tx) error {
		cops, deg, err := counterOps(tx, counters)
		if err != nil {
			return err
		}
		ops = append(ops, cops...)
		nodes := tx.Bucket(bNodes)
		for _, id := range updated {
			if v := nodes.Get([]byte(id)); v != nil {
				old, err := decodeNodeRec(v)
				if err != nil {
					return corrupt(fmt.Sprintf("node %q", id), err)
				}
				recs[id].Deg = old.Deg
			}
		}
		switch {
		case d != nil && p.last && d.idx != nil:
			// A load that rewrites its file folds its tally as the rewrite
			// begins (loadRest.fold), beside the writing of the buckets
			// that do not need it: bDeg stays marked until then.
			ops, err = foldDeg(ops, tx, deg, recs, gone, retyped, nil)
		case d != nil && p.last:
			ops, err = foldDeg(ops, tx, deg, recs, gone, retyped, d.deg)
		default:
			ops, err = foldDeg(ops, tx, deg, recs, gone, retyped, nil)
		}
		if err == nil && len(gone) > 0 {
			var gops []kvOp
			gops, err = goneDegIdxOps(tx, gone)
			ops = append(ops, gops...)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if hold != nil && hold.nodes != nil {
		pairs, types := make([]kv, 0, len(recs)), make([]string, 0, len(recs))
		var mem slab // runSet.add copies the pairs
		for id, rec := range recs {
			v := rec.appendTo(append(mem.take(1 + rec.size())[:0], runPut))
			pairs = append(pairs, kv{[]byte(id), v})
			types = append(types, rec.Type)
		}
		hold.nodes.add(pairs, types)
	} else {
		for id, rec := range recs {
			ops = append(ops, kvOp{bucket: bNodes, key: []byte(id), val: rec.encode()})
		}
	}
	sortOps(ops)
	return ops, nil
}

// counterOps returns the writes that apply plain 8-byte counter deltas to
// their current values in tx, and the edge-summary deltas among them (by
// degKey) for foldDeg. The results are written by the commit
// that computes them, never deferred again.
func counterOps(tx *bbolt.Tx, counters map[counterKey]int64) ([]kvOp, map[string]int64, error) {
	var ops []kvOp
	deg := map[string]int64{}
	for ck, n := range counters {
		if n == 0 {
			continue
		}
		if ck.bucket == string(bDeg) {
			deg[ck.key] += n
			continue
		}
		var cur int64
		if v := tx.Bucket([]byte(ck.bucket)).Get([]byte(ck.key)); len(v) == 8 {
			cur = int64(binary.BigEndian.Uint64(v))
		}
		cur += n
		switch {
		case cur < 0:
			return nil, nil, fmt.Errorf("counter %q in %s would go negative: run lore check", ck.key, ck.bucket)
		case cur == 0:
			ops = append(ops, kvOp{bucket: []byte(ck.bucket), key: []byte(ck.key), del: true})
		default:
			ops = append(ops, kvOp{bucket: []byte(ck.bucket), key: []byte(ck.key), val: u64(uint64(cur))})
		}
	}
	return ops, deg, nil
}

// sortOps orders writes by bucket and key, so that a commit touches each
// page once and in order; writes of one key stay in the order made.
func sortOps(ops []kvOp) { sort.Sort(opOrder(ops)) }

// opOrder sorts writes in place; its Less reads them where they are
// (slices.SortFunc would copy two of them for each comparison).
type opOrder []kvOp

func (o opOrder) Len() int      { return len(o) }
func (o opOrder) Swap(i, j int) { o[i], o[j] = o[j], o[i] }
func (o opOrder) Less(i, j int) bool {
	a, b := &o[i], &o[j]
	// Most writes name their bucket by the same slice (bNodes, bTok…):
	// the names are compared only when the slices differ.
	if unsafe.SliceData(a.bucket) != unsafe.SliceData(b.bucket) || len(a.bucket) != len(b.bucket) {
		if c := bytes.Compare(a.bucket, b.bucket); c != 0 {
			return c < 0
		}
	}
	if c := bytes.Compare(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.ord < b.ord
}

// fillFor returns how full bbolt packs a bucket's pages when it splits them.
func fillFor(bucket []byte) float64 {
	if bytes.Equal(bucket, bLog) || bytes.Equal(bucket, bCayleyLog) {
		return appendFill
	}
	return randomFill
}

// randomFill packs Lore's randomly keyed buckets fuller than bbolt's 50%:
// fewer pages to write at each commit, at the cost of earlier splits.
const randomFill = 0.8

// writeOps applies prepared writes inside a write transaction.
func writeOps(tx *bbolt.Tx, ops []kvOp) error {
	var b *bbolt.Bucket
	var name []byte
	var run [][]byte
	for j := 0; j < len(ops); j++ {
		op := ops[j]
		if !bytes.Equal(op.bucket, name) {
			name, b = op.bucket, tx.Bucket(op.bucket)
			b.FillPercent = fillFor(name)
		}
		var err error
		if op.del && op.key == nil { // empties the bucket (it sorts before the bucket's other writes)
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
			if b, err = tx.CreateBucket(name); err != nil {
				return err
			}
			b.FillPercent = fillFor(name)
			continue
		}
		if packedBucket(name) && !op.del {
			// The inserts that follow into the same index, at once.
			run = append(run[:0], op.key)
			for j+len(run) < len(ops) && !ops[j+len(run)].del && bytes.Equal(ops[j+len(run)].bucket, name) {
				run = append(run, ops[j+len(run)].key)
			}
			for len(run) > 0 {
				n, err := packedInsertRun(b, run)
				if err != nil {
					return err
				}
				run, j = run[n:], j+n
			}
			j--
			continue
		}
		if err := writeOp(b, op); err != nil {
			return err
		}
	}
	return nil
}

// writeOp writes one put or delete of a key; in a packed index, of a
// logical key, into its block (see packedInsert).
func writeOp(b *bbolt.Bucket, op kvOp) error {
	if packedBucket(op.bucket) {
		if op.del {
			return packedDelete(b, op.key)
		}
		return packedInsert(b, op.key)
	}
	if op.del {
		return b.Delete(op.key)
	}
	val := op.val
	if val == nil {
		val = []byte{}
	}
	return b.Put(op.key, val)
}

// nodeIndexKeys returns the property index keys and the search tokens of a
// node record; props, if given, are its decoded properties.
func (s *Store) nodeIndexKeys(id graph.ID, r *graph.NodeRecord, props graph.Props) ([][]byte, map[string]byte) {
	nt, ok := s.Model().Node(r.Type)
	if !ok || len(nt.Indexed) == 0 && len(nt.Search) == 0 {
		return nil, nil
	}
	if props == nil {
		var err error
		if props, err = graph.DecodeProps(r.Props); err != nil {
			return nil, nil
		}
	}
	return propKeys(r.Type, nt.Indexed, id, props), graph.NodeTokens(nt, props)
}

// diffKeys returns the keys of a that are not in b.
func diffKeys(a, b [][]byte) [][]byte {
	var out [][]byte
outer:
	for _, x := range a {
		for _, y := range b {
			if bytes.Equal(x, y) {
				continue outer
			}
		}
		out = append(out, x)
	}
	return out
}

// A bulk load defers the derived index entries (type, property and search
// indexes, edge summaries): they are collected here and written in key
// order every Config.DeferFlush entries and at the end, instead of at scattered
// positions at every commit. The store is marked "deferred" meanwhile; if
// the load dies, Open rebuilds them from the records.
type deferredIndexes struct {
	// chunks holds the entries in the order they were written (sortOps
	// keeps that order per key, so the last write wins), deferChunk to a
	// chunk: one growing slice would copy them all at every doubling,
	// into fresh memory whose first touch costs a page fault.
	chunks  [][]kvOp
	n       int  // entries held; the chunks past the last used one are spares
	written int  // elements the load has committed or is committing
	after   int  // it defers entries once written passes after (Config.DeferAfter)
	flush   int  // it writes them every flush entries (Config.DeferFlush)
	done    bool // the last batch's commit wrote them all, and cleared the mark unless markLeft
	// markLeft says that the last batch's commit left the mark: the load's
	// end clears it once what waits is written (flushDeferred).
	markLeft bool
	lost     bool      // a commit that carried some of them failed: the load must rebuild them
	in       runSet    // in-edge index entries (see runSet)
	edges    *edgeRuns // edge records, in an all-or-nothing load (see runSet)
	nodes    *nodeRuns // node records, in an all-or-nothing load that rewrites its file
	df       *dfCounts // with nodes, its changes to the search term counts
	deg      *degTally // the edge-summary changes it defers (see degTally)
	// idx, in an all-or-nothing load that rewrites its file, holds what
	// each drain would write of the entries above, and what the last fold
	// of the edge summaries would (see indexRuns).
	idx *indexRuns
}

const deferChunk = 4096

// startCommit counts a commit of n more elements, and reports whether it
// defers its index entries: once the load has written d.after elements,
// it defers them to its end.
func (d *deferredIndexes) startCommit(n int) (deferring bool) {
	d.written += n
	return d.written > d.after
}

func newDeferred(after, flush int) *deferredIndexes {
	return &deferredIndexes{deg: newDegTally(), after: after, flush: flush}
}

func (d *deferredIndexes) holds(bucket []byte) bool {
	for _, b := range [][]byte{bType, bProp, bTok} {
		if bytes.Equal(b, bucket) {
			return true
		}
	}
	return false
}

func (d *deferredIndexes) add(op kvOp) {
	op.ord = d.n
	i := d.n / deferChunk
	if i == len(d.chunks) {
		d.chunks = append(d.chunks, make([]kvOp, 0, deferChunk))
	}
	d.chunks[i] = append(d.chunks[i], op)
	d.n++
}

// A deferMark is how much a bulk load had deferred when a commit started.
type deferMark struct {
	n, in, edges, nodes int
	idx                 [len(indexBuckets)]int
}

func (d *deferredIndexes) mark() deferMark {
	m := deferMark{n: d.n, in: len(d.in.runs)}
	if d.edges != nil {
		m.edges = d.edges.runs()
	}
	if d.nodes != nil {
		m.nodes = d.nodes.runs()
	}
	if d.idx != nil {
		m.idx = d.idx.mark()
	}
	return m
}

// truncateRuns drops the runs added since m.
func (d *deferredIndexes) truncateRuns(m deferMark) {
	d.in.truncate(m.in)
	if d.edges != nil {
		d.edges.truncate(m.edges)
	}
	if d.nodes != nil {
		d.nodes.truncate(m.nodes)
	}
	if d.idx != nil {
		d.idx.truncate(m.idx)
	}
}

// rollback drops what a commit that failed deferred, which it had not
// drained (its summary changes are not dropped: see commitPlan.tallied).
func (d *deferredIndexes) rollback(m deferMark) {
	for i := m.n / deferChunk; i < len(d.chunks); i++ {
		c := d.chunks[i]
		keep := 0
		if i == m.n/deferChunk {
			keep = m.n % deferChunk
		}
		clear(c[keep:]) // the chunk must not keep the keys alive
		d.chunks[i] = c[:keep]
	}
	d.n = m.n
	d.truncateRuns(m)
}

// drain appends the collected entries to ops, with room for extra more,
// or adds them to d.idx if it waits for them. The chunks are kept for the
// entries to come.
func (d *deferredIndexes) drain(ops []kvOp, extra int) []kvOp {
	if d.idx != nil {
		d.idx.add(d.chunks)
		ops = slices.Grow(ops, extra)
	} else {
		ops = slices.Grow(ops, d.n+extra)
	}
	for i, c := range d.chunks {
		if d.idx == nil {
			ops = append(ops, c...)
		}
		clear(c) // the chunk must not keep the keys alive
		d.chunks[i] = c[:0]
	}
	d.n = 0
	return ops
}
