package pgbench

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDSN is the PostgreSQL the benchmark and its test use: a local
// server with trust authentication. Its database is only used to create
// and drop the benchmark's own.
const DefaultDSN = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// A Postgres is the PostgreSQL side: a database of its own holding the
// generated graph as two plain tables,
//
//	nodes(id text primary key, type text, props jsonb)
//	edges("from" text, label text, "to" text, primary key ("from", label, "to"))
//
// with a second covering index edges ("to", label, "from"), and indexes on
// the properties the model indexes (section, and size as a bigint). Stock
// server settings; the questions are prepared statements (Prepare).
type Postgres struct {
	Conn *pgx.Conn
	// Version is the server's version string.
	Version string
	// Load is how long creating the tables, copying the rows in, building
	// the indexes and VACUUM ANALYZE took.
	Load time.Duration
	// Bytes is the size of both tables with their indexes, and Parts
	// what each table and its indexes take of it.
	Bytes int64
	Parts []Part

	admin *pgx.Conn
	name  string
}

// LoadPostgres creates the database name on the server at dsn (dropping a
// leftover of the same name first), and loads g into it with COPY, timed.
// Close drops the database.
func LoadPostgres(ctx context.Context, dsn, name string, g *Graph) (_ *Postgres, err error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL at %s (the benchmark needs a server there with trust authentication): %w", dsn, err)
	}
	p := &Postgres{admin: admin, name: name}
	defer func() {
		if err != nil {
			p.Close(context.WithoutCancel(ctx))
		}
	}()
	if err := admin.QueryRow(ctx, "SELECT version()").Scan(&p.Version); err != nil {
		return nil, err
	}
	if err := newDatabase(ctx, admin, name); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.Database = name
	if p.Conn, err = pgx.ConnectConfig(ctx, cfg); err != nil {
		return nil, err
	}

	start := time.Now()
	for _, stmt := range []string{
		`CREATE TABLE nodes (id text NOT NULL, type text NOT NULL, props jsonb NOT NULL)`,
		`CREATE TABLE edges ("from" text NOT NULL, label text NOT NULL, "to" text NOT NULL)`,
	} {
		if _, err := p.Conn.Exec(ctx, stmt); err != nil {
			return nil, err
		}
	}
	if err := p.copy(ctx, "nodes", []string{"id", "type", "props"}, g.nodes(), func(e *element) []any {
		return []any{e.id, e.typ, json.RawMessage(e.props)}
	}); err != nil {
		return nil, err
	}
	if err := p.copy(ctx, "edges", []string{"from", "label", "to"}, g.edges(), func(e *element) []any {
		return []any{e.from, e.label, e.to}
	}); err != nil {
		return nil, err
	}
	for _, stmt := range []string{
		`ALTER TABLE nodes ADD PRIMARY KEY (id)`,
		`ALTER TABLE edges ADD PRIMARY KEY ("from", label, "to")`,
		`CREATE INDEX edges_in ON edges ("to", label, "from")`,
		`CREATE INDEX nodes_section ON nodes ((props->>'section'))`,
		`CREATE INDEX nodes_size ON nodes (((props->>'size')::bigint))`,
		`VACUUM (ANALYZE) nodes`,
		`VACUUM (ANALYZE) edges`,
	} {
		if _, err := p.Conn.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	p.Load = time.Since(start)
	p.Parts = []Part{{Name: "nodes table"}, {Name: "its indexes"}, {Name: "edges table"}, {Name: "its indexes"}}
	err = p.Conn.QueryRow(ctx, `SELECT pg_table_size('nodes'), pg_indexes_size('nodes'), pg_table_size('edges'), pg_indexes_size('edges')`).
		Scan(&p.Parts[0].Bytes, &p.Parts[1].Bytes, &p.Parts[2].Bytes, &p.Parts[3].Bytes)
	if err != nil {
		return nil, err
	}
	for _, part := range p.Parts {
		p.Bytes += part.Bytes
	}
	return p, p.prepare(ctx)
}

func (p *Postgres) copy(ctx context.Context, table string, cols []string, seq iter.Seq[*element], row func(*element) []any) error {
	next, stop := iter.Pull(seq)
	defer stop()
	_, err := p.Conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		e, ok := next()
		if !ok {
			return nil, nil
		}
		return row(e), nil
	}))
	if err != nil {
		return fmt.Errorf("copy into %s: %w", table, err)
	}
	return nil
}

