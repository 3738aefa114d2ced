package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// linKeys are the nodes the linearizability histories work on (the
// example dataset has none of them).
var linKeys = []graph.ID{"topic/lin-0", "topic/lin-1", "topic/lin-2", "topic/lin-3", "topic/lin-4"}

// linOps is the length of a history: 10,000 operations, or 1,000 with -short.
func linOps() int {
	if testing.Short() {
		return 1000
	}
	return 10000
}

// TestLinearizableThroughHolder: 8 clients over four lore mcp processes
// that share one embedded store through its background holder run random
// reads, revision-checked upserts and deletes on 5 nodes, with the Go SDK
// client, and porcupine finds an order that explains every reply by the
// Store contract.
func TestLinearizableThroughHolder(t *testing.T) {
	store := newStore(t)
	var procs []graphtest.Client
	for i := range 4 {
		c := stdioClient(t, fmt.Sprint("mcp", i), store)
		if !c.stderr.waitFor("bridged to the store's holder", 10*time.Second) {
			t.Fatalf("%s is not bridged to a holder:\n%s", c.name, c.stderr.String())
		}
		procs = append(procs, mcpClient{c})
	}
	graphtest.Linearizable(t, graphtest.Record(t, append(procs, procs...), linKeys, linOps()), porcupine.Ok)
}

// TestLinearizableAcrossServeReplicas: the same through two lore serve
// processes on one PostgreSQL database, 4 HTTP clients on each.
func TestLinearizableAcrossServeReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url, "--no-example", "--rate", "0")
	_, urlB := startServe(t, url, "--no-example", "--rate", "0")
	var clients []graphtest.Client
	for i := range 8 {
		clients = append(clients, mcpClient{httpClient(t, fmt.Sprint("http", i), []string{urlA, urlB}[i%2])})
	}
	graphtest.Linearizable(t, graphtest.Record(t, clients, linKeys, linOps()), porcupine.Ok)
}

// TestLinearizabilityThroughProcessesCatchesStaleReads: a history through
// the holder in which one client's reads are now and then served from a
// snapshot is not linearizable, and porcupine says so.
func TestLinearizabilityThroughProcessesCatchesStaleReads(t *testing.T) {
	store := newStore(t)
	a, b := mcpClient{stdioClient(t, "a", store)}, mcpClient{stdioClient(t, "b", store)}
	clients := []graphtest.Client{a, b, a, graphtest.StaleReads(b, 0.2, 1)}
	h := graphtest.Record(t, clients, linKeys, 1000)
	graphtest.Linearizable(t, h, porcupine.Illegal)
}

// An mcpClient runs a history's calls as tool calls: get_node,
// upsert_nodes and delete_nodes (confirm: true, as a client that cannot
// ask its user does).
type mcpClient struct{ c *client }

func (m mcpClient) Do(ctx context.Context, c graphtest.Call) (graphtest.Reply, error) {
	var p mcpsdk.CallToolParams
	var expect map[string]any
	if c.Expect != graphtest.AnyRevision {
		expect = map[string]any{"expectedRevision": c.Expect}
	}
	with := func(m map[string]any) map[string]any {
		for k, v := range expect {
			m[k] = v
		}
		return m
	}
	switch c.Kind {
	case graphtest.Read:
		p = mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": c.Key}}
	case graphtest.Upsert:
		p = mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: map[string]any{"nodes": []any{
			with(map[string]any{"id": c.Key, "type": "Topic", "properties": map[string]any{"name": c.Value}})}}}
	case graphtest.Delete:
		p = mcpsdk.CallToolParams{Name: "delete_nodes", Arguments: map[string]any{"confirm": true, "nodes": []any{with(map[string]any{"id": c.Key})}}}
	}
	res, err := m.c.cs.CallTool(ctx, &p)
	if err != nil {
		return graphtest.Reply{}, err
	}
	if res.IsError {
		switch txt := resultText(res); {
		case strings.HasPrefix(txt, "conflict: "):
			return graphtest.Reply{Outcome: graphtest.Conflict}, nil
		case strings.HasPrefix(txt, "not_found: "):
			return graphtest.Reply{Outcome: graphtest.NotFound}, nil
		default:
			return graphtest.Reply{}, fmt.Errorf("%s: %s", m.c.name, txt)
		}
	}
	data, _ := json.Marshal(res.StructuredContent)
	var out struct {
		Node  *graph.Node
		Nodes []graph.ElementResult
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return graphtest.Reply{}, fmt.Errorf("%s: %s: %w", m.c.name, data, err)
	}
	switch c.Kind {
	case graphtest.Read:
		name, _ := out.Node.Properties["name"].(string)
		return graphtest.Reply{Value: name, Revision: out.Node.Revision}, nil
	case graphtest.Upsert:
		return graphtest.Reply{Value: c.Value, Revision: out.Nodes[0].Revision}, nil
	}
	return graphtest.Reply{}, nil
}
