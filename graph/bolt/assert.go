package bolt

import "github.com/lore-dev/lore/graph"

// The embedded store implements the Store contract and every optional
// operation.
var (
	_ graph.Store        = (*Store)(nil)
	_ graph.Checker      = (*Store)(nil)
	_ graph.Syncer       = (*Store)(nil)
	_ graph.Pather       = (*Store)(nil)
	_ graph.CursorKeyer  = (*Store)(nil)
	_ graph.LogReader    = (*Store)(nil)
	_ graph.Pipeliner    = (*Store)(nil)
	_ graph.BulkLoader   = (*Store)(nil)
	_ graph.AtomicLoader = (*Store)(nil)
)
