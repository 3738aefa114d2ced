//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// Attached sessions. A lore mcp whose stdin and stdout are pipes or
// sockets (as an MCP client starts it) hands both to the holder over the
// holder's socket (SCM_RIGHTS), and the holder serves the session on them
// itself: no process relays the messages, so a call costs what it costs
// on lore mcp --direct. lore mcp then only waits for the session's end.
//
// The exchange, on a connection upgraded from POST /v1/attach:
//
//	bridge → holder  its sessionConfig (JSON), with stdin and stdout as rights
//	holder → bridge  a handshakeReply line
//	holder → bridge  at the end, an attachEnd line
//
// How a session ends:
//   - the client closes stdin: the holder answers what it read and says
//     End; lore mcp exits 0.
//   - the holder stops or hands the store over (lore serve): it stops
//     reading, writes nothing more, and hands back the session's state and
//     the input it read but did not serve; lore mcp relays the session from
//     then on (bridge.go), set up again on the next holder, and answers the
//     requests left unanswered with an error saying to retry.
//   - the holder dies (kill -9): what it had read is lost with it, so
//     nothing can say which requests were in flight; lore mcp exits with a
//     message saying so, and the client starts it again. (lore mcp --relay
//     keeps every message in its own hands, and survives this too.)
//   - lore mcp goes away: the holder ends the session.

// attachProto is the Upgrade token of an attach request.
const attachProto = "lore-attach"

// attachEnd is the holder's last word on an attached session.
type attachEnd struct {
	// End: the client's input ended and every request read was answered.
	End bool `json:"end,omitempty"`
	// Error: serving stopped on an error of its own (Code 0).
	Error string `json:"error,omitempty"`
	// Code and Reason: the holder let the session go (statusHandover or
	// statusStopping); State and Rest are what the relay goes on with.
	Code   websocket.StatusCode `json:"code,omitempty"`
	Reason string               `json:"reason,omitempty"`
	State  *sessionState        `json:"state,omitempty"`
	Rest   []byte               `json:"rest,omitempty"`
}

// An attached session, as its holder serves it.
type attached struct {
	in, out *os.File

	mu       sync.Mutex // the fields below, and writes to out
	closed   bool       // out takes no more writes
	code     websocket.StatusCode
	reason   string
	gone     bool // the bridge went away
	finished bool

	stMu sync.Mutex
	st   sessionState
}

// errReleased: a message written after the holder let its session go.
var errReleased = errors.New("the session was handed back to lore mcp")

// Write writes one message to the client, unless the session was let go:
// the bridge answers for it from then on. The session's state takes in
// what it wrote before the lock is let go, so that the state finish hands
// over holds every message the client was sent: taken in after the lock,
// a response could reach the client and miss the state, and the bridge
// would answer its request a second time, or forget the subscription it
// made.
func (a *attached) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, errReleased
	}
	n, err := a.out.Write(p)
	if err == nil {
		a.note(p, false)
	}
	return n, err
}

// observe keeps the session's state from the client's messages
// (mcp.StdioOptions.Observe); Write takes in the holder's.
func (a *attached) observe(msg []byte) { a.note(msg, true) }

// note takes what msg means into the session's state.
func (a *attached) note(msg []byte, fromClient bool) {
	a.stMu.Lock()
	defer a.stMu.Unlock()
	for _, m := range splitBatch(msg) {
		if fromClient {
			a.st.fromClient(m)
		} else {
			a.st.fromHolder(m)
		}
	}
}

// release lets the session go: nothing more is written to the client, and
// the read in progress ends. code 0 with gone: the bridge went away.
func (a *attached) release(code websocket.StatusCode, reason string, gone bool) {
	a.mu.Lock()
	if a.finished || a.closed {
		a.mu.Unlock()
		return
	}
	a.closed, a.code, a.reason, a.gone = true, code, reason, gone
	a.mu.Unlock()
	a.in.SetReadDeadline(time.Unix(1, 0))
}

// finish closes the session after serving ended, and returns what to tell
// the bridge (nil: it went away).
func (a *attached) finish(rest []byte, err error) *attachEnd {
	a.mu.Lock()
	a.finished, a.closed = true, true
	code, reason, gone := a.code, a.reason, a.gone
	a.mu.Unlock()
	a.in.Close()
	a.out.Close()
	switch {
	case gone:
		return nil
	case code != 0:
		a.stMu.Lock()
		st := a.st
		a.stMu.Unlock()
		return &attachEnd{Code: code, Reason: reason, State: &st, Rest: rest}
	case err != nil:
		return &attachEnd{Error: err.Error()}
	}
	return &attachEnd{End: true}
}

