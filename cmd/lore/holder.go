package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// A holder serves the store it has open to the other Lore processes of its
// user on a Unix socket:
//
//	GET  /v1/hello     who it is (holderInfo)
//	GET  /v1/mcp       a WebSocket carrying one MCP session: the client's
//	                   sessionConfig, the holder's handshakeReply, then one
//	                   JSON-RPC message per text message each way; a binary
//	                   message from the client ends its input (stdin EOF)
//	POST /v1/attach    lore mcp hands its stdin and stdout over, and the
//	                   holder serves the session on them (attach_unix.go)
//	GET  /v1/run       a WebSocket running one CLI command (remote.go)
//	POST /v1/handover  a background holder gives the store up
//
// Each MCP session runs mcp.Server.ServeStdio on the bridged stream (or,
// attached, on lore mcp's own stdin and stdout), so a bridged session
// behaves as a direct one does, stdin EOF included.
type holder struct {
	kind     string
	store    graph.Store
	path     string
	sock     string
	readOnly bool
	log      *slog.Logger

	ln net.Listener
	hs *http.Server

	watchCtx    context.Context // ends the servers' change feeds
	cancelWatch context.CancelFunc
	watchers    sync.WaitGroup

	mu          sync.Mutex
	servers     map[sessionConfig]*mcp.Server
	active      int                                    // sessions and commands now
	conns       map[*websocket.Conn]struct{}           // MCP sessions' sockets
	attached    map[*attached]struct{}                 // attached MCP sessions
	runs        map[*websocket.Conn]context.CancelFunc // CLI commands' sockets
	sessions    sync.WaitGroup
	idle        time.Duration // 0: never exit for want of clients
	timer       *time.Timer
	closing     bool // accepts no more sessions
	closeCode   websocket.StatusCode
	closeReason string
	done        chan struct{} // closed when the process should stop (idle, handover)
	doneOnce    sync.Once
	stopped     chan struct{} // closed when stop has closed the store
}

// WebSocket close codes a holder ends sessions with.
const (
	// statusHandover: the store went to another process (lore serve);
	// bridges wait for it instead of starting a holder of their own.
	statusHandover websocket.StatusCode = 4001
	// statusStopping: the holder stopped; bridges find or start another.
	statusStopping websocket.StatusCode = 4002
)

// holderOptions configure startHolder.
type holderOptions struct {
	kind     string // kindServe, kindHold or kindMCP
	store    graph.Store
	path     string // the store directory
	readOnly bool
	idle     time.Duration // how long without a client before the process should stop; 0: never
	log      *slog.Logger
	getenv   func(string) string
}

// startHolder listens on the store's socket, records it in the owner file
// and serves there until stop. The caller holds the store.
func startHolder(o holderOptions) (*holder, error) {
	if isRemote(o.path) {
		return startRemoteHolder(o), nil
	}
	ln, sock, err := listenSocket(o.path, o.getenv)
	if err != nil {
		return nil, fmt.Errorf("listening for other Lore processes: %w", err)
	}
	h := &holder{kind: o.kind, store: o.store, path: o.path, sock: sock, readOnly: o.readOnly,
		log: o.log, ln: &peerListener{Listener: ln, uid: os.Getuid(), log: o.log}, idle: o.idle,
		servers: map[sessionConfig]*mcp.Server{}, conns: map[*websocket.Conn]struct{}{}, runs: map[*websocket.Conn]context.CancelFunc{},
		attached: map[*attached]struct{}{}, done: make(chan struct{}), stopped: make(chan struct{})}
	h.watchCtx, h.cancelWatch = context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hello", h.serveHello)
	mux.HandleFunc("GET /v1/mcp", h.serveMCP)
	mux.HandleFunc("POST /v1/attach", h.serveAttach)
	mux.HandleFunc("GET /v1/run", h.serveRun)
	mux.HandleFunc("POST /v1/handover", h.serveHandover)
	h.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(o.log.Handler(), slog.LevelWarn)}
	if err := writeOwner(o.path, sock); err != nil {
		o.log.Warn("recording the socket in the owner file", "error", err)
	}
	go func() {
		if err := h.hs.Serve(h.ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			o.log.Error("holder socket", "error", err)
		}
	}()
	if h.idle > 0 {
		h.timer = time.AfterFunc(h.idle, h.idleExpired)
	}
	o.log.Info("holding the store for other Lore processes", "store", o.path, "socket", sock)
	return h, nil
}

