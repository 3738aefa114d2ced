package postgres

// CrashPoints is crashPoints, for the tests of package postgres_test.
var CrashPoints = &crashPoints

// RankSQL is rankSQL, for the tests of package postgres_test.
var RankSQL = rankSQL
