package postgres

import "github.com/lore-dev/lore/graph"

// CrashPoints is crashPoints, for the tests of package postgres_test.
var CrashPoints = &crashPoints

// RankSQL is rankSQL, for the tests of package postgres_test.
var RankSQL = rankSQL

// WalkSQL is walkSQL, for the tests of package postgres_test.
func WalkSQL(w graph.IndexWalk) (string, []any) {
	sql, args, _ := walkSQL(w)
	return sql, args
}
