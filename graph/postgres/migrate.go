package postgres

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// migrations are the schema's versions, applied in order, each once, in a
// transaction of its own that records it in lore_schema_migrations. Never
// edit one that shipped: add the next.
var migrations = []string{
	1: `
CREATE TABLE lore_meta (
	key   text COLLATE "C" PRIMARY KEY,
	value bytea NOT NULL
);
-- Records. props is canonical JSON text (see the package documentation).
CREATE TABLE lore_nodes (
	id      text COLLATE "C" PRIMARY KEY,
	type    text COLLATE "C" NOT NULL,
	props   text NOT NULL,
	created bigint NOT NULL,
	updated bigint NOT NULL,
	rev     bigint NOT NULL
);
CREATE INDEX lore_nodes_type ON lore_nodes (type, id);
CREATE TABLE lore_edges (
	from_id text COLLATE "C" NOT NULL,
	label   text COLLATE "C" NOT NULL,
	to_id   text COLLATE "C" NOT NULL,
	key     text COLLATE "C" NOT NULL,
	props   text NOT NULL, -- '' when the edge has none
	created bigint NOT NULL,
	updated bigint NOT NULL,
	rev     bigint NOT NULL,
	PRIMARY KEY (from_id, label, to_id, key)
);
CREATE INDEX lore_edges_in ON lore_edges (to_id, label, from_id, key);
-- Derived: the property index (values as graph.EncodeIndexValue encodes them),
-- the text-search postings, edge summaries and counts.
CREATE TABLE lore_prop (
	type text COLLATE "C" NOT NULL,
	prop text COLLATE "C" NOT NULL,
	val  bytea NOT NULL,
	id   text COLLATE "C" NOT NULL,
	PRIMARY KEY (type, prop, val, id)
);
CREATE TABLE lore_postings (
	token  bytea NOT NULL,
	type   text COLLATE "C" NOT NULL,
	id     text COLLATE "C" NOT NULL,
	weight smallint NOT NULL,
	PRIMARY KEY (token, type, id)
);
CREATE TABLE lore_degrees (
	node_id text COLLATE "C" NOT NULL,
	label   text COLLATE "C" NOT NULL,
	inbound boolean NOT NULL,
	n       bigint NOT NULL,
	PRIMARY KEY (node_id, label, inbound)
);
CREATE TABLE lore_counts (
	kind text COLLATE "C" NOT NULL, -- node or edge
	name text COLLATE "C" NOT NULL,
	n    bigint NOT NULL,
	PRIMARY KEY (kind, name)
);
-- The change log: gapless, written only under the commit lock.
CREATE TABLE lore_changes (
	seq  bigint PRIMARY KEY,
	data bytea NOT NULL -- graph.EncodeChange
);
CREATE TABLE lore_idempotency (
	key    bytea PRIMARY KEY,
	hash   bytea NOT NULL,
	at     timestamptz NOT NULL,
	result bytea NOT NULL -- the first Result, JSON
);
`,
	// 2: the search postings by weight (graph.TokenizerVersion 2), for
	// Search's impact-ordered reads.
	2: `CREATE INDEX lore_postings_weight ON lore_postings (token, weight DESC, id) INCLUDE (type);`,
	// 3: the degree index. Each summary row carries its node's type, and
	// is indexed by type, label, direction and count (highest first), then
	// node, so that a type's nodes are read in order of a degree.
	3: `
ALTER TABLE lore_degrees ADD COLUMN type text COLLATE "C";
UPDATE lore_degrees d SET type = n.type FROM lore_nodes n WHERE n.id = d.node_id;
UPDATE lore_degrees SET type = '' WHERE type IS NULL;
ALTER TABLE lore_degrees ALTER COLUMN type SET NOT NULL;
CREATE INDEX lore_degrees_rank ON lore_degrees (type, label, inbound, n DESC, node_id);
`,
}

