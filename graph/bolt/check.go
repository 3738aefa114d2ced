package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/lore-dev/lore/graph"

	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/quad"
	bbolt "go.etcd.io/bbolt"

	"github.com/lore-dev/lore/schema"
)

// derived holds what the records imply for the derived buckets.
type derived struct {
	typeKeys  map[string]bool
	propKeys  map[string]bool
	tokKeys   map[string]bool     // postings, in token and in impact order
	terms     map[string]int64    // postings per token and type, by dfKey
	counts    map[string]int64    // bMeta count keys
	deg       map[string]int64    // edge counts by degKey
	summaries map[graph.ID][]byte // the summary each node record holds
	types     map[graph.ID]string // each node's type
}

// degIdxKeys returns the degree index keys the edge counts imply.
func (d *derived) degIdxKeys() map[string]bool {
	want := map[string]bool{}
	for id, v := range summaries(d.deg) {
		es, _ := decodeDeg(v)
		for _, k := range degIdxKeys(d.types[graph.ID(id)], graph.ID(id), es) {
			want[string(k)] = true
		}
	}
	return want
}

// Check verifies the store: bbolt's page structure; every record decodes
// and fits the model; the type, property, in-edge and degree indexes and
// the counts match the records; Cayley holds exactly one quad per node and per edge;
// the change log has no gap. It blocks writers while it runs.
func (s *Store) Check(ctx context.Context) (*graph.CheckReport, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	r := &graph.CheckReport{}
	var d *derived
	err := s.read(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			r.Addf("bbolt: %v", err)
		}
		var err error
		if d, err = s.checkRecords(ctx, tx, s.Model(), r, nil); err != nil {
			return err
		}
		s.checkDerived(tx, d, r)
		checkInIndex(ctx, tx, r)
		s.checkLog(tx, r)
		return s.checkCayley(ctx, tx, r)
	})
	return r, err
}

// checkRecords reads every record and what it implies for the derived
// buckets; read, if set, is called with the records read so far, every
// progressEvery records.
func (s *Store) checkRecords(ctx context.Context, tx *bbolt.Tx, m *schema.Model, r *graph.CheckReport, read func(n int64)) (*derived, error) {
	d := &derived{typeKeys: map[string]bool{}, propKeys: map[string]bool{}, tokKeys: map[string]bool{}, terms: map[string]int64{}, counts: map[string]int64{}, deg: map[string]int64{}, summaries: map[graph.ID][]byte{}, types: map[graph.ID]string{}}
	tick := func() {
		if n := r.Nodes + r.Edges; read != nil && n%progressEvery == 0 {
			read(n)
		}
	}
	err := tx.Bucket(bNodes).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.Nodes++
		tick()
		id := graph.ID(k)
		rec, err := decodeNodeRec(v)
		if err != nil {
			r.Addf("node %q: record does not decode: %v", id, err)
			return nil
		}
		d.summaries[id] = rec.Deg
		d.types[id] = rec.Type
		if err := id.Check(); err != nil {
			r.Addf("node %q: %v", id, err)
		}
		nt, ok := m.Node(rec.Type)
		if !ok {
			r.Addf("node %q: type %q is not in the model", id, rec.Type)
			return nil
		}
		props, err := graph.DecodeProps(rec.Props)
		if err != nil {
			r.Addf("node %q: properties do not decode: %v", id, err)
			return nil
		}
		if err := nt.Validate(props); err != nil {
			r.Addf("node %q: properties break the model: %v", id, err)
		}
		d.typeKeys[string(typeKey(rec.Type, id))] = true
		for _, pk := range propKeys(rec.Type, nt.Indexed, id, props) {
			d.propKeys[string(pk)] = true
		}
		for tok, w := range graph.NodeTokens(nt, props) {
			d.tokKeys[string(tokenKey(tok, rec.Type, id, w))] = true
			d.tokKeys[string(impKey(tok, w, id, rec.Type))] = true
			d.terms[string(dfKey(tok, rec.Type))]++
		}
		d.counts[string(countKey("node", rec.Type))]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	nodes := tx.Bucket(bNodes)
	err = tx.Bucket(bEdges).ForEach(func(k, v []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.Edges++
		tick()
		key := graph.EdgeKeyFromBytes(k)
		rec, err := decodeEdgeRec(v)
		if err != nil {
			r.Addf("edge %s: record does not decode: %v", key, err)
			return nil
		}
		et, ok := m.Edge(key.Label)
		if !ok {
			r.Addf("edge %s: label %q is not in the model", key, key.Label)
			return nil
		}
		props, err := graph.DecodeProps(rec.Props)
		if err == nil {
			err = et.Validate(props)
		}
		if err != nil {
			r.Addf("edge %s: properties: %v", key, err)
		}
		for _, end := range []graph.ID{key.From, key.To} {
			if nodes.Get([]byte(end)) == nil {
				r.Addf("edge %s: endpoint %q does not exist", key, end)
			}
		}
		d.counts[string(countKey("edge", key.Label))]++
		d.deg[string(degKey(key.From, 'o', key.Label))]++
		d.deg[string(degKey(key.To, 'i', key.Label))]++
		return nil
	})
	return d, err
}

