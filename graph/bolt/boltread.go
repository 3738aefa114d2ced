package bolt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"

	cgraph "github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/quad"
	bbolt "go.etcd.io/bbolt"
)

// boltSnap is the planning snapshot: one bbolt read transaction, plus
// Cayley for the edges of a node. The caller holds the read lock.
type boltSnap struct {
	s  *Store
	tx *bbolt.Tx
}

func (b *boltSnap) NodeRecords(_ context.Context, ids []graph.ID) ([]*graph.NodeRecord, error) {
	recs, err := getNodeRecs(b.tx, ids)
	if err != nil {
		return nil, err
	}
	if d := b.s.deferred; d != nil && d.nodes != nil {
		if err := d.nodes.overlay(ids, recs); err != nil {
			return nil, err
		}
	}
	out := make([]*graph.NodeRecord, len(recs))
	for i, r := range recs {
		if r != nil {
			out[i] = &r.NodeRecord
		}
	}
	return out, nil
}

func (b *boltSnap) NodeTypes(_ context.Context, ids []graph.ID) ([]string, error) {
	nodes := b.tx.Bucket(bNodes)
	out := make([]string, len(ids))
	for i, id := range ids {
		if v := nodes.Get([]byte(id)); v != nil {
			t, err := decodeNodeType(v)
			if err != nil {
				return nil, corrupt(fmt.Sprintf("node %q", id), err)
			}
			out[i] = t
		}
	}
	if d := b.s.deferred; d != nil && d.nodes != nil {
		d.nodes.overlayTypes(ids, out)
	}
	return out, nil
}

func (b *boltSnap) EdgeRecords(_ context.Context, keys []graph.EdgeKey) ([]*edgeRec, error) {
	recs, err := getEdgeRecs(b.tx, keys)
	if err != nil {
		return nil, err
	}
	if d := b.s.deferred; d != nil && d.edges != nil {
		err = d.edges.overlay(keys, recs)
	}
	return recs, err
}

// Incident reads a node's out-edges from the edge records and its
// in-edges from the in-edge index.
func (b *boltSnap) Incident(ctx context.Context, id graph.ID) ([]graph.EdgeKey, error) {
	var keys []graph.EdgeKey
	err := b.s.nodeEdges(ctx, b.tx, id, graph.Both, b.s.Model().EdgeLabels(), nil, func(_ edgeOrder, k graph.EdgeKey) bool {
		keys = append(keys, k)
		return len(keys) <= graph.MaxBatch
	})
	if err != nil {
		return nil, err
	}
	if len(keys) > graph.MaxBatch {
		return nil, fmt.Errorf("node %q has more than %d edges; delete its edges in batches first: %w", id, graph.MaxBatch, graph.ErrInvalid)
	}
	return keys, nil
}

// IncidentLabels reads the labels of a node's edges from its edge
// summary; not while a bulk load defers the summaries (bDeg is marked,
// see degTallyKey).
func (b *boltSnap) IncidentLabels(_ context.Context, id graph.ID) (out, in []string, ok bool, err error) {
	if k, _ := b.tx.Bucket(bDeg).Cursor().First(); k != nil {
		return nil, nil, false, nil
	}
	v := b.tx.Bucket(bNodes).Get([]byte(id))
	if v == nil {
		return nil, nil, false, nil
	}
	r, err := decodeNodeRec(v)
	if err != nil {
		return nil, nil, false, corrupt(fmt.Sprintf("node %q", id), err)
	}
	es, err := decodeDeg(r.Deg)
	if err != nil {
		return nil, nil, false, corrupt(fmt.Sprintf("node %q", id), err)
	}
	for _, e := range es {
		if e.dir == 'o' {
			out = append(out, e.label)
		} else {
			in = append(in, e.label)
		}
	}
	return out, in, true, nil
}

func getNodeRecs(tx *bbolt.Tx, ids []graph.ID) ([]*nodeRec, error) {
	b := tx.Bucket(bNodes)
	out := make([]*nodeRec, len(ids))
	for i, id := range ids {
		v := b.Get([]byte(id))
		if v == nil {
			continue
		}
		r, err := decodeNodeRec(v)
		if err != nil {
			return nil, corrupt(fmt.Sprintf("node %q", id), err)
		}
		out[i] = r
	}
	return out, nil
}

