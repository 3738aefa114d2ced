package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"

	"github.com/lore-dev/lore/schema"
)

func TestTopLevel(t *testing.T) {
	for _, tc := range []struct {
		msg, id, method string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1", "tools/list"},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "", "notifications/initialized"},
		{`{"jsonrpc":"2.0","id":"a\"b","result":{"id":9,"method":"x","s":"}{"}}`, `"a\"b"`, ""},
		{` { "result" : [1,{"id":2}] , "id" : 7 } `, "7", ""},
		{`{"params":{"method":"nested"},"method":"m","id":null}`, "null", "m"},
		{`not json`, "", ""},
	} {
		id, method := topLevel([]byte(tc.msg))
		if string(id) != tc.id || method != tc.method {
			t.Errorf("%s: got id %q method %q", tc.msg, id, method)
		}
	}
}

func FuzzTopLevel(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"a":[1,"]"]}}`))
	f.Fuzz(func(t *testing.T, b []byte) { topLevel(b) })
}

// FuzzAdmit: whatever line a client sends, the stdio reader either passes
// on a JSON-RPC message that schema.CheckJSON accepts, or answers one
// well-formed JSON-RPC error (or hands the SDK one for a response).
func FuzzAdmit(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":5,"id":6,"method":"x"}`))
	f.Add([]byte(`{"foo":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var out bytes.Buffer
		p := &pending{ids: map[string]bool{}}
		p.cond = sync.NewCond(&p.mu)
		h := &eofHolder{ctx: context.Background(), p: p, out: &responseTracker{w: &out, p: p}, log: slog.New(slog.DiscardHandler),
			maxDepth: 16, maxLine: 1 << 20}
		passed := h.admit(line, false)
		switch {
		case passed == nil:
			if out.Len() > 0 {
				checkReply(t, out.Bytes())
			}
		case out.Len() > 0:
			t.Fatalf("both passed on and answered %q", line)
		case bytes.Equal(passed, line):
			if err := schema.CheckJSON(line, 16); err != nil {
				t.Fatalf("passed on %q: %v", line, err)
			}
		default:
			checkReply(t, passed) // an error in place of a refused response
		}
	})
}

func checkReply(t *testing.T, reply []byte) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if reply[len(reply)-1] != '\n' || bytes.Count(reply, []byte("\n")) != 1 || json.Unmarshal(reply, &m) != nil ||
		m.JSONRPC != "2.0" || m.ID == nil || m.Error == nil || m.Error.Message == "" {
		t.Fatalf("not one JSON-RPC error line: %q", reply)
	}
}
