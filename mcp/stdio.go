package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/schema"
)

// ServeStdio serves the MCP protocol on r and w (stdin and stdout) until
// the client closes r or ctx is done. Every request read before the end of
// input is answered before ServeStdio returns: the SDK cancels requests
// still running when it sees EOF, so the reader holds EOF back until the
// writer has sent a response to each request it passed on.
//
// Each line is checked before the SDK decodes it: a line over
// ServerOptions.MaxMessageBytes, one that schema.CheckJSON refuses (nested
// deeper than ServerOptions.MaxDepth, invalid UTF-8, duplicate keys, more
// than one value) or one that is not a JSON-RPC message is answered here
// with a JSON-RPC error, and the session goes on; the SDK would end it.
func (s *Server) ServeStdio(ctx context.Context, r io.Reader, w io.Writer) error {
	_, err := s.ServeStdioWith(ctx, r, w, StdioOptions{})
	return err
}

// StdioOptions let the process serving a stdio session follow it.
type StdioOptions struct {
	// Observe, if set, sees each line of the client's that goes on to the
	// SDK (a message or a batch), before the SDK does. Calls come one at a
	// time; msg is valid only during the call. (What is written to the
	// client goes through the writer the caller gave.)
	Observe func(msg []byte)
}

// ServeStdioWith is ServeStdio with options. When reading r fails (other
// than at its end: a read deadline set to stop the session, say), rest is
// the input read but not passed on, from the start of a line: a process
// that takes the stream over goes on from there.
func (s *Server) ServeStdioWith(ctx context.Context, r io.Reader, w io.Writer, o StdioOptions) (rest []byte, err error) {
	p := &pending{ids: map[string]bool{}}
	p.cond = sync.NewCond(&p.mu)
	out := &responseTracker{w: w, p: p}
	in := &eofHolder{r: bufio.NewReaderSize(r, 64<<10), p: p, ctx: ctx, out: out, log: s.log,
		maxDepth: s.maxDepth, maxLine: s.maxMessage, observe: o.Observe}
	// The reader enforces the line cap itself, so the SDK's would only
	// count the same bytes again.
	err = s.sdk.Run(ctx, &mcpsdk.IOTransport{Reader: in, Writer: out, MaxLineLength: -1})
	if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
		err = nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rest, err
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

// eofHolder passes input through line by line, noting each request,
// answers the lines it refuses itself, and returns EOF only once no
// request is pending.
type eofHolder struct {
	r        *bufio.Reader
	p        *pending
	ctx      context.Context
	out      *responseTracker // where refused lines are answered
	log      *slog.Logger
	maxDepth int
	maxLine  int
	observe  func(msg []byte)
	buf      []byte // the rest of the current line
	eof      bool

	mu   sync.Mutex
	rest []byte // input read but not passed on, when reading failed
}

func (h *eofHolder) Read(b []byte) (int, error) {
	for len(h.buf) == 0 && !h.eof {
		line, tooLong, err := h.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			// Stopped: what was read of the next line is not a message yet.
			if !tooLong {
				h.mu.Lock()
				h.rest = bytes.Clone(line)
				h.mu.Unlock()
			}
			return 0, err
		}
		if line = h.admit(line, tooLong); line != nil {
			h.note(line)
			h.buf = line
		}
		if err != nil {
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

// keptPrefix is how much of an over-long line is kept to find its id.
const keptPrefix = 4 << 10

// readLine returns the next line with its newline. A line over the cap is
// read to its end but not kept: only its first bytes come back, with
// tooLong set, so a huge line costs no memory.
func (h *eofHolder) readLine() (line []byte, tooLong bool, err error) {
	for {
		frag, err := h.r.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(frag) > h.maxLine:
			tooLong = true
			line = append(line, frag[:min(len(frag), max(0, keptPrefix-len(line)))]...)
			line = line[:min(len(line), keptPrefix)]
		default:
			line = append(line, frag...)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}

// admit returns the line to pass on to the SDK, or nil for a line it
// answered or dropped itself.
func (h *eofHolder) admit(line []byte, tooLong bool) []byte {
	if !tooLong && len(bytes.TrimSpace(line)) == 0 {
		return nil // a blank line: nothing to answer
	}
	var problem string
	parseErr, idClear := true, true
	if tooLong {
		problem = fmt.Sprintf("the message is over %d bytes", h.maxLine)
	} else if err := schema.CheckJSON(line, h.maxDepth); err != nil {
		problem = err.Error()
		var je *schema.JSONError
		idClear = !errors.As(err, &je) || je.Pointer != "/id" && !strings.HasPrefix(je.Pointer, "/id/")
	} else if problem = notMessage(line); problem == "" {
		return line
	} else {
		parseErr = false
	}
	id, method, _ := topFields(line)
	if !idClear || !ValidRPCID(id) {
		id = nil // the id itself is what is wrong (twice, say): answer null
	}
	if method == nil && id != nil && !tooLong {
		// A response to one of our requests (an elicitation): hand the SDK
		// an error in its place, so the request it waits on ends.
		h.log.WarnContext(h.ctx, "refused a stdio response", "id", string(id), "problem", problem)
		return RPCError(id, jsonrpc.CodeInvalidRequest, "the client's response was refused: "+problem)
	}
	code := jsonrpc.CodeInvalidRequest
	if id == nil && parseErr {
		code = jsonrpc.CodeParseError
	}
	h.log.WarnContext(h.ctx, "refused a stdio message", "id", string(id), "problem", problem)
	if _, err := h.out.Write(RPCError(id, code, "message refused, nothing was done: "+problem)); err != nil {
		h.log.WarnContext(h.ctx, "answering a refused stdio message", "error", err)
	}
	return nil
}

// notMessage says why a JSON line is not a JSON-RPC 2.0 message the SDK
// can decode, or "" if it is one (or a batch, which the SDK judges).
func notMessage(line []byte) string {
	line = bytes.TrimSpace(line)
	if line[0] == '[' {
		return ""
	}
	if line[0] != '{' {
		return "a JSON-RPC message is a JSON object"
	}
	id, method, version := topFields(line)
	switch {
	case string(version) != `"2.0"`:
		return `"jsonrpc" must be "2.0"`
	case id != nil && !ValidRPCID(id) && string(id) != "null":
		return `"id" must be a string or a number`
	case method != nil && method[0] != '"':
		return `"method" must be a string`
	case method == nil && (id == nil || string(id) == "null"):
		return `a message needs a "method" (a request or notification) or an "id" (a response)`
	}
	return ""
}

// ValidRPCID reports whether a raw JSON-RPC id is a JSON string or number.
func ValidRPCID(id []byte) bool {
	return len(id) > 0 && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9') && json.Valid(id)
}

// RPCError renders a JSON-RPC error response to id (null if nil), newline
// included. lore mcp's bridge answers with it too.
func RPCError(id []byte, code int, msg string) []byte {
	if id == nil {
		id = []byte("null")
	}
	m, _ := json.Marshal(msg)
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`+"\n", id, code, m)
}

func (h *eofHolder) note(line []byte) {
	if h.observe != nil {
		h.observe(line)
	}
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
	id, m, _ := topFields(msg)
	if len(m) >= 2 && m[0] == '"' {
		method = string(m[1 : len(m)-1])
	}
	return id, method
}

// MessageFields returns the raw top-level "id" of a JSON-RPC message (nil
// where it has none) and its "method" ("" where it has none), scanning only
// the top level, for a process that relays messages without decoding them
// (lore mcp's bridge to a shared holder). A batch (a JSON array) is not a
// message: split it first.
func MessageFields(msg []byte) (id []byte, method string) { return topLevel(msg) }

// topFields returns the raw values of a message's top-level "id",
// "method" and "jsonrpc" keys (nil where absent), scanning only the top
// level.
func topFields(msg []byte) (id, method, version []byte) {
	i := bytes.IndexByte(msg, '{')
	if i < 0 {
		return nil, nil, nil
	}
	for i++; i < len(msg); {
		i = skipSpace(msg, i)
		if i >= len(msg) || msg[i] != '"' {
			return
		}
		kEnd := endOfString(msg, i)
		if kEnd > len(msg) || msg[kEnd-1] != '"' || kEnd-1 <= i {
			return // an unterminated key
		}
		key := msg[i+1 : kEnd-1]
		i = skipSpace(msg, kEnd)
		if i >= len(msg) || msg[i] != ':' {
			return
		}
		i = skipSpace(msg, i+1)
		vEnd := endOfValue(msg, i)
		switch string(key) {
		case "id":
			id = msg[i:vEnd]
		case "method":
			method = msg[i:vEnd]
		case "jsonrpc":
			version = msg[i:vEnd]
		}
		i = skipSpace(msg, vEnd)
		if i >= len(msg) || msg[i] != ',' {
			return
		}
		i++
	}
	return
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

// responseTracker writes the server's messages and clears each answered
// request. The SDK writes one message per call; the reader writes its
// refusals through here too, so writes are serialised.
type responseTracker struct {
	mu sync.Mutex
	w  io.Writer
	p  *pending
}

func (t *responseTracker) Write(b []byte) (int, error) {
	t.mu.Lock()
	n, err := t.w.Write(b)
	t.mu.Unlock()
	if id, method := topLevel(b); method == "" && id != nil {
		t.p.mu.Lock()
		delete(t.p.ids, string(id))
		t.p.cond.Broadcast()
		t.p.mu.Unlock()
	}
	return n, err
}

func (t *responseTracker) Close() error { return nil }
