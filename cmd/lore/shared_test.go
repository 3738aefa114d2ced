package main

import (
	"context"
	"log/slog"
	"testing"
)

// newStore returns a store directory for a test; a background holder that
// the test's lore mcp processes started there is stopped at its end.
func newStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() { stopHolder(t, dir) })
	return dir
}

// stopHolder stops the background holder of the store in dir, if one
// runs: it hands the store over (to nobody), which closes the store before
// it answers.
func stopHolder(t *testing.T, dir string) {
	t.Helper()
	h := findHolder(context.Background(), dir)
	if h == nil || h.info.Kind != kindHold {
		return
	}
	if err := h.handover(context.Background(), slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("stopping the holder: %v", err)
	}
}
