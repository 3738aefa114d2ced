//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"testing"
)

// What an attached session writes is in the state it hands over as soon
// as the write returns: a handover right after a response must not leave
// its request in flight (the bridge would answer it again) nor lose the
// subscription it made.
func TestAttachedStateHoldsWhatWasWritten(t *testing.T) {
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer inW.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	defer outW.Close() // finish closes it too; this ends the reader if the test stops first
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(outR)
		read <- b
	}()
	a := &attached{in: inR, out: outW, st: newSessionState()}
	a.observe([]byte(`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"lore://node/topic/a"}}`))
	a.observe([]byte(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_node"}}`))
	resp := `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"
	if _, err := a.Write([]byte(resp)); err != nil {
		t.Fatal(err)
	}
	a.release(statusHandover, "handover", false)
	if _, err := a.Write([]byte(`{"jsonrpc":"2.0","id":8,"result":{}}` + "\n")); !errors.Is(err, errReleased) {
		t.Errorf("a write after the release: %v, want errReleased", err)
	}
	end := a.finish(nil, nil)
	if got := string(<-read); got != resp {
		t.Errorf("the client read %q, want %q", got, resp)
	}
	if end == nil || end.State == nil {
		t.Fatalf("finish handed over %+v, want a state", end)
	}
	st := end.State
	if !st.Subs["lore://node/topic/a"] || len(st.SubReqs) != 0 {
		t.Errorf("subscriptions %v, pending %v: want lore://node/topic/a made, none pending", st.Subs, st.SubReqs)
	}
	if st.Inflight["7"] || !st.Inflight["8"] {
		t.Errorf("in flight %v, want 8 alone", st.Inflight)
	}
}
