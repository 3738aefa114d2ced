package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lore-dev/lore/mcp"
)

// ServerOptions configure a Server. Zero fields take the defaults below.
type ServerOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers; it is never
	// longer than ReadTimeout, which bounds the whole request.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included, so a
	// body trickled a byte at a time is dropped (408). It must be longer
	// than the longest request a handler serves: past it, net/http
	// cancels the request's context.
	ReadTimeout time.Duration
	// WriteTimeout bounds a response, from the end of its request's
	// headers. Streamed responses (server-sent events) are not bound as a
	// whole: each of their writes is (mcp.StreamResponse). WebSockets are
	// not bound (their pings drop a client that stops answering).
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's header section, URL included.
	MaxHeaderBytes int
	// MaxConns caps open connections. Past it a new connection makes room
	// by closing one that waits idle between requests (or has sent nothing
	// for a second); when none does, it is answered 503 with Retry-After
	// and closed, instead of waiting unanswered in the listen queue.
	MaxConns int
	// Logger receives server logs; nil discards them.
	Logger *slog.Logger
}

// Defaults of ServerOptions.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultMaxConns          = 512
	// shutdownGrace is how long Serve waits for requests in flight.
	shutdownGrace = 5 * time.Second
	// newConnGrace is how long a connection may stay silent before it may
	// be closed to make room for another.
	newConnGrace = time.Second
)

func (o *ServerOptions) withDefaults() ServerOptions {
	var d ServerOptions
	if o != nil {
		d = *o
	}
	def := func(v *time.Duration, x time.Duration) {
		if *v <= 0 {
			*v = x
		}
	}
	def(&d.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&d.ReadTimeout, DefaultReadTimeout)
	def(&d.WriteTimeout, DefaultWriteTimeout)
	def(&d.IdleTimeout, DefaultIdleTimeout)
	// Headers are part of the request: net/http gives them the header
	// timeout alone, so a longer one would let them trickle past ReadTimeout.
	d.ReadHeaderTimeout = min(d.ReadHeaderTimeout, d.ReadTimeout)
	if d.MaxHeaderBytes <= 0 {
		d.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if d.MaxConns <= 0 {
		d.MaxConns = DefaultMaxConns
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return d
}

// A Server serves a handler with timeouts and a connection cap.
type Server struct {
	hs     *http.Server
	conns  *connLimiter
	cancel context.CancelFunc // ends every request's context
}

// NewServer returns a server for h.
func NewServer(h http.Handler, opts *ServerOptions) *Server {
	o := opts.withDefaults()
	base, cancel := context.WithCancel(context.Background())
	s := &Server{cancel: cancel, conns: &connLimiter{max: o.MaxConns, log: o.Logger, conns: map[*limitedConn]connInfo{},
		refusing: make(chan struct{}, 64)}}
	s.hs = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return base },
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return mcp.WithStreamWriteTimeout(ctx, o.WriteTimeout)
		},
		ConnState: s.conns.state,
		ErrorLog:  slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
	return s
}

// Serve serves on ln until ctx is done, then shuts down without hanging
// on open streams: every request's context is cancelled first, then
// requests in flight get a few seconds to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.hs.Serve(&limitListener{Listener: ln, l: s.conns}) }()
	select {
	case err := <-errc:
		s.cancel()
		return err
	case <-ctx.Done():
	}
	s.cancel() // ends open SSE streams so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := s.hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// connLimiter counts a listener's open connections and knows which ones
// may be closed to make room.
type connLimiter struct {
	max      int
	log      *slog.Logger
	refusing chan struct{} // bounds the refusals being written at once
	lastLog  atomic.Int64  // when a refusal was last logged (Unix seconds)

	mu    sync.Mutex
	open  int
	conns map[*limitedConn]connInfo // those net/http serves, by state
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

// admit counts a new connection in, closing another to make room if it
// must; it returns nil when there is no room.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	l.mu.Lock()
	var evict *limitedConn
	if l.open >= l.max {
		now := time.Now()
		for lc, info := range l.conns {
			if info.state == http.StateIdle || info.state == http.StateNew && now.Sub(info.since) > newConnGrace {
				evict = lc
				break
			}
		}
		if evict == nil {
			l.mu.Unlock()
			return nil
		}
		delete(l.conns, evict)
	}
	l.open++
	l.mu.Unlock()
	if evict != nil {
		evict.Close()
	}
	return &limitedConn{Conn: c, l: l}
}

func (l *connLimiter) release(c *limitedConn) {
	l.mu.Lock()
	l.open--
	delete(l.conns, c)
	l.mu.Unlock()
}

// state follows net/http's view of each connection.
func (l *connLimiter) state(c net.Conn, st http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed.Load() {
		return
	}
	switch st {
	case http.StateNew, http.StateIdle, http.StateActive:
		l.conns[lc] = connInfo{state: st, since: time.Now()}
	default: // hijacked (a WebSocket, still open and counted) or closed
		delete(l.conns, lc)
	}
}

// refuse answers a connection there is no room for with 503 and closes
// it. It reads what the client sent before closing, so that the kernel
// does not reset the connection under the answer.
func (l *connLimiter) refuse(c net.Conn) {
	if now := time.Now().Unix(); l.lastLog.Swap(now) != now {
		l.log.Warn("refusing connections: at the limit (--max-conns)", "max", l.max)
	}
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close() // a flood: no answer
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		defer c.Close()
		msg := fmt.Sprintf("Service Unavailable: the server has %d open connections, its limit (--max-conns); retry in a moment\n", l.max)
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nRetry-After: 1\r\n"+
			"Connection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg); err != nil {
			return
		}
		if tc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = tc.CloseWrite()
		}
		buf := make([]byte, 4096)
		for range 16 {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	}()
}

// limitListener admits connections through a connLimiter.
type limitListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ll.l.admit(c); lc != nil {
			return lc, nil
		}
		ll.l.refuse(c)
	}
}

// limitedConn leaves the count when it closes.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	closed atomic.Bool
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	if !c.closed.Swap(true) {
		c.l.release(c)
	}
	return err
}
