package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// Check verifies the store under the commit lock (writers wait): counts
// and edge summaries against the records, edges against their nodes, the
// property index and postings against what the records derive, and the
// change log for gaps (see graph.Checker).
func (s *Store) Check(ctx context.Context) (*graph.CheckReport, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	r := &graph.CheckReport{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockCommit); err != nil {
			return err
		}
		m, err := s.refreshModel(ctx, tx)
		if err != nil {
			return err
		}
		return s.checkTx(ctx, tx, m, r)
	})
	return r, err
}

// Repair rebuilds every derived table (counts, edge summaries, the
// property index, postings) from the records under the commit lock, in
// one transaction, then checks the store again.
func (s *Store) Repair(ctx context.Context) (*graph.CheckReport, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	r := &graph.CheckReport{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockCommit); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM lore_counts`,
			`INSERT INTO lore_counts (kind, name, n) SELECT 'node', type, count(*) FROM lore_nodes GROUP BY type`,
			`INSERT INTO lore_counts (kind, name, n) SELECT 'edge', label, count(*) FROM lore_edges GROUP BY label`,
			`DELETE FROM lore_degrees`,
			`INSERT INTO lore_degrees (node_id, label, inbound, n, type) SELECT e.from_id, e.label, false, count(*), min(n.type) FROM lore_edges e JOIN lore_nodes n ON n.id = e.from_id GROUP BY e.from_id, e.label`,
			`INSERT INTO lore_degrees (node_id, label, inbound, n, type) SELECT e.to_id, e.label, true, count(*), min(n.type) FROM lore_edges e JOIN lore_nodes n ON n.id = e.to_id GROUP BY e.to_id, e.label`,
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		m, err := s.refreshModel(ctx, tx)
		if err != nil {
			return err
		}
		if err := s.rebuildDerived(ctx, tx, m, m.NodeTypeNames()); err != nil {
			return err
		}
		r.Repaired = []string{"counts", "edge summaries", "degree index", "property index", "postings"}
		return s.checkTx(ctx, tx, m, r)
	})
	return r, err
}

func (s *Store) checkTx(ctx context.Context, tx pgx.Tx, m *schema.Model, r *graph.CheckReport) error {
	var last, base int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM lore_nodes), (SELECT count(*) FROM lore_edges), (SELECT count(*) FROM lore_changes), `+lastSeqSQL+`, `+baseSQL).
		Scan(&r.Nodes, &r.Edges, &r.Changes, &last, &base); err != nil {
		return err
	}
	if uint64(last-base) != r.Changes {
		r.Addf("the change log holds %d entries from %d to %d: it has gaps", r.Changes, base+1, last)
	}
	problems := []struct{ what, sql string }{
		{"count", `SELECT coalesce(c.kind, a.kind) || ' ' || coalesce(c.name, a.name) || ': the counter says ' || coalesce(c.n, 0) || ', the records ' || coalesce(a.n, 0)
			FROM (SELECT kind, name, n FROM lore_counts WHERE n <> 0) c
			FULL JOIN (SELECT 'node' AS kind, type AS name, count(*) AS n FROM lore_nodes GROUP BY type
			           UNION ALL SELECT 'edge', label, count(*) FROM lore_edges GROUP BY label) a ON a.kind = c.kind AND a.name = c.name
			WHERE c.n IS DISTINCT FROM a.n`},
		{"edge summary", `SELECT coalesce(d.node_id, a.node_id) || ' ' || coalesce(d.label, a.label) || CASE WHEN coalesce(d.inbound, a.inbound) THEN ' in' ELSE ' out' END ||
				': the summary says ' || coalesce(d.n, 0) || ', the edges ' || coalesce(a.n, 0)
			FROM (SELECT * FROM lore_degrees WHERE n <> 0) d
			FULL JOIN (SELECT from_id AS node_id, label, false AS inbound, count(*) AS n FROM lore_edges GROUP BY from_id, label
			           UNION ALL SELECT to_id, label, true, count(*) FROM lore_edges GROUP BY to_id, label) a
			  ON a.node_id = d.node_id AND a.label = d.label AND a.inbound = d.inbound
			WHERE d.n IS DISTINCT FROM a.n`},
		{"degree index", `SELECT d.node_id || ' ' || d.label || CASE WHEN d.inbound THEN ' in' ELSE ' out' END || ': the degree index files it under type ' || d.type || ', the node is a ' || coalesce(n.type, 'missing node')
			FROM lore_degrees d LEFT JOIN lore_nodes n ON n.id = d.node_id WHERE d.n <> 0 AND n.type IS DISTINCT FROM d.type`},
		{"dangling edge", `SELECT e.label || '(' || e.from_id || ',' || e.to_id || ')' FROM lore_edges e
			WHERE NOT EXISTS (SELECT 1 FROM lore_nodes n WHERE n.id = e.from_id) OR NOT EXISTS (SELECT 1 FROM lore_nodes n WHERE n.id = e.to_id)`},
	}
	for _, p := range problems {
		if err := eachString(ctx, tx, p.sql, func(s string) { r.Addf("%s: %s", p.what, s) }); err != nil {
			return fmt.Errorf("checking %ss: %w", p.what, err)
		}
	}
	return s.checkDerived(ctx, tx, m, r)
}

