// Package model holds the Go types of Lore's GraphQL schema: gqlgen
// generates most of them (models_gen.go) from gen/gql/schema.graphqls; the
// one here is bound by gen/gql/gqlgen.yml. Resolvers fill them by decoding
// the tools' structured output, so their JSON tags are the tools' names.
package model

import "encoding/json"

// A Node is a typed vertex of the graph, as the tools return it. Its
// neighbors and edges fields are resolvers that call the neighbors tool.
//
// It depends on no generated type, so gqlgen can load it while it
// regenerates models_gen.go.
type Node struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Properties map[string]any `json:"properties"`
	CreatedAt  string         `json:"createdAt"`
	UpdatedAt  string         `json:"updatedAt"`
	Revision   int64          `json:"revision"`
	// Edges is what the tools call "edges": counts per label and direction,
	// which only get_node fills in. The edgeCounts field decodes it.
	Edges json.RawMessage `json:"edges,omitempty"`
}