// migrate applies the migrations the database lacks, under a session
// advisory lock, so that replicas starting together wait for each other
// instead of racing.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockMigrate); err != nil {
		return fmt.Errorf("waiting for another replica's migration: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, lockMigrate)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS lore_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM lore_schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("schema migrations: %w", err)
	}
	if have > len(migrations)-1 {
		return fmt.Errorf("the database's Lore schema is version %d, and this lore knows versions up to %d: upgrade lore", have, len(migrations)-1)
	}
	for v := have + 1; v < len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO lore_schema_migrations (version) VALUES ($1)`, v)
			return err
		})
		if err != nil {
			return fmt.Errorf("schema migration %d: %w", v, err)
		}
	}
	return nil
}

// schemaCurrent checks, for a reader, that the database holds Lore's
// schema at this Lore's version.
func schemaCurrent(ctx context.Context, pool *pgxpool.Pool) error {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('lore_schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%w in this database (no Lore schema): a command that writes, such as lore import or lore serve, creates one", graph.ErrNoStore)
	}
	var have int
	err := pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM lore_schema_migrations`).Scan(&have)
	switch {
	case err != nil:
		return err
	case have < len(migrations)-1:
		return fmt.Errorf("the database's Lore schema is version %d, older than this lore's %d: open it once with a writer (lore serve, lore import), which upgrades it", have, len(migrations)-1)
	case have > len(migrations)-1:
		return fmt.Errorf("the database's Lore schema is version %d, and this lore knows versions up to %d: upgrade lore", have, len(migrations)-1)
	}
	return nil
}