func getEdgeRecs(tx *bbolt.Tx, keys []graph.EdgeKey) ([]*edgeRec, error) {
	b := tx.Bucket(bEdges)
	out := make([]*edgeRec, len(keys))
	for i, k := range keys {
		v := b.Get(k.Bytes())
		if v == nil {
			continue
		}
		r, err := decodeEdgeRec(v)
		if err != nil {
			return nil, corrupt("edge "+k.String(), err)
		}
		out[i] = r
	}
	return out, nil
}

func (r *nodeRec) node(id graph.ID) (*graph.Node, error) {
	props, err := graph.DecodeProps(r.Props)
	if err != nil {
		return nil, fmt.Errorf("node %q: corrupt properties: %w", id, err)
	}
	return &graph.Node{ID: id, Type: r.Type, Properties: props, CreatedAt: micros(r.Created), UpdatedAt: micros(r.Updated), Revision: r.Rev}, nil
}

func edgeOf(r *edgeRec, k graph.EdgeKey) (*graph.Edge, error) {
	props, err := graph.DecodeProps(r.Props)
	if err != nil {
		return nil, fmt.Errorf("edge %s: corrupt properties: %w", k, err)
	}
	return &graph.Edge{ID: k.String(), EdgeKey: k, Properties: props, CreatedAt: micros(r.Created), UpdatedAt: micros(r.Updated), Revision: r.Rev}, nil
}

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// Node returns one node with its per-label edge counts.
func (s *Store) Node(ctx context.Context, id graph.ID) (n *graph.Node, err error) {
	if err := id.Check(); err != nil {
		return nil, err
	}
	err = s.read(func(tx *bbolt.Tx) error {
		recs, err := getNodeRecs(tx, []graph.ID{id})
		if err != nil {
			return err
		}
		if recs[0] == nil {
			return fmt.Errorf("node %q: %w", id, graph.ErrNotFound)
		}
		if n, err = recs[0].node(id); err != nil {
			return err
		}
		es, err := decodeDeg(recs[0].Deg)
		if err != nil {
			return corrupt(fmt.Sprintf("node %q", id), err)
		}
		n.Edges = edgeCounts(es)
		return nil
	})
	return n, err
}

// Nodes returns the nodes with the given IDs, in order; missing ones are nil.
func (s *Store) Nodes(ctx context.Context, ids []graph.ID) ([]*graph.Node, error) {
	out := make([]*graph.Node, len(ids))
	err := s.read(func(tx *bbolt.Tx) error { return readNodes(tx, ids, nil, out) })
	return out, err
}

// NodesProps is Nodes with only the properties props of each node
// decoded (graph.PropsReader).
func (s *Store) NodesProps(ctx context.Context, ids []graph.ID, props []string) ([]*graph.Node, error) {
	out := make([]*graph.Node, len(ids))
	err := s.read(func(tx *bbolt.Tx) error { return readNodes(tx, ids, props, out) })
	return out, err
}

// readNodes reads the nodes ids into out (nil where there is none), with
// the properties props only unless props is nil. It decodes each record
// where bbolt holds it, with one cursor and one key
// buffer for all, and shares the type names between nodes of one type.
func readNodes(tx *bbolt.Tx, ids []graph.ID, props []string, out []*graph.Node) error {
	c := tx.Bucket(bNodes).Cursor()
	var key []byte
	types := map[string]string{}
	for i, id := range ids {
		key = append(key[:0], id...)
		k, v := c.Seek(key)
		if v == nil || !bytes.Equal(k, key) {
			continue
		}
		r, err := parseNodeRec(v)
		if err != nil {
			return corrupt(fmt.Sprintf("node %q", id), err)
		}
		typ, ok := types[string(r.typ)]
		if !ok {
			typ = string(r.typ)
			types[typ] = typ
		}
		var p graph.Props
		if props == nil {
			p, err = graph.DecodeProps(r.props)
		} else {
			p, err = graph.DecodeSomeProps(r.props, props)
		}
		if err != nil {
			return fmt.Errorf("node %q: corrupt properties: %w", id, err)
		}
		out[i] = &graph.Node{ID: id, Type: typ, Properties: p, CreatedAt: micros(r.created), UpdatedAt: micros(r.updated), Revision: r.rev}
	}
	return nil
}

