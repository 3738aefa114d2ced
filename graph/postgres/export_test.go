package postgres

import (
	"slices"

	"github.com/lore-dev/lore/graph"
)

// CrashPoints is crashPoints, for the tests of package postgres_test.
var CrashPoints = &crashPoints

// RankSQL is rankSQL, for the tests of package postgres_test.
var RankSQL = rankSQL

// WalkSQL is walkSQL, for the tests of package postgres_test.
func WalkSQL(w graph.IndexWalk) (string, []any) {
	sql, args, _ := walkSQL(w)
	return sql, args
}

// EdgesSQL is the statement Store.Edges runs for the first page of q.
func EdgesSQL(q graph.EdgeQuery) (string, []any) {
	dir, _ := graph.ParseDirection(string(q.Direction))
	labels := slices.Clone(q.Labels)
	slices.Sort(labels)
	return edgesSQL(q, dir, slices.Compact(labels), edgeCursor{}, q.Size()+1)
}
