package postgres

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
)

// postingsOf looks the postings of one token up for the nodes q.Nodes.
func (s *Store) postingsOf(ctx context.Context, q graph.PostingQuery) (*graph.PostingPage, error) {
	var types, ids []string
	for _, n := range q.Nodes {
		if q.Type == "" || n.Type == q.Type {
			types, ids = append(types, n.Type), append(ids, string(n.ID))
		}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return readOn(ctx, s, func(db querier) (*graph.PostingPage, error) {
		rows, err := db.Query(ctx, `SELECT p.type, p.id, p.weight FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS n(t, i, o)
			JOIN lore_postings p ON p.token = $1 AND p.type = n.t COLLATE "C" AND p.id = n.i COLLATE "C" ORDER BY n.o`, []byte(q.Prefix), types, ids)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.PostingPage{Scanned: len(ids)}
		for rows.Next() {
			var typ, id string
			var w int16
			if err := rows.Scan(&typ, &id, &w); err != nil {
				return nil, err
			}
			page.Postings = append(page.Postings, graph.Posting{Token: q.Prefix, Type: typ, ID: graph.ID(id), Weight: int(w)})
		}
		return page, rows.Err()
	})
}

// postingsByWeight reads the postings of one token by weight, highest
// first, then by ID (the index lore_postings_weight). Its cursor is the
// last posting's weight byte and ID.
func (s *Store) postingsByWeight(ctx context.Context, q graph.PostingQuery) (*graph.PostingPage, error) {
	limit := q.Size()
	maxScan := q.MaxScan
	if maxScan <= 0 {
		maxScan = limit
	}
	var args sqlArgs
	sql := `SELECT type, id, weight FROM lore_postings WHERE token = ` + args.add([]byte(q.Prefix))
	if q.Type != "" {
		sql += ` AND type = ` + args.add(q.Type)
	}
	if q.After != "" {
		after, err := base64.RawURLEncoding.DecodeString(q.After)
		if err != nil || len(after) < 2 {
			return nil, fmt.Errorf("cursor %q does not belong to this index scan: %w", q.After, graph.ErrInvalid)
		}
		w, id := int16(after[0]), string(after[1:])
		sql += fmt.Sprintf(` AND (weight < %[1]s OR weight = %[1]s AND id > %[2]s::text COLLATE "C")`, args.add(w), args.add(id))
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	sql += ` ORDER BY weight DESC, id LIMIT ` + args.add(int64(min(maxScan, limit)+1))
	return readOn(ctx, s, func(db querier) (*graph.PostingPage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.PostingPage{}
		var last []byte
		for rows.Next() {
			var typ, id string
			var w int16
			if err := rows.Scan(&typ, &id, &w); err != nil {
				return nil, err
			}
			if last != nil && (page.Scanned == maxScan || len(page.Postings) == limit) {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			last = append([]byte{byte(w)}, id...)
			page.Scanned++
			page.Postings = append(page.Postings, graph.Posting{Token: q.Prefix, Type: typ, ID: graph.ID(id), Weight: int(w)})
		}
		return page, rows.Err()
	})
}

// Terms lists the tokens that start with q.Prefix with their posting
// counts. PostgreSQL keeps no counters: it counts the postings, at a cost
// that grows with them (an index-only scan).
func (s *Store) Terms(ctx context.Context, q graph.TermQuery) ([]graph.Term, error) {
	if q.Prefix == "" {
		return nil, fmt.Errorf("empty search token: %w", graph.ErrInvalid)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = graph.DefaultPageSize
	}
	var args sqlArgs
	sql := `SELECT token, count(*) FROM lore_postings WHERE `
	if q.Exact {
		sql += `token = ` + args.add([]byte(q.Prefix))
	} else {
		sql += `token >= ` + args.add([]byte(q.Prefix))
		if hi := graph.PrefixEnd([]byte(q.Prefix)); hi != nil {
			sql += ` AND token < ` + args.add(hi)
		}
	}
	if q.Type != "" {
		sql += ` AND type = ` + args.add(q.Type)
	}
	sql += ` GROUP BY token ORDER BY token LIMIT ` + args.add(int64(min(limit, graph.MaxTermScan)))
	if err := s.check(); err != nil {
		return nil, err
	}
	return readOn(ctx, s, func(db querier) ([]graph.Term, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (graph.Term, error) {
			var tok []byte
			var n int64
			err := r.Scan(&tok, &n)
			return graph.Term{Token: string(tok), Count: int(n)}, err
		})
	})
}

// reindexSearch rebuilds the derived indexes of every node type held if
// the postings were built by another graph.TokenizerVersion (or before it
// was recorded), under the commit lock, logging its progress.
func (s *Store) reindexSearch(ctx context.Context) error {
	want := strconv.Itoa(graph.TokenizerVersion)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockCommit); err != nil {
			return err
		}
		var have []byte
		err := tx.QueryRow(ctx, `SELECT value FROM lore_meta WHERE key = 'tokenizer'`).Scan(&have)
		if err != nil && err != pgx.ErrNoRows {
			return err
		}
		if string(have) == want {
			return nil
		}
		held, err := countsOf(ctx, tx)
		if err != nil {
			return err
		}
		m := s.Model()
		var types []string
		var total int64
		for _, c := range held {
			if nt, ok := m.Node(c.name); c.kind == "node" && ok && len(nt.Search) > 0 {
				types, total = append(types, c.name), total+c.n
			}
		}
		start := time.Now()
		if len(types) > 0 {
			s.log.InfoContext(ctx, "re-indexing search", "reason", "the text analysis changed", "from", string(have), "to", want, "nodes", total)
		}
		var done int64
		for _, typ := range types {
			if err := s.rebuildDerived(ctx, tx, m, []string{typ}); err != nil {
				return err
			}
			for _, c := range held {
				if c.kind == "node" && c.name == typ {
					done += c.n
				}
			}
			s.log.InfoContext(ctx, "re-indexing search", "type", typ, "done", done, "total", total)
		}
		if len(types) > 0 {
			s.log.InfoContext(ctx, "re-indexed search", "nodes", total, "elapsed", time.Since(start).Round(time.Millisecond))
		}
		_, err = tx.Exec(ctx, `INSERT INTO lore_meta (key, value) VALUES ('tokenizer', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, []byte(want))
		return err
	})
}