// startRemoteHolder returns the holder of a database store: it serves no
// socket (every process opens the database itself), and only follows the
// change log for its servers and closes the store at stop.
func startRemoteHolder(o holderOptions) *holder {
	h := &holder{kind: o.kind, store: o.store, path: o.path, readOnly: o.readOnly,
		log: o.log, ln: closedListener{}, servers: map[sessionConfig]*mcp.Server{}, conns: map[*websocket.Conn]struct{}{},
		runs: map[*websocket.Conn]context.CancelFunc{}, attached: map[*attached]struct{}{}, done: make(chan struct{}), stopped: make(chan struct{}),
		hs: &http.Server{}}
	h.watchCtx, h.cancelWatch = context.WithCancel(context.Background())
	return h
}

// closedListener stands for the socket of a holder that serves none.
type closedListener struct{}

func (closedListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }
func (closedListener) Close() error              { return nil }
func (closedListener) Addr() net.Addr            { return &net.UnixAddr{Net: "unix"} }

// listenSocket listens on the socket of the store in dir, owner-only.
func listenSocket(dir string, getenv func(string) string) (net.Listener, string, error) {
	sock := socketPath(dir, getenv)
	if filepath.Dir(sock) != filepath.Clean(dir) {
		if err := ensurePrivateDir(filepath.Dir(sock)); err != nil {
			return nil, "", err
		}
	}
	// A socket left there belongs to a holder that died: this process
	// holds the store now.
	if fi, err := os.Lstat(sock); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, "", fmt.Errorf("%s exists and is not a socket; remove it", sock)
		}
		os.Remove(sock)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, "", err
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return nil, "", err
	}
	return ln, sock, nil
}

// errNotUnixConn: a connection that is not a Unix socket's.
var errNotUnixConn = errors.New("not a Unix socket connection")

// A peerListener accepts only connections from processes of its user.
type peerListener struct {
	net.Listener
	uid int
	log *slog.Logger
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && uid == l.uid {
			return c, nil
		}
		l.log.Warn("refused a connection from another user", "uid", uid, "error", err)
		c.Close()
	}
}

// info says who the holder is.
func (h *holder) info() holderInfo {
	h.mu.Lock()
	n := h.active
	h.mu.Unlock()
	return holderInfo{PID: os.Getpid(), Command: strings.Join(os.Args, " "), Kind: h.kind, Version: version, Store: h.path,
		Socket: h.sock, ReadOnly: h.readOnly, Model: modelHash(h.store.Model()), Sessions: n}
}

func (h *holder) serveHello(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(h.info())
}

// enter counts a session or command in, or reports that the holder is
// stopping.
func (h *holder) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.active++
	h.sessions.Add(1)
	if h.timer != nil {
		h.timer.Stop()
	}
	return true
}

// leave counts a session or command out; the last one starts the idle
// timer.
func (h *holder) leave() {
	h.mu.Lock()
	h.active--
	if h.active == 0 && h.timer != nil && !h.closing {
		h.timer.Reset(h.idle)
	}
	h.mu.Unlock()
	h.sessions.Done()
}

// idleExpired stops a holder that has had no client for its idle period:
// it accepts no more (a client that connects now is told to connect again,
// and starts the next holder), then the process stops.
func (h *holder) idleExpired() {
	h.mu.Lock()
	quit := h.active == 0 && !h.closing
	if quit {
		h.closing = true
	}
	h.mu.Unlock()
	if quit {
		h.log.Info("no client for the idle period; stopping", "idle", h.idle)
		h.exit()
	}
}

// exit tells the process to stop.
func (h *holder) exit() { h.doneOnce.Do(func() { close(h.done) }) }

// Done is closed when the holder's process should stop: after its idle
// period without clients, or once it handed the store over.
func (h *holder) Done() <-chan struct{} { return h.done }

// stop stops accepting, ends the sessions with code and reason (the
// commands running are cancelled), and closes the store. It may be called
// more than once; each call returns once the store is closed.
func (h *holder) stop(code websocket.StatusCode, reason string) {
	h.mu.Lock()
	if h.closeCode != 0 {
		h.mu.Unlock()
		<-h.stopped
		return
	}
	h.closing, h.closeCode, h.closeReason = true, code, reason
	if h.timer != nil {
		h.timer.Stop()
	}
	conns := make([]*websocket.Conn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	runs := make([]*websocket.Conn, 0, len(h.runs))
	for c, cancel := range h.runs {
		cancel()
		runs = append(runs, c)
	}
	h.mu.Unlock()
	h.ln.Close() // the socket file goes with it
	for _, c := range conns {
		go c.Close(code, reason)
	}
	h.releaseAttached(code, reason)
	// A command cancelled but blocked writing to a client that does not
	// read must not keep the store open: its socket is dropped.
	drop := time.AfterFunc(runGrace, func() {
		for _, c := range runs {
			c.CloseNow()
		}
	})
	h.sessions.Wait()
	drop.Stop()
	h.cancelWatch()
	h.watchers.Wait()
	if err := h.store.Close(); err != nil {
		h.log.Error("closing the store", "error", err)
	}
	close(h.stopped)
}

// shutdown ends the HTTP server on the socket once stop has run, after the
// answers in progress (a handover's) are written.
func (h *holder) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.hs.Shutdown(ctx)
}

