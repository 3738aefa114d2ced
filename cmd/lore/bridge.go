package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/mcp"
)

// A bridge connects lore mcp's stdio session to the store's holder. Where
// stdin and stdout are pipes or sockets it hands them to the holder, which
// serves the session on them itself (attach_unix.go), until the session
// ends or the holder lets it go. Otherwise, or from then on, or with
// --relay, it relays the session to its own MCP session on the holder, one
// JSON-RPC message per WebSocket message, and keeps
// what it needs to reconnect: when the holder goes away (killed, handed
// the store to lore serve, stopped), the bridge answers each request in
// flight with an error saying to retry, finds or starts the next holder,
// replays the session's initialize exchange, log level and resource
// subscriptions there, tells the client that its subscribed resources may
// have changed meanwhile, and goes on. Only if no holder can be reached
// does it exit, with a message on stderr.
type bridge struct {
	e *env
	o bridgeOptions

	outMu  sync.Mutex // stdout
	outBuf []byte     // a line being written, under outMu

	mu          sync.Mutex
	cond        *sync.Cond // conn changed, or the bridge is over
	conn        *websocket.Conn
	holder      holderInfo
	st          sessionState
	attachIn    *os.File               // stdin, handed to the holder
	attachOut   *os.File               // stdout, handed to the holder
	own         map[string]chan []byte // the bridge's own requests (replays) by ID
	ownSeq      int
	inputDone   bool // stdin ended
	over        bool // no connection will come
	stopConnect context.CancelFunc
}

// bridgeOptions configure a bridge.
type bridgeOptions struct {
	store   string        // the store directory
	config  sessionConfig // sent to the holder
	exe     string        // this program, started as lore hold
	hold    []string      // lore hold's flags
	wait    time.Duration // how long to wait for a holder to answer
	maxLine int           // bytes of one message from the client
	relay   bool          // relay the session even where it could be handed over
}

// handoverGrace is how long a bridge whose holder handed the store over
// waits for the new holder (lore serve) before it starts one itself.
const handoverGrace = 15 * time.Second

