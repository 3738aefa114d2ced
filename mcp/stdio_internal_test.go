package mcp

import "testing"

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