// adoptModel sets the store's model: model, or the stored one if nil, or
// the default one for a new store. Another model than the stored one must
// fit the store; if it changes what is derived from the records of node
// types the store holds, the derived indexes are rebuilt under the commit
// lock, in the transaction that saves the model. Replacing a stored model
// commits a change-log entry (graph.OpModel) in that transaction, and its
// number as 'modelSeq', which every replica follows (see model.go).
//
// With at, the model is put in use only if the change log still ends at
// *at (the data was checked against it there); else ErrConflict.
func (s *Store) adoptModel(ctx context.Context, model *schema.Model, at *uint64) error {
	stored, seq, err := storedModel(ctx, s.pool)
	if err != nil {
		return err
	}
	var old *schema.Model
	if stored != nil {
		if old, err = schema.Load(stored); err != nil {
			return fmt.Errorf("stored model: %w", err)
		}
	}
	m := cmp.Or(model, old)
	if m == nil {
		m = schema.Default()
	}
	if bytes.Equal(stored, m.JSON()) || s.readOnly {
		s.setModel(&inUse{m: m, seq: seq})
		if s.readOnly {
			return s.checkReadModel(ctx, old)
		}
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockCommit); err != nil {
			return err
		}
		// Read again under the lock: another replica may have put a model
		// in use since.
		if stored, seq, err = storedModel(ctx, tx); err != nil {
			return err
		}
		if bytes.Equal(stored, m.JSON()) {
			s.setModel(&inUse{m: m, seq: seq})
			return nil
		}
		if at != nil {
			last, err := s.lastSeq(ctx, tx)
			if err != nil {
				return err
			}
			if last != *at {
				return fmt.Errorf("%w: the store was written after change %d, which the model was checked at (it is at %d now)", graph.ErrConflict, *at, last)
			}
		}
		old = nil
		if stored != nil {
			if old, err = schema.Load(stored); err != nil {
				return fmt.Errorf("stored model: %w", err)
			}
		}
		held, err := countsOf(ctx, tx)
		if err != nil {
			return err
		}
		var missing []string
		for _, c := range held {
			if c.kind == "node" {
				if _, ok := m.Node(c.name); !ok {
					missing = append(missing, "node type "+c.name)
				}
			} else if _, ok := m.Edge(c.name); !ok {
				missing = append(missing, "edge label "+c.name)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("the model lacks %s, which the store holds: %w", strings.Join(missing, ", "), graph.ErrInvalid)
		}
		if stale := staleTypes(held, cmp.Or(old, schema.Default()), m); len(stale) > 0 {
			if err := s.rebuildDerived(ctx, tx, m, stale); err != nil {
				return fmt.Errorf("rebuilding the indexes of %s for the new model: %w", strings.Join(stale, ", "), err)
			}
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO lore_meta (key, value) VALUES ('model', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, m.JSON())
		seq = 0
		if old != nil {
			// A change of the model in use: recorded in the log, in order
			// with the writes (a new store's first model is none).
			if seq, err = s.lastSeq(ctx, tx); err != nil {
				return err
			}
			seq++
			b.Queue(`INSERT INTO lore_changes (seq, data) VALUES ($1, $2)`, int64(seq), graph.EncodeChange(modelChange(seq)))
			b.Queue(`INSERT INTO lore_meta (key, value) VALUES ('modelSeq', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, binary.BigEndian.AppendUint64(nil, seq))
			b.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, fmt.Sprint(seq))
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		s.setModel(&inUse{m: m, seq: seq})
		return nil
	})
}

// storedModel reads the model in use and the entry that put it in use.
func storedModel(ctx context.Context, q querier) (raw []byte, seq uint64, err error) {
	var v []byte
	err = q.QueryRow(ctx, `SELECT (SELECT value FROM lore_meta WHERE key = 'model'), (`+modelSeqSQL+`)`).Scan(&raw, &v)
	return raw, decodeModelSeq(v), err
}

// staleTypes returns the node types the store holds whose derived rows
// change from model old to m.
func staleTypes(held []count, old, m *schema.Model) []string {
	var stale []string
	for _, c := range held {
		nt, ok := m.Node(c.name)
		ot, ok2 := old.Node(c.name)
		if c.kind == "node" && ok && (!ok2 || !slices.Equal(nt.Indexed, ot.Indexed) || !slices.Equal(nt.Search, ot.Search) || nt.Display != ot.Display) {
			stale = append(stale, c.name)
		}
	}
	return stale
}

// checkReadModel refuses, for a reader, a model that would change the
// derived rows (only a writer rebuilds them) or lacks what the store holds.
func (s *Store) checkReadModel(ctx context.Context, old *schema.Model) error {
	held, err := countsOf(ctx, s.pool)
	if err != nil {
		return err
	}
	for _, c := range held {
		_, okN := s.Model().Node(c.name)
		_, okE := s.Model().Edge(c.name)
		if c.kind == "node" && !okN || c.kind == "edge" && !okE {
			return fmt.Errorf("the model lacks %s %s, which the store holds: %w", c.kind, c.name, graph.ErrInvalid)
		}
	}
	if old == nil {
		old = schema.Default()
	}
	if stale := staleTypes(held, old, s.Model()); len(stale) > 0 {
		return fmt.Errorf("the model changes what Lore indexes for %s, and a read does not rebuild indexes; open the store once with this model to write (for example lore check --repair --model FILE): %w",
			strings.Join(stale, ", "), graph.ErrInvalid)
	}
	return nil
}

type count struct {
	kind, name string
	n          int64
}

func countsOf(ctx context.Context, q querier) ([]count, error) {
	rows, err := q.Query(ctx, `SELECT kind, name, n FROM lore_counts WHERE n > 0 ORDER BY kind, name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (count, error) {
		var c count
		err := r.Scan(&c.kind, &c.name, &c.n)
		return c, err
	})
}

// rebuildDerived rewrites the property index and postings of the nodes
// of the given types from their records, inside tx.
func (s *Store) rebuildDerived(ctx context.Context, tx pgx.Tx, m *schema.Model, types []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM lore_prop WHERE type = ANY($1)`, types); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM lore_postings WHERE type = ANY($1)`, types); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT id, type, props FROM lore_nodes WHERE type = ANY($1)`, types)
	if err != nil {
		return err
	}
	var w derivedRows
	for rows.Next() {
		var id, typ, props string
		if err := rows.Scan(&id, &typ, &props); err != nil {
			return err
		}
		p, err := graph.DecodeProps([]byte(props))
		if err != nil {
			return fmt.Errorf("node %q: corrupt properties: %w", id, err)
		}
		keys, toks := indexRows(m, graph.ID(id), typ, p)
		for _, k := range keys {
			w.propAdd.add(k)
		}
		for tok, wt := range toks {
			w.postAdd.add(postingRow{tok, typ, id, int16(wt)})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	w.queue(b)
	return tx.SendBatch(ctx, b).Close()
}
