package graph

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lore-dev/lore/schema"
)

// A ModelFit says how a store's elements fit a model: how many were
// examined, how many the model rejects, and the first of those.
type ModelFit struct {
	Nodes         int64       `json:"nodes"`
	Edges         int64       `json:"edges"`
	RejectedNodes int64       `json:"rejectedNodes"`
	RejectedEdges int64       `json:"rejectedEdges"`
	First         []Rejection `json:"first"`
}

// Fits reports whether the model rejects nothing.
func (f *ModelFit) Fits() bool { return f.RejectedNodes == 0 && f.RejectedEdges == 0 }

// A Rejection is one stored element a model rejects, with why.
type Rejection struct {
	Kind       string             `json:"kind"` // "node" or "edge"
	ID         string             `json:"id"`
	Violations []schema.Violation `json:"violations"`
}

// CheckModel validates every node and edge of s against m, as a write of
// each would be: its type or label must be in m, its properties must fit,
// and an edge's ends must be of types its label allows. It counts the
// rejected elements exactly and keeps the first `first` of them, nodes in
// ID order, then edges in ScanEdges' order. It reads the store page by
// page: on a store that is being written, each page is one committed
// state, not the whole scan.
func CheckModel(ctx context.Context, s Store, m *schema.Model, first int) (*ModelFit, error) {
	fit := &ModelFit{First: []Rejection{}}
	reject := func(kind, id string, vs []schema.Violation) {
		if len(fit.First) < first {
			fit.First = append(fit.First, Rejection{Kind: kind, ID: id, Violations: vs})
		}
	}
	for p := (Page{Limit: MaxPageSize}); ; {
		page, err := s.ScanNodes(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, n := range page.Nodes {
			fit.Nodes++
			if vs := nodeFits(m, n); vs != nil {
				fit.RejectedNodes++
				reject("node", string(n.ID), vs)
			}
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	for p := (Page{Limit: MaxPageSize}); ; {
		page, err := s.ScanEdges(ctx, p)
		if err != nil {
			return nil, err
		}
		types, err := endTypes(ctx, s, page.Edges)
		if err != nil {
			return nil, err
		}
		for _, e := range page.Edges {
			fit.Edges++
			if vs := edgeFits(m, e, types); vs != nil {
				fit.RejectedEdges++
				reject("edge", e.ID, vs)
			}
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	return fit, nil
}

func nodeFits(m *schema.Model, n *Node) []schema.Violation {
	nt, ok := m.Node(n.Type)
	if !ok {
		return []schema.Violation{{Pointer: "/type", Rule: "model", Message: fmt.Sprintf("node type %q is not in the model", n.Type)}}
	}
	return violations(nt.Validate(n.Properties))
}

func edgeFits(m *schema.Model, e *Edge, types map[ID]string) []schema.Violation {
	et, ok := m.Edge(e.Label)
	if !ok {
		return []schema.Violation{{Pointer: "/label", Rule: "model", Message: fmt.Sprintf("edge label %q is not in the model", e.Label)}}
	}
	vs := violations(et.Validate(e.Properties))
	if from, to := types[e.From], types[e.To]; !et.Allows(from, to) {
		vs = append(vs, schema.Violation{Pointer: "", Rule: "endpoints",
			Message: fmt.Sprintf("%s may not join a %s to a %s", e.Label, from, to)})
	}
	return vs
}

// endTypes returns the types of the nodes the edges join.
func endTypes(ctx context.Context, s Store, edges []*Edge) (map[ID]string, error) {
	types := map[ID]string{}
	var ids []ID
	for _, e := range edges {
		for _, id := range []ID{e.From, e.To} {
			if _, ok := types[id]; !ok {
				types[id] = ""
				ids = append(ids, id)
			}
		}
	}
	nodes, err := s.Nodes(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		if n != nil {
			types[ids[i]] = n.Type
		}
	}
	return types, nil
}

// violations returns a validation error's violations, nil for no error.
func violations(err error) []schema.Violation {
	if err == nil {
		return nil
	}
	var ve *schema.ValidationError
	if errors.As(err, &ve) {
		return ve.Violations
	}
	return []schema.Violation{{Message: err.Error()}}
}

// CheckModelSince validates against m, as CheckModel does, the elements
// the change-log entries after seq touched, as they are now: the nodes
// written and the ends of the edges written, with every edge of those
// nodes (a node's type bounds its edges' endpoints). It is what a caller
// of ModelSwitcher.UseModel checks again when writes came between its
// CheckModel and the switch. It returns the fit of those elements and the
// last entry it read. A model change among the entries is ErrConflict:
// the data was checked against another model than the one in use.
func CheckModelSince(ctx context.Context, s Store, m *schema.Model, seq uint64, first int) (*ModelFit, uint64, error) {
	fit := &ModelFit{First: []Rejection{}}
	var ids []ID
	seen := map[ID]bool{}
	err := ReadLog(ctx, s, seq, func(le *LogEntry) (bool, error) {
		c, err := le.Decode(0, -1)
		if err != nil {
			return false, err
		}
		if c.ModelChanged() {
			return false, fmt.Errorf("the model in use changed at change %d, after the data was checked: %w", c.Seq, ErrConflict)
		}
		for _, id := range c.NodeIDs() {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		seq = c.Seq
		return true, nil
	})
	if err != nil {
		return nil, 0, err
	}
	reject := func(kind, id string, vs []schema.Violation) {
		if len(fit.First) < first {
			fit.First = append(fit.First, Rejection{Kind: kind, ID: id, Violations: vs})
		}
	}
	slices.Sort(ids)
	checked := map[string]bool{}
	for chunk := range slices.Chunk(ids, DefaultPageSize) {
		nodes, err := s.Nodes(ctx, chunk)
		if err != nil {
			return nil, 0, err
		}
		for i, n := range nodes {
			if n == nil {
				continue // deleted since
			}
			fit.Nodes++
			if vs := nodeFits(m, n); vs != nil {
				fit.RejectedNodes++
				reject("node", string(n.ID), vs)
			}
			for q := (EdgeQuery{Nodes: chunk[i : i+1], Direction: Both, Page: Page{Limit: MaxPageSize}}); ; {
				page, err := s.Edges(ctx, q)
				if err != nil {
					return nil, 0, err
				}
				types, err := endTypes(ctx, s, page.Edges)
				if err != nil {
					return nil, 0, err
				}
				for _, e := range page.Edges {
					if checked[e.ID] {
						continue
					}
					checked[e.ID] = true
					fit.Edges++
					if vs := edgeFits(m, e, types); vs != nil {
						fit.RejectedEdges++
						reject("edge", e.ID, vs)
					}
				}
				if page.Next == "" {
					break
				}
				q.After = page.Next
			}
		}
	}
	return fit, seq, nil
}
