package mcp

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/lore-dev/lore/graph"
)

// Reading one element by ID is two tools, get_node and get_edge, not one
// get: a node and an edge have different shapes (a node's edge counts, an
// edge's ends and label), so each tool keeps an exact output schema and a
// typed GraphQL field (getNode: Node, getEdge: Edge) instead of a union,
// and an ID says which it is (edge IDs are label(from,to[,key])), so
// get_node can point at get_edge for one.

type getEdgeIn struct {
	ID string `json:"id"`
}

type edgeOut struct {
	Edge *graph.Edge `json:"edge"`
}

func (o *edgeOut) text() string {
	e := o.Edge
	var b strings.Builder
	fmt.Fprintf(&b, "%s (revision %d, updated %s)\n", e.ID, e.Revision, e.UpdatedAt.Format("2006-01-02T15:04:05Z"))
	for _, k := range sortedKeys(e.Properties) {
		fmt.Fprintf(&b, "%s: %s\n", k, clip(fmt.Sprint(e.Properties[k]), 300))
	}
	return fence(b.String())
}

func getEdge() *Tool {
	return define(readTool("get_edge", "Get an edge",
		"One edge by ID, e.g. memberOf(person/ada,team/core): properties, revision."),
		func(ctx context.Context, c *Catalog, in *getEdgeIn) (*edgeOut, error) {
			k, err := graph.ParseEdgeKey(in.ID)
			if err != nil {
				return nil, err
			}
			e, err := c.store.Edge(ctx, k)
			if err != nil {
				return nil, err
			}
			return &edgeOut{Edge: e}, nil
		})
}

// edgeIDError is get_node's answer to an edge ID, or nil.
func edgeIDError(id graph.ID) error {
	s := string(id)
	if !strings.Contains(s, "(") || !strings.HasSuffix(s, ")") {
		return nil
	}
	if _, err := graph.ParseEdgeKey(s); err != nil {
		return nil
	}
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf("%s is an edge ID: read it with get_edge {\"id\": %q} (or the resource %s)", s, s, EdgeURI(s))}
}

// edgeProperties reads the properties of the edges with the given IDs,
// for the tools that list edges by ID and were asked for them.
func (c *Catalog) edgeProperties(ctx context.Context, ids []string) (map[string]graph.Props, error) {
	out := map[string]graph.Props{}
	sort.Strings(ids)
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		k, err := graph.ParseEdgeKey(id)
		if err != nil {
			return nil, err
		}
		e, err := c.store.Edge(ctx, k)
		if err != nil {
			return nil, err
		}
		out[id] = e.Properties
		if out[id] == nil {
			out[id] = graph.Props{}
		}
	}
	return out, nil
}