func (s *Store) checkDerived(tx *bbolt.Tx, d *derived, r *graph.CheckReport) {
	set := func(name string, bucket []byte, want map[string]bool) {
		n := 0
		visit := func(k []byte) {
			n++
			if !want[string(k)] {
				r.Addf("%s index: stray entry %q", name, k)
			}
		}
		if packedBucket(bucket) {
			eachPacked(tx.Bucket(bucket), name+" index", r, func(k []byte) bool { visit(k); return true })
		} else {
			_ = tx.Bucket(bucket).ForEach(func(k, _ []byte) error { visit(k); return nil })
		}
		if n != len(want) {
			r.Addf("%s index: %d entries, the records imply %d", name, n, len(want))
		}
	}
	set("type", bType, d.typeKeys)
	set("property", bProp, d.propKeys)
	set("degree", bDegIdx, d.degIdxKeys())
	set("search", bTok, d.tokKeys)
	counters := func(name string, bucket []byte, prefix []byte, want map[string]int64) {
		seen := 0
		c := tx.Bucket(bucket).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			seen++
			if got := int64(binary.BigEndian.Uint64(v)); got != want[string(k)] {
				r.Addf("%s %q is %d, the records imply %d", name, k, got, want[string(k)])
			}
		}
		if seen != len(want) {
			r.Addf("%s: %d counters, the records imply %d", name, seen, len(want))
		}
	}
	counters("count", bMeta, []byte("count/"), d.counts)
	counters("search term count", bMeta, []byte(dfPrefix), d.terms)
	want := summaries(d.deg)
	for id, v := range d.summaries {
		if w := want[string(id)]; !bytes.Equal(v, w) {
			got, err := decodeDeg(v)
			if err != nil {
				r.Addf("edge summary of %q: %v", id, err)
			} else {
				wes, _ := decodeDeg(w)
				r.Addf("edge summary of %q is %v, the records imply %v", id, edgeCounts(got), edgeCounts(wes))
			}
		}
	}
	for id := range want {
		if _, ok := d.summaries[graph.ID(id)]; !ok {
			r.Addf("edge summary of %q: no such node", id)
		}
	}
	if k, _ := tx.Bucket(bDeg).Cursor().First(); k != nil {
		r.Addf("a bulk load that did not finish left the edge summaries of its nodes behind")
	}
}

// checkInIndex checks that the in-edge index holds exactly one entry per
// edge record: each entry names an edge that has a record, and there are
// as many entries as records (r.Edges). Entries are distinct keys and
// inKey is one-to-one, so the two together mean they match one for one.
// It checks the blocks too (see packKeys): each decodes, and each
// block's keys follow the block's before it.
func checkInIndex(ctx context.Context, tx *bbolt.Tx, r *graph.CheckReport) {
	edges := tx.Bucket(bEdges)
	var n int64
	eachPacked(tx.Bucket(bIn), "in-edge index", r, func(k []byte) bool {
		if n%4096 == 0 && ctx.Err() != nil {
			return false
		}
		n++
		rev := graph.EdgeKeyFromBytes(k)
		if rev.From == "" {
			r.Addf("in-edge index: malformed entry %q", k)
			return true
		}
		if edges.Get(inKey(rev)) == nil {
			r.Addf("in-edge index: stray entry for edge %s, which has no record", graph.EdgeKey{From: rev.To, Label: rev.Label, To: rev.From, Key: rev.Key})
		}
		return true
	})
	if ctx.Err() != nil {
		return
	}
	if n != r.Edges {
		r.Addf("in-edge index: %d entries, the records imply %d", n, r.Edges)
	}
}

// eachPacked calls f with each key of the packed index in b, in order,
// while f returns true, and reports in r (naming the index name) each
// block that does not decode, or that does not come after the block
// before it.
func eachPacked(b *bbolt.Bucket, name string, r *graph.CheckReport, f func(k []byte) bool) {
	var last []byte // the last key of the block before
	var keys [][]byte
	c := b.Cursor()
	for bk, v := c.First(); bk != nil; bk, v = c.Next() {
		var err error
		if keys, err = decodePacked(keys[:0], bk, v); err != nil {
			r.Addf("%s: malformed block %q", name, bk)
			continue
		}
		if last != nil && bytes.Compare(keys[0], last) <= 0 {
			r.Addf("%s: block %q starts at or before the end of the block before it", name, bk)
		}
		last = keys[len(keys)-1]
		for _, k := range keys {
			if !f(k) {
				return
			}
		}
	}
}

