package mcp

import (
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph/graphtest"
)

// TestSubscriptionsForgottenWithTheirSession: when a session ends, its
// subscriptions go with it, so a URI only it watched is no longer
// watched and nothing of it stays behind.
func TestSubscriptionsForgottenWithTheirSession(t *testing.T) {
	s := NewServer(NewCatalog(graphtest.New(t), nil), nil)
	forgotten := make(chan *mcpsdk.ServerSession, 1)
	s.subs.mu.Lock()
	s.subs.forgotten = func(ss *mcpsdk.ServerSession) { forgotten <- ss }
	s.subs.mu.Unlock()

	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := s.SDK().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct,
		&mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // a session that subscribes (2026-07-28 listens instead)
	if err != nil {
		t.Fatal(err)
	}
	uris := []string{NodeURI("service/billing"), TypeURI("Service"), ChangesURI}
	for _, u := range uris {
		if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: u}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range uris {
		if !s.subs.watched(u) {
			t.Fatalf("%s not watched after subscribing: %v %v", u, s.subs.bySession, s.subs.count)
		}
	}
	cs.Close()
	select {
	case got := <-forgotten:
		if got != ss {
			t.Fatalf("forgot session %p, want %p", got, ss)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the session's subscriptions were not forgotten within 10s of its end")
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if len(s.subs.bySession) != 0 || len(s.subs.count) != 0 {
		t.Errorf("left behind: %v, %v", s.subs.bySession, s.subs.count)
	}
}
