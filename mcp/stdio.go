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
	id, method := topLevel(line)
	switch {
	case method != "" && id != nil && string(id) != "null":
		h.p.mu.Lock()
		h.p.ids[string(id)] = true
		h.p.mu.Unlock()
	case method == "notifications/cancelled":
		// A cancelled request may never be answered.
		var e envelope
		if json.Unmarshal(line, &e) == nil {
			h.p.mu.Lock()
			delete(h.p.ids, string(e.Params.RequestID))
			h.p.cond.Broadcast()
			h.p.mu.Unlock()
		}
	}
}

// topLevel returns the raw "id" value and the "method" string of a
// JSON-RPC message, scanning only its top level: every message passes
// through here, and a full decode would cost more than the rest of a
// small call.
func topLevel(msg []byte) (id []byte, method string) {
	i := bytes.IndexByte(msg, '{')
	if i < 0 {
		return nil, ""
	}
	for i++; i < len(msg); {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return id, method
		}
		kEnd := endOfString(msg, i)
		if kEnd > len(msg) || msg[kEnd-1] != '"' || kEnd-1 <= i {
			return id, method // an unterminated key
		}
		key := msg[i+1 : kEnd-1]
		i = skipSpace(msg, kEnd)
		if i >= len(msg) || msg[i] != ':' {
			return id, method
		}
		i = skipSpace(msg, i+1)
		vEnd := endOfValue(msg, i)
		switch string(key) {
		case "id":
			id = msg[i:vEnd]
		case "method":
			if vEnd-i >= 2 && msg[i] == '"' {
				method = string(msg[i+1 : vEnd-1])
			}
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) || msg[i] != ',' {
			return id, method
		}
		i++
	}
	return id, method
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the index after the string starting at b[i] == '"'.
func endOfString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// endOfValue returns the index after the JSON value starting at b[i].
func endOfValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = endOfString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' {
		i++
	}
	return i
}

func (h *eofHolder) Close() error { return nil }

// responseTracker writes the server's messages and clears each answered request.
type responseTracker struct {
	w io.Writer
	p *pending
}

func (t *responseTracker) Write(b []byte) (int, error) {
	n, err := t.w.Write(b)
	if id, method := topLevel(b); method == "" && id != nil {
		t.p.mu.Lock()
		delete(t.p.ids, string(id))
		t.p.cond.Broadcast()
		t.p.mu.Unlock()
	}
	return n, err
}

func (t *responseTracker) Close() error { return nil }