func (s *Store) checkLog(tx *bbolt.Tx, r *graph.CheckReport) {
	want := s.base + 1 // an undone load's entries are gone (see metaBase)
	c := tx.Bucket(bLog).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k)
		if seq != want {
			r.Addf("change log: entry %d follows %d", seq, want-1)
		}
		var ch graph.Change
		if err := graph.DecodeChange(v, &ch); err != nil || ch.Seq != seq {
			r.Addf("change log: entry %d does not decode", seq)
		}
		want = seq + 1
	}
	r.Changes = want - 1
	if r.Changes != s.lastSeq {
		r.Addf("change log ends at %d but the store's sequence is %d", r.Changes, s.lastSeq)
	}
}

// checkCayley compares every quad with the records.
func (s *Store) checkCayley(ctx context.Context, tx *bbolt.Tx, r *graph.CheckReport) error {
	nodes, edges := tx.Bucket(bNodes), tx.Bucket(bEdges)
	it := s.qs.QuadsAllIterator().Iterate()
	defer it.Close()
	var prims []*cproto.Primitive
	flush := func() error {
		names, err := valueNames(ctx, s.qs, prims)
		if err != nil {
			return err
		}
		for _, p := range prims {
			q := quad.Quad{Subject: names[p.Subject], Predicate: names[p.Predicate], Object: names[p.Object]}
			if p.Label != 0 {
				q.Label = names[p.Label]
			}
			subj, _ := q.Subject.(quad.IRI)
			pred, _ := q.Predicate.(quad.IRI)
			obj, _ := q.Object.(quad.IRI)
			id, ok := strings.CutPrefix(string(subj), "n:")
			switch {
			case !ok:
				r.Addf("cayley: quad %s has a subject Lore does not write", q)
			case pred == predType:
				v := nodes.Get([]byte(id))
				rec, err := decodeNodeRec(v)
				if err != nil || typeIRI(rec.Type) != obj {
					r.Addf("cayley: quad %s has no matching node record", q)
				}
			case strings.HasPrefix(string(pred), "e:"):
				k, err := edgeOfQuad(q, string(pred[2:]))
				if err != nil || edges.Get(k.Bytes()) == nil {
					r.Addf("cayley: quad %s has no matching edge record", q)
				}
			default:
				r.Addf("cayley: quad %s has a predicate Lore does not write", q)
			}
		}
		prims = prims[:0]
		return nil
	}
	for it.Next(ctx) {
		r.Quads++
		if p, ok := it.Result().(*cproto.Primitive); ok {
			prims = append(prims, p)
		}
		if len(prims) == 512 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if want := r.Nodes + r.Edges; r.Quads != want {
		r.Addf("cayley holds %d quads; the records imply %d (one per node and per edge)", r.Quads, want)
	}
	return nil
}

// Repair rebuilds the derived buckets (type, property and search indexes,
// the in-edge index, counts, edge summaries) from the node and edge records, then checks
// again. It cannot repair Cayley's quads: Compact rebuilds those.
func (s *Store) Repair(ctx context.Context) (*graph.CheckReport, error) {
	if err := s.rebuildDerived(ctx, nil); err != nil {
		return nil, err
	}
	r, err := s.Check(ctx)
	if r != nil {
		r.Repaired = []string{"type index", "property index", "search index", "in-edge index", "counts", "edge summaries", "degree index"}
	}
	return r, err
}

// progressEvery is how many records a rebuild reads between reports.
const progressEvery = 10000

// rebuildDerived rewrites the derived buckets from the records in one
// transaction, and clears the mark of stale derived data. progress, if
// set, is called as it goes (its Reason is left for the caller).
func (s *Store) rebuildDerived(ctx context.Context, progress func(RebuildProgress)) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	d, err := s.derive(ctx, s.Model(), progress)
	if err != nil {
		return err
	}
	s.rw.Lock()
	defer s.rw.Unlock()
	return updateDB(s.db.DB(), func(tx *bbolt.Tx) error { return writeDerived(tx, d) })
}

