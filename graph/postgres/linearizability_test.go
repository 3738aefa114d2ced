package postgres_test

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// linKeys are the few nodes a linearizability history works on: few, so
// that the clients contend for them.
var linKeys = []graph.ID{"topic/k0", "topic/k1", "topic/k2", "topic/k3", "topic/k4"}

// replicaClients returns n clients spread over two Stores on one new
// database, as over two replicas.
func replicaClients(t *testing.T, n int) []graphtest.Client {
	url := pgtest.NewDatabase(t)
	replicas := []graphtest.Client{graphtest.StoreClient(open(t, url)), graphtest.StoreClient(open(t, url))}
	clients := make([]graphtest.Client, n)
	for i := range clients {
		clients[i] = replicas[i%2]
	}
	return clients
}

// TestLinearizableAcrossReplicas: 8 clients over two replicas of one
// database run 10,000 random reads, revision-checked upserts and deletes
// on 5 nodes, and porcupine finds an order that explains every reply by
// the Store contract.
func TestLinearizableAcrossReplicas(t *testing.T) {
	ops := 10000
	if testing.Short() {
		ops = 2000
	}
	clients := replicaClients(t, 8)
	start := time.Now()
	h, err := graphtest.Record(t.Context(), clients, linKeys, ops, uint64(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %s, from %d clients over 2 replicas, in %v", h, len(clients), time.Since(start).Round(time.Millisecond))
	graphtest.Linearizable(t, h, porcupine.Ok)
}

// TestLinearizabilityCatchesStaleReads: the same run with one client's
// reads served now and then from the first reply it had for the node (a
// planted stale read) is not linearizable, and porcupine says so.
func TestLinearizabilityCatchesStaleReads(t *testing.T) {
	clients := replicaClients(t, 8)
	clients[3] = graphtest.StaleReads(clients[3], 0.2, 1)
	h, err := graphtest.Record(t.Context(), clients, linKeys, 2000, uint64(time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	graphtest.Linearizable(t, h, porcupine.Illegal)
}
