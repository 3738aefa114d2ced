package main

import (
	"context"
	"fmt"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/web"
)

// A schemaChecker is a store that can say whether its schema is current
// (the PostgreSQL store); an embedded store is migrated when it opens.
type schemaChecker interface {
	SchemaCurrent(ctx context.Context) error
}

// readyChecks are lore serve's /readyz: the store answers (a Stats read),
// its schema is current (migrations done), and the server's change feed
// has delivered every entry the store's log held when the check began
// (within the bound of each check), so its subscribers are not behind.
func readyChecks(s graph.Store, srv *mcp.Server) []web.Check {
	return []web.Check{
		{Name: "store", Run: func(ctx context.Context) error {
			if _, err := s.Stats(ctx); err != nil {
				return fmt.Errorf("the store does not answer: %w", err)
			}
			return nil
		}},
		{Name: "migrations", Run: func(ctx context.Context) error {
			if sc, ok := s.(schemaChecker); ok {
				return sc.SchemaCurrent(ctx)
			}
			return nil
		}},
		{Name: "changelog", Run: func(ctx context.Context) error {
			st, err := s.Stats(ctx)
			if err != nil {
				return fmt.Errorf("the store does not answer: %w", err)
			}
			if err := srv.WaitDelivered(ctx, st.LastSeq); err != nil {
				return fmt.Errorf("the change feed has delivered entries up to %d of the log's %d: it is behind, or stopped (the log says why)",
					srv.Delivered(), st.LastSeq)
			}
			return nil
		}},
	}
}
