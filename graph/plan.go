package graph

import (
	"bytes"
	"cmp"
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
// it lets the next batch be planned while that plan commits. The map of
// the plan's edges is made at the first lookup of edge records: a bulk
// load's batches look up only the edges their input gives again (the rest
// are known absent), and making it for each batch (a 50,000-edge map of
// keys of four strings) was some 1.5 s of a 1M-node load's CPU.
type overlaySnap struct {
	Snapshot
	nodes map[ID]*NodeRecord // nil value: deleted
	prev  *Plan
	edges map[EdgeKey]*EdgeRecord // made by edgeMap
}

// OverlaySnapshot returns a Snapshot of the state after prev commits: prev's
// records, then snap's. It lets a backend plan the next batch while prev
// commits (see Pipeliner). Its Incident fails: a batch that deletes nodes
// must be planned against the committed state.
func OverlaySnapshot(snap Snapshot, prev *Plan) Snapshot {
	o := &overlaySnap{Snapshot: snap, nodes: make(map[ID]*NodeRecord, len(prev.Nodes)), prev: prev}
	for _, op := range prev.Nodes {
		o.nodes[op.ID] = op.New
	}
	return o
}

// edgeMap returns the plan's edge records by key, made at its first call.
func (o *overlaySnap) edgeMap() map[EdgeKey]*EdgeRecord {
	if o.edges == nil {
		o.edges = make(map[EdgeKey]*EdgeRecord, len(o.prev.Edges))
		for _, op := range o.prev.Edges {
			o.edges[op.Key] = op.New
		}
	}
	return o.edges
}

func (o *overlaySnap) node(id ID) (*NodeRecord, bool) {
	r, ok := o.nodes[id]
	return r, ok
}

func (o *overlaySnap) NodeRecords(ctx context.Context, ids []ID) ([]*NodeRecord, error) {
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

func (o *overlaySnap) NodeTypes(ctx context.Context, ids []ID) ([]string, error) {
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

func (o *overlaySnap) EdgeRecords(ctx context.Context, keys []EdgeKey) ([]*EdgeRecord, error) {
	recs, err := o.Snapshot.EdgeRecords(ctx, keys)
	if err != nil || len(keys) == 0 {
		return recs, err
	}
	edges := o.edgeMap()
	for i, k := range keys {
		if r, ok := edges[k]; ok {
			recs[i] = r
		}
	}
	return recs, nil
}

func (o *overlaySnap) Incident(context.Context, ID) ([]EdgeKey, error) {
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
	// Most edges have no properties: those of a label share one verdict.
	var empty map[string]*prepared
	for i := range b.Edges {
		e := &b.Edges[i]
		et, ok := m.Edge(e.Label)
		switch {
		case !ok || e.Merge:
		case len(e.Properties) == 0:
			if empty == nil {
				empty = map[string]*prepared{}
			}
			if e.prep = empty[e.Label]; e.prep == nil {
				e.prep = prepareProps(et.Validate, nil)
				empty[e.Label] = e.prep
			}
		default:
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
	pl := &planner{m: m, snap: snap, b: b, us: t.UnixMicro(), ps: problems{rank: b.rank}}
	if err := pl.checkSize(); err != nil {
		return nil, err
	}
	// Static checks, which need no store. An element that fails one is
	// left out of the stateful checks; the others still go through them,
	// so that one answer lists every problem to fix.
	pl.checkNodes()
	pl.checkNodeDeletes()
	pl.checkEdges()
	pl.checkEdgeDeletes()
	// Stateful checks, against the records the snapshot holds.
	if err := pl.readRecords(ctx); err != nil {
		return nil, err
	}
	pl.startPlan(t)
	if err := pl.planNodes(); err != nil {
		return nil, err
	}
	if err := pl.planNodeDeletes(ctx); err != nil {
		return nil, err
	}
	pl.planEdges()
	pl.planEdgeDeletes()
	if err := pl.planRetypes(ctx); err != nil {
		return nil, err
	}
	if len(pl.ps.list) > 0 {
		return nil, pl.ps.err()
	}
	if err := pl.planCascade(ctx); err != nil {
		return nil, err
	}
	return pl.p, nil
}

// A planner is PlanBatch's state as it goes through its phases.
type planner struct {
	m    *schema.Model
	snap Snapshot
	b    *Batch
	us   int64 // the plan's time, Unix microseconds
	ps   problems
	// The edge type looked up last, by label (see edgeType).
	lastLabel string
	lastET    *schema.EdgeType

	// From the static checks: each element's first place in the batch,
	// whether each element passed, the records to read, and the nodes
	// only edges name (their types are all planning needs of them).
	seenNode                             map[ID]elemRef
	seenEdge                             map[EdgeKey]elemRef
	nodeOK, delNodeOK, edgeOK, delEdgeOK []bool
	nodeIDs                              []ID
	edgeKeys                             []EdgeKey
	endpoints                            []ID

	// From the snapshot.
	endpointType map[ID]string
	oldNode      map[ID]*NodeRecord
	oldEdge      map[EdgeKey]*EdgeRecord

	// From planning.
	p            *Plan
	badNode      map[ID]bool   // nodes of the batch already reported: their edges are not reported again
	newType      map[ID]string // nodes the batch writes
	deletedNode  map[ID]bool
	deletedEdge  map[EdgeKey]bool
	cascade      map[EdgeKey]bool // edges of deleted nodes
	cascadeOrder []EdgeKey
	retyped      []elemID // nodes whose type the batch changes (Batch.Retype)
}

// An elemID is a node of the batch and its place in it.
type elemID struct {
	here elemRef
	id   ID
}

// checkSize refuses an empty batch and one over its size limit.
func (pl *planner) checkSize() error {
	b := pl.b
	if b.Len() == 0 {
		pl.ps.add(ErrInvalid, "", "batch", "empty", "the batch holds no element; give nodes, edges, deleteNodes or deleteEdges")
		return pl.ps.err()
	}
	if b.Len() > b.limit() {
		pl.ps.add(ErrInvalid, "", "batch", "size", "%d elements; split it into batches of at most %d", b.Len(), b.limit())
		return pl.ps.err()
	}
	// Sized up front: an import's batches are tens of thousands of
	// elements, and growing maps and lists copies them again and again.
	nn, ne := len(b.Nodes)+len(b.DeleteNodes), len(b.Edges)+len(b.DeleteEdges)
	pl.seenNode = make(map[ID]elemRef, nn)
	if !b.distinct || b.Retype || len(b.DeleteEdges) > 0 {
		pl.seenEdge = make(map[EdgeKey]elemRef, ne)
	}
	pl.nodeIDs = make([]ID, 0, nn)
	pl.edgeKeys = make([]EdgeKey, 0, ne)
	return nil
}

func (pl *planner) dup(ptr, elem string, first elemRef) {
	pl.ps.add(ErrInvalid, ptr, elem, "duplicate", "already appears at %s; each element may appear once per batch", first)
}

// checkNodes checks each node upsert's ID, uniqueness, revisions and type.
func (pl *planner) checkNodes() {
	pl.nodeOK = make([]bool, len(pl.b.Nodes))
	for i, n := range pl.b.Nodes {
		here := elemRef{"nodes", i}
		if err := n.ID.Check(); err != nil {
			pl.ps.add(ErrInvalid, here.String()+"/id", nodeElem(n.ID), "id", "%v", unwrapMsg(err))
			continue
		}
		if first, ok := pl.seenNode[n.ID]; ok {
			pl.dup(here.String(), nodeElem(n.ID), first)
			continue
		}
		pl.seenNode[n.ID] = here
		if !n.absent {
			pl.nodeIDs = append(pl.nodeIDs, n.ID)
		}
		name := func() string { return nodeElem(n.ID) } // for the problems only
		ok := revisionInRange(&pl.ps, here, name, n.Revision) && expectedInRange(&pl.ps, here, name, n.ExpectedRevision)
		if _, known := pl.m.Node(n.Type); !known {
			pl.ps.add(ErrInvalid, here.String()+"/type", nodeElem(n.ID), "unknown-type", "unknown node type %q; the model has %s", n.Type, list(pl.m.NodeTypeNames()))
			ok = false
		}
		pl.nodeOK[i] = ok
	}
}

// checkNodeDeletes checks each node delete's ID, uniqueness and expected revision.
func (pl *planner) checkNodeDeletes() {
	pl.delNodeOK = make([]bool, len(pl.b.DeleteNodes))
	for i, d := range pl.b.DeleteNodes {
		here := elemRef{"deleteNodes", i}
		if err := d.ID.Check(); err != nil {
			pl.ps.add(ErrInvalid, here.String()+"/id", nodeElem(d.ID), "id", "%v", unwrapMsg(err))
			continue
		}
		if first, ok := pl.seenNode[d.ID]; ok {
			pl.dup(here.String(), nodeElem(d.ID), first)
			continue
		}
		pl.seenNode[d.ID] = here
		pl.nodeIDs = append(pl.nodeIDs, d.ID)
		pl.delNodeOK[i] = expectedInRange(&pl.ps, here, func() string { return nodeElem(d.ID) }, d.ExpectedRevision)
	}
}

// checkEdgeKey checks an edge key against the model (its label, and a key
// where the label takes one) and for uniqueness in the batch; read says
// to read its record (see EdgeInput.absent).
func (pl *planner) checkEdgeKey(here elemRef, k EdgeKey, read bool) bool {
	if err := k.Check(); err != nil {
		pl.ps.add(ErrInvalid, here.String(), edgeElem(k), "id", "%v", unwrapMsg(err))
		return false
	}
	et, ok := pl.edgeType(k.Label)
	if !ok {
		pl.ps.add(ErrInvalid, here.String()+"/label", edgeElem(k), "unknown-label", "unknown edge label %q; the model has %s", k.Label, list(pl.m.EdgeLabels()))
		return false
	}
	if et.Keyed && k.Key == "" {
		pl.ps.add(ErrInvalid, here.String()+"/key", edgeElem(k), "key", "%s edges are keyed; give a key (for a relation, its type)", k.Label)
		return false
	}
	if !et.Keyed && k.Key != "" {
		pl.ps.add(ErrInvalid, here.String()+"/key", edgeElem(k), "key", "%s edges take no key; remove it", k.Label)
		return false
	}
	if pl.seenEdge != nil { // nil: the batch's edges are distinct
		if first, ok := pl.seenEdge[k]; ok {
			pl.dup(here.String(), edgeElem(k), first)
			return false
		}
		pl.seenEdge[k] = here
	}
	if read {
		pl.edgeKeys = append(pl.edgeKeys, k)
	}
	return true
}

// edgeType returns the model's edge type of label: a batch's edges come
// by their from node, mostly with one label, and a map lookup for each
// edge, twice, was some 0.5 s of a 1M-node load's CPU.
func (pl *planner) edgeType(label string) (*schema.EdgeType, bool) {
	if pl.lastET != nil && label == pl.lastLabel {
		return pl.lastET, true
	}
	et, ok := pl.m.Edge(label)
	if ok {
		pl.lastLabel, pl.lastET = label, et
	}
	return et, ok
}

// checkEdges checks each edge upsert's key and revisions, and collects the
// endpoints the batch does not write itself (a from node once for a run
// of its edges: a batch's edges come by their from node).
func (pl *planner) checkEdges() {
	pl.edgeOK = make([]bool, len(pl.b.Edges))
	var lastFrom ID
	for i, e := range pl.b.Edges {
		here := elemRef{"edges", i}
		name := func() string { return edgeElem(e.EdgeKey) } // for the problems only
		pl.edgeOK[i] = pl.checkEdgeKey(here, e.EdgeKey, !e.absent) &&
			revisionInRange(&pl.ps, here, name, e.Revision) && expectedInRange(&pl.ps, here, name, e.ExpectedRevision)
		if !pl.edgeOK[i] {
			continue
		}
		if _, ok := pl.seenNode[e.From]; !ok && (len(pl.endpoints) == 0 || e.From != lastFrom) {
			pl.endpoints = append(pl.endpoints, e.From)
			lastFrom = e.From
		}
		if _, ok := pl.seenNode[e.To]; !ok {
			pl.endpoints = append(pl.endpoints, e.To)
		}
	}
}

// checkEdgeDeletes checks each edge delete's key and expected revision.
func (pl *planner) checkEdgeDeletes() {
	pl.delEdgeOK = make([]bool, len(pl.b.DeleteEdges))
	for i, e := range pl.b.DeleteEdges {
		here := elemRef{"deleteEdges", i}
		pl.delEdgeOK[i] = pl.checkEdgeKey(here, e.EdgeKey, true) && expectedInRange(&pl.ps, here, func() string { return edgeElem(e.EdgeKey) }, e.ExpectedRevision)
	}
}

// readRecords reads what the stateful checks need from the snapshot: the
// types of the endpoints, and the records of the batch's nodes and edges
// but those known to be absent.
func (pl *planner) readRecords(ctx context.Context) error {
	endpoints := uniq(pl.endpoints)
	slices.Sort(endpoints) // sorted lookups walk the index in order
	types, err := pl.snap.NodeTypes(ctx, endpoints)
	if err != nil {
		return err
	}
	// Each map is made the size of what was found: into an empty store,
	// an import's batches find no records at all.
	pl.endpointType = make(map[ID]string, found(types, func(t string) bool { return t != "" }))
	for i, id := range endpoints {
		if types[i] != "" {
			pl.endpointType[id] = types[i]
		}
	}
	recs, err := pl.snap.NodeRecords(ctx, pl.nodeIDs)
	if err != nil {
		return err
	}
	pl.oldNode = make(map[ID]*NodeRecord, found(recs, func(r *NodeRecord) bool { return r != nil }))
	for i, id := range pl.nodeIDs {
		if recs[i] != nil {
			pl.oldNode[id] = recs[i]
		}
	}
	erecs, err := pl.snap.EdgeRecords(ctx, pl.edgeKeys)
	if err != nil {
		return err
	}
	pl.oldEdge = make(map[EdgeKey]*EdgeRecord, found(erecs, func(r *EdgeRecord) bool { return r != nil }))
	for i, k := range pl.edgeKeys {
		if erecs[i] != nil {
			pl.oldEdge[k] = erecs[i]
		}
	}
	return nil
}

// found counts the elements of s that f accepts.
func found[T any](s []T, f func(T) bool) int {
	n := 0
	for _, x := range s {
		if f(x) {
			n++
		}
	}
	return n
}

// startPlan makes the empty plan the planning phases fill in.
func (pl *planner) startPlan(t time.Time) {
	b := pl.b
	nn, ne := len(b.Nodes)+len(b.DeleteNodes), len(b.Edges)+len(b.DeleteEdges)
	pl.p = &Plan{
		Nodes:  make([]NodeOp, 0, nn),
		Edges:  make([]EdgeOp, 0, ne),
		Result: &Result{Nodes: make([]ElementResult, 0, len(b.Nodes)), Edges: make([]ElementResult, 0, len(b.Edges))},
		Change: &Change{Time: t, Op: cmp.Or(b.Op, "write"), Nodes: make([]NodeChange, 0, nn), Edges: make([]EdgeChange, 0, ne)},
	}
	pl.badNode = map[ID]bool{}
	pl.newType = make(map[ID]string, len(b.Nodes))
	pl.deletedNode = map[ID]bool{}
	pl.deletedEdge = map[EdgeKey]bool{}
	pl.cascade = map[EdgeKey]bool{}
}

// planNodes plans each node upsert against its record: a type change, a
// stale expected revision and invalid properties are refused; equal
// properties leave the node unchanged.
func (pl *planner) planNodes() error {
	p, b := pl.p, pl.b
	// A node that does not pass is reported; its edges are not reported
	// again (badNode), unless the node is reported as given twice.
	defer func() {
		for i, n := range b.Nodes {
			if _, passed := pl.newType[n.ID]; !passed && pl.seenNode[n.ID] == (elemRef{"nodes", i}) && n.ID.Check() == nil {
				pl.badNode[n.ID] = true
			}
		}
	}()
	for i, n := range b.Nodes {
		here := elemRef{"nodes", i}
		name := func() string { return nodeElem(n.ID) } // for the problems only
		if !pl.nodeOK[i] {
			continue
		}
		nt, _ := pl.m.Node(n.Type)
		old := pl.oldNode[n.ID]
		retype := old != nil && old.Type != n.Type
		if retype && !b.Retype {
			pl.ps.add(ErrInvalid, here.String()+"/type", name(), "type-change", "the node is a %s; a node's type cannot change (delete it and create it again)", old.Type)
			continue
		}
		if !revisionOK(&pl.ps, here, name, n.ExpectedRevision, old.rev()) {
			continue
		}
		prep := n.prep
		if prep == nil || n.Merge {
			props := n.Properties
			if n.Merge && old != nil {
				var err error
				if props, err = mergeProps(old.Props, n.Properties); err != nil {
					return err
				}
			} else if n.Merge {
				props, _ = mergeProps(nil, n.Properties) // a patch of nothing: its nulls removed
			}
			prep = prepareProps(nt.Validate, props)
		}
		if !propsOK(&pl.ps, here, name, prep) {
			continue
		}
		canon := prep.canon
		pl.newType[n.ID] = n.Type
		rec := &NodeRecord{Type: n.Type, Props: canon}
		st := Created
		switch {
		case old == nil:
			rec.Created, rec.Updated, rec.Rev = pl.us, pl.us, 1
			if b.Restore {
				restoreMeta(&rec.Created, &rec.Updated, &rec.Rev, n.CreatedAt, n.UpdatedAt, n.Revision)
			}
		case !retype && bytes.Equal(old.Props, canon):
			p.Result.Nodes = append(p.Result.Nodes, ElementResult{ID: string(n.ID), Status: Unchanged, Revision: old.Rev})
			continue
		default:
			if !revisionLeft(&pl.ps, here, name, old.Rev) {
				continue
			}
			st = Updated
			rec.Created, rec.Updated, rec.Rev = old.Created, pl.us, old.Rev+1
			if retype {
				pl.retyped = append(pl.retyped, elemID{here, n.ID})
			}
		}
		p.Nodes = append(p.Nodes, NodeOp{ID: n.ID, Old: old, New: rec, Props: prep.props})
		p.Result.Nodes = append(p.Result.Nodes, ElementResult{ID: string(n.ID), Status: st, Revision: rec.Rev})
		p.Change.Nodes = append(p.Change.Nodes, NodeChange{ID: n.ID, Type: n.Type, Action: st, Revision: rec.Rev})
	}
	return nil
}

// planNodeDeletes plans each node delete, and collects the edges of the
// deleted nodes (the cascade).
func (pl *planner) planNodeDeletes(ctx context.Context) error {
	p := pl.p
	for i, d := range pl.b.DeleteNodes {
		if !pl.delNodeOK[i] {
			continue
		}
		here := elemRef{"deleteNodes", i}
		name := func() string { return nodeElem(d.ID) }
		old := pl.oldNode[d.ID]
		if old == nil {
			pl.ps.add(ErrNotFound, here.String()+"/id", name(), "not-found", "no such node")
			continue
		}
		if !revisionOK(&pl.ps, here, name, d.ExpectedRevision, old.Rev) {
			continue
		}
		pl.deletedNode[d.ID] = true
		p.Nodes = append(p.Nodes, NodeOp{ID: d.ID, Old: old})
		p.Result.DeletedNodes = append(p.Result.DeletedNodes, d.ID)
		p.Change.Nodes = append(p.Change.Nodes, NodeChange{ID: d.ID, Type: old.Type, Action: Deleted, Revision: old.Rev})
		inc, err := pl.snap.Incident(ctx, d.ID)
		if err != nil {
			return err
		}
		for _, k := range inc {
			if !pl.cascade[k] {
				pl.cascade[k] = true
				pl.cascadeOrder = append(pl.cascadeOrder, k)
			}
		}
	}
	return nil
}

// typeOf returns the type a node has once the batch is applied, and
// whether it exists then.
func (pl *planner) typeOf(id ID) (string, bool) {
	if pl.deletedNode[id] {
		return "", false
	}
	if t, ok := pl.newType[id]; ok {
		return t, true
	}
	if r := pl.oldNode[id]; r != nil {
		return r.Type, true
	}
	t, ok := pl.endpointType[id]
	return t, ok
}

// planEdges plans each edge upsert: its endpoints must exist once the
// batch is applied and have types its label allows.
// edgeID is the ID of k in the batch's result: none in a batch whose
// results are only counted (Batch.counted).
func (pl *planner) edgeID(k EdgeKey) string {
	if pl.b.counted {
		return ""
	}
	return k.String()
}

func (pl *planner) planEdges() {
	p, b := pl.p, pl.b
	for i, e := range b.Edges {
		if !pl.edgeOK[i] {
			continue
		}
		here := elemRef{"edges", i}
		name := func() string { return edgeElem(e.EdgeKey) } // for the problems only
		if pl.badNode[e.From] || pl.badNode[e.To] {
			continue // the node's own problem is reported
		}
		et, _ := pl.edgeType(e.Label)
		ft, fok := pl.typeOf(e.From)
		tt, tok := pl.typeOf(e.To)
		bad := false
		for _, end := range []struct {
			ok   bool
			id   ID
			name string
		}{{fok, e.From, "from"}, {tok, e.To, "to"}} {
			if !end.ok {
				bad = true
				why := "no such node"
				if pl.deletedNode[end.id] {
					why = "the batch deletes that node"
				}
				pl.ps.add(ErrInvalid, here.String()+"/"+end.name, name(), "dangling", "%s node %q: %s; create it first or in the same batch", end.name, end.id, why)
			}
		}
		if bad {
			continue
		}
		if !et.Allows(ft, tt) {
			pl.ps.add(ErrInvalid, here.String(), name(), "endpoint-type", "%s edges join %s to %s, not %s to %s",
				e.Label, list(et.From), list(et.To), ft, tt)
			continue
		}
		old := pl.oldEdge[e.EdgeKey]
		if !revisionOK(&pl.ps, here, name, e.ExpectedRevision, old.rev()) {
			continue
		}
		prep := e.prep
		if prep == nil || e.Merge {
			props := e.Properties
			if e.Merge && old != nil {
				var err error
				if props, err = mergeProps(old.Props, e.Properties); err != nil {
					pl.ps.add(ErrInvalid, here.String(), name(), "merge", "the stored properties cannot be merged: %v", err)
					continue
				}
			} else if e.Merge {
				props, _ = mergeProps(nil, e.Properties)
			}
			prep = prepareProps(et.Validate, props)
		}
		if !propsOK(&pl.ps, here, name, prep) {
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
			rec.Created, rec.Updated, rec.Rev = pl.us, pl.us, 1
			if b.Restore {
				restoreMeta(&rec.Created, &rec.Updated, &rec.Rev, e.CreatedAt, e.UpdatedAt, e.Revision)
			}
		case bytes.Equal(old.Props, canon):
			p.Result.Edges = append(p.Result.Edges, ElementResult{ID: pl.edgeID(e.EdgeKey), Status: Unchanged, Revision: old.Rev})
			continue
		default:
			if !revisionLeft(&pl.ps, here, name, old.Rev) {
				continue
			}
			st = Updated
			rec.Created, rec.Updated, rec.Rev = old.Created, pl.us, old.Rev+1
		}
		p.Edges = append(p.Edges, EdgeOp{Key: e.EdgeKey, Old: old, New: rec})
		p.Result.Edges = append(p.Result.Edges, ElementResult{ID: pl.edgeID(e.EdgeKey), Status: st, Revision: rec.Rev})
		p.Change.Edges = append(p.Change.Edges, EdgeChange{EdgeKey: e.EdgeKey, Action: st, Revision: rec.Rev})
	}
}

// planEdgeDeletes plans each explicit edge delete.
func (pl *planner) planEdgeDeletes() {
	for i, d := range pl.b.DeleteEdges {
		if !pl.delEdgeOK[i] {
			continue
		}
		here := elemRef{"deleteEdges", i}
		name := func() string { return edgeElem(d.EdgeKey) }
		old := pl.oldEdge[d.EdgeKey]
		if old == nil {
			pl.ps.add(ErrNotFound, here.String(), name(), "not-found", "no such edge")
			continue
		}
		if !revisionOK(&pl.ps, here, name, d.ExpectedRevision, old.Rev) {
			continue
		}
		pl.deletedEdge[d.EdgeKey] = true
		pl.p.Edges = append(pl.p.Edges, EdgeOp{Key: d.EdgeKey, Old: old})
	}
}

// planRetypes checks the stored edges of the nodes whose type the batch
// changes against their labels' endpoint types, with every node's type
// as the batch leaves it. Edges the batch writes or deletes are checked
// (or need none) where they are planned.
func (pl *planner) planRetypes(ctx context.Context) error {
	if len(pl.retyped) == 0 {
		return nil
	}
	type incident struct {
		at elemID
		k  EdgeKey
	}
	var edges []incident
	var others []ID
	ls, labelled := pl.snap.(LabelSnapshot)
	for _, r := range pl.retyped {
		if labelled {
			// Only the node's own end of each edge changes type: when its
			// new type may end every label it has, in each direction, no
			// edge needs reading (a hub's too).
			fits, err := pl.retypeFits(ctx, ls, r.id)
			if err != nil {
				return fmt.Errorf("re-typing node %q: %w", r.id, err)
			}
			if fits {
				continue
			}
		}
		inc, err := pl.snap.Incident(ctx, r.id)
		if err != nil {
			return fmt.Errorf("re-typing node %q: %w", r.id, err)
		}
		for _, k := range inc {
			if _, ok := pl.seenEdge[k]; ok || pl.cascade[k] {
				continue
			}
			edges = append(edges, incident{r, k})
			for _, id := range []ID{k.From, k.To} {
				if _, known := pl.typeOf(id); !known {
					others = append(others, id)
				}
			}
		}
	}
	others = uniq(others)
	slices.Sort(others)
	types, err := pl.snap.NodeTypes(ctx, others)
	if err != nil {
		return err
	}
	for i, id := range others {
		if types[i] != "" {
			pl.endpointType[id] = types[i]
		}
	}
	for _, e := range edges {
		et, ok := pl.m.Edge(e.k.Label)
		if !ok {
			pl.ps.add(ErrInvalid, e.at.here.String()+"/type", nodeElem(e.at.id), "endpoint-type", "its edge %s has label %q, which the model does not have", e.k, e.k.Label)
			continue
		}
		ft, _ := pl.typeOf(e.k.From)
		tt, _ := pl.typeOf(e.k.To)
		if !et.Allows(ft, tt) {
			pl.ps.add(ErrInvalid, e.at.here.String()+"/type", nodeElem(e.at.id), "endpoint-type", "re-typed, its edge %s would join %s to %s; %s edges join %s to %s (delete the edge first, or re-type the other node too)",
				e.k, ft, tt, e.k.Label, list(et.From), list(et.To))
		}
	}
	return nil
}

// retypeFits reports whether the node id, re-typed, may still end every
// edge it has, judged by the labels of its edges in each direction alone.
// false: some label does not allow the new type (or the snapshot cannot
// say), and the edges are read one by one to say which.
func (pl *planner) retypeFits(ctx context.Context, ls LabelSnapshot, id ID) (bool, error) {
	out, in, ok, err := ls.IncidentLabels(ctx, id)
	if err != nil || !ok {
		return false, err
	}
	t, _ := pl.typeOf(id)
	for _, side := range []struct {
		labels []string
		allows func(*schema.EdgeType) []string
	}{{out, func(e *schema.EdgeType) []string { return e.From }}, {in, func(e *schema.EdgeType) []string { return e.To }}} {
		for _, l := range side.labels {
			et, ok := pl.m.Edge(l)
			if !ok || !slices.Contains(side.allows(et), t) {
				return false, nil
			}
		}
	}
	return true, nil
}

// A LabelSnapshot is a Snapshot that can say which labels the edges of a
// node have, in each direction, without reading the edges (from its edge
// summary, say). ok is false when it cannot say now; the planner then
// reads the edges.
type LabelSnapshot interface {
	IncidentLabels(ctx context.Context, id ID) (out, in []string, ok bool, err error)
}

// planCascade deletes the edges of deleted nodes that the batch does not
// delete itself, and lists every deleted edge in the result and the
// change-log entry.
func (pl *planner) planCascade(ctx context.Context) error {
	p := pl.p
	var casc []EdgeKey
	for _, k := range pl.cascadeOrder {
		if !pl.deletedEdge[k] {
			casc = append(casc, k)
		}
	}
	crecs, err := pl.snap.EdgeRecords(ctx, casc)
	if err != nil {
		return err
	}
	for i, k := range casc {
		if crecs[i] == nil {
			return fmt.Errorf("edge %s is in the store's index but has no record: run lore check", k)
		}
		p.Edges = append(p.Edges, EdgeOp{Key: k, Old: crecs[i]})
	}
	for _, op := range p.Edges {
		if op.New == nil {
			p.Result.DeletedEdges = append(p.Result.DeletedEdges, op.Key.String())
			p.Change.Edges = append(p.Change.Edges, EdgeChange{EdgeKey: op.Key, Action: Deleted, Revision: op.Old.Rev})
		}
	}
	return nil
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
func revisionInRange(ps *problems, here elemRef, elem func() string, rev int64) bool {
	if rev >= 0 && rev <= MaxRevision {
		return true
	}
	ps.add(ErrInvalid, here.String()+"/revision", elem(), "revision", "revision %d is out of range; a revision is from 1 to %d", rev, int64(MaxRevision))
	return false
}

// expectedInRange checks an expected revision: 0 (the element must not
// exist) to MaxRevision.
func expectedInRange(ps *problems, here elemRef, elem func() string, want *int64) bool {
	if want == nil || *want >= 0 && *want <= MaxRevision {
		return true
	}
	ps.add(ErrInvalid, here.String()+"/expectedRevision", elem(), "revision", "expected revision %d is out of range; give 0 (the element must not exist yet) to %d", *want, int64(MaxRevision))
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
	bp := canonBufs.Get().(*[]byte)
	raw, ok := appendCanonical((*bp)[:0], p)
	if cap(raw) <= maxCanonBuf {
		*bp = raw
		defer canonBufs.Put(bp)
	}
	if ok {
		return slices.Clone(raw), p, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, nil, err
	}
	raw = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
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
	var base Props
	if len(old) > 0 {
		var err error
		if base, err = DecodeProps(old); err != nil {
			return nil, err
		}
	}
	merged, _ := mergePatch(map[string]any(base), map[string]any(patch)).(map[string]any)
	if merged == nil {
		merged = Props{}
	}
	return merged, nil
}

// mergePatch applies patch to target as RFC 7396 (JSON Merge Patch) says:
// an object patch merges into an object target member by member,
// recursively, a null member removing the target's; any other patch
// replaces the target. Neither argument is modified; the result may
// share unmodified values with them.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, _ := target.(map[string]any)
	out := make(map[string]any, len(t)+len(p))
	maps.Copy(out, t)
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
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
