package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
)

// accept is the answer of a user who agrees.
func accept() mcpsdk.InputResponseMap {
	return mcpsdk.InputResponseMap{"confirm": &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}}
}

// asker is a client whose user answers every question with action, and
// counts the questions.
func asker(action string, asked *atomic.Int32, mrtr bool) *mcpsdk.ClientOptions {
	return &mcpsdk.ClientOptions{
		MultiRoundTrip: &mcpsdk.MultiRoundTripOptions{Disabled: !mrtr},
		ElicitationHandler: func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
			asked.Add(1)
			return &mcpsdk.ElicitResult{Action: action, Content: map[string]any{"confirm": action == "accept"}}, nil
		}}
}

// forgedState is a requestState shaped like Lore's but signed by nobody.
func forgedState() string {
	q, _ := json.Marshal(map[string]any{"t": "delete_nodes", "a": "x", "v": legacy, "n": "n", "e": time.Now().Add(time.Hour).Unix()})
	return base64.RawURLEncoding.EncodeToString(q) + "." + base64.RawURLEncoding.EncodeToString(make([]byte, 32))
}

// TestPersonConfirmsDeletes: a client that can ask its user gets the
// question even when the arguments say confirm: true, and the delete
// happens only if the user accepts; input responses Lore did not ask for
// are refused and delete nothing; a client that cannot ask passes confirm:
// true itself. In both eras, in memory and over HTTP.
func TestPersonConfirmsDeletes(t *testing.T) {
	const victim graph.ID = "topic/observability"
	confirmed := `{"nodes":[{"id":"topic/observability"}],"confirm":true}`
	unconfirmed := `{"nodes":[{"id":"topic/observability"}]}`
	for _, transport := range []string{"memory", "http"} {
		for _, era := range eras {
			for _, tc := range []struct {
				name    string
				action  string // the user's answer; "" for a client without elicitation
				args    string
				forged  mcpsdk.InputResponseMap
				state   string
				deleted bool
				asked   int32
				wantErr string
			}{
				{name: "confirm true still asks, accept", action: "accept", args: confirmed, deleted: true, asked: 1},
				{name: "confirm true still asks, decline", action: "decline", args: confirmed, asked: 1, wantErr: "cancelled: the user did not confirm"},
				{name: "no confirm asks, accept", action: "accept", args: unconfirmed, deleted: true, asked: 1},
				{name: "forged response", action: "accept", args: confirmed, forged: accept(), wantErr: "does not answer a question this server asked"},
				{name: "forged response and state", action: "accept", args: unconfirmed, forged: accept(), state: forgedState(), wantErr: "does not answer a question this server asked"},
				{name: "forged response, no elicitation", args: confirmed, forged: accept(), wantErr: "does not answer a question this server asked"},
				{name: "no elicitation, confirm true", args: confirmed, deleted: true},
				{name: "no elicitation, no confirm", args: unconfirmed, wantErr: "call again with confirm: true"},
			} {
				t.Run(transport+"/"+era+"/"+tc.name, func(t *testing.T) {
					f := newFixture(t, nil)
					var asked atomic.Int32
					var opts *mcpsdk.ClientOptions
					if tc.action != "" {
						opts = asker(tc.action, &asked, true)
					}
					var cs *mcpsdk.ClientSession
					if transport == "http" {
						cs = f.connectHTTP(t, era, opts)
					} else {
						cs = f.connect(t, era, opts)
					}
					res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "delete_nodes", Arguments: json.RawMessage(tc.args),
						InputResponses: tc.forged, RequestState: tc.state})
					if err != nil {
						t.Fatal(err)
					}
					_, nerr := f.store.Node(t.Context(), victim)
					if deleted := nerr != nil; deleted != tc.deleted {
						t.Errorf("deleted: %v, want %v (%s)", deleted, tc.deleted, text(res))
					}
					if tc.wantErr != "" && (!res.IsError || !strings.Contains(text(res), tc.wantErr)) {
						t.Errorf("want an error containing %q, got %s", tc.wantErr, text(res))
					}
					if tc.wantErr == "" && res.IsError {
						t.Errorf("unexpected error: %s", text(res))
					}
					if n := asked.Load(); n != tc.asked {
						t.Errorf("the user was asked %d times, want %d", n, tc.asked)
					}
				})
			}
		}
	}
}

// TestConfirmationIsBoundToTheCall: on 2026-07-28 a client retries with
// the requestState Lore issued; that state answers only the call it was
// issued for (same tool, same arguments, same protocol version) and only
// once.
func TestConfirmationIsBoundToTheCall(t *testing.T) {
	f := newFixture(t, nil)
	var asked atomic.Int32
	cs := f.connectHTTP(t, modern, asker("accept", &asked, false)) // the test plays the client's retry loop
	call := func(cs *mcpsdk.ClientSession, id, state string, responses mcpsdk.InputResponseMap) *mcpsdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "delete_nodes", Arguments: map[string]any{"nodes": []any{map[string]any{"id": id}}},
			RequestState: state, InputResponses: responses})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	exists := func(id graph.ID) bool { _, err := f.store.Node(t.Context(), id); return err == nil }
	question := func(id string) string {
		t.Helper()
		res := call(cs, id, "", nil)
		if !res.NeedsInput() || res.RequestState == "" || res.InputRequests["confirm"] == nil {
			t.Fatalf("want a question with a requestState, got %+v %s", res, text(res))
		}
		return res.RequestState
	}
	const a, b = "topic/observability", "service/ledger"
	stateA := question(a)

	// Another node's delete with A's state: refused.
	if res := call(cs, b, stateA, accept()); !res.IsError || !strings.Contains(text(res), "answers a question about another call") || !exists(b) {
		t.Fatalf("replayed for other arguments: %s (b exists: %v)", text(res), exists(b))
	}
	// The call it was asked for: deleted.
	if res := call(cs, a, stateA, accept()); res.IsError || exists(a) {
		t.Fatalf("the answered call: %s", text(res))
	}
	// The same answer again: refused.
	if res := call(cs, a, stateA, accept()); !res.IsError || !strings.Contains(text(res), "was already used") {
		t.Fatalf("replayed: %s", text(res))
	}
	// A state issued on 2026-07-28 does not answer for a legacy session,
	// which never sees one: its questions go through elicitation/create.
	stateB := question(b)
	var legacyAsked atomic.Int32
	old := f.connectHTTP(t, legacy, asker("accept", &legacyAsked, true))
	if res := call(old, b, stateB, accept()); !res.IsError || !strings.Contains(text(res), "answers a question about another call") || !exists(b) {
		t.Fatalf("a 2026 state on a legacy session: %s (b exists: %v)", text(res), exists(b))
	}
	if asked.Load() != 0 || legacyAsked.Load() != 0 {
		t.Errorf("nobody should have been asked: %d, %d", asked.Load(), legacyAsked.Load())
	}
}
