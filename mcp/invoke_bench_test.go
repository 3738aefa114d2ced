package mcp_test

import (
	"encoding/json"
	"testing"
)

func BenchmarkInvokeGetNode(b *testing.B) {
	f := newFixture(b, nil)
	args := json.RawMessage(`{"id":"service/billing"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.cat.Invoke(b.Context(), "get_node", args); err != nil {
			b.Fatal(err)
		}
	}
}
