package pgbench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
)

// LoadLorePG loads g into Lore's own schema on PostgreSQL (graph/postgres,
// the store a user takes beyond one machine), in the database name on the
// server at dsn (dropping a leftover of the same name first): it writes g
// as NDJSON into dir (not timed), then opens the store and imports the
// file the way lore import does, and vacuums and analyzes its tables as
// the PostgreSQL side's load does, all timed. Close closes the store and
// drops the database.
func LoadLorePG(ctx context.Context, dsn, name, dir string, g *Graph) (_ *Lore, err error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at %s: %w", dsn, err)
	}
	var s *postgres.Store
	drop := func() error {
		var err error
		if s != nil {
			err = s.Close()
		}
		return errors.Join(err, dropDatabase(context.WithoutCancel(ctx), admin, name), admin.Close(context.WithoutCancel(ctx)))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, drop())
		}
	}()
	if err := newDatabase(ctx, admin, name); err != nil {
		return nil, err
	}
	dbURL, err := withDatabase(dsn, name)
	if err != nil {
		return nil, err
	}
	f, err := writeInput(dir, g)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	start := time.Now()
	if s, err = postgres.Open(ctx, postgres.Config{URL: dbURL, Model: Model()}); err != nil {
		return nil, err
	}
	if _, err := graph.Import(ctx, s, f, graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		return nil, fmt.Errorf("import into Lore on PostgreSQL: %w", err)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var tables []string
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname = current_schema() ORDER BY pg_total_relation_size(c.oid) DESC, c.relname`)
	if err != nil {
		return nil, err
	}
	if tables, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, err
	}
	for _, t := range tables {
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, err
		}
	}
	l := &Lore{Store: s, Load: time.Since(start), close: drop}
	for _, t := range tables {
		part := Part{Name: t}
		if err := conn.QueryRow(ctx, `SELECT pg_total_relation_size($1::regclass)`, pgx.Identifier{t}.Sanitize()).Scan(&part.Bytes); err != nil {
			return nil, err
		}
		if part.Bytes > 0 {
			l.Parts = append(l.Parts, part)
		}
		l.Bytes += part.Bytes
	}
	return l, nil
}

// withDatabase returns dsn (a URL or keyword/value pairs, as pgx takes
// either) naming database name instead of its own.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("the PostgreSQL URL %q: %w", dsn, err)
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil // the last value given stands
}
