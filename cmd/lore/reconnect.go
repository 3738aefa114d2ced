package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Reconnection: finding (or starting) the store's holder, opening a
// session there, and setting a new session up as the lost one was.

// lossReason says why a connection ended, for logs and errors.
func lossReason(err error) string {
	var ce websocket.CloseError
	if errors.As(err, &ce) && ce.Reason != "" {
		return ce.Reason
	}
	if errors.As(err, &ce) {
		return fmt.Sprintf("closed with status %d", ce.Code)
	}
	return "the connection dropped (killed?)"
}

// connectRelay finds the store's holder, starting one if none answers,
// and opens a relayed MCP session there.
func (b *bridge) connectRelay(ctx context.Context, first, afterHandover bool) (*websocket.Conn, holderInfo, error) {
	var c *websocket.Conn
	info, err := b.connect(ctx, first, afterHandover, func(ctx context.Context, h *holderConn) (holderInfo, error) {
		var info holderInfo
		var err error
		c, info, err = b.openSession(ctx, h)
		return info, err
	})
	return c, info, err
}

// connect finds the store's holder, starting one if none answers, and
// opens the session there with open. first is set for the session's first
// connection; after a handover it first waits for the process the store
// went to.
func (b *bridge) connect(ctx context.Context, first, afterHandover bool, open func(context.Context, *holderConn) (holderInfo, error)) (holderInfo, error) {
	start := time.Now()
	spawnAt := start
	if afterHandover {
		spawnAt = start.Add(handoverGrace)
	}
	var child <-chan string
	spawned := 0
	delay := time.Millisecond
	var last error // why the last try failed
	for {
		h, err := dialHolder(ctx, b.o.store)
		if h != nil {
			info, err := open(ctx, h)
			if err == nil {
				return info, nil
			}
			var re *refusedError
			if errors.As(err, &re) || errors.Is(err, errNoAttach) {
				return info, err
			}
			last = err
		} else if err != nil {
			last = err
		}
		if child == nil && spawned < 3 && !time.Now().Before(spawnAt) {
			if child, err = spawnHolder(b.o); err != nil {
				return holderInfo{}, err
			}
			spawned++
		}
		t := time.NewTimer(delay)
		select {
		case msg := <-child:
			t.Stop()
			child = nil
			if failure, ok := strings.CutPrefix(msg, "error: "); ok {
				last = errors.New(failure)
				// At the start, the store is held by a process that does not
				// share it (or cannot be opened): say so. After a loss, the
				// old holder may still be letting go: try on.
				if first && spawned == 1 && findHolder(ctx, b.o.store) == nil {
					return holderInfo{}, last
				}
			}
		case <-t.C:
			delay = min(2*delay, 100*time.Millisecond)
		case <-ctx.Done():
			t.Stop()
			return holderInfo{}, ctx.Err()
		}
		if time.Since(start) > b.o.wait {
			return holderInfo{}, fmt.Errorf("no holder of %s answered within %s (last: %v; the background holder's log: %s)",
				b.o.store, b.o.wait, last, holderLogPath(b.o.store))
		}
	}
}

// A refusedError is a holder's refusal of a session (a --model that
// differs from the store's): another try would be refused too.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// openSession opens an MCP session on the holder h.
func (b *bridge) openSession(ctx context.Context, h *holderConn) (*websocket.Conn, holderInfo, error) {
	c, _, err := websocket.Dial(ctx, holderBase+"/v1/mcp", &websocket.DialOptions{HTTPClient: h.hc})
	if err != nil {
		return nil, h.info, err
	}
	if err := writeJSON(ctx, c, b.o.config); err != nil {
		c.CloseNow()
		return nil, h.info, err
	}
	c.SetReadLimit(maxHandshake)
	var reply handshakeReply
	if err := readJSON(ctx, c, &reply); err != nil {
		c.CloseNow()
		return nil, h.info, err
	}
	if reply.Error != "" || reply.Holder == nil {
		c.CloseNow()
		return nil, h.info, &refusedError{reply.Error}
	}
	c.SetReadLimit(-1) // what the holder sends is bounded by its own caps
	return c, *reply.Holder, nil
}

// replay sets a new holder session up as the lost one was: initialize,
// log level, subscriptions. The answers are the bridge's own.
func (b *bridge) replay(ctx context.Context, c *websocket.Conn, lost <-chan error) error {
	b.mu.Lock()
	initReq, initialized, level := b.st.InitReq, b.st.Initialized, b.st.Level
	var subs []string
	for u := range b.st.Subs {
		subs = append(subs, u)
	}
	b.mu.Unlock()
	if initReq != nil {
		if err := b.call(ctx, c, lost, initReq); err != nil {
			return fmt.Errorf("replaying initialize: %w", err)
		}
		if initialized {
			if err := c.Write(ctx, websocket.MessageText, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
				return err
			}
		}
	}
	if level != nil {
		if err := b.call(ctx, c, lost, level); err != nil {
			return fmt.Errorf("replaying logging/setLevel: %w", err)
		}
	}
	for _, u := range subs {
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "resources/subscribe", "params": map[string]string{"uri": u}})
		if err := b.call(ctx, c, lost, req); err != nil {
			return fmt.Errorf("replaying the subscription to %s: %w", u, err)
		}
	}
	return nil
}

// replayTimeout bounds the wait for the answer to a replayed request.
const replayTimeout = 30 * time.Second

// call sends a request of the client's again, under an ID of the bridge's,
// and waits for its answer.
func (b *bridge) call(ctx context.Context, c *websocket.Conn, lost <-chan error, req []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req, &m); err != nil {
		return err
	}
	ch := make(chan []byte, 1)
	b.mu.Lock()
	b.ownSeq++
	id := strconv.Quote("lore-bridge-" + strconv.Itoa(b.ownSeq))
	b.own[id] = ch
	b.mu.Unlock()
	m["id"] = json.RawMessage(id)
	data, _ := json.Marshal(m)
	if err := c.Write(ctx, websocket.MessageText, data); err != nil {
		return err
	}
	t := time.NewTimer(replayTimeout)
	defer t.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			return errors.New("the connection ended")
		}
		var r struct {
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(resp, &r) == nil && r.Error != nil {
			return errors.New(r.Error.Message)
		}
		return nil
	case err := <-lost:
		return &errLost{err}
	case <-t.C:
		return fmt.Errorf("no answer within %s", replayTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}
