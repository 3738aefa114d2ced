package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lore-dev/lore/graph"
)

// MaxWriteItems caps the elements of one write call.
const MaxWriteItems = 1000

// writeTool declares a write tool; its output is the batch result.
func writeTool(name, title, desc string) Tool {
	return Tool{Name: name, Title: title, Description: desc, Write: true, Icon: iconWrite}
}

// A writeOut is a committed (or replayed) batch's result. It fits the byte
// cap by construction: the lists are cut to their first items when they do
// not fit (Truncated), the counts stay whole, and the answer always says
// the batch was committed. The change-log entry Seq lists every element
// the batch changed (changes_since).
type writeOut struct {
	*graph.Result
	Truncated        bool `json:"truncated"`
	NodeCount        int  `json:"nodeCount,omitempty"`
	EdgeCount        int  `json:"edgeCount,omitempty"`
	DeletedNodeCount int  `json:"deletedNodeCount,omitempty"`
	DeletedEdgeCount int  `json:"deletedEdgeCount,omitempty"`
}

func newWriteOut(r *graph.Result) *writeOut {
	return &writeOut{Result: r, NodeCount: len(r.Nodes), EdgeCount: len(r.Edges),
		DeletedNodeCount: len(r.DeletedNodes), DeletedEdgeCount: len(r.DeletedEdges)}
}

func (o *writeOut) items() int {
	return o.NodeCount + o.EdgeCount + o.DeletedNodeCount + o.DeletedEdgeCount
}

// keep keeps the first n items of the lists taken in order (nodes, edges,
// deleted nodes, deleted edges). It reslices within the lists' capacity, so
// a later call may keep more again.
func (o *writeOut) keep(n int) {
	take := func(total int) int {
		k := min(n, total)
		n -= k
		return k
	}
	o.Nodes = o.Nodes[:take(o.NodeCount)]
	o.Edges = o.Edges[:take(o.EdgeCount)]
	o.DeletedNodes = o.DeletedNodes[:take(o.DeletedNodeCount)]
	o.DeletedEdges = o.DeletedEdges[:take(o.DeletedEdgeCount)]
	o.Truncated = len(o.Nodes)+len(o.Edges)+len(o.DeletedNodes)+len(o.DeletedEdges) < o.items()
}

// committed marks a write's output: render never answers it with an error.
func (o *writeOut) committed() {}

func (o *writeOut) text() string {
	var b strings.Builder
	if o.Seq == 0 {
		b.WriteString("nothing changed")
	} else {
		fmt.Fprintf(&b, "committed as change %d", o.Seq)
	}
	if o.Replayed {
		b.WriteString(" (replayed: this idempotency key was already applied)")
	}
	if o.Truncated {
		var counts []string
		for _, c := range []struct {
			n    int
			what string
		}{{o.NodeCount, "node(s) written"}, {o.EdgeCount, "edge(s) written"}, {o.DeletedNodeCount, "node(s) deleted"}, {o.DeletedEdgeCount, "edge(s) deleted"}} {
			if c.n > 0 {
				counts = append(counts, fmt.Sprintf("%d %s", c.n, c.what))
			}
		}
		fmt.Fprintf(&b, ": %s; only the first are listed, to fit the server's byte cap", strings.Join(counts, ", "))
		if o.Seq > 0 {
			fmt.Fprintf(&b, " (changes_since with cursor %d lists every change)", o.Seq-1)
		}
	}
	b.WriteString("\n")
	var d strings.Builder
	for _, r := range slices.Concat(o.Nodes, o.Edges) {
		fmt.Fprintf(&d, "%s %s → revision %d\n", r.Status, r.ID, r.Revision)
	}
	for _, id := range o.DeletedNodes {
		fmt.Fprintf(&d, "deleted %s\n", id)
	}
	for _, id := range o.DeletedEdges {
		fmt.Fprintf(&d, "deleted %s\n", id)
	}
	b.WriteString(fence(d.String()))
	return b.String()
}

func apply(ctx context.Context, c *Catalog, b *graph.Batch) (*writeOut, error) {
	r, err := c.store.Apply(ctx, b)
	if err == nil && r.Seq > 0 {
		graph.RaiseMinSeq(ctx, r.Seq) // whatever the store: surfaces report it (Lore-Seq)
	}
	var be *graph.BatchError
	if errors.As(err, &be) && (b.DeleteNodes != nil || b.DeleteEdges != nil) {
		// The tools name the lists nodes and edges; point into their arguments.
		for i, p := range be.Problems {
			p.Pointer = strings.Replace(strings.Replace(p.Pointer, "/deleteNodes/", "/nodes/", 1), "/deleteEdges/", "/edges/", 1)
			be.Problems[i] = p
		}
	}
	if err != nil {
		return nil, err
	}
	return newWriteOut(r), nil
}

