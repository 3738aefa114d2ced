package gql_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/mcp"
)

// wsMessage is a graphql-transport-ws message.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// dialWS opens a graphql-transport-ws connection and completes its
// handshake (connection_init, connection_ack).
func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	conn, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(url, "http"),
		&websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	if conn.Subprotocol() != "graphql-transport-ws" {
		t.Fatalf("subprotocol %q", conn.Subprotocol())
	}
	send(t, conn, wsMessage{Type: "connection_init"})
	if m := receive(t, conn); m.Type != "connection_ack" {
		t.Fatalf("want connection_ack, got %+v", m)
	}
	return conn
}

func send(t *testing.T, conn *websocket.Conn, m wsMessage) {
	t.Helper()
	if err := wsjson.Write(t.Context(), conn, m); err != nil {
		t.Fatal(err)
	}
}

// receive reads the next message, answering the server's keep-alive pings.
func receive(t *testing.T, conn *websocket.Conn) wsMessage {
	t.Helper()
	for {
		var m wsMessage
		if err := wsjson.Read(t.Context(), conn, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type != "ping" {
			return m
		}
		send(t, conn, wsMessage{Type: "pong"})
	}
}

// TestSubscriptionNodeChanged: a GraphQL client subscribed to
// nodeChanged(id) over graphql-transport-ws hears of the change an MCP
// client makes with upsert_nodes, and not of changes to other nodes.
func TestSubscriptionNodeChanged(t *testing.T) {
	f := newFixture(t, nil)

	// The MCP side: the SDK client over in-memory transports.
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(f.cat, nil).SDK().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// A write before the subscription, which it replays (since): its event
	// shows that the subscription follows the change feed, so the MCP
	// write after it cannot be missed.
	before := f.query(t, `mutation { upsertNodes(nodes: [{id: "service/billing", type: "Service", merge: true, properties: {tier: 1}}]) { seq } }`, nil)
	var w struct{ Seq int }
	if len(before.Errors) > 0 || json.Unmarshal(before.Data["upsertNodes"], &w) != nil {
		t.Fatalf("upsert: %+v", before)
	}

	conn := dialWS(t, f.url)
	query := `subscription($since: Int) { nodeChanged(id: "service/billing", since: $since) {
		uri change { seq op nodes { id action revision } } node { revision properties } } }`
	payload, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{"since": w.Seq - 1}})
	send(t, conn, wsMessage{ID: "1", Type: "subscribe", Payload: payload})
	if m := receive(t, conn); m.Type != "next" || !strings.Contains(string(m.Payload), fmt.Sprintf(`"seq":%d`, w.Seq)) {
		t.Fatalf("want the replayed change %d, got %+v", w.Seq, m)
	}

	// A change elsewhere first: the subscription passes over it.
	if r := f.query(t, `mutation { upsertNodes(nodes: [{id: "topic/elsewhere", type: "Topic", properties: {name: "x"}}]) { seq } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("upsert: %+v", r.Errors)
	}
	res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "upsert_nodes",
		Arguments: json.RawMessage(`{"nodes":[{"id":"service/billing","type":"Service","merge":true,"properties":{"description":"written over MCP"}}]}`)})
	if err != nil || res.IsError {
		t.Fatalf("upsert_nodes over MCP: %v %v", err, res)
	}
	m := receive(t, conn)
	if m.Type != "next" || m.ID != "1" {
		t.Fatalf("want next for 1, got %+v", m)
	}
	var ev struct {
		Data struct {
			NodeChanged struct {
				URI    string
				Change struct {
					Op    string
					Nodes []struct {
						ID, Action string
						Revision   int
					}
				}
				Node struct {
					Revision   int
					Properties map[string]any
				}
			}
		}
		Errors []gqlError
	}
	if err := json.Unmarshal(m.Payload, &ev); err != nil {
		t.Fatal(err)
	}
	got := ev.Data.NodeChanged
	if len(ev.Errors) > 0 || got.URI != "lore://node/service/billing" || got.Change.Op != "upsert_nodes" ||
		len(got.Change.Nodes) != 1 || got.Change.Nodes[0].ID != "service/billing" || got.Change.Nodes[0].Action != "updated" {
		t.Fatalf("event %s", m.Payload)
	}
	if got.Node.Properties["description"] != "written over MCP" || got.Node.Revision != got.Change.Nodes[0].Revision {
		t.Errorf("the node as read: %+v", got.Node)
	}

	send(t, conn, wsMessage{ID: "1", Type: "complete"})
	conn.Close(websocket.StatusNormalClosure, "")
}

// TestSubscriptionChangesReplay: changes(since) over server-sent events
// replays the log after since, then delivers new changes. The replayed
// events show that it already follows, so the write after them cannot be
// missed.
func TestSubscriptionChangesReplay(t *testing.T) {
	f := newFixture(t, nil)
	var seqs []int
	for _, id := range []string{"topic/a", "topic/b"} {
		res := f.query(t, `mutation($id: String!) { upsertNodes(nodes: [{id: $id, type: "Topic", properties: {name: $id}}]) { seq } }`,
			map[string]any{"id": id})
		var out struct{ Seq int }
		if len(res.Errors) > 0 || json.Unmarshal(res.Data["upsertNodes"], &out) != nil {
			t.Fatalf("upsert: %+v", res)
		}
		seqs = append(seqs, out.Seq)
	}

	body, _ := json.Marshal(map[string]any{"query": `subscription($since: Int) { changes(since: $since) { seq op nodes { id } } }`,
		"variables": map[string]any{"since": seqs[0] - 1}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, f.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := bufio.NewScanner(res.Body)
	next := func() (seq int, id string) {
		t.Helper()
		for events.Scan() {
			data, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Data struct {
					Changes struct {
						Seq   int
						Op    string
						Nodes []struct{ ID string }
					}
				}
				Errors []gqlError
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Errors) > 0 || len(ev.Data.Changes.Nodes) != 1 {
				t.Fatalf("event %s: %v", data, err)
			}
			return ev.Data.Changes.Seq, ev.Data.Changes.Nodes[0].ID
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return 0, ""
	}
	for i, want := range []string{"topic/a", "topic/b"} {
		if seq, id := next(); seq != seqs[i] || id != want {
			t.Fatalf("replayed #%d %s, want #%d %s", seq, id, seqs[i], want)
		}
	}
	r := f.query(t, `mutation { upsertNodes(nodes: [{id: "topic/c", type: "Topic", properties: {name: "c"}}]) { seq } }`, nil)
	if len(r.Errors) > 0 {
		t.Fatalf("upsert: %+v", r.Errors)
	}
	if seq, id := next(); seq != seqs[1]+1 || id != "topic/c" {
		t.Fatalf("followed #%d %s, want #%d topic/c", seq, id, seqs[1]+1)
	}
}
