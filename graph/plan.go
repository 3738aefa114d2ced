package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/lore-dev/lore/schema"
)

// Writing a batch has two halves. The engine's half, the same for every
// backend, is PlanBatch: it validates the batch against the model and the
// store's current records, as a Snapshot shows them, and returns a Plan of
// record changes, the batch's Result and its change-log entry. The
// backend's half commits a Plan: its records, whatever it derives from
// them (type, property and text indexes, edge counts, Stats' counts), the
// change-log entry and the idempotency key, atomically, with Seq set to
// the next sequence number. A backend plans and commits under its writer
// lock, so that nothing changes between the two.

// A NodeRecord is a node's stored state. Props is canonical JSON (sorted
// keys, no HTML escaping, as PlanBatch makes it), so equal properties are
// equal bytes. Times are Unix microseconds.
type NodeRecord struct {
	Type    string
	Props   json.RawMessage
	Created int64
	Updated int64
	Rev     int64
}

// An EdgeRecord is an edge's stored state; its key is stored beside it.
// Props is nil when the edge has none.
type EdgeRecord struct {
	Props   json.RawMessage
	Created int64
	Updated int64
	Rev     int64
}

// A Snapshot is what PlanBatch reads: the store's committed state as the
// writer sees it, unchanged for as long as planning lasts (a backend plans
// under its writer lock, in one read transaction). Results are in the
// order of the arguments.
type Snapshot interface {
	// NodeRecords returns the record of each node, nil for a missing one.
	NodeRecords(ctx context.Context, ids []ID) ([]*NodeRecord, error)
	// NodeTypes returns the type of each node, "" for a missing one.
	NodeTypes(ctx context.Context, ids []ID) ([]string, error)
	// EdgeRecords returns the record of each edge, nil for a missing one.
	EdgeRecords(ctx context.Context, keys []EdgeKey) ([]*EdgeRecord, error)
	// Incident returns every edge that starts or ends at id, a self-loop
	// once; a node with more than MaxBatch edges is an error wrapping
	// ErrInvalid (a batch cannot delete them all).
	Incident(ctx context.Context, id ID) ([]EdgeKey, error)
}

// assumeSnap answers for nodes a dry run assumes to exist.
type assumeSnap struct {
	Snapshot
	assume map[ID]string
}

func (a assumeSnap) NodeRecords(ctx context.Context, ids []ID) ([]*NodeRecord, error) {
	recs, err := a.Snapshot.NodeRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if t, ok := a.assume[id]; ok && recs[i] == nil {
			recs[i] = &NodeRecord{Type: t, Props: json.RawMessage("null"), Rev: 1}
		}
	}
	return recs, nil
}

func (a assumeSnap) NodeTypes(ctx context.Context, ids []ID) ([]string, error) {
	types, err := a.Snapshot.NodeTypes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if t, ok := a.assume[id]; ok && types[i] == "" {
			types[i] = t
		}
	}
	return types, nil
}

// overlaySnap answers from a plan not yet committed, then from the store:
// it lets the next batch be planned while that plan commits.
type overlaySnap struct {
	Snapshot
	nodes map[ID]*NodeRecord // nil value: deleted
	edges map[EdgeKey]*EdgeRecord
}

// OverlaySnapshot returns a Snapshot of the state after prev commits: prev's
// records, then snap's. It lets a backend plan the next batch while prev
// commits (see Pipeliner). Its Incident fails: a batch that deletes nodes
// must be planned against the committed state.
func OverlaySnapshot(snap Snapshot, prev *Plan) Snapshot {
	o := overlaySnap{snap, make(map[ID]*NodeRecord, len(prev.Nodes)), make(map[EdgeKey]*EdgeRecord, len(prev.Edges))}
	for _, op := range prev.Nodes {
		o.nodes[op.ID] = op.New
	}
	for _, op := range prev.Edges {
		o.edges[op.Key] = op.New
	}
	return o
}

func (o overlaySnap) node(id ID) (*NodeRecord, bool) {
	r, ok := o.nodes[id]
	return r, ok
}

