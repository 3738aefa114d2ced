//go:build unix

package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
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
	h := graphtest.Record(t, clients, linKeys, ops)
	graphtest.Linearizable(t, h, porcupine.Ok)
}

// TestLinearizabilityCatchesStaleReads: the same run with one client's
// reads served now and then from the first reply it had for the node (a
// planted stale read) is not linearizable, and porcupine says so.
func TestLinearizabilityCatchesStaleReads(t *testing.T) {
	clients := replicaClients(t, 8)
	clients[3] = graphtest.StaleReads(clients[3], 0.2, 1)
	h := graphtest.Record(t, clients, linKeys, 2000)
	graphtest.Linearizable(t, h, porcupine.Illegal)
}

// TestLinearizableReadsFromStandby: the same with the two replicas reading
// from a hot standby, each read made with a floor (graph.WithMinSeq) of the
// primary's newest change-log entry when the read was called, as Raft's
// ReadIndex does: the read waits until the standby replayed that entry
// (or goes to the primary), so it sees every write acknowledged before it
// began, and porcupine finds the history linearizable. Reads from a
// standby without such a floor are not linearizable (the standby replays
// later); they give read-your-writes only with the client's own floor.
func TestLinearizableReadsFromStandby(t *testing.T) {
	ops := 5000
	if testing.Short() {
		ops = 1000
	}
	url := pgtest.NewDatabase(t)
	primary := open(t, url) // creates the schema before the base backup
	sb := pgtest.NewStandby(t)
	sb.WaitReplayed(url)
	var replicas []*postgres.Store
	var clients []graphtest.Client
	for range 2 {
		s, err := postgres.Open(t.Context(), postgres.Config{URL: url, ReadURL: sb.URL(url), ReadWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		replicas = append(replicas, s)
	}
	for i := range 8 {
		clients = append(clients, readIndex{primary, graphtest.StoreClient(replicas[i%2])})
	}
	h := graphtest.Record(t, clients, linKeys, ops)
	for i, r := range replicas {
		c := r.ReadCounts()
		t.Logf("replica %d: %+v", i, c)
		if c.Standby == 0 {
			t.Errorf("replica %d read nothing from the standby: %+v", i, c)
		}
	}
	graphtest.Linearizable(t, h, porcupine.Ok)
}

// A readIndex client makes each read with a floor of the primary's newest
// change-log entry at the read's call.
type readIndex struct {
	primary graph.Store
	c       graphtest.Client
}

func (r readIndex) Do(ctx context.Context, c graphtest.Call) (graphtest.Reply, error) {
	if c.Kind == graphtest.Read {
		st, err := r.primary.Stats(ctx)
		if err != nil {
			return graphtest.Reply{}, err
		}
		ctx = graph.WithMinSeq(ctx, st.LastSeq)
	}
	return r.c.Do(ctx, c)
}
