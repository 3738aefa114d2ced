package bolt_test

import (
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

// TestLinearizable: 8 clients at once on one embedded store run 10,000
// random reads, revision-checked upserts and deletes on 5 nodes, and
// porcupine finds an order that explains every reply by the Store
// contract. (cmd/lore checks the same through lore mcp processes sharing
// a store through its holder.)
func TestLinearizable(t *testing.T) {
	ops := 10000
	if testing.Short() {
		ops = 2000
	}
	s := graphtest.StoreClient(graphtest.New(t))
	clients := []graphtest.Client{s, s, s, s, s, s, s, s}
	keys := []graph.ID{"topic/k0", "topic/k1", "topic/k2", "topic/k3", "topic/k4"}
	h := graphtest.Record(t, clients, keys, ops)
	graphtest.Linearizable(t, h, porcupine.Ok)
}