func (h *holder) serveHandover(w http.ResponseWriter, r *http.Request) {
	if h.kind != kindHold {
		info := h.info()
		http.Error(w, fmt.Sprintf("%s is not a background holder, and keeps the store; stop it first", info.describe()), http.StatusConflict)
		return
	}
	var req struct {
		PID     int    `json:"pid"`
		Command string `json:"command"`
	}
	data, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err := schema.CheckJSON(data, schema.DefaultMaxDepth); err != nil || json.Unmarshal(data, &req) != nil {
		http.Error(w, "want {\"pid\":N,\"command\":\"…\"}", http.StatusBadRequest)
		return
	}
	h.log.Info("handing the store over", "pid", req.PID, "command", req.Command)
	h.stop(statusHandover, fmt.Sprintf("handed over to pid %d", req.PID))
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"closed":true}`)
	h.exit()
}

// sessionConfig is what a bridged MCP session asks of the holder: the
// options of its own lore mcp's flags.
type sessionConfig struct {
	ReadOnly         bool         `json:"readOnly"`
	Ceilings         graph.Limits `json:"ceilings"`
	MaxDepth         int          `json:"maxDepth"`
	MaxSubscriptions int          `json:"maxSubscriptions"`
	// Model is the SHA-256 (hex) of the session's --model document; ""
	// means the store's model.
	Model string `json:"model,omitempty"`
	// ModelFile names that document, for messages.
	ModelFile string `json:"modelFile,omitempty"`
}

// handshakeReply answers a sessionConfig.
type handshakeReply struct {
	Holder *holderInfo `json:"holder,omitempty"`
	Error  string      `json:"error,omitempty"`
}

// modelHash is the SHA-256 of a model document, hex; "" for nil.
func modelHash(m *schema.Model) string {
	if m == nil {
		return ""
	}
	sum := sha256.Sum256(m.JSON())
	return hex.EncodeToString(sum[:])
}

// server returns the MCP server for sessions of cfg, building it (and
// starting its change feed) the first time.
func (h *holder) server(cfg sessionConfig) (*mcp.Server, error) {
	// The store's model now: lore model apply may have changed it since
	// the holder started.
	if cfg.Model != "" && cfg.Model != modelHash(h.store.Model()) {
		info := h.info()
		return nil, fmt.Errorf("--model %s differs from the model of the store, which %s holds and validates with; "+
			"leave --model out to use the store's, or stop that process to open the store with another model", cfg.ModelFile, info.describe())
	}
	if cfg.MaxDepth <= 0 || cfg.MaxSubscriptions <= 0 {
		return nil, errors.New("--max-depth and --max-subscriptions must be positive")
	}
	key := cfg
	key.Model, key.ModelFile = "", ""
	key.ReadOnly = key.ReadOnly || h.readOnly
	h.mu.Lock()
	defer h.mu.Unlock()
	if srv := h.servers[key]; srv != nil {
		return srv, nil
	}
	srv := newMCPServer(h.store, key, h.log)
	h.addServerLocked(key, srv)
	return srv, nil
}

// addServer makes srv the server for sessions of cfg and starts its
// change feed (lore serve adds the one its HTTP surfaces use).
func (h *holder) addServer(cfg sessionConfig, srv *mcp.Server) {
	h.mu.Lock()
	h.addServerLocked(cfg, srv)
	h.mu.Unlock()
}

func (h *holder) addServerLocked(cfg sessionConfig, srv *mcp.Server) {
	h.servers[cfg] = srv
	h.watchers.Add(1)
	go func() {
		defer h.watchers.Done()
		if err := srv.Watch(h.watchCtx); err != nil {
			h.log.Error("change feed stopped", "error", err)
		}
	}()
}

// newMCPServer builds the MCP server for sessions of cfg over s.
func newMCPServer(s graph.Store, cfg sessionConfig, log *slog.Logger) *mcp.Server {
	return newMeteredServer(s, cfg, log, nil)
}

// newMeteredServer is newMCPServer whose store operations and tool calls
// m measures (m nil: none).
func newMeteredServer(s graph.Store, cfg sessionConfig, log *slog.Logger, m *web.Metrics) *mcp.Server {
	o := &mcp.Options{ReadOnly: cfg.ReadOnly, Ceilings: cfg.Ceilings, Logger: log, MaxDepth: cfg.MaxDepth}
	if m != nil {
		s, o.Observe = m.Store(s), m.ObserveCall
	}
	cat := mcp.NewCatalog(s, o)
	return mcp.NewServer(cat, &mcp.ServerOptions{Version: version, Logger: log, MaxDepth: cfg.MaxDepth, MaxSubscriptions: cfg.MaxSubscriptions})
}

// runGrace is how long stop lets cancelled commands end before it drops
// their sockets.
const runGrace = 10 * time.Second

// maxHandshake caps the first message of a session or command.
const maxHandshake = 1 << 20

// accept admits one connection to the socket: nil when the holder is
// stopping (answered 503) or the upgrade failed. done closes it and lets
// the holder stop.
func (h *holder) accept(w http.ResponseWriter, r *http.Request) (c *websocket.Conn, done func()) {
	if !h.enter() {
		http.Error(w, "the holder is stopping; connect again", http.StatusServiceUnavailable)
		return nil, nil
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		h.leave()
		return nil, nil
	}
	c.SetReadLimit(maxHandshake)
	return c, func() { c.CloseNow(); h.leave() }
}

func (h *holder) serveMCP(w http.ResponseWriter, r *http.Request) {
	c, done := h.accept(w, r)
	if c == nil {
		return
	}
	defer done()
	// The socket's context is never cancelled: cancelling it would drop
	// the connection without a close code. stop closes it with one.
	ctx := context.Background()
	var cfg sessionConfig
	if err := readJSON(ctx, c, &cfg); err != nil {
		c.Close(websocket.StatusPolicyViolation, "want a session configuration")
		return
	}
	srv, err := h.server(cfg)
	if err != nil {
		writeJSON(ctx, c, handshakeReply{Error: err.Error()})
		c.Close(websocket.StatusPolicyViolation, "refused")
		return
	}
	if !h.track(c) {
		return
	}
	defer h.untrack(c)
	info := h.info()
	if err := writeJSON(ctx, c, handshakeReply{Holder: &info}); err != nil {
		return
	}
	c.SetReadLimit(-1) // the session caps lines itself (mcp.ServerOptions.MaxMessageBytes)
	err = srv.ServeStdio(ctx, &wsLineReader{c: c, ctx: ctx}, &wsWriter{c: c, ctx: ctx})
	if err != nil {
		h.log.Debug("bridged session ended", "error", err)
	}
	h.mu.Lock()
	code, reason := h.closeCode, h.closeReason
	h.mu.Unlock()
	if code == 0 {
		code = websocket.StatusNormalClosure
	}
	c.Close(code, reason)
}

// track records an MCP session's socket for stop, unless stop began.
func (h *holder) track(c *websocket.Conn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closeCode != 0 {
		c.Close(h.closeCode, h.closeReason)
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

func (h *holder) untrack(c *websocket.Conn) {
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
}

// readJSON reads one text message and decodes it, checked first.
func readJSON(ctx context.Context, c *websocket.Conn, v any) error {
	typ, data, err := c.Read(ctx)
	if err != nil {
		return err
	}
	if typ != websocket.MessageText {
		return errors.New("want a JSON text message")
	}
	if err := schema.CheckJSON(data, schema.DefaultMaxDepth); err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func writeJSON(ctx context.Context, c *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Write(ctx, websocket.MessageText, data)
}

// A wsLineReader reads a bridged MCP session's input: each text message is
// one line (a newline is added where it lacks one), and a binary message
// is the end of input.
type wsLineReader struct {
	c      *websocket.Conn
	ctx    context.Context
	cur    io.Reader // the message being read
	lastNL bool      // the last byte passed on was a newline
	eof    bool
}

func (r *wsLineReader) Read(p []byte) (int, error) {
	for {
		if r.eof {
			return 0, io.EOF
		}
		if r.cur == nil {
			typ, rd, err := r.c.Reader(r.ctx)
			if err != nil {
				return 0, err
			}
			if typ == websocket.MessageBinary {
				r.eof = true
				continue
			}
			r.cur, r.lastNL = rd, true
		}
		n, err := r.cur.Read(p)
		if n > 0 {
			r.lastNL = p[n-1] == '\n'
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			r.cur = nil
			if !r.lastNL {
				p[0] = '\n'
				r.lastNL = true
				return 1, nil
			}
			continue
		}
		if err != nil {
			return 0, err
		}
	}
}

// A wsWriter sends each write (the server writes one message at a time)
// as one text message.
type wsWriter struct {
	c   *websocket.Conn
	ctx context.Context
}

func (w *wsWriter) Write(p []byte) (int, error) {
	if err := w.c.Write(w.ctx, websocket.MessageText, bytes.TrimSuffix(p, []byte("\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}
