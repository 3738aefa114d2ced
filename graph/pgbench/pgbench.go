// Package pgbench compares Lore with PostgreSQL on the same graph: a
// generated package index (Generate) is loaded into Lore's embedded store
// through its import, and into PostgreSQL as two plain tables with covering
// edge indexes; the same questions are asked of both, their answers checked
// to agree, and their latencies printed side by side (make bench-pg).
//
// Lore is asked as a user asks it: a query document parsed with
// graph.ParseQuery and run by graph.Run, or graph.Paths for a shortest path,
// timed by the engine's own stats.elapsedMs. PostgreSQL is asked with plain
// SQL through pgx, as prepared statements, with recursive CTEs for
// closures and paths, timed around the round trip.
//
// Nothing imports this package; its tests are the benchmark and the
// equivalence test.
package pgbench

import (
	_ "embed"
	"sync"

	"github.com/lore-dev/lore/schema"
)

//go:embed model.json
var modelJSON []byte

// Model returns the package-index model the generated graph follows.
var Model = sync.OnceValue(func() *schema.Model {
	m, err := schema.Load(modelJSON)
	if err != nil {
		panic(err) // the embedded model is checked by the tests
	}
	return m
})
