package postgres

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
)

// Every read below is one SQL statement, which sees one snapshot: none
// needs a transaction of its own to be consistent.

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

func nodeOf(id graph.ID, r *graph.NodeRecord) (*graph.Node, error) {
	props, err := graph.DecodeProps(r.Props)
	if err != nil {
		return nil, fmt.Errorf("node %q: corrupt properties: %w", id, err)
	}
	return &graph.Node{ID: id, Type: r.Type, Properties: props, CreatedAt: micros(r.Created), UpdatedAt: micros(r.Updated), Revision: r.Rev}, nil
}

func edgeOf(k graph.EdgeKey, props string, created, updated, rev int64) (*graph.Edge, error) {
	p, err := graph.DecodeProps([]byte(props))
	if err != nil {
		return nil, fmt.Errorf("edge %s: corrupt properties: %w", k, err)
	}
	return &graph.Edge{ID: k.String(), EdgeKey: k, Properties: p, CreatedAt: micros(created), UpdatedAt: micros(updated), Revision: rev}, nil
}

// Node returns one node with its edge counts, in one statement.
func (s *Store) Node(ctx context.Context, id graph.ID) (*graph.Node, error) {
	if err := id.Check(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return readOn(ctx, s, func(db querier) (*graph.Node, error) {
		rows, err := db.Query(ctx, `SELECT n.type, n.props, n.created, n.updated, n.rev, d.label, d.inbound, d.n
		FROM lore_nodes n LEFT JOIN lore_degrees d ON d.node_id = n.id AND d.n > 0
		WHERE n.id = $1 ORDER BY d.label, d.inbound`, string(id))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var n *graph.Node
		for rows.Next() {
			var r graph.NodeRecord
			var props string
			var label *string
			var in *bool
			var cnt *int64
			if err := rows.Scan(&r.Type, &props, &r.Created, &r.Updated, &r.Rev, &label, &in, &cnt); err != nil {
				return nil, err
			}
			if n == nil {
				r.Props = json.RawMessage(props)
				if n, err = nodeOf(id, &r); err != nil {
					return nil, err
				}
			}
			if label != nil {
				dir := graph.Out
				if *in {
					dir = graph.In
				}
				n.Edges = append(n.Edges, graph.EdgeCount{Label: *label, Direction: dir, Count: *cnt})
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n == nil {
			return nil, fmt.Errorf("node %q: %w", id, graph.ErrNotFound)
		}
		return n, nil
	})

}

// Nodes returns the nodes with the given IDs, in order; missing ones are nil.
func (s *Store) Nodes(ctx context.Context, ids []graph.ID) ([]*graph.Node, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	recs, err := readOn(ctx, s, func(db querier) ([]*graph.NodeRecord, error) { return nodeRecords(ctx, db, ids) })
	if err != nil {
		return nil, err
	}
	out := make([]*graph.Node, len(ids))
	for i, r := range recs {
		if r != nil {
			if out[i], err = nodeOf(ids[i], r); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Edge returns one edge.
func (s *Store) Edge(ctx context.Context, k graph.EdgeKey) (*graph.Edge, error) {
	if err := k.Check(); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return readOn(ctx, s, func(db querier) (*graph.Edge, error) {
		var props string
		var created, updated, rev int64
		err := db.QueryRow(ctx, `SELECT props, created, updated, rev FROM lore_edges WHERE from_id = $1 AND label = $2 AND to_id = $3 AND key = $4`,
			string(k.From), k.Label, string(k.To), k.Key).Scan(&props, &created, &updated, &rev)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("edge %s: %w", k, graph.ErrNotFound)
		}
		if err != nil {
			return nil, err
		}
		return edgeOf(k, props, created, updated, rev)
	})
}

// edgeCursor is the place of an edge listing's last edge: the index in
// EdgeQuery.Nodes of the node it was listed for, and its place among
// that node's edges. Its encoding is the embedded store's, so that a page
// continues in the same place on every store.
type edgeCursor struct {
	set   bool
	node  int
	label string
	in    bool
	other string
	key   string
}

func (c edgeCursor) String() string {
	return graph.EdgePlace{Node: c.node, Label: c.label, In: c.in, Other: graph.ID(c.other), Key: c.key}.Cursor()
}

// parseEdgeCursor checks q (graph.EdgeQueryPlace) and returns its cursor.
func parseEdgeCursor(q graph.EdgeQuery) (edgeCursor, error) {
	p, ok, err := graph.EdgeQueryPlace(q)
	if !ok || err != nil {
		return edgeCursor{}, err
	}
	return edgeCursor{set: true, node: p.Node, label: p.Label, in: p.In, other: string(p.Other), key: p.Key}, nil
}

// sqlArgs numbers a statement's parameters as they are added.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// Edges returns a page of the edges of q.Nodes in the order Store.Edges
// specifies, for the whole set of nodes in one statement (see edgesSQL).
func (s *Store) Edges(ctx context.Context, q graph.EdgeQuery) (*graph.EdgePage, error) {
	dir, err := graph.ParseDirection(string(q.Direction))
	if err != nil {
		return nil, err
	}
	var labels []string
	for _, l := range q.Labels {
		if _, ok := s.Model().Edge(l); !ok {
			return nil, fmt.Errorf("unknown edge label %q; the model has %s: %w", l, list(s.Model().EdgeLabels()), graph.ErrInvalid)
		}
		labels = append(labels, l)
	}
	slices.Sort(labels)
	labels = slices.Compact(labels)
	cur, err := parseEdgeCursor(q)
	if err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	page := &graph.EdgePage{Edges: []*graph.Edge{}}
	if len(q.Nodes) == 0 {
		return page, nil
	}
	limit := q.Size()
	sql, args := edgesSQL(q, dir, labels, cur, limit+1)
	return readOn(ctx, s, func(db querier) (*graph.EdgePage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var last edgeCursor
		for rows.Next() {
			if len(page.Edges) == limit {
				page.Next = last.String()
				break
			}
			var ord int64
			var in bool
			var f, t string
			var k graph.EdgeKey
			var props string
			var created, updated, rev int64
			dest := []any{&ord, &in, &f, &k.Label, &t, &k.Key}
			if !q.KeysOnly {
				dest = append(dest, &props, &created, &updated, &rev)
			}
			if err := rows.Scan(dest...); err != nil {
				return nil, err
			}
			k.From, k.To = graph.ID(f), graph.ID(t)
			other := t
			if in {
				other = f
			}
			last = edgeCursor{set: true, node: int(ord - 1), label: k.Label, in: in, other: other, key: k.Key}
			if q.KeysOnly {
				page.Edges = append(page.Edges, &graph.Edge{ID: k.String(), EdgeKey: k})
				continue
			}
			e, err := edgeOf(k, props, created, updated, rev)
			if err != nil {
				return nil, err
			}
			page.Edges = append(page.Edges, e)
		}
		return page, rows.Err()
	})

}

// edgesSQL returns the statement of an Edges page of n rows: the nodes
// unnested with their ordinals, and for each node its out-edges and its
// in-edges, each read from its index in the listing's order and at most n
// of them (a LATERAL subquery with ORDER BY and LIMIT: a page at a hub
// reads a page's worth, not the hub's edges), the union sorted by
// (ordinal, label, direction, other end, key). The node the cursor is in
// has two subqueries of its own whose row comparisons with the cursor are
// index conditions; the nodes after it are read whole.
func edgesSQL(q graph.EdgeQuery, dir graph.Direction, labels []string, cur edgeCursor, n int) (string, []any) {
	var args sqlArgs
	lim := args.add(int64(n))
	cols := `e.from_id, e.label, e.to_id, e.key`
	if !q.KeysOnly {
		cols += `, e.props, e.created, e.updated, e.rev`
	}
	// One index scan per label, each in the index's order: with the labels
	// a filter (label = ANY) behind the node's condition, a node's edges of
	// other labels were read too, and for two labels or more, all of its
	// edges were read and sorted for any page (TestEdgesReadOnlyTheirLabels).
	labelConds := []string{""}
	if len(labels) > 0 {
		labelConds = labelConds[:0]
		for _, l := range labels {
			labelConds = append(labelConds, ` AND e.label = `+args.add(l)+`::text`)
		}
	}
	selfCond := ""
	if dir == graph.Both {
		selfCond = ` AND e.from_id <> e.to_id` // a self-loop is listed as an out-edge
	}
	perLabel := func(scan func(labelCond string) string) string {
		if len(labelConds) == 1 {
			return scan(labelConds[0])
		}
		scans := make([]string, len(labelConds))
		for i, lc := range labelConds {
			scans[i] = `(` + scan(lc) + `)`
		}
		return strings.Join(scans, ` UNION ALL `)
	}
	out := func(node, cond string) string {
		return perLabel(func(labelCond string) string {
			return `SELECT false AS inbound, e.to_id AS other, ` + cols + ` FROM lore_edges e WHERE e.from_id = ` + node + labelCond + cond +
				` ORDER BY e.label, e.to_id, e.key LIMIT ` + lim
		})
	}
	in := func(node, cond string) string {
		return perLabel(func(labelCond string) string {
			return `SELECT true AS inbound, e.from_id AS other, ` + cols + ` FROM lore_edges e WHERE e.to_id = ` + node + labelCond + selfCond + cond +
				` ORDER BY e.label, e.from_id, e.key LIMIT ` + lim
		})
	}
	var parts []string
	q1 := `WITH q AS MATERIALIZED (SELECT id, ord FROM unnest(` + args.add(idStrings(q.Nodes)) + `::text[]) WITH ORDINALITY AS u(id, ord)`
	if cur.set {
		ord := args.add(int64(cur.node + 1))
		q1 += ` WHERE ord > ` + ord
		id := args.add(string(q.Nodes[cur.node])) + `::text`
		cl, co, ck := args.add(cur.label)+`::text COLLATE "C"`, args.add(cur.other)+`::text COLLATE "C"`, args.add(cur.key)+`::text COLLATE "C"`
		// An out-edge sorts after the cursor if its (label, to, key) does,
		// when the cursor is at an out-edge, or if its label does, when at
		// an in-edge (which follows the out-edges of its label); an
		// in-edge, if its label is not before the cursor's, or if its
		// (label, from, key) sorts after the cursor's, when at an in-edge.
		outCond, inCond := ` AND (e.label, e.to_id, e.key) > (`+cl+`, `+co+`, `+ck+`)`, ` AND e.label >= `+cl
		if cur.in {
			outCond, inCond = ` AND e.label > `+cl, ` AND (e.label, e.from_id, e.key) > (`+cl+`, `+co+`, `+ck+`)`
		}
		if dir != graph.In {
			parts = append(parts, `SELECT `+ord+`::bigint AS ord, c.* FROM (`+out(id, outCond)+`) c`)
		}
		if dir != graph.Out {
			parts = append(parts, `SELECT `+ord+`::bigint AS ord, c.* FROM (`+in(id, inCond)+`) c`)
		}
	}
	q1 += `)`
	if dir != graph.In {
		parts = append(parts, `SELECT q.ord, o.* FROM q CROSS JOIN LATERAL (`+out("q.id", "")+`) o`)
	}
	if dir != graph.Out {
		parts = append(parts, `SELECT q.ord, i.* FROM q CROSS JOIN LATERAL (`+in("q.id", "")+`) i`)
	}
	sel := `ord, inbound, from_id, label, to_id, key`
	if !q.KeysOnly {
		sel += `, props, created, updated, rev`
	}
	return q1 + ` SELECT ` + sel + ` FROM (` + strings.Join(parts, ` UNION ALL `) + `) x ORDER BY ord, label, inbound, other, key LIMIT ` + lim, args
}

// NodesByType returns a page of the nodes of one type, ordered by ID.
func (s *Store) NodesByType(ctx context.Context, typ string, p graph.Page) (*graph.NodePage, error) {
	if _, err := graph.KnownType(s.Model(), typ); err != nil {
		return nil, err
	}
	return s.scanNodes(ctx, typ, p)
}

// NodeIDsByType returns a page of the IDs of the nodes of one type, by
// ID, reading no properties.
func (s *Store) NodeIDsByType(ctx context.Context, typ string, p graph.Page) (*graph.IDPage, error) {
	if _, err := graph.KnownType(s.Model(), typ); err != nil {
		return nil, err
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := p.Size()
	var args sqlArgs
	sql := `SELECT id FROM lore_nodes WHERE type = ` + args.add(typ)
	if p.After != "" {
		sql += ` AND id > ` + args.add(p.After) + `::text COLLATE "C"`
	}
	sql += ` ORDER BY type, id LIMIT ` + args.add(int64(limit+1))
	return readOn(ctx, s, func(db querier) (*graph.IDPage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.IDPage{IDs: []graph.ID{}}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return nil, err
			}
			if len(page.IDs) == limit {
				page.Next = string(page.IDs[limit-1])
				break
			}
			page.IDs = append(page.IDs, graph.ID(id))
		}
		return page, rows.Err()
	})
}

// ScanNodes returns a page of every node, ordered by ID.
func (s *Store) ScanNodes(ctx context.Context, p graph.Page) (*graph.NodePage, error) {
	return s.scanNodes(ctx, "", p)
}

func (s *Store) scanNodes(ctx context.Context, typ string, p graph.Page) (*graph.NodePage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := p.Size()
	var args sqlArgs
	sql := `SELECT id, type, props, created, updated, rev FROM lore_nodes WHERE true`
	if typ != "" {
		sql += ` AND type = ` + args.add(typ)
	}
	if p.After != "" {
		sql += ` AND id > ` + args.add(p.After) + `::text COLLATE "C"`
	}
	if typ != "" {
		sql += ` ORDER BY type, id`
	} else {
		sql += ` ORDER BY id`
	}
	sql += ` LIMIT ` + args.add(int64(limit+1))
	return readOn(ctx, s, func(db querier) (*graph.NodePage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.NodePage{Nodes: []*graph.Node{}}
		for rows.Next() {
			if len(page.Nodes) == limit {
				page.Next = string(page.Nodes[limit-1].ID)
				break
			}
			var id, props string
			var r graph.NodeRecord
			if err := rows.Scan(&id, &r.Type, &props, &r.Created, &r.Updated, &r.Rev); err != nil {
				return nil, err
			}
			r.Props = json.RawMessage(props)
			n, err := nodeOf(graph.ID(id), &r)
			if err != nil {
				return nil, err
			}
			page.Nodes = append(page.Nodes, n)
		}
		return page, rows.Err()
	})

}

// ScanEdges returns a page of every edge, ordered by from, label, to and key.
func (s *Store) ScanEdges(ctx context.Context, p graph.Page) (*graph.EdgePage, error) {
	var after *graph.EdgeKey
	if p.After != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p.After)
		if err != nil || bytes.Count(raw, []byte{0}) != 3 {
			return nil, fmt.Errorf("cursor %q is not an edge scan cursor: %w", p.After, graph.ErrInvalid)
		}
		k := graph.EdgeKeyFromBytes(raw)
		after = &k
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := p.Size()
	var args sqlArgs
	sql := `SELECT from_id, label, to_id, key, props, created, updated, rev FROM lore_edges`
	if after != nil {
		sql += fmt.Sprintf(` WHERE (from_id, label, to_id, key) > (%s::text COLLATE "C", %s::text COLLATE "C", %s::text COLLATE "C", %s::text COLLATE "C")`,
			args.add(string(after.From)), args.add(after.Label), args.add(string(after.To)), args.add(after.Key))
	}
	sql += ` ORDER BY from_id, label, to_id, key LIMIT ` + args.add(int64(limit+1))
	return readOn(ctx, s, func(db querier) (*graph.EdgePage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.EdgePage{Edges: []*graph.Edge{}}
		for rows.Next() {
			if len(page.Edges) == limit {
				page.Next = base64.RawURLEncoding.EncodeToString(page.Edges[limit-1].Bytes())
				break
			}
			var f, t, props string
			var k graph.EdgeKey
			var created, updated, rev int64
			if err := rows.Scan(&f, &k.Label, &t, &k.Key, &props, &created, &updated, &rev); err != nil {
				return nil, err
			}
			k.From, k.To = graph.ID(f), graph.ID(t)
			e, err := edgeOf(k, props, created, updated, rev)
			if err != nil {
				return nil, err
			}
			page.Edges = append(page.Edges, e)
		}
		return page, rows.Err()
	})

}

// propPrefix starts a Lookup cursor (the embedded store's key layout:
// type NUL property NUL value ID).
func propPrefix(typ, prop string) []byte {
	return []byte(typ + "\x00" + prop + "\x00")
}

// ScanIndex calls f for each entry of the index of typ's property, by
// value, then by ID, from one query (so one committed state), until f
// returns false.
func (s *Store) ScanIndex(ctx context.Context, typ, property string, f func(value []byte, id graph.ID) bool) error {
	if _, err := graph.IndexedType(s.Model(), typ, property); err != nil {
		return err
	}
	if err := s.check(); err != nil {
		return err
	}
	_, err := readOn(ctx, s, func(db querier) (struct{}, error) {
		rows, err := db.Query(ctx, `SELECT val, id FROM lore_prop WHERE type = $1 AND prop = $2 ORDER BY val, id`, typ, property)
		if err != nil {
			return struct{}{}, err
		}
		defer rows.Close()
		for rows.Next() {
			var val []byte
			var id string
			if err := rows.Scan(&val, &id); err != nil {
				return struct{}{}, err
			}
			if !f(val, graph.ID(id)) {
				return struct{}{}, nil
			}
		}
		return struct{}{}, rows.Err()
	})
	return err
}

// Lookup returns a page of the IDs of nodes whose indexed property
// matches, in value order, then ID order.
func (s *Store) Lookup(ctx context.Context, q graph.IndexQuery) (*graph.IDPage, error) {
	if _, err := graph.IndexedType(s.Model(), q.Type, q.Property); err != nil {
		return nil, err
	}
	var args sqlArgs
	sql := `SELECT val, id FROM lore_prop WHERE type = ` + args.add(q.Type) + ` AND prop = ` + args.add(q.Property)
	if q.Eq != nil {
		enc, err := graph.CheckIndexValue("eq", q.Eq)
		if err != nil {
			return nil, err
		}
		sql += ` AND val = ` + args.add(enc)
	} else {
		if q.Min != nil {
			enc, err := graph.CheckIndexValue("min", q.Min)
			if err != nil {
				return nil, err
			}
			op := " >= "
			if q.MinExclusive {
				op = " > "
			}
			sql += ` AND val` + op + args.add(enc)
		}
		if q.Max != nil {
			enc, err := graph.CheckIndexValue("max", q.Max)
			if err != nil {
				return nil, err
			}
			op := " <= "
			if q.MaxExclusive {
				op = " < "
			}
			sql += ` AND val` + op + args.add(enc)
		}
	}
	prefix := propPrefix(q.Type, q.Property)
	if q.After != "" {
		after, err := base64.RawURLEncoding.DecodeString(q.After)
		if err != nil || !bytes.HasPrefix(after, prefix) {
			return nil, fmt.Errorf("cursor %q does not belong to this lookup: %w", q.After, graph.ErrInvalid)
		}
		rest := after[len(prefix):]
		n := graph.IndexValueLen(rest)
		sql += fmt.Sprintf(` AND (val, id) > (%s::bytea, %s::text COLLATE "C")`, args.add(rest[:n]), args.add(string(rest[n:])))
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	limit := q.Size()
	sql += ` ORDER BY val, id LIMIT ` + args.add(int64(limit+1))
	return readOn(ctx, s, func(db querier) (*graph.IDPage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.IDPage{IDs: []graph.ID{}}
		var last []byte
		for rows.Next() {
			var val []byte
			var id string
			if err := rows.Scan(&val, &id); err != nil {
				return nil, err
			}
			if len(page.IDs) == limit {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			page.IDs = append(page.IDs, graph.ID(id))
			last = append(append(slices.Clip(prefix), val...), id...)
		}
		return page, rows.Err()
	})

}

// Postings returns a page of the text-search index, examining at most
// q.MaxScan entries as the embedded store does.
func (s *Store) Postings(ctx context.Context, q graph.PostingQuery) (*graph.PostingPage, error) {
	if q.Prefix == "" {
		return nil, fmt.Errorf("empty search token: %w", graph.ErrInvalid)
	}
	switch {
	case q.Exact && q.Nodes != nil:
		return s.postingsOf(ctx, q)
	case q.Exact && q.ByWeight:
		return s.postingsByWeight(ctx, q)
	}
	limit := q.Size()
	maxScan := q.MaxScan
	if maxScan <= 0 {
		maxScan = limit
	}
	prefix := []byte(q.Prefix)
	if q.Exact {
		prefix = append(prefix, 0)
	}
	var args sqlArgs
	sql := `SELECT token, type, id, weight FROM lore_postings WHERE `
	fetch := maxScan + 1 // entries examined, matching or not, and one to know that more follow
	if q.Exact {
		sql += `token = ` + args.add([]byte(q.Prefix))
		if q.Type != "" {
			// From the type on: the first entry of the next type is
			// examined too, and ends the scan, as on the embedded store.
			sql += ` AND type >= ` + args.add(q.Type)
		}
	} else {
		sql += `token >= ` + args.add([]byte(q.Prefix))
		if hi := graph.PrefixEnd([]byte(q.Prefix)); hi != nil {
			sql += ` AND token < ` + args.add(hi)
		}
	}
	if q.Type == "" || q.Exact {
		fetch = min(maxScan, limit) + 1 // every entry examined matches
	}
	if q.After != "" {
		after, err := base64.RawURLEncoding.DecodeString(q.After)
		parts := bytes.SplitN(after, []byte{0}, 3)
		if err != nil || !bytes.HasPrefix(after, prefix) || len(parts) != 3 {
			return nil, fmt.Errorf("cursor %q does not belong to this index scan: %w", q.After, graph.ErrInvalid)
		}
		sql += fmt.Sprintf(` AND (token, type, id) > (%s::bytea, %s::text COLLATE "C", %s::text COLLATE "C")`, args.add(parts[0]), args.add(string(parts[1])), args.add(string(parts[2])))
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	sql += ` ORDER BY token, type, id LIMIT ` + args.add(int64(fetch))
	return readOn(ctx, s, func(db querier) (*graph.PostingPage, error) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		page := &graph.PostingPage{}
		var last []byte
		for rows.Next() {
			var tok []byte
			var typ, id string
			var w int16
			if err := rows.Scan(&tok, &typ, &id, &w); err != nil {
				return nil, err
			}
			if last != nil && (page.Scanned == maxScan || len(page.Postings) == limit) {
				page.Next = base64.RawURLEncoding.EncodeToString(last)
				break
			}
			last = append(append(append(append(append([]byte{}, tok...), 0), typ...), 0), id...)
			page.Scanned++
			if q.Type != "" && typ != q.Type {
				if q.Exact {
					break
				}
				continue
			}
			page.Postings = append(page.Postings, graph.Posting{Token: string(tok), Type: typ, ID: graph.ID(id), Weight: int(w)})
		}
		return page, rows.Err()
	})

}

// Stats counts nodes per type and edges per label, and the newest
// sequence number, in one statement.
func (s *Store) Stats(ctx context.Context) (*graph.Stats, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return readOn(ctx, s, func(db querier) (*graph.Stats, error) {
		rows, err := db.Query(ctx, `SELECT 'seq', '', `+lastSeqSQL+`
		UNION ALL SELECT kind, name, n FROM lore_counts WHERE n > 0`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		st := &graph.Stats{NodeTypes: map[string]int64{}, EdgeLabels: map[string]int64{}}
		for rows.Next() {
			var kind, name string
			var n int64
			if err := rows.Scan(&kind, &name, &n); err != nil {
				return nil, err
			}
			switch kind {
			case "seq":
				st.LastSeq = uint64(n)
			case "node":
				st.NodeTypes[name] = n
				st.Nodes += n
			case "edge":
				st.EdgeLabels[name] = n
				st.Edges += n
			}
		}
		return st, rows.Err()
	})

}

// Since returns up to limit change-log entries after seq.
func (s *Store) Since(ctx context.Context, seq uint64, limit int) ([]graph.Change, error) {
	if limit <= 0 || limit > graph.MaxPageSize {
		limit = graph.DefaultPageSize
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if seq >= math.MaxInt64 {
		return nil, nil
	}
	return readOn(ctx, s, func(db querier) ([]graph.Change, error) {
		rows, err := db.Query(ctx, `SELECT seq, data FROM lore_changes WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(seq), limit)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []graph.Change
		for rows.Next() {
			var n int64
			var data []byte
			if err := rows.Scan(&n, &data); err != nil {
				return nil, err
			}
			var ch graph.Change
			if err := graph.DecodeChange(data, &ch); err != nil {
				return nil, fmt.Errorf("change %d: corrupt entry: %w", n, err)
			}
			out = append(out, ch)
		}
		return out, rows.Err()
	})

}

// ReadRawLog returns stored change-log entries without decoding them (see
// graph.LogReader), reading them a chunk at a time.
func (s *Store) ReadRawLog(ctx context.Context, seq uint64, newest bool, limit int) ([]graph.LogEntry, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if !newest && seq >= math.MaxInt64 {
		return nil, nil
	}
	return readOn(ctx, s, func(db querier) ([]graph.LogEntry, error) {
		pos := int64(min(seq, math.MaxInt64))
		const chunk = 256
		var out []graph.LogEntry
		size := 0
		for {
			sql := `SELECT seq, data FROM lore_changes WHERE seq > $1 ORDER BY seq LIMIT $2`
			if newest {
				sql = `SELECT seq, data FROM lore_changes WHERE seq <= $1 ORDER BY seq DESC LIMIT $2`
			}
			rows, err := db.Query(ctx, sql, pos, chunk)
			if err != nil {
				return nil, err
			}
			n := 0
			full := false
			for rows.Next() {
				var sq int64
				var data []byte
				if err := rows.Scan(&sq, &data); err != nil {
					rows.Close()
					return nil, err
				}
				n++
				if len(out) > 0 && size+len(data) > limit {
					full = true
					break
				}
				out = append(out, graph.NewLogEntry(uint64(sq), data))
				size += len(data)
				pos = sq
				if newest {
					pos = sq - 1
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, err
			}
			if full || n < chunk {
				return out, nil
			}
		}
	})
}