func newBridge(e *env, o bridgeOptions) *bridge {
	b := &bridge{e: e, o: o, st: newSessionState(), own: map[string]chan []byte{}}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// run bridges stdin and stdout until stdin ends and every request read is
// answered, or ctx is done.
func (b *bridge) run(ctx context.Context) error {
	if in, out, ok := attachFiles(b.e); ok && !b.o.relay {
		b.attachIn, b.attachOut = in, out
		return b.runAttached(ctx)
	}
	c, info, err := b.connectRelay(ctx, true, false)
	if err != nil {
		return err
	}
	b.logConnected(info, "relayed")
	return b.relay(ctx, c, info, false, nil)
}

// logConnected says which holder serves the session, and how: "attached"
// (stdin and stdout handed over) or "relayed".
func (b *bridge) logConnected(info holderInfo, how string) {
	b.e.log.Info("bridged to the store's holder", "pid", info.PID, "kind", info.Kind, "socket", info.Socket, "session", how)
	if info.ReadOnly && !b.o.config.ReadOnly {
		b.e.log.Warn("the store is held read-only: write tools are not offered", "holder", info.describe())
	}
}

// relay relays the session over c until it is over; replay sets the
// session up on c first, and the client's input goes on after rest.
func (b *bridge) relay(ctx context.Context, c *websocket.Conn, info holderInfo, replay bool, rest []byte) error {
	done := make(chan error, 1)
	go func() { done <- b.supervise(ctx, c, info, replay) }()
	go b.pumpStdin(ctx, rest)
	return <-done
}

// runAttached hands stdin and stdout to the holder and waits for the
// session's end; if the holder lets the session go, the bridge relays it
// from there.
func (b *bridge) runAttached(ctx context.Context) error {
	var ac *attachConn
	info, err := b.connect(ctx, true, false, func(ctx context.Context, h *holderConn) (holderInfo, error) {
		c, info, err := b.openAttach(ctx, h)
		ac = c
		return info, err
	})
	if errors.Is(err, errNoAttach) {
		b.e.log.Info("the holder does not take attached sessions (an older lore?): relaying", "pid", info.PID)
		b.attachIn, b.attachOut = nil, nil
		c, info, err := b.connectRelay(ctx, true, false)
		if err != nil {
			return err
		}
		b.logConnected(info, "relayed")
		return b.relay(ctx, c, info, false, nil)
	}
	if err != nil {
		return err
	}
	b.logConnected(info, "attached")
	done, end, err := b.waitAttached(ctx, ac, info)
	if done || err != nil {
		return err
	}
	// The holder let the session go: relay it from here, set up again on
	// the next holder, after answering what was left unanswered.
	b.mu.Lock()
	st := *end.State
	b.st = newSessionState()
	b.st.InitReq, b.st.Initialized, b.st.Level = st.InitReq, st.Initialized, st.Level
	maps.Copy(b.st.Subs, st.Subs)
	maps.Copy(b.st.Inflight, st.Inflight)
	b.mu.Unlock()
	lost := websocket.CloseError{Code: end.Code, Reason: end.Reason}
	b.unpublish(info, lost)
	b.e.log.Warn("the holder let the session go; relaying it to the next one", "pid", info.PID, "reason", lossReason(lost))
	c, info, err := b.connectRelay(ctx, false, end.Code == statusHandover)
	if err != nil {
		return &exitError{1, fmt.Errorf("the holder of %s let this session go and no other could be reached: %w; restart this MCP server", b.o.store, err)}
	}
	b.e.log.Info("reconnected to the store's holder", "pid", info.PID, "kind", info.Kind)
	return b.relay(ctx, c, info, true, end.Rest)
}

// errLost wraps the reason a connection to the holder ended.
type errLost struct{ err error }

func (e *errLost) Error() string { return e.err.Error() }

func (e *errLost) Unwrap() error { return e.err }

// supervise owns the connection: it publishes it for the stdin pump,
// waits for its end, and reconnects unless the session is over.
func (b *bridge) supervise(ctx context.Context, c *websocket.Conn, info holderInfo, replay bool) error {
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	b.mu.Lock()
	b.stopConnect = stop
	b.mu.Unlock()
	failures := 0
	for {
		lost := make(chan error, 1)
		go b.readHolder(ctx, c, lost)
		var err error
		if replay {
			err = b.replay(rctx, c, lost)
		}
		replayed := err == nil
		if replayed {
			failures = 0
			b.publish(c, info, replay)
			select {
			case err = <-lost:
			case <-ctx.Done():
				c.Close(websocket.StatusNormalClosure, "")
				b.finish()
				return nil
			}
		} else {
			c.CloseNow()
			failures++
		}
		inputDone := b.unpublish(info, err)
		if inputDone || ctx.Err() != nil {
			b.finish()
			return nil
		}
		if failures == 3 {
			b.finish()
			return &exitError{1, fmt.Errorf("could not set the session up again on the holder of %s: %w; restart this MCP server", b.o.store, err)}
		}
		handover := websocket.CloseStatus(err) == statusHandover
		b.e.log.Warn("lost the store's holder; reconnecting", "pid", info.PID, "reason", lossReason(err))
		if c, info, err = b.connectRelay(rctx, false, handover); err != nil {
			b.finish()
			if b.isInputDone() || ctx.Err() != nil {
				return nil
			}
			return &exitError{1, fmt.Errorf("lost the holder of %s and could not reach another: %w; restart this MCP server", b.o.store, err)}
		}
		b.e.log.Info("reconnected to the store's holder", "pid", info.PID, "kind", info.Kind)
		replay = true
	}
}

// publish makes c the connection messages go to; after a reconnection it
// tells the client that its subscribed resources may have changed while
// no holder could say so.
func (b *bridge) publish(c *websocket.Conn, info holderInfo, reconnected bool) {
	b.mu.Lock()
	b.conn, b.holder = c, info
	var uris []string
	for u := range b.st.Subs {
		uris = append(uris, u)
	}
	legacy := b.st.InitReq != nil
	b.cond.Broadcast()
	b.mu.Unlock()
	if !reconnected {
		return
	}
	for _, u := range uris {
		b.notifyClient("notifications/resources/updated", map[string]string{"uri": u})
	}
	if legacy {
		b.notifyClient("notifications/resources/list_changed", nil)
	}
}

// unpublish takes the lost connection away and answers every request in
// flight with an error saying to retry. It reports whether stdin ended.
func (b *bridge) unpublish(info holderInfo, err error) bool {
	b.mu.Lock()
	b.conn = nil
	ids := make([]string, 0, len(b.st.Inflight))
	for id := range b.st.Inflight {
		ids = append(ids, id)
	}
	clear(b.st.Inflight)
	clear(b.st.FromHolder)
	clear(b.st.SubReqs)
	for id, ch := range b.own {
		close(ch)
		delete(b.own, id)
	}
	done := b.inputDone
	b.mu.Unlock()
	msg := fmt.Sprintf("the Lore holder (pid %d) went away before answering (%s); the request may or may not have taken effect: "+
		"retry it (a write with an idempotencyKey is safe to retry)", info.PID, lossReason(err))
	for _, id := range ids {
		b.writeClient(mcp.RPCError(json.RawMessage(id), jsonrpc.CodeInternalError, msg))
	}
	return done
}

// finish ends the session: nothing waits for a connection any more.
func (b *bridge) finish() {
	b.mu.Lock()
	b.over = true
	b.conn = nil
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *bridge) isInputDone() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inputDone
}

// pumpStdin reads the client's messages, one a line, and sends each to
// the holder: first those in rest, input read before (by a holder that
// served the session attached).
func (b *bridge) pumpStdin(ctx context.Context, rest []byte) {
	br := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(rest), b.e.stdin), 64<<10)
	for {
		line, tooLong, err := readLine(br, b.o.maxLine)
		if tooLong {
			b.refuseLong(line)
		} else if len(bytes.TrimSpace(line)) > 0 {
			b.forward(bytes.TrimRight(line, "\r\n"))
		}
		if err != nil {
			b.endInput(ctx)
			return
		}
	}
}

// keptPrefix is how much of an over-long line is kept to find its id.
const keptPrefix = 4 << 10