// checkDerived compares the property index and postings with what the
// records derive: the expected rows are copied into temporary tables and
// compared both ways.
func (s *Store) checkDerived(ctx context.Context, tx pgx.Tx, m *schema.Model, r *graph.CheckReport) error {
	for _, q := range []string{
		`CREATE TEMP TABLE want_prop (type text COLLATE "C", prop text COLLATE "C", val bytea, id text COLLATE "C") ON COMMIT DROP`,
		`CREATE TEMP TABLE want_post (token bytea, type text COLLATE "C", id text COLLATE "C", weight smallint) ON COMMIT DROP`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return err
		}
	}
	rows, err := tx.Query(ctx, `SELECT id, type, props FROM lore_nodes`)
	if err != nil {
		return err
	}
	var props [][]any
	var posts [][]any
	for rows.Next() {
		var id, typ, raw string
		if err := rows.Scan(&id, &typ, &raw); err != nil {
			return err
		}
		p, err := graph.DecodeProps([]byte(raw))
		if err != nil {
			r.Addf("node %q: corrupt properties: %v", id, err)
			continue
		}
		keys, toks := indexRows(m, graph.ID(id), typ, p)
		for _, k := range keys {
			props = append(props, []any{k.typ, k.prop, k.val, k.id})
		}
		for tok, w := range toks {
			posts = append(posts, []any{[]byte(tok), typ, id, int16(w)})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"want_prop"}, []string{"type", "prop", "val", "id"}, pgx.CopyFromRows(props)); err != nil {
		return err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"want_post"}, []string{"token", "type", "id", "weight"}, pgx.CopyFromRows(posts)); err != nil {
		return err
	}
	for _, c := range []struct{ what, sql string }{
		{"property index lacks", `SELECT type || '.' || prop || ' of ' || id FROM (SELECT * FROM want_prop EXCEPT SELECT * FROM lore_prop) x`},
		{"property index has a stale entry", `SELECT type || '.' || prop || ' of ' || id FROM (SELECT * FROM lore_prop EXCEPT SELECT * FROM want_prop) x`},
		{"postings lack", `SELECT convert_from(token, 'UTF8') || ' of ' || id FROM (SELECT * FROM want_post EXCEPT SELECT * FROM lore_postings) x`},
		{"postings have a stale entry", `SELECT convert_from(token, 'UTF8') || ' of ' || id FROM (SELECT * FROM lore_postings EXCEPT SELECT * FROM want_post) x`},
	} {
		if err := eachString(ctx, tx, c.sql+` LIMIT 300`, func(s string) { r.Addf("%s: %s", c.what, s) }); err != nil {
			return fmt.Errorf("checking the %s: %w", c.what, err)
		}
	}
	return nil
}

func eachString(ctx context.Context, q querier, sql string, f func(string)) error {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return err
		}
		f(s)
	}
	return rows.Err()
}
