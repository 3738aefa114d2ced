// Package gql serves the catalog as GraphQL (placeholder: being written).
package gql

import (
	"log/slog"
	"net/http"

	"github.com/lore-dev/lore/mcp"
)

// Options configure the GraphQL handler.
type Options struct {
	Logger *slog.Logger // nil discards
	// AllowedOrigins lists browser origins allowed for WebSocket upgrades besides loopback ones.
	AllowedOrigins []string
	// MaxDepth and MaxComplexity bound a query; 0 means the defaults.
	MaxDepth, MaxComplexity int
}

// NewHandler serves /graphql (POST, GET, SSE and graphql-transport-ws).
func NewHandler(cat *mcp.Catalog, opts *Options) http.Handler { return http.NotFoundHandler() }

// SDL returns the GraphQL schema document the handler serves.
func SDL() []byte { return nil }