// serveAttach serves an MCP session on the stdin and stdout lore mcp hands
// over.
func (h *holder) serveAttach(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != attachProto {
		http.Error(w, "want Upgrade: "+attachProto, http.StatusBadRequest)
		return
	}
	if !h.enter() {
		http.Error(w, "the holder is stopping; connect again", http.StatusServiceUnavailable)
		return
	}
	defer h.leave()
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot take the connection over", http.StatusInternalServerError)
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok || brw.Reader.Buffered() > 0 {
		return // the bridge sends nothing before it has the upgrade
	}
	brw.Writer.Flush()
	if _, err := io.WriteString(uc, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+attachProto+"\r\n\r\n"); err != nil {
		return
	}
	uc.SetDeadline(time.Now().Add(helloTimeout))
	cfg, files, err := readAttach(uc)
	if err != nil {
		h.log.Warn("refused an attach", "error", err)
		writeLine(uc, handshakeReply{Error: err.Error()})
		return
	}
	srv, err := h.server(cfg)
	if err != nil {
		closeAll(files)
		writeLine(uc, handshakeReply{Error: err.Error()})
		return
	}
	a := &attached{in: files[0], out: files[1], st: newSessionState()}
	if !h.trackAttached(a) {
		closeAll(files)
		writeLine(uc, handshakeReply{Error: "the holder is stopping; connect again"})
		return
	}
	defer h.untrackAttached(a)
	info := h.info()
	if err := writeLine(uc, handshakeReply{Holder: &info}); err != nil {
		a.finish(nil, nil)
		return
	}
	uc.SetDeadline(time.Time{})
	// The bridge sends nothing more: its connection's end is its going away.
	go func() {
		io.Copy(io.Discard, uc)
		a.release(0, "", true)
	}()
	rest, err := srv.ServeStdioWith(context.Background(), a.in, a, mcp.StdioOptions{Observe: a.observe})
	if end := a.finish(rest, err); end != nil {
		uc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		writeLine(uc, end)
	}
}

// trackAttached records an attached session for stop, unless stop began.
func (h *holder) trackAttached(a *attached) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closeCode != 0 {
		return false
	}
	h.attached[a] = struct{}{}
	return true
}

func (h *holder) untrackAttached(a *attached) {
	h.mu.Lock()
	delete(h.attached, a)
	h.mu.Unlock()
}

// releaseAttached lets every attached session go (stop).
func (h *holder) releaseAttached(code websocket.StatusCode, reason string) {
	h.mu.Lock()
	as := make([]*attached, 0, len(h.attached))
	for a := range h.attached {
		as = append(as, a)
	}
	h.mu.Unlock()
	for _, a := range as {
		a.release(code, reason, false)
	}
}

// readAttach reads an attach request: the session's configuration, and
// stdin and stdout as pipes or sockets made non-blocking, so that a
// deadline can end a read.
func readAttach(uc *net.UnixConn) (cfg sessionConfig, files []*os.File, err error) {
	buf := make([]byte, 64<<10)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
	if err != nil {
		return cfg, nil, err
	}
	var fds []int
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if rights, err := syscall.ParseUnixRights(&m); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	fail := func(err error) (sessionConfig, []*os.File, error) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return cfg, nil, err
	}
	if flags&syscall.MSG_CTRUNC != 0 || len(fds) != 2 {
		return fail(errors.New("want stdin and stdout, and only them"))
	}
	if err := schema.CheckJSON(buf[:n], schema.DefaultMaxDepth); err != nil {
		return fail(err)
	}
	if err := json.Unmarshal(buf[:n], &cfg); err != nil {
		return fail(err)
	}
	for _, fd := range fds {
		syscall.CloseOnExec(fd)
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			return fail(err)
		}
		if st.Mode&syscall.S_IFMT != syscall.S_IFIFO && st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
			return fail(errors.New("want pipes or sockets"))
		}
		// Non-blocking, a pipe is pollable: os.NewFile then reads it
		// through the runtime's poller, with deadlines.
		if err := syscall.SetNonblock(fd, true); err != nil {
			return fail(err)
		}
	}
	return cfg, []*os.File{os.NewFile(uintptr(fds[0]), "attached stdin"), os.NewFile(uintptr(fds[1]), "attached stdout")}, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// writeLine writes v as one JSON line.