// Edge returns one edge.
func (s *Store) Edge(ctx context.Context, k graph.EdgeKey) (e *graph.Edge, err error) {
	if err := k.Check(); err != nil {
		return nil, err
	}
	err = s.read(func(tx *bbolt.Tx) error {
		recs, err := getEdgeRecs(tx, []graph.EdgeKey{k})
		if err != nil {
			return err
		}
		if recs[0] == nil {
			return fmt.Errorf("edge %s: %w", k, graph.ErrNotFound)
		}
		e, err = edgeOf(recs[0], k)
		return err
	})
	return e, err
}

// valueNames resolves, in one transaction, the values of every direction of the primitives.
func valueNames(ctx context.Context, qs cgraph.QuadStore, prims []*cproto.Primitive) (map[uint64]quad.Value, error) {
	seen := map[uint64]bool{}
	var ids []uint64
	for _, p := range prims {
		for _, v := range []uint64{p.Subject, p.Predicate, p.Object, p.Label} {
			if v != 0 && !seen[v] {
				seen[v] = true
				ids = append(ids, v)
			}
		}
	}
	refs := make([]cgraph.Ref, len(ids))
	for i, v := range ids {
		refs[i] = ckv.Int64Value(v)
	}
	vals, err := cgraph.ValuesOf(ctx, qs, refs)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]quad.Value, len(ids))
	for i, v := range ids {
		out[v] = vals[i]
	}
	return out, nil
}

// edgeCursor is the last edge of an edge listing's page: the index in
// EdgeQuery.Nodes of the node it was listed for, and its place in that
// node's order. It holds nothing of Cayley's, so that a page continues
// in the same place on every store.
type edgeCursor struct {
	set  bool // false: the first page
	node int
	pos  edgeOrder
}

// edgeOrder is an edge's place among the edges of one node, as Store.Edges
// lists them: by label, then direction (out before in), then the node at
// the other end, then key; strings compare bytewise.
type edgeOrder struct {
	label string
	in    bool
	other graph.ID
	key   string
}