func (o overlaySnap) NodeRecords(ctx context.Context, ids []ID) ([]*NodeRecord, error) {
	recs, err := o.Snapshot.NodeRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if r, ok := o.node(id); ok {
			recs[i] = r
		}
	}
	return recs, nil
}

func (o overlaySnap) NodeTypes(ctx context.Context, ids []ID) ([]string, error) {
	types, err := o.Snapshot.NodeTypes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if r, ok := o.node(id); ok {
			types[i] = ""
			if r != nil {
				types[i] = r.Type
			}
		}
	}
	return types, nil
}

func (o overlaySnap) EdgeRecords(ctx context.Context, keys []EdgeKey) ([]*EdgeRecord, error) {
	recs, err := o.Snapshot.EdgeRecords(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if r, ok := o.edges[k]; ok {
			recs[i] = r
		}
	}
	return recs, nil
}

func (o overlaySnap) Incident(context.Context, ID) ([]EdgeKey, error) {
	return nil, errors.New("internal: node deletes are never planned beside a commit")
}

// A NodeOp is one node change of a Plan: Old is nil for a node the
// batch creates, New is nil for one it deletes.
type NodeOp struct {
	ID       ID
	Old, New *NodeRecord
	// Props are New's properties, decoded (nil for a delete): what the
	// backend indexes.
	Props Props
}

// prepared caches the part of validating an element that needs no store:
// its canonical properties and the schema's verdict. Import prepares the
// next batch while the store commits the current one.
type prepared struct {
	canon json.RawMessage
	props Props
	err   error
}

func prepareProps(validate func(map[string]any) error, p Props) *prepared {
	if len(p) == 0 { // most edges: no encoding to do
		return &prepared{canon: json.RawMessage(`{}`), props: Props{}, err: validate(nil)}
	}
	canon, decoded, err := canonicalProps(p)
	if err != nil {
		return &prepared{err: &jsonError{err}}
	}
	return &prepared{canon: canon, props: decoded, err: validate(decoded)}
}

type jsonError struct{ err error }

func (e *jsonError) Error() string { return e.err.Error() }

// prepare fills in the prepared state of every element whose type is known.
func prepare(m *schema.Model, b *Batch) {
	for i := range b.Nodes {
		n := &b.Nodes[i]
		if nt, ok := m.Node(n.Type); ok && !n.Merge {
			n.prep = prepareProps(nt.Validate, n.Properties)
		}
	}
	for i := range b.Edges {
		e := &b.Edges[i]
		if et, ok := m.Edge(e.Label); ok {
			e.prep = prepareProps(et.Validate, e.Properties)
		}
	}
}

// An EdgeOp is one edge change of a Plan: Old is nil for an edge the
// batch creates, New is nil for one it deletes (explicitly, or because
// the batch deletes one of its nodes).
type EdgeOp struct {
	Key      EdgeKey
	Old, New *EdgeRecord
}

// A Plan is a validated batch, ready for a backend to commit: the element
// changes (elements the batch leaves unchanged are not among them), the
// Result and the change-log entry. The backend sets Result.Seq and
// Change.Seq to the entry's sequence number as it commits; a Plan that
// changes nothing (Empty) gets no entry and no sequence number.
type Plan struct {
	Nodes  []NodeOp
	Edges  []EdgeOp
	Result *Result
	Change *Change
}

// Empty reports whether the plan changes nothing.
func (p *Plan) Empty() bool { return len(p.Nodes) == 0 && len(p.Edges) == 0 }

