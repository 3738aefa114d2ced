package gql

import (
	"log/slog"

	"github.com/lore-dev/lore/mcp"
)

// Resolver is the root of gqlgen's resolvers. Every resolver calls the
// catalog: tools through Invoke, resources through ReadResource, and
// subscriptions follow Updates.
type Resolver struct {
	Cat *mcp.Catalog
	log *slog.Logger
}