func (a edgeOrder) compare(b edgeOrder) int {
	if c := strings.Compare(a.label, b.label); c != 0 {
		return c
	}
	if a.in != b.in {
		if a.in {
			return 1
		}
		return -1
	}
	if c := strings.Compare(string(a.other), string(b.other)); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

func (c edgeCursor) String() string {
	return graph.EdgePlace{Node: c.node, Label: c.pos.label, In: c.pos.in, Other: c.pos.other, Key: c.pos.key}.Cursor()
}

// parseEdgeCursor checks q (graph.EdgeQueryPlace) and returns its cursor.
func parseEdgeCursor(q graph.EdgeQuery) (edgeCursor, error) {
	p, ok, err := graph.EdgeQueryPlace(q)
	if !ok || err != nil {
		return edgeCursor{}, err
	}
	return edgeCursor{set: true, node: p.Node, pos: edgeOrder{label: p.Label, in: p.In, other: p.Other, key: p.Key}}, nil
}

// Edges returns a page of the edges of q.Nodes in the order Store.Edges
// specifies. A node's out-edges are read from the edge records, its
// in-edges from the in-edge index, whose keys both sort that way (see
// nodeEdges).
func (s *Store) Edges(ctx context.Context, q graph.EdgeQuery) (*graph.EdgePage, error) {
	dir, err := graph.ParseDirection(string(q.Direction))
	if err != nil {
		return nil, err
	}
	labels, err := graph.KnownLabels(s.Model(), q.Labels)
	if err != nil {
		return nil, err
	}
	cur, err := parseEdgeCursor(q)
	if err != nil {
		return nil, err
	}
	limit := q.Size()
	page := &graph.EdgePage{Edges: []*graph.Edge{}}
	var keys []graph.EdgeKey
	err = s.read(func(tx *bbolt.Tx) error {
		first := 0
		if cur.set {
			first = cur.node
		}
		for ni := first; ni < len(q.Nodes) && page.Next == ""; ni++ {
			var after *edgeOrder
			if cur.set && ni == cur.node {
				after = &cur.pos
			}
			var last edgeOrder
			err := s.nodeEdges(ctx, tx, q.Nodes[ni], dir, labels, after, func(pos edgeOrder, k graph.EdgeKey) bool {
				if len(keys) == limit {
					page.Next = edgeCursor{set: true, node: ni, pos: last}.String()
					return false
				}
				keys = append(keys, k)
				last = pos
				return true
			})
			if err != nil {
				return err
			}
		}
		if q.KeysOnly {
			for _, k := range keys {
				page.Edges = append(page.Edges, &graph.Edge{ID: k.String(), EdgeKey: k})
			}
			return nil
		}
		recs, err := getEdgeRecs(tx, keys)
		if err != nil {
			return err
		}
		for i, r := range recs {
			if r == nil {
				return fmt.Errorf("edge %s is in Cayley's index but has no record: run lore check", keys[i])
			}
			e, err := edgeOf(r, keys[i])
			if err != nil {
				return err
			}
			page.Edges = append(page.Edges, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// nodeEdges calls f for the edges of node with the given labels (sorted)
// in direction dir, in the order of Store.Edges, from the first after
// after (nil: from the first), while f returns true. For Both, a
// self-loop is listed once, as an out-edge. The caller holds the read
// lock.
//
// Out-edges come from the edge records (keyed from, label, to, key),
// in-edges from the in-edge index (keyed to, label, from, key): both are
// in the order of Store.Edges already, so a page is a seek and a scan in
// key order, whatever the node's degree.
func (s *Store) nodeEdges(ctx context.Context, tx *bbolt.Tx, node graph.ID, dir graph.Direction, labels []string, after *edgeOrder, f func(edgeOrder, graph.EdgeKey) bool) error {
	if after != nil {
		i, _ := slices.BinarySearch(labels, after.label)
		labels = labels[i:]
	}
	out, in := boltKeys{tx.Bucket(bEdges).Cursor()}, newPackedCursor(tx.Bucket(bIn))
	for _, label := range labels {
		if err := ctx.Err(); err != nil {
			return err
		}
		for _, isIn := range []bool{false, true} {
			if isIn && dir == graph.Out || !isIn && dir == graph.In {
				continue
			}
			if after != nil && after.label == label && after.in && !isIn {
				continue // past every out-edge of the label
			}
			var c keyCursor = out
			if isIn {
				c = in
			}
			prefix := adjPrefix(node, label)
			seek := prefix
			if after != nil && after.label == label && after.in == isIn {
				seek = graph.EdgeKey{From: node, Label: label, To: after.other, Key: after.key}.Bytes()
			}
			for k := c.Seek(seek); k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
				other, key := splitAdjKey(k[len(prefix):])
				if isIn && dir == graph.Both && other == string(node) {
					continue // a self-loop, listed among the out-edges
				}
				pos := edgeOrder{label: label, in: isIn, other: graph.ID(other), key: key}
				if after != nil && pos.compare(*after) <= 0 {
					continue
				}
				ek := graph.EdgeKey{From: node, Label: label, To: graph.ID(other), Key: key}
				if isIn {
					ek.From, ek.To = ek.To, ek.From
				}
				if !f(pos, ek) {
					return nil
				}
			}
			if err := cursorErr(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// adjPrefix is the prefix of the keys of node's edges of one label, in
// the edge records (its out-edges) and in the in-edge index (its in-edges):
// node NUL label NUL.
func adjPrefix(node graph.ID, label string) []byte {
	b := make([]byte, 0, len(node)+len(label)+2)
	b = append(b, node...)
	b = append(b, 0)
	b = append(b, label...)
	return append(b, 0)
}

// splitAdjKey splits the rest of an adjacency key after its prefix (see
// adjPrefix) into the node at the other end and the edge's key, as one
// string and two slices of it.
func splitAdjKey(rest []byte) (other, key string) {
	s := string(rest)
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// inKey is the in-edge index's key of an edge: to NUL label NUL from NUL
// key, the key of the edge record with its ends swapped.
func inKey(k graph.EdgeKey) []byte {
	return graph.EdgeKey{From: k.To, Label: k.Label, To: k.From, Key: k.Key}.Bytes()
}

// NodesByType returns a page of the nodes of one type, ordered by ID.
func (s *Store) NodesByType(ctx context.Context, typ string, p graph.Page) (*graph.NodePage, error) {
	if _, err := graph.KnownType(s.Model(), typ); err != nil {
		return nil, err
	}
	page := &graph.NodePage{Nodes: []*graph.Node{}}
	err := s.read(func(tx *bbolt.Tx) error {
		ids, next, err := typeIDs(tx, typ, p)
		if err != nil {
			return err
		}
		page.Next = next
		recs, err := getNodeRecs(tx, ids)
		if err != nil {
			return err
		}
		for i, r := range recs {
			if r == nil {
				return fmt.Errorf("node %q is in the type index but has no record: run lore check", ids[i])
			}
			n, err := r.node(ids[i])
			if err != nil {
				return err
			}
			page.Nodes = append(page.Nodes, n)
		}
		return nil
	})
	return page, err
}

// NodeIDsByType returns a page of the IDs of the nodes of one type, by
// ID, from the type index alone.
func (s *Store) NodeIDsByType(ctx context.Context, typ string, p graph.Page) (*graph.IDPage, error) {
	if _, err := graph.KnownType(s.Model(), typ); err != nil {
		return nil, err
	}
	page := &graph.IDPage{}
	err := s.read(func(tx *bbolt.Tx) error {
		var err error
		page.IDs, page.Next, err = typeIDs(tx, typ, p)
		return err
	})
	if page.IDs == nil {
		page.IDs = []graph.ID{}
	}
	return page, err
}

// typeIDs reads a page of the type index: the IDs of typ's nodes after
// p.After, and the cursor after the page ("" at the end); an error if a
// block of the index does not decode.
func typeIDs(tx *bbolt.Tx, typ string, p graph.Page) (ids []graph.ID, next string, err error) {
	limit := p.Size()
	prefix := typeKey(typ, "")
	c := newPackedCursor(tx.Bucket(bType))
	k := c.Seek(prefix)
	if p.After != "" {
		after := typeKey(typ, graph.ID(p.After))
		k = c.Seek(after)
		if bytes.Equal(k, after) {
			k = c.Next()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
		if len(ids) == limit {
			return ids, string(ids[len(ids)-1]), nil
		}
		ids = append(ids, graph.ID(k[len(prefix):]))
	}
	return ids, "", c.err
}

// Lookup returns a page of the IDs of nodes whose indexed property matches,
// in value order, then ID order.
func (s *Store) Lookup(ctx context.Context, q graph.IndexQuery) (*graph.IDPage, error) {
	if _, err := graph.IndexedType(s.Model(), q.Type, q.Property); err != nil {
		return nil, err
	}
	prefix := propPrefix(q.Type, q.Property)
	lo, hi := prefix, append(bytes.Clone(prefix), 0xff)
	switch {
	case q.Eq != nil:
		enc, err := graph.CheckIndexValue("eq", q.Eq)
		if err != nil {
			return nil, err
		}
		lo = append(bytes.Clone(prefix), enc...)
		hi = lo
	default:
		if q.Min != nil {
			enc, err := graph.CheckIndexValue("min", q.Min)
			if err != nil {
				return nil, err
			}
			lo = append(bytes.Clone(prefix), enc...)
		}
		if q.Max != nil {
			enc, err := graph.CheckIndexValue("max", q.Max)
			if err != nil {
				return nil, err
			}
			hi = append(bytes.Clone(prefix), enc...)
		}
	}
	var after []byte
	if q.After != "" {
		var err error
		if after, err = base64.RawURLEncoding.DecodeString(q.After); err != nil || !bytes.HasPrefix(after, prefix) {
			return nil, fmt.Errorf("cursor %q does not belong to this lookup: %w", q.After, graph.ErrInvalid)
		}
	}
	limit := q.Size()
	page := &graph.IDPage{IDs: []graph.ID{}}
	err := s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bProp))
		k := c.Seek(lo)
		if after != nil {
			k = c.Seek(after)
			if bytes.Equal(k, after) {
				k = c.Next()
			}
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
			rest := k[len(prefix):]
			n := graph.IndexValueLen(rest)
			val := rest[:n]
			if q.MinExclusive && q.Min != nil && bytes.Equal(val, lo[len(prefix):]) {
				continue
			}
			if c := bytes.Compare(val, hi[len(prefix):]); c > 0 || c == 0 && q.MaxExclusive && q.Max != nil {
				break
			}
			if q.Eq != nil && !bytes.Equal(val, lo[len(prefix):]) {
				break
			}
			if len(page.IDs) == limit {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			page.IDs = append(page.IDs, graph.ID(rest[n:]))
			last = append(last[:0], k...) // encoded only for a next page
		}
		return c.err
	})
	return page, err
}

// ScanIndex calls f for each entry of the index of typ's property, in
// value order, then by ID, within one read transaction (which holds off
// the writer: a caller bounds its work through f).
func (s *Store) ScanIndex(ctx context.Context, typ, property string, f func(value []byte, id graph.ID) bool) error {
	if _, err := graph.IndexedType(s.Model(), typ, property); err != nil {
		return err
	}
	prefix := propPrefix(typ, property)
	return s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bProp))
		i := 0
		for k := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
			if i++; i%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			rest := k[len(prefix):]
			n := graph.IndexValueLen(rest)
			if !f(rest[:n], graph.ID(rest[n:])) {
				return nil
			}
		}
		return c.err
	})
}

// Stats counts nodes per type, edges per label and Cayley's quads.
func (s *Store) Stats(ctx context.Context) (*graph.Stats, error) {
	st := &graph.Stats{NodeTypes: map[string]int64{}, EdgeLabels: map[string]int64{}}
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bMeta).Cursor()
		prefix := []byte("count/")
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			kind, name, _ := strings.Cut(string(k[len(prefix):]), "/")
			n := int64(binary.BigEndian.Uint64(v))
			if kind == "node" {
				st.NodeTypes[name] = n
				st.Nodes += n
			} else {
				st.EdgeLabels[name] = n
				st.Edges += n
			}
		}
		st.LastSeq = s.lastSeq
		cst, err := s.qs.Stats(ctx, false)
		if errors.Is(err, ckv.ErrNoBucket) { // no quad written yet
			return nil
		}
		st.Quads = cst.Quads.Value
		return err
	})
	return st, err
}

