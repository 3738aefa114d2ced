package postgres

import "context"

// SchemaCurrent checks that the database answers and holds Lore's schema
// at this Lore's version: its migrations are done, and no newer Lore has
// migrated it since. Readiness checks (lore serve's /readyz) run it.
func (s *Store) SchemaCurrent(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	return schemaCurrent(ctx, s.pool)
}