// derive reads every record and returns the derived data model m implies
// for them, reporting progress as rebuildDerived says. The caller holds wmu.
func (s *Store) derive(ctx context.Context, m *schema.Model, progress func(RebuildProgress)) (*derived, error) {
	var d *derived
	var total int64
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bMeta).Cursor()
		for k, v := c.Seek([]byte("count/")); k != nil && bytes.HasPrefix(k, []byte("count/")); k, v = c.Next() {
			if len(v) == 8 {
				total += int64(binary.BigEndian.Uint64(v))
			}
		}
		var read func(int64)
		if progress != nil {
			progress(RebuildProgress{Total: total})
			read = func(n int64) { progress(RebuildProgress{Done: n, Total: max(total, n)}) }
		}
		var err error
		r := &graph.CheckReport{}
		d, err = s.checkRecords(ctx, tx, m, r, read)
		total = r.Nodes + r.Edges
		return err
	})
	if err != nil {
		return nil, err
	}
	if progress != nil {
		progress(RebuildProgress{Done: total, Total: total, Writing: true})
	}
	return d, nil
}

// writeDerived replaces the derived buckets with d in tx, and clears the
// mark of stale derived data. The caller holds wmu and rw.
func writeDerived(tx *bbolt.Tx, d *derived) error {
	for _, b := range [][]byte{bType, bProp, bTok, bDeg, bIn, bDegIdx} {
		if err := tx.DeleteBucket(b); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	meta := tx.Bucket(bMeta)
	c := meta.Cursor()
	var stale [][]byte
	for _, prefix := range [][]byte{[]byte("count/"), []byte(dfPrefix)} {
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			stale = append(stale, bytes.Clone(k))
		}
	}
	for _, k := range stale {
		if err := meta.Delete(k); err != nil {
			return err
		}
	}
	var ops []kvOp
	var typ []packedWrite
	for k := range d.typeKeys {
		typ = append(typ, packedWrite{key: []byte(k)})
	}
	var prop []packedWrite
	for k := range d.propKeys {
		prop = append(prop, packedWrite{key: []byte(k)})
	}
	var tok []packedWrite
	for k := range d.tokKeys {
		tok = append(tok, packedWrite{key: []byte(k)})
	}
	for k, n := range d.counts {
		ops = append(ops, kvOp{bucket: bMeta, key: []byte(k), val: u64(uint64(n))})
	}
	for k, n := range d.terms {
		ops = append(ops, kvOp{bucket: bMeta, key: []byte(k), val: u64(uint64(n))})
	}
	var degIdx, in []packedWrite
	for k := range d.degIdxKeys() {
		degIdx = append(degIdx, packedWrite{key: []byte(k)})
	}
	err := tx.Bucket(bEdges).ForEach(func(k, _ []byte) error {
		in = append(in, packedWrite{key: inKey(graph.EdgeKeyFromBytes(k))})
		return nil
	})
	if err != nil {
		return err
	}
	// The packed indexes, a group at a time, in full blocks.
	for _, p := range []struct {
		bucket []byte
		ws     []packedWrite
	}{{bType, typ}, {bProp, prop}, {bTok, tok}, {bDegIdx, degIdx}, {bIn, in}} {
		slices.SortFunc(p.ws, func(a, b packedWrite) int { return bytes.Compare(a.key, b.key) })
		b := tx.Bucket(p.bucket)
		b.FillPercent = randomFill
		for ws := p.ws; len(ws) > 0; {
			n := 1
			for n < len(ws) && samePackGroup(ws[0].key, ws[n].key) {
				n++
			}
			if err := packedMerge(b, ws[:n]); err != nil {
				return err
			}
			ws = ws[n:]
		}
	}
	// Every node record gets the summary its edges imply, and the
	// current record layout.
	want := summaries(d.deg)
	err = tx.Bucket(bNodes).ForEach(func(k, v []byte) error {
		rec, err := decodeNodeRec(v)
		if err != nil {
			return corrupt(fmt.Sprintf("node %q", k), err)
		}
		rec.Deg = want[string(k)]
		if enc := rec.encode(); !bytes.Equal(enc, v) {
			ops = append(ops, kvOp{bucket: bNodes, key: bytes.Clone(k), val: enc})
		}
		return nil
	})
	if err != nil {
		return err
	}
	sortOps(ops)
	if err := writeOps(tx, ops); err != nil {
		return err
	}
	return meta.Delete(metaDeferred)
}

// Footprint returns how many bytes of the file the pages of each of its
// buckets take, Cayley's and Lore's, by name: where a store's size goes.
// It reads every page of every bucket's tree.
func (s *Store) Footprint() (map[string]int64, error) {
	out := map[string]int64{}
	err := s.read(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			st := b.Stats()
			out[string(name)] = int64(st.BranchAlloc + st.LeafAlloc)
			return nil
		})
	})
	return out, err
}
