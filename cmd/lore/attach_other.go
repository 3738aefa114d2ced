//go:build !unix

package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/coder/websocket"
)

// Systems without Unix sockets share no store (sharing is false): these
// stand in for attach_unix.go.

type attached struct{}

type attachConn struct{}

type attachEnd struct {
	Code   websocket.StatusCode
	Reason string
	State  *sessionState
	Rest   []byte
}

var errNoAttach = errors.New("attached sessions need Unix sockets")

func (h *holder) serveAttach(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, errNoAttach.Error(), http.StatusNotFound)
}

func (h *holder) releaseAttached(websocket.StatusCode, string) {}

func attachFiles(*env) (in, out *os.File, ok bool) { return nil, nil, false }

func (b *bridge) openAttach(context.Context, *holderConn) (*attachConn, holderInfo, error) {
	return nil, holderInfo{}, errNoAttach
}

func (b *bridge) waitAttached(context.Context, *attachConn, holderInfo) (bool, *attachEnd, error) {
	return true, nil, errNoAttach
}
