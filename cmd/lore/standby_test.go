//go:build unix

package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// TestServeReadsFromStandby: lore serve --store PRIMARY --read-store
// STANDBY, on a hot standby the test starts (pg_basebackup, a second
// postgres; the test fails if it cannot). With the standby's replay
// paused, a write through the replica is read back by the same MCP
// session and by a REST request carrying its Lore-Seq as Lore-Min-Seq,
// while another session, which has written nothing, does not see it: its
// reads are the standby's. With the standby stopped, reads go on (from the
// primary), and go on after it restarts.
func TestServeReadsFromStandby(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url) // creates the schema and loads the example, before the base backup
	sb := pgtest.NewStandby(t)
	sb.WaitReplayed(url)
	_, mcpURL := startServe(t, url, "--no-example", "--read-store", sb.URL(url))
	base := strings.TrimSuffix(mcpURL, "/mcp")
	writer, other := httpClient(t, "writer", mcpURL), httpClient(t, "other", mcpURL)
	writerA := httpClient(t, "writerA", urlA)
	ctx := t.Context()
	get := func(c *client, id string) (string, bool) {
		t.Helper()
		res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": id}})
		if err != nil {
			t.Fatalf("%s: get_node %s: %v", c, id, err)
		}
		return resultText(res), !res.IsError
	}
	if _, ok := get(other, "service/billing"); !ok {
		t.Fatal("the example is not readable through the replica")
	}

	sb.Exec(url, "SELECT pg_wal_replay_pause()")
	if err := writer.upsert(ctx, "topic/mine"); err != nil {
		t.Fatal(err)
	}
	if txt, ok := get(writer, "topic/mine"); !ok {
		t.Fatalf("the writer's session does not read its own write: %s", txt)
	}
	if txt, ok := get(other, "topic/mine"); ok {
		t.Fatalf("with the standby's replay paused, another session read the new node (%s): its reads did not come from the standby", txt)
	}
	resp, err := http.Post(base+"/api/v1/tools/upsert_nodes", "application/json",
		strings.NewReader(`{"nodes":[{"id":"topic/rest","type":"Topic","properties":{"name":"rest"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seq := resp.Header.Get("Lore-Seq")
	if resp.StatusCode != 200 || seq == "" {
		t.Fatalf("REST write: status %d, Lore-Seq %q", resp.StatusCode, seq)
	}
	restGet := func(minSeq string) int {
		req, _ := http.NewRequest("GET", base+"/api/v1/tools/get_node?id=topic/rest", nil)
		if minSeq != "" {
			req.Header.Set("Lore-Min-Seq", minSeq)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := restGet(seq); code != 200 {
		t.Fatalf("REST read with Lore-Min-Seq %s: status %d", seq, code)
	}
	if code := restGet(""); code != 404 {
		t.Fatalf("REST read without Lore-Min-Seq, the standby paused: status %d, want 404 (the standby's answer)", code)
	}
	sb.Exec(url, "SELECT pg_wal_replay_resume()")

	sb.Stop()
	for _, id := range []string{"service/billing", "topic/mine"} {
		if txt, ok := get(other, id); !ok {
			t.Fatalf("with the standby stopped, get_node %s: %s", id, txt)
		}
	}
	sb.Start()
	// Back on the standby: with its replay paused, a write through the
	// other replica (A, on the primary only) is not seen by a session of
	// this one, once it has found the standby again (within a second; the
	// first rounds may still read from the primary).
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		sb.Exec(url, "SELECT pg_wal_replay_pause()")
		id := fmt.Sprintf("topic/back%d", i)
		if err := writerA.upsert(ctx, id); err != nil {
			t.Fatal(err)
		}
		_, seen := get(other, id)
		sb.Exec(url, "SELECT pg_wal_replay_resume()")
		if !seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a minute after the standby's restart, the replica still reads from the primary")
		}
	}
	if txt, ok := get(other, "topic/mine"); !ok {
		t.Fatalf("after the standby's restart: %s", txt)
	}
}
