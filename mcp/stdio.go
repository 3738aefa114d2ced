package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves the MCP protocol on r and w (stdin and stdout) until
// the client closes r or ctx is done. Every request read before the end of
// input is answered before ServeStdio returns: the SDK cancels requests
// still running when it sees EOF, so the reader holds EOF back until the
// writer has sent a response to each request it passed on.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	p := &pending{ids: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	in := &eofHolder{r: bufio.NewReaderSize(r, 64<<10), p: p, ctx: ctx}
	out := &responseTracker{w: w, p: p}
	err := s.sdk.Run(ctx, &mcpsdk.IOTransport{Reader: in, Writer: out})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// drainTimeout bounds the wait at the end of input for pending answers.
const drainTimeout = 30 * time.Second

// pending is the set of request IDs read but not yet answered.
type pending struct {
	mu   sync.Mutex
	cond *sync.Cond
	ids  map[string]bool
}

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// eofHolder passes input through line by line, noting each request, and
// returns EOF only once no request is pending.
type eofHolder struct {
	r   *bufio.Reader
	p   *pending
	ctx context.Context
	buf []byte // the rest of the current line
	eof bool
}

func (h *eofHolder) Read(b []byte) (int, error) {
	if len(h.buf) == 0 && !h.eof {
		line, err := h.r.ReadBytes('\n')
		if len(line) > 0 {
			h.note(line)
			h.buf = line
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return 0, err
			}
			h.eof = true
		}
	}
	if len(h.buf) > 0 {
		n := copy(b, h.buf)
		h.buf = h.buf[n:]
		return n, nil
	}
	// A request blocked on the client (an elicitation it will never answer
	// now) must not keep the process alive: wait a bounded time.
	ctx, cancel := context.WithTimeout(h.ctx, drainTimeout)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { h.p.mu.Lock(); h.p.cond.Broadcast(); h.p.mu.Unlock() })
	defer stop()
	h.p.mu.Lock()
	for len(h.p.ids) > 0 && ctx.Err() == nil {
		h.p.cond.Wait()
	}
	h.p.mu.Unlock()
	return 0, io.EOF
}

func (h *eofHolder) note(line []byte) {
	var e envelope
	if json.Unmarshal(bytes.TrimSpace(line), &e) != nil {
		return
	}
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	switch {
	case e.Method != "" && len(e.ID) > 0 && string(e.ID) != "null":
		h.p.ids[string(e.ID)] = true
	case e.Method == "notifications/cancelled":
		// A cancelled request may never be answered.
		delete(h.p.ids, string(e.Params.RequestID))
		h.p.cond.Broadcast()
	}
}

func (h *eofHolder) Close() error { return nil }

// responseTracker writes the server's messages and clears each answered request.
type responseTracker struct {
	w io.Writer
	p *pending
}

func (t *responseTracker) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	var e envelope
	if json.Unmarshal(bytes.TrimSpace(b), &e) == nil && e.Method == "" && len(e.ID) > 0 {
		t.p.mu.Lock()
		delete(t.p.ids, string(e.ID))
		t.p.cond.Broadcast()
		t.p.mu.Unlock()
	}
	return n, err
}

func (t *responseTracker) Close() error { return nil }
