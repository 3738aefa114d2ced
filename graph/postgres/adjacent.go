package postgres

import (
	"context"
	"slices"

	"github.com/lore-dev/lore/graph"
)

// A summaryRow is one row of a node's edge summary (lore_degrees), with
// whether the node has a self-loop of the row's label (an unkeyed one).
type summaryRow struct {
	label   string
	inbound bool
	n       int64
	loop    bool
}

// CountAdjacent counts the nodes adjacent to id (see graph.AdjacentCounter)
// as the embedded store does. When the edge summary proves the count (the
// edges asked for are of one label that is not keyed, in one direction,
// so no two lead to the same node), it is the summary's count, less a
// self-loop: one statement reads both, an index probe each. Otherwise a
// second statement counts the distinct other ends of the edges asked for,
// reading their index entries only; the summary says first whether they
// fit in maxWork. The engine used to list the edges for the count: 30 ms
// for a hub of 6,000 dependents, where this takes one round trip.
func (s *Store) CountAdjacent(ctx context.Context, id graph.ID, labels []string, dir graph.Direction, maxWork int) (n, work int, complete bool, err error) {
	if err := id.Check(); err != nil {
		return 0, 0, false, err
	}
	if dir, err = graph.ParseDirection(string(dir)); err != nil {
		return 0, 0, false, err
	}
	if labels, err = graph.KnownLabels(s.Model(), labels); err != nil {
		return 0, 0, false, err
	}
	if err := s.check(); err != nil {
		return 0, 0, false, err
	}
	rows, err := readOn(ctx, s, func(db querier) ([]summaryRow, error) {
		rows, err := db.Query(ctx, `SELECT label, inbound, n,
				EXISTS (SELECT 1 FROM lore_edges e WHERE e.from_id = $1 AND e.label = d.label AND e.to_id = $1 AND e.key = '')
			FROM lore_degrees d WHERE node_id = $1 AND n > 0`, string(id))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []summaryRow
		for rows.Next() {
			var r summaryRow
			if err := rows.Scan(&r.label, &r.inbound, &r.n, &r.loop); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, rows.Err()
	})
	if err != nil {
		return 0, 0, false, err
	}
	work = 1
	var streams []summaryRow // the summary's rows asked for
	var edges int64
	for _, r := range rows {
		if r.inbound && dir == graph.Out || !r.inbound && dir == graph.In {
			continue
		}
		if _, ok := slices.BinarySearch(labels, r.label); ok {
			streams = append(streams, r)
			edges += r.n
		}
	}
	if len(streams) == 0 {
		return 0, work, true, nil
	}
	if et, _ := s.Model().Edge(streams[0].label); len(streams) == 1 && !et.Keyed {
		// One edge per other end; a self-loop counts in both
		// directions, so only a node with edges of the label both ways
		// can have one.
		n = int(streams[0].n)
		if slices.ContainsFunc(rows, func(r summaryRow) bool { return r.label == streams[0].label && r.inbound != streams[0].inbound }) {
			work++
			if streams[0].loop {
				n--
			}
		}
		return n, work, true, nil
	}
	if edges >= int64(maxWork) {
		return 0, work, false, nil // as the embedded store, which stops reading at maxWork
	}
	var read int64
	cnt, err := readOn(ctx, s, func(db querier) (int64, error) {
		var c int64
		err := db.QueryRow(ctx, `SELECT count(*), count(DISTINCT other) FILTER (WHERE other <> $1) FROM (
				(SELECT to_id AS other FROM lore_edges WHERE $4 AND from_id = $1 AND label = ANY($2::text[]))
				UNION ALL
				(SELECT from_id FROM lore_edges WHERE $5 AND to_id = $1 AND label = ANY($2::text[]))
				LIMIT $3) e`,
			string(id), labels, maxWork, dir != graph.In, dir != graph.Out).Scan(&read, &c)
		return c, err
	})
	if err != nil {
		return 0, 0, false, err
	}
	work += int(read)
	if work > maxWork {
		return 0, work, false, nil // edges were added since the summary was read
	}
	return int(cnt), work, true, nil
}