// PlanBatch validates b against the model and the snapshot, and plans its
// changes with t (normalised, see NormalizeTime) as their time. A batch
// that must be rejected returns a *BatchError listing every problem, and
// no plan. A DryRun batch is planned like any other: the backend commits
// nothing and returns the plan's Result.
func PlanBatch(ctx context.Context, m *schema.Model, snap Snapshot, b *Batch, t time.Time) (*Plan, error) {
	if len(b.Assume) > 0 {
		snap = assumeSnap{snap, b.Assume}
	}
	ps := problems{rank: b.rank}
	if b.Len() == 0 {
		ps.add(ErrInvalid, "", "batch", "empty", "the batch holds no element; give nodes, edges, deleteNodes or deleteEdges")
		return nil, ps.err()
	}
	if b.Len() > b.limit() {
		ps.add(ErrInvalid, "", "batch", "size", "%d elements; split it into batches of at most %d", b.Len(), b.limit())
		return nil, ps.err()
	}
	// Sized up front: an import's batches are tens of thousands of
	// elements, and growing maps and lists copies them again and again.
	nn, ne := len(b.Nodes)+len(b.DeleteNodes), len(b.Edges)+len(b.DeleteEdges)
	seenNode := make(map[ID]elemRef, nn)
	seenEdge := make(map[EdgeKey]elemRef, ne)
	dup := func(ptr, elem string, first elemRef) {
		ps.add(ErrInvalid, ptr, elem, "duplicate", "already appears at %s; each element may appear once per batch", first)
	}

	// Static checks, and the records to read. An element that fails one
	// is left out of the stateful checks; the others still go through
	// them, so that one answer lists every problem to fix.
	nodeIDs := make([]ID, 0, nn)
	edgeKeys := make([]EdgeKey, 0, ne)
	nodeOK := make([]bool, len(b.Nodes))
	for i, n := range b.Nodes {
		here := elemRef{"nodes", i}
		if err := n.ID.Check(); err != nil {
			ps.add(ErrInvalid, here.String()+"/id", nodeElem(n.ID), "id", "%v", unwrapMsg(err))
			continue
		}
		if first, ok := seenNode[n.ID]; ok {
			dup(here.String(), nodeElem(n.ID), first)
			continue
		}
		seenNode[n.ID] = here
		nodeIDs = append(nodeIDs, n.ID)
		ok := revisionInRange(&ps, here, nodeElem(n.ID), n.Revision) &&
			expectedInRange(&ps, here, nodeElem(n.ID), n.ExpectedRevision)
		if _, known := m.Node(n.Type); !known {
			ps.add(ErrInvalid, here.String()+"/type", nodeElem(n.ID), "unknown-type", "unknown node type %q; the model has %s", n.Type, list(m.NodeTypeNames()))
			ok = false
		}
		nodeOK[i] = ok
	}
	delNodeOK := make([]bool, len(b.DeleteNodes))
	for i, d := range b.DeleteNodes {
		here := elemRef{"deleteNodes", i}
		if err := d.ID.Check(); err != nil {
			ps.add(ErrInvalid, here.String()+"/id", nodeElem(d.ID), "id", "%v", unwrapMsg(err))
			continue
		}
		if first, ok := seenNode[d.ID]; ok {
			dup(here.String(), nodeElem(d.ID), first)
			continue
		}
		seenNode[d.ID] = here
		nodeIDs = append(nodeIDs, d.ID)
		delNodeOK[i] = expectedInRange(&ps, here, nodeElem(d.ID), d.ExpectedRevision)
	}
	checkEdge := func(here elemRef, k EdgeKey) bool {
		if err := k.Check(); err != nil {
			ps.add(ErrInvalid, here.String(), edgeElem(k), "id", "%v", unwrapMsg(err))
			return false
		}
		et, ok := m.Edge(k.Label)
		if !ok {
			ps.add(ErrInvalid, here.String()+"/label", edgeElem(k), "unknown-label", "unknown edge label %q; the model has %s", k.Label, list(m.EdgeLabels()))
			return false
		}
		if et.Keyed && k.Key == "" {
			ps.add(ErrInvalid, here.String()+"/key", edgeElem(k), "key", "%s edges are keyed; give a key (for a relation, its type)", k.Label)
			return false
		}
		if !et.Keyed && k.Key != "" {
			ps.add(ErrInvalid, here.String()+"/key", edgeElem(k), "key", "%s edges take no key; remove it", k.Label)
			return false
		}
		if first, ok := seenEdge[k]; ok {
			dup(here.String(), edgeElem(k), first)
			return false
		}
		seenEdge[k] = here
		edgeKeys = append(edgeKeys, k)
		return true
	}
	edgeOK := make([]bool, len(b.Edges))
	var endpoints []ID // nodes only edges name: their types are all planning needs
	for i, e := range b.Edges {
		here := elemRef{"edges", i}
		edgeOK[i] = checkEdge(here, e.EdgeKey) &&
			revisionInRange(&ps, here, edgeElem(e.EdgeKey), e.Revision) &&
			expectedInRange(&ps, here, edgeElem(e.EdgeKey), e.ExpectedRevision)
		if edgeOK[i] {
			for _, id := range []ID{e.From, e.To} {
				if _, ok := seenNode[id]; !ok {
					endpoints = append(endpoints, id)
				}
			}
		}
	}
	delEdgeOK := make([]bool, len(b.DeleteEdges))
	for i, e := range b.DeleteEdges {
		here := elemRef{"deleteEdges", i}
		delEdgeOK[i] = checkEdge(here, e.EdgeKey) && expectedInRange(&ps, here, edgeElem(e.EdgeKey), e.ExpectedRevision)
	}

	// Stateful checks.
	endpoints = uniq(endpoints)
	slices.Sort(endpoints) // sorted lookups walk the index in order
	types, err := snap.NodeTypes(ctx, endpoints)
	if err != nil {
		return nil, err
	}
	endpointType := make(map[ID]string, len(endpoints))
	for i, id := range endpoints {
		if types[i] != "" {
			endpointType[id] = types[i]
		}
	}
	recs, err := snap.NodeRecords(ctx, nodeIDs)
	if err != nil {
		return nil, err
	}
	oldNode := make(map[ID]*NodeRecord, len(nodeIDs))
	for i, id := range nodeIDs {
		if recs[i] != nil {
			oldNode[id] = recs[i]
		}
	}
	erecs, err := snap.EdgeRecords(ctx, edgeKeys)
	if err != nil {
		return nil, err
	}
	oldEdge := make(map[EdgeKey]*EdgeRecord, len(edgeKeys))
	for i, k := range edgeKeys {
		if erecs[i] != nil {
			oldEdge[k] = erecs[i]
		}
	}

	p := &Plan{
		Nodes:  make([]NodeOp, 0, nn),
		Edges:  make([]EdgeOp, 0, ne),
		Result: &Result{Nodes: make([]ElementResult, 0, len(b.Nodes)), Edges: make([]ElementResult, 0, len(b.Edges))},
		Change: &Change{Time: t, Op: b.Op, Nodes: make([]NodeChange, 0, nn), Edges: make([]EdgeChange, 0, ne)},
	}
	badNode := map[ID]bool{} // nodes of the batch already reported; their edges are not reported again
	if p.Change.Op == "" {
		p.Change.Op = "write"
	}
	us := t.UnixMicro()
	newType := map[ID]string{}
	for i, n := range b.Nodes {
		here := elemRef{"nodes", i}
		name := func() string { return nodeElem(n.ID) } // for the problems only
		if n.ID.Check() == nil && seenNode[n.ID] == here {
			badNode[n.ID] = true // its edges are not reported again
		}
		if !nodeOK[i] {
			continue
		}
		nt, _ := m.Node(n.Type)
		old := oldNode[n.ID]
		if old != nil && old.Type != n.Type {
			ps.add(ErrInvalid, here.String()+"/type", name(), "type-change", "the node is a %s; a node's type cannot change (delete it and create it again)", old.Type)
			continue
		}
		if !revisionOK(&ps, here, name, n.ExpectedRevision, old.rev()) {
			continue
		}
		prep := n.prep
		if prep == nil || n.Merge {
			props := n.Properties
			if n.Merge && old != nil {
				if props, err = mergeProps(old.Props, n.Properties); err != nil {
					return nil, err
				}
			}
			prep = prepareProps(nt.Validate, props)
		}
		if !propsOK(&ps, here, name, prep) {
			continue
		}
		canon := prep.canon
		newType[n.ID] = n.Type
		delete(badNode, n.ID)
		rec := &NodeRecord{Type: n.Type, Props: canon}
		st := Created
		switch {
		case old == nil:
			rec.Created, rec.Updated, rec.Rev = us, us, 1
			if b.Restore {
				restoreMeta(&rec.Created, &rec.Updated, &rec.Rev, n.CreatedAt, n.UpdatedAt, n.Revision)
			}
		case bytes.Equal(old.Props, canon):
			p.Result.Nodes = append(p.Result.Nodes, ElementResult{ID: string(n.ID), Status: Unchanged, Revision: old.Rev})
			continue
		default:
			if !revisionLeft(&ps, here, name, old.Rev) {
				continue
			}
			st = Updated
			rec.Created, rec.Updated, rec.Rev = old.Created, us, old.Rev+1
		}
		p.Nodes = append(p.Nodes, NodeOp{ID: n.ID, Old: old, New: rec, Props: prep.props})
		p.Result.Nodes = append(p.Result.Nodes, ElementResult{ID: string(n.ID), Status: st, Revision: rec.Rev})
		p.Change.Nodes = append(p.Change.Nodes, NodeChange{ID: n.ID, Type: n.Type, Action: st, Revision: rec.Rev})
	}

	deletedNode := map[ID]bool{}
	cascade := map[EdgeKey]bool{}
	var cascadeOrder []EdgeKey
	for i, d := range b.DeleteNodes {
		if !delNodeOK[i] {
			continue
		}
		here := elemRef{"deleteNodes", i}
		name := func() string { return nodeElem(d.ID) }
		old := oldNode[d.ID]
		if old == nil {
			ps.add(ErrNotFound, here.String()+"/id", name(), "not-found", "no such node")
			continue
		}
		if !revisionOK(&ps, here, name, d.ExpectedRevision, old.Rev) {
			continue
		}
		deletedNode[d.ID] = true
		p.Nodes = append(p.Nodes, NodeOp{ID: d.ID, Old: old})
		p.Result.DeletedNodes = append(p.Result.DeletedNodes, d.ID)
		p.Change.Nodes = append(p.Change.Nodes, NodeChange{ID: d.ID, Type: old.Type, Action: Deleted, Revision: old.Rev})
		inc, err := snap.Incident(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		for _, k := range inc {
			if !cascade[k] {
				cascade[k] = true
				cascadeOrder = append(cascadeOrder, k)
			}
		}
	}

	typeOf := func(id ID) (string, bool) {
		if deletedNode[id] {
			return "", false
		}
		if t, ok := newType[id]; ok {
			return t, true
		}
		if r := oldNode[id]; r != nil {
			return r.Type, true
		}
		t, ok := endpointType[id]
		return t, ok
	}
	for i, e := range b.Edges {
		if !edgeOK[i] {
			continue
		}
		here := elemRef{"edges", i}
		name := func() string { return edgeElem(e.EdgeKey) } // for the problems only
		if badNode[e.From] || badNode[e.To] {
			continue // the node's own problem is reported
		}
		et, _ := m.Edge(e.Label)
		ft, fok := typeOf(e.From)
		tt, tok := typeOf(e.To)
		bad := false
		for _, end := range []struct {
			ok   bool
			id   ID
			name string
		}{{fok, e.From, "from"}, {tok, e.To, "to"}} {
			if !end.ok {
				bad = true
				why := "no such node"
				if deletedNode[end.id] {
					why = "the batch deletes that node"
				}
				ps.add(ErrInvalid, here.String()+"/"+end.name, name(), "dangling", "%s node %q: %s; create it first or in the same batch", end.name, end.id, why)
			}
		}
		if bad {
			continue
		}
		if !et.Allows(ft, tt) {
			ps.add(ErrInvalid, here.String(), name(), "endpoint-type", "%s edges join %s to %s, not %s to %s",
				e.Label, list(et.From), list(et.To), ft, tt)
			continue
		}
		old := oldEdge[e.EdgeKey]
		if !revisionOK(&ps, here, name, e.ExpectedRevision, old.rev()) {
			continue
		}
		prep := e.prep
		if prep == nil {
			prep = prepareProps(et.Validate, e.Properties)
		}
		if !propsOK(&ps, here, name, prep) {
			continue
		}
		canon := prep.canon
		if bytes.Equal(canon, []byte("{}")) {
			canon = nil
		}
		rec := &EdgeRecord{Props: canon}
		st := Created
		switch {
		case old == nil:
			rec.Created, rec.Updated, rec.Rev = us, us, 1
			if b.Restore {
				restoreMeta(&rec.Created, &rec.Updated, &rec.Rev, e.CreatedAt, e.UpdatedAt, e.Revision)
			}
		case bytes.Equal(old.Props, canon):
			p.Result.Edges = append(p.Result.Edges, ElementResult{ID: e.String(), Status: Unchanged, Revision: old.Rev})
			continue
		default:
			if !revisionLeft(&ps, here, name, old.Rev) {
				continue
			}
			st = Updated
			rec.Created, rec.Updated, rec.Rev = old.Created, us, old.Rev+1
		}
		p.Edges = append(p.Edges, EdgeOp{Key: e.EdgeKey, Old: old, New: rec})
		p.Result.Edges = append(p.Result.Edges, ElementResult{ID: e.String(), Status: st, Revision: rec.Rev})
		p.Change.Edges = append(p.Change.Edges, EdgeChange{EdgeKey: e.EdgeKey, Action: st, Revision: rec.Rev})
	}

	deletedEdge := map[EdgeKey]bool{}
	for i, d := range b.DeleteEdges {
		if !delEdgeOK[i] {
			continue
		}
		here := elemRef{"deleteEdges", i}
		name := func() string { return edgeElem(d.EdgeKey) }
		old := oldEdge[d.EdgeKey]
		if old == nil {
			ps.add(ErrNotFound, here.String(), name(), "not-found", "no such edge")
			continue
		}
		if !revisionOK(&ps, here, name, d.ExpectedRevision, old.Rev) {
			continue
		}
		deletedEdge[d.EdgeKey] = true
		p.Edges = append(p.Edges, EdgeOp{Key: d.EdgeKey, Old: old})
	}
	if len(ps.list) > 0 {
		return nil, ps.err()
	}
	// Cascaded edges: those not deleted explicitly.
	var casc []EdgeKey
	for _, k := range cascadeOrder {
		if !deletedEdge[k] {
			casc = append(casc, k)
		}
	}
	crecs, err := snap.EdgeRecords(ctx, casc)
	if err != nil {
		return nil, err
	}
	for i, k := range casc {
		if crecs[i] == nil {
			return nil, fmt.Errorf("edge %s is in Cayley's index but has no record: run lore check", k)
		}
		p.Edges = append(p.Edges, EdgeOp{Key: k, Old: crecs[i]})
	}
	for _, op := range p.Edges {
		if op.New == nil {
			p.Result.DeletedEdges = append(p.Result.DeletedEdges, op.Key.String())
			p.Change.Edges = append(p.Change.Edges, EdgeChange{EdgeKey: op.Key, Action: Deleted, Revision: op.Old.Rev})
		}
	}
	return p, nil
}

// elemRef names an element of a batch: its list and index. Its pointer
// ("/edges/3") is made only for a problem to report.
type elemRef struct {
	list string
	i    int
}

func (r elemRef) String() string { return "/" + r.list + "/" + strconv.Itoa(r.i) }

func (r *NodeRecord) rev() int64 {
	if r == nil {
		return 0
	}
	return r.Rev
}

func (r *EdgeRecord) rev() int64 {
	if r == nil {
		return 0
	}
	return r.Rev
}

// revisionInRange checks a revision an input carries (0: none).
func revisionInRange(ps *problems, here elemRef, elem string, rev int64) bool {
	if rev >= 0 && rev <= MaxRevision {
		return true
	}
	ps.add(ErrInvalid, here.String()+"/revision", elem, "revision", "revision %d is out of range; a revision is from 1 to %d", rev, int64(MaxRevision))
	return false
}

// expectedInRange checks an expected revision: 0 (the element must not
// exist) to MaxRevision.
func expectedInRange(ps *problems, here elemRef, elem string, want *int64) bool {
	if want == nil || *want >= 0 && *want <= MaxRevision {
		return true
	}
	ps.add(ErrInvalid, here.String()+"/expectedRevision", elem, "revision", "expected revision %d is out of range; give 0 (the element must not exist yet) to %d", *want, int64(MaxRevision))
	return false
}

// revisionLeft reports whether an element at revision rev may change
// again: its next revision must not pass MaxRevision.
func revisionLeft(ps *problems, here elemRef, elem func() string, rev int64) bool {
	if rev < MaxRevision {
		return true
	}
	ps.add(ErrInvalid, here.String(), elem(), "revision-limit", "the element is at revision %d, the highest a revision may reach (2^53-1, what every JSON client keeps exactly); it cannot change again: delete it and create it anew", rev)
	return false
}

// revisionOK checks an element's expected revision; the element's pointer
// and name are made only for a problem.
func revisionOK(ps *problems, here elemRef, elem func() string, want *int64, have int64) bool {
	if want == nil || *want == have {
		return true
	}
	ptr := here.String()
	switch {
	case *want == 0:
		ps.add(ErrConflict, ptr+"/expectedRevision", elem(), "revision", "expected no such element, but it exists at revision %d", have)
	case have == 0:
		ps.add(ErrConflict, ptr+"/expectedRevision", elem(), "revision", "expected revision %d, but the element does not exist", *want)
	default:
		ps.add(ErrConflict, ptr+"/expectedRevision", elem(), "revision", "expected revision %d, but it is at revision %d; read it again and retry", *want, have)
	}
	return false
}

func restoreMeta(created, updated, rev *int64, c, u time.Time, r int64) {
	if !c.IsZero() {
		*created = NormalizeTime(c).UnixMicro()
	}
	if !u.IsZero() {
		*updated = NormalizeTime(u).UnixMicro()
	}
	if r > 0 {
		*rev = r
	}
}

// propsOK reports an element's property problems; its pointer and name
// are made only for a problem.
func propsOK(ps *problems, here elemRef, elem func() string, p *prepared) bool {
	if p.err == nil {
		return true
	}
	ptr := here.String() + "/properties"
	var je *jsonError
	if errors.As(p.err, &je) {
		ps.add(ErrInvalid, ptr, elem(), "json", "properties are not JSON values: %v", je.err)
	} else {
		addViolations(ps, ptr, elem(), p.err)
	}
	return false
}

func addViolations(ps *problems, base, elem string, err error) {
	var ve *schema.ValidationError
	if !errors.As(err, &ve) {
		ps.add(ErrInvalid, base, elem, "schema", "%v", err)
		return
	}
	for _, v := range ve.Violations {
		ps.add(ErrInvalid, base+v.Pointer, elem, v.Rule, "%s", v.Message)
	}
}

// canonicalProps encodes props as canonical JSON. Values of other Go types
// than decoded JSON's are decoded back, so what is validated is exactly
// what is stored.
func canonicalProps(p Props) (json.RawMessage, map[string]any, error) {
	if p == nil {
		p = Props{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, nil, err
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if pureJSON(p) {
		return raw, p, nil
	}
	decoded, err := DecodeProps(raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, decoded, nil
}

// pureJSON reports whether v holds only what encoding/json decodes with
// UseNumber: such values encode and decode back to themselves.
func pureJSON(v any) bool {
	switch x := v.(type) {
	case nil, bool, json.Number:
		return true
	case string:
		return utf8.ValidString(x) // encoding replaces invalid UTF-8
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) {
				return false
			}
			if !pureJSON(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !pureJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// DecodeProps decodes stored properties (canonical JSON, as PlanBatch
// makes them) as Lore hands them out: numbers as json.Number.
func DecodeProps(raw []byte) (Props, error) {
	p := Props{}
	if len(raw) == 0 {
		return p, nil
	}
	if err := schema.Decode(raw, &p); err != nil {
		return nil, err
	}
	return p, nil
}

func mergeProps(old json.RawMessage, patch Props) (Props, error) {
	base, err := DecodeProps(old)
	if err != nil {
		return nil, err
	}
	merged := maps.Clone(base)
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = v
		}
	}
	return merged, nil
}

func uniq(ids []ID) []ID {
	seen := make(map[ID]bool, len(ids))
	out := ids[:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// unwrapMsg returns err's message without the trailing category.
func unwrapMsg(err error) string {
	s := err.Error()
	for _, cat := range []error{ErrInvalid, ErrNotFound, ErrConflict} {
		if suffix := ": " + cat.Error(); len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix {
			return s[:len(s)-len(suffix)]
		}
	}
	return s
}

func list(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	s := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			s += " or "
		default:
			s += ", "
		}
		s += n
	}
	return s
}
