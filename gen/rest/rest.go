// Package rest serves the catalog's tools and resources as REST (placeholder: being written).
package rest

import (
	"log/slog"
	"net/http"

	"github.com/lore-dev/lore/mcp"
)

// Options configure the REST handler.
type Options struct {
	Logger *slog.Logger // nil discards
}

// NewHandler serves /api/v1/... and /openapi.json.
func NewHandler(cat *mcp.Catalog, opts *Options) http.Handler { return http.NotFoundHandler() }