// Since returns up to limit change-log entries after seq. A seq past the
// last entry is refused (it would skip the entries still to come), and
// never wraps around.
func (s *Store) Since(ctx context.Context, seq uint64, limit int) ([]graph.Change, error) {
	if limit <= 0 || limit > graph.MaxPageSize {
		limit = graph.DefaultPageSize
	}
	var out []graph.Change
	err := s.read(func(tx *bbolt.Tx) error {
		if seq >= s.lastSeq {
			return nil // nothing after it (and seq+1 could wrap)
		}
		c := tx.Bucket(bLog).Cursor()
		for k, v := c.Seek(u64(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var ch graph.Change
			if err := graph.DecodeChange(v, &ch); err != nil {
				return fmt.Errorf("change %d: corrupt entry: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, ch)
		}
		return nil
	})
	return out, err
}

// ScanNodes returns a page of every node, ordered by ID.
func (s *Store) ScanNodes(ctx context.Context, p graph.Page) (*graph.NodePage, error) {
	page := &graph.NodePage{Nodes: []*graph.Node{}}
	limit := p.Size()
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bNodes).Cursor()
		k, v := c.First()
		if p.After != "" {
			k, v = c.Seek([]byte(p.After))
			if string(k) == p.After {
				k, v = c.Next()
			}
		}
		for ; k != nil; k, v = c.Next() {
			if len(page.Nodes) == limit {
				page.Next = string(page.Nodes[len(page.Nodes)-1].ID)
				break
			}
			r, err := decodeNodeRec(v)
			if err != nil {
				return corrupt(fmt.Sprintf("node %q", k), err)
			}
			n, err := r.node(graph.ID(k))
			if err != nil {
				return err
			}
			page.Nodes = append(page.Nodes, n)
		}
		return nil
	})
	return page, err
}

