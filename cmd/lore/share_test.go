package main

import "testing"

// TestSharedStore: two lore mcp processes (the Go SDK client over stdio),
// lore serve (the Go SDK client over HTTP) and CLI commands share one
// store at once (see testSharing). The interop build adds the TypeScript
// SDK's client (interop_test.go).
func TestSharedStore(t *testing.T) {
	store := newStore(t)
	_, url := startServe(t, store, "--rate", "0")
	a := stdioClient(t, "stdio-a", store)
	b := stdioClient(t, "stdio-b", store)
	h := httpClient(t, "http", url)
	testSharing(t, store, []writer{a, b, h, &cliWriter{t, store}}, []subscriber{a, b, h}, a)
}