// ---- upsert_nodes

// A nodeIn is graph.NodeInput without the fields only imports restore.
type nodeIn struct {
	ID               graph.ID    `json:"id"`
	Type             string      `json:"type"`
	Properties       graph.Props `json:"properties"`
	Merge            bool        `json:"merge,omitempty"`
	ExpectedRevision *int64      `json:"expectedRevision,omitempty" schema:"min=0" desc:"0: must not exist"`
}

type upsertNodesIn struct {
	Nodes          []nodeIn `json:"nodes" schema:"maxItems=MaxWriteItems"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty" schema:"maxLength=MaxIdempotencyKey"`
}

func upsertNodes() *Tool {
	t := writeTool("upsert_nodes", "Upsert nodes",
		"Create nodes or replace their properties (merge: true patches, null removes). All or nothing.")
	t.Idempotent = true
	return define(t, func(ctx context.Context, c *Catalog, in *upsertNodesIn) (*writeOut, error) {
		b := &graph.Batch{IdempotencyKey: in.IdempotencyKey, Op: "upsert_nodes"}
		for _, n := range in.Nodes {
			b.Nodes = append(b.Nodes, graph.NodeInput{ID: n.ID, Type: n.Type, Properties: n.Properties, Merge: n.Merge, ExpectedRevision: n.ExpectedRevision})
		}
		return apply(ctx, c, b)
	})
}

// ---- upsert_edges

type edgeIn struct {
	graph.EdgeKey
	Properties       graph.Props `json:"properties,omitempty"`
	ExpectedRevision *int64      `json:"expectedRevision,omitempty" schema:"min=0" desc:"0: must not exist"`
}

type upsertEdgesIn struct {
	Edges          []edgeIn `json:"edges" schema:"maxItems=MaxWriteItems"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty" schema:"maxLength=MaxIdempotencyKey"`
}

func upsertEdges() *Tool {
	t := writeTool("upsert_edges", "Upsert edges",
		"Create edges or replace their properties; key only for keyed labels. All or nothing.")
	t.Idempotent = true
	return define(t, func(ctx context.Context, c *Catalog, in *upsertEdgesIn) (*writeOut, error) {
		b := &graph.Batch{IdempotencyKey: in.IdempotencyKey, Op: "upsert_edges"}
		for _, e := range in.Edges {
			b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: e.EdgeKey, Properties: e.Properties, ExpectedRevision: e.ExpectedRevision})
		}
		return apply(ctx, c, b)
	})
}

// ---- delete_nodes

type deleteNodesIn struct {
	Nodes          []graph.NodeRef `json:"nodes" schema:"maxItems=MaxWriteItems"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty" schema:"maxLength=MaxIdempotencyKey"`
	Confirm        bool            `json:"confirm,omitempty"`
}

func deleteTool(name, title, desc string) Tool {
	t := writeTool(name, title, desc)
	t.Destructive, t.Idempotent, t.Confirm = true, true, true
	return t
}

func needConfirm(name string, what []string) error {
	return &Error{Code: CodeConfirm, Message: fmt.Sprintf("%s deletes %s for good; call again with confirm: true once the user agrees", name, strings.Join(what, ", "))}
}

func deleteNodes() *Tool {
	return define(deleteTool("delete_nodes", "Delete nodes",
		"Delete nodes and every edge at them. Destructive: asks the user to confirm."),
		func(ctx context.Context, c *Catalog, in *deleteNodesIn) (*writeOut, error) {
			if !in.Confirm {
				var ids []string
				for _, n := range in.Nodes {
					ids = append(ids, string(n.ID))
				}
				return nil, needConfirm("delete_nodes", ids)
			}
			return apply(ctx, c, &graph.Batch{DeleteNodes: in.Nodes, IdempotencyKey: in.IdempotencyKey, Op: "delete_nodes"})
		})
}

// ---- delete_edges

type deleteEdgesIn struct {
	Edges          []graph.EdgeRef `json:"edges" schema:"maxItems=MaxWriteItems"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty" schema:"maxLength=MaxIdempotencyKey"`
	Confirm        bool            `json:"confirm,omitempty"`
}

func deleteEdges() *Tool {
	return define(deleteTool("delete_edges", "Delete edges",
		"Delete edges (from, label, to, key); nodes stay. Destructive: asks the user to confirm."),
		func(ctx context.Context, c *Catalog, in *deleteEdgesIn) (*writeOut, error) {
			if !in.Confirm {
				var ids []string
				for _, e := range in.Edges {
					ids = append(ids, e.EdgeKey.String())
				}
				return nil, needConfirm("delete_edges", ids)
			}
			return apply(ctx, c, &graph.Batch{DeleteEdges: in.Edges, IdempotencyKey: in.IdempotencyKey, Op: "delete_edges"})
		})
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