// The questions' SQL, prepared under these names.
var statements = map[string]string{
	"get": `SELECT id, type, props FROM nodes WHERE id = $1`,
	// Every node within $3 hops out of $1 along label $2.
	"out": `WITH RECURSIVE r(id, depth) AS (
		SELECT $1::text, 0
		UNION
		SELECT e."to", r.depth + 1 FROM r JOIN edges e ON e."from" = r.id AND e.label = $2 WHERE r.depth < $3)
	SELECT DISTINCT id FROM r WHERE id <> $1`,
	"in_count": `SELECT count(*) FROM edges WHERE "to" = $1 AND label = $2`,
	// The database's collation (the server's template's) orders the page;
	// the benchmark checks that it is Lore's bytewise order.
	"in_page": `SELECT "from" FROM edges WHERE "to" = $1 AND label = $2 ORDER BY "from" LIMIT $3`,
	// Walks out of $1 along label $3, breadth first, without repeating a
	// node, up to $4 edges long: the first that reaches $2 is a shortest
	// path. PostgreSQL evaluates a recursive CTE only as far as the outer
	// query reads it, so LIMIT 1 stops the search there.
	"path": `WITH RECURSIVE w(id, path) AS (
		SELECT $1::text, ARRAY[$1::text]
		UNION ALL
		SELECT e."to", w.path || e."to" FROM w JOIN edges e ON e."from" = w.id AND e.label = $3
		WHERE w.id <> $2 AND cardinality(w.path) <= $4 AND e."to" <> ALL(w.path))
	SELECT path FROM w WHERE id = $2 LIMIT 1`,
	// The distinct nodes within $3 hops into $1 along label $2.
	"in_closure_count": `WITH RECURSIVE r(id, depth) AS (
		SELECT $1::text, 0
		UNION
		SELECT e."from", r.depth + 1 FROM r JOIN edges e ON e."to" = r.id AND e.label = $2 WHERE r.depth < $3)
	SELECT count(DISTINCT id) FROM r WHERE id <> $1`,
	"in_closure": `WITH RECURSIVE r(id, depth) AS (
		SELECT $1::text, 0
		UNION
		SELECT e."from", r.depth + 1 FROM r JOIN edges e ON e."to" = r.id AND e.label = $2 WHERE r.depth < $3)
	SELECT DISTINCT id FROM r WHERE id <> $1`,
	// A maintainer's packages in one section, the largest 10 (ties by ID,
	// in byte order as Lore's).
	"top_dependents": `SELECT n.id, (n.props->>'size')::bigint AS size
		FROM edges e JOIN nodes n ON n.id = e."from"
		WHERE e."to" = $1 AND e.label = 'dependsOn'
		ORDER BY size DESC, n.id COLLATE "C" LIMIT $2`,
	"top_maintained": `SELECT n.id, (n.props->>'size')::bigint AS size
		FROM edges e JOIN nodes n ON n.id = e."to"
		WHERE e."from" = $1 AND e.label = 'maintains' AND n.props->>'section' = $2
		ORDER BY size DESC, n.id COLLATE "C" LIMIT $3`,
}

func (p *Postgres) prepare(ctx context.Context) error {
	for name, sql := range statements {
		if _, err := p.Conn.Prepare(ctx, name, sql); err != nil {
			return fmt.Errorf("prepare %s: %w", name, err)
		}
	}
	return nil
}

// Close closes the connection and drops the database.
func (p *Postgres) Close(ctx context.Context) error {
	if p.Conn != nil {
		p.Conn.Close(ctx)
	}
	defer p.admin.Close(ctx)
	return dropDatabase(ctx, p.admin, p.name)
}

// newDatabase creates the database name through admin, dropping a
// leftover of the same name first.
func newDatabase(ctx context.Context, admin *pgx.Conn, name string) error {
	if err := dropDatabase(ctx, admin, name); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// dropDatabase drops the database name through admin, if it exists,
// closing its connections.
func dropDatabase(ctx context.Context, admin *pgx.Conn, name string) error {
	_, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}