// ScanEdges returns a page of every edge, ordered by from, label, to and key.
func (s *Store) ScanEdges(ctx context.Context, p graph.Page) (*graph.EdgePage, error) {
	var after []byte
	if p.After != "" {
		var err error
		if after, err = base64.RawURLEncoding.DecodeString(p.After); err != nil {
			return nil, fmt.Errorf("cursor %q is not an edge scan cursor: %w", p.After, graph.ErrInvalid)
		}
	}
	page := &graph.EdgePage{Edges: []*graph.Edge{}}
	limit := p.Size()
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bEdges).Cursor()
		k, v := c.First()
		if after != nil {
			k, v = c.Seek(after)
			if bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		var last []byte
		for ; k != nil; k, v = c.Next() {
			if len(page.Edges) == limit {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			r, err := decodeEdgeRec(v)
			if err != nil {
				return corrupt(fmt.Sprintf("edge %q", k), err)
			}
			e, err := edgeOf(r, graph.EdgeKeyFromBytes(k))
			if err != nil {
				return err
			}
			page.Edges = append(page.Edges, e)
			last = bytes.Clone(k)
		}
		return nil
	})
	return page, err
}

// Postings returns a page of the text-search index.
func (s *Store) Postings(ctx context.Context, q graph.PostingQuery) (*graph.PostingPage, error) {
	if q.Prefix == "" {
		return nil, fmt.Errorf("empty search token: %w", graph.ErrInvalid)
	}
	switch {
	case q.Exact && q.Nodes != nil:
		return s.postingsOf(q)
	case q.Exact && q.ByWeight:
		return s.postingsByWeight(q)
	}
	limit := q.Size()
	maxScan := q.MaxScan
	if maxScan <= 0 {
		maxScan = limit
	}
	prefix := tokScanPrefix(tokByToken, q.Prefix, q.Exact)
	seek := prefix
	if q.Exact && q.Type != "" {
		seek = append(append(bytes.Clone(prefix), q.Type...), 0)
	}
	var after []byte
	if q.After != "" {
		var err error
		if after, err = base64.RawURLEncoding.DecodeString(q.After); err != nil || !bytes.HasPrefix(after, prefix) {
			return nil, fmt.Errorf("cursor %q does not belong to this index scan: %w", q.After, graph.ErrInvalid)
		}
	}
	page := &graph.PostingPage{}
	err := s.read(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bTok))
		k := c.Seek(seek)
		if after != nil {
			if k = c.Seek(after); bytes.Equal(k, after) {
				k = c.Next()
			}
		}
		var last []byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k = c.Next() {
			if last != nil && (page.Scanned == maxScan || len(page.Postings) == limit) {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			last = append(last[:0], k...)
			page.Scanned++
			// token NUL type NUL ID NUL weight
			parts := bytes.SplitN(tokTail(k), []byte{0}, 4)
			if len(parts) != 4 || len(parts[3]) != 1 {
				continue
			}
			if q.Type != "" && string(parts[1]) != q.Type {
				if q.Exact {
					break
				}
				continue
			}
			page.Postings = append(page.Postings, graph.Posting{Token: string(parts[0]), Type: string(parts[1]), ID: graph.ID(parts[2]), Weight: int(parts[3][0])})
		}
		return c.err
	})
	return page, err
}