func writeLine(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// attachFiles returns stdin and stdout if both are pipes or sockets, which
// the holder can be handed.
func attachFiles(e *env) (in, out *os.File, ok bool) {
	in, ok1 := e.stdin.(*os.File)
	out, ok2 := e.stdout.(*os.File)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	for _, f := range []*os.File{in, out} {
		fi, err := f.Stat()
		if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
			return nil, nil, false
		}
	}
	return in, out, true
}

// errNoAttach: the holder does not take attached sessions (an older lore).
var errNoAttach = errors.New("the holder does not take attached sessions")

// An attachConn is lore mcp's end of an attached session.
type attachConn struct {
	c  net.Conn
	br *bufio.Reader
}

// openAttach hands stdin and stdout to the holder h.
func (b *bridge) openAttach(ctx context.Context, h *holderConn) (*attachConn, holderInfo, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", h.info.Socket)
	if err != nil {
		return nil, h.info, err
	}
	uc := c.(*net.UnixConn)
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	if dl, has := ctx.Deadline(); has {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(helloTimeout))
	}
	req, _ := http.NewRequest("POST", holderBase+"/v1/attach", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", attachProto)
	if err := req.Write(c); err != nil {
		return nil, h.info, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return nil, h.info, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		if resp.StatusCode == http.StatusServiceUnavailable {
			return nil, h.info, errors.New("the holder is stopping")
		}
		return nil, h.info, errNoAttach
	}
	cfg, _ := json.Marshal(b.o.config)
	var fds []int
	for _, f := range []*os.File{b.attachIn, b.attachOut} {
		raw, err := f.SyscallConn()
		if err != nil {
			return nil, h.info, err
		}
		raw.Control(func(fd uintptr) { fds = append(fds, int(fd)) })
	}
	if _, _, err := uc.WriteMsgUnix(cfg, syscall.UnixRights(fds...), nil); err != nil {
		return nil, h.info, err
	}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, h.info, err
	}
	var reply handshakeReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return nil, h.info, err
	}
	if reply.Error != "" || reply.Holder == nil {
		return nil, h.info, &refusedError{reply.Error}
	}
	c.SetDeadline(time.Time{})
	ok = true
	return &attachConn{c: c, br: br}, *reply.Holder, nil
}

// maxAttachEnd caps the holder's last word: the session's state and the
// input it read (at most a line over the cap, and a read buffer).
const maxAttachEnd = 4*defaultMaxLine + 1<<20

// waitAttached waits for the end of an attached session. It returns done
// when the session is over, or the state and input to relay from (the
// holder let it go), or an error for lore mcp to exit with.
func (b *bridge) waitAttached(ctx context.Context, ac *attachConn, info holderInfo) (done bool, end *attachEnd, err error) {
	stop := context.AfterFunc(ctx, func() { ac.c.Close() })
	defer stop()
	defer ac.c.Close()
	var e attachEnd
	derr := json.NewDecoder(io.LimitReader(ac.br, maxAttachEnd)).Decode(&e)
	if ctx.Err() != nil {
		return true, nil, nil // the holder, which may be reading still, ends the session
	}
	// stdin and stdout are this process's again: blocking, as they were.
	for _, f := range []*os.File{b.attachIn, b.attachOut} {
		if raw, err := f.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { syscall.SetNonblock(int(fd), false) })
		}
	}
	switch {
	case derr != nil:
		return false, nil, &exitError{1, fmt.Errorf("the holder of %s (pid %d) went away while it served this session (killed?), "+
			"and what it had read went with it: the requests in flight may or may not have taken effect; restart this MCP server "+
			"(it finds or starts the next holder)", b.o.store, info.PID)}
	case e.End:
		return true, nil, nil
	case e.Error != "":
		return false, nil, &exitError{1, fmt.Errorf("the holder of %s (pid %d) stopped serving this session: %s", b.o.store, info.PID, e.Error)}
	case e.State == nil:
		return false, nil, &exitError{1, fmt.Errorf("the holder of %s (pid %d) let this session go without its state", b.o.store, info.PID)}
	}
	return false, &e, nil
}