// readLine returns the next line; one over limit bytes is read to its end
// but only its first keptPrefix bytes are kept, with tooLong set.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case tooLong:
		case len(line)+len(frag) > limit:
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

// refuseLong answers a line over the message cap as the holder would,
// without sending it.
func (b *bridge) refuseLong(prefix []byte) {
	id, method := mcp.MessageFields(prefix)
	if method == "" && id != nil {
		return // a response to the holder, which cannot take it: drop it
	}
	b.e.log.Warn("refused a stdio message", "id", string(id), "problem", "over the message cap")
	if !mcp.ValidRPCID(id) {
		id = nil
	}
	b.writeClient(mcp.RPCError(id, jsonrpc.CodeInvalidRequest, fmt.Sprintf("message refused, nothing was done: the message is over %d bytes", b.o.maxLine)))
}

// forward sends one message from the client to the holder, noting what
// the bridge must remember. A message that could not be sent at all never
// reached the holder: it goes to the next one.
func (b *bridge) forward(line []byte) {
	msgs := splitBatch(line)
	for {
		b.mu.Lock()
		for b.conn == nil && !b.over {
			b.cond.Wait()
		}
		if b.over {
			b.mu.Unlock()
			return
		}
		drop := false
		for _, m := range msgs {
			drop = b.st.fromClient(m) || drop
		}
		c := b.conn
		b.mu.Unlock()
		if drop && len(msgs) == 1 {
			return
		}
		err := c.Write(context.Background(), websocket.MessageText, line)
		if err == nil {
			return
		}
		b.mu.Lock()
		resend := b.conn == c // else the loss was handled: its requests were answered
		if resend {
			b.conn = nil
			for _, m := range msgs {
				if id, method := mcp.MessageFields(m); id != nil && method != "" {
					delete(b.st.Inflight, string(id))
				}
			}
		}
		b.mu.Unlock()
		c.CloseNow() // the reader notices, and the supervisor reconnects
		if !resend {
			return
		}
	}
}

// endInput passes the end of stdin on to the holder, which answers what
// it read and then ends the session.
func (b *bridge) endInput(ctx context.Context) {
	b.mu.Lock()
	b.inputDone = true
	c := b.conn
	stop := b.stopConnect
	b.mu.Unlock()
	if c == nil {
		if stop != nil {
			stop() // nothing is in flight (unpublish answered it): no need to reconnect
		}
		return
	}
	if err := c.Write(ctx, websocket.MessageBinary, nil); err != nil {
		c.CloseNow()
	}
}

// readHolder passes the holder's messages to the client until the
// connection ends, and then reports why on lost. (Its reads take no
// deadline context, which would cost a timer each: ctx's end closes the
// connection instead.)
func (b *bridge) readHolder(ctx context.Context, c *websocket.Conn, lost chan<- error) {
	stop := context.AfterFunc(ctx, func() { c.CloseNow() })
	defer stop()
	var buf bytes.Buffer
	for {
		typ, r, err := c.Reader(context.Background())
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		if err != nil {
			lost <- err
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		data := buf.Bytes()
		keep := true
		b.mu.Lock()
		for _, m := range splitBatch(data) {
			keep = b.noteFromHolder(m) && keep
		}
		b.mu.Unlock()
		if keep {
			b.writeClient(data)
		}
	}
}

// noteFromHolder records what a holder message means for the session,
// and reports whether the client should see it (the answers to the
// bridge's own requests are not for it). The caller holds mu.
func (b *bridge) noteFromHolder(m []byte) bool {
	if rawID, method := mcp.MessageFields(m); method == "" && rawID != nil {
		if ch, ok := b.own[string(rawID)]; ok {
			delete(b.own, string(rawID))
			ch <- bytes.Clone(m)
			return false
		}
	}
	b.st.fromHolder(m)
	return true
}

// notifyClient sends the client a notification of the bridge's own.
func (b *bridge) notifyClient(method string, params any) {
	m := map[string]any{"jsonrpc": "2.0", "method": method}
	if params != nil {
		m["params"] = params
	}
	data, _ := json.Marshal(m)
	b.writeClient(data)
}

// writeClient writes one message, and its newline, to stdout.
func (b *bridge) writeClient(msg []byte) {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.outBuf = append(append(b.outBuf[:0], bytes.TrimRight(msg, "\n")...), '\n')
	if _, err := b.e.stdout.Write(b.outBuf); err != nil {
		b.e.log.Debug("writing to stdout", "error", err)
	}
	if cap(b.outBuf) > 1<<20 {
		b.outBuf = nil // keep no large message's buffer
	}
}

// splitBatch returns the messages of a line: itself, or a batch's elements.
func splitBatch(line []byte) [][]byte {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '[' {
		return [][]byte{line}
	}
	var batch []json.RawMessage
	if json.Unmarshal(t, &batch) != nil {
		return [][]byte{line}
	}
	out := make([][]byte, len(batch))
	for i, m := range batch {
		out[i] = m
	}
	return out
}

// defaultMaxLine is the cap on one stdio message, the holder's too.
const defaultMaxLine = mcpsdk.DefaultMaxLineLength
