package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/lore-dev/lore/schema"
)

// HTTPOptions configure the Streamable HTTP endpoint and the guards every
// HTTP surface shares.
type HTTPOptions struct {
	// Logger receives transport logs; nil discards them.
	Logger *slog.Logger
	// AllowedOrigins lists the browser origins ("https://app.example.com")
	// allowed besides loopback ones. Requests from any other Origin get 403.
	AllowedOrigins []string
	// AllowedHosts lists the names a request's Host header may carry
	// besides loopback ones (localhost, 127.0.0.0/8, [::1]): a name
	// ("lore.example.com") allows it on any port, a name with a port
	// ("lore.example.com:8443") on that port only. Any other Host gets 403,
	// which defeats DNS rebinding: a page on another site that makes its
	// name resolve to this server still sends its own name.
	AllowedHosts []string
	// Tokens, if not empty, require a bearer token on every request.
	Tokens []Token
	// ResourceURL is the public URL of the MCP endpoint, named in the OAuth
	// protected-resource metadata and in WWW-Authenticate ("" : none).
	ResourceURL string
	// MaxBodyBytes caps a request body; 0 means 1 MiB.
	MaxBodyBytes int64
	// MaxJSONDepth caps the nesting of JSON a request carries, checked
	// before anything decodes it; 0 means schema.DefaultMaxDepth.
	MaxJSONDepth int
	// RateLimit is the requests per second each caller (token, or client
	// address without auth) may make on average, with bursts of RateBurst;
	// 0 means 50 per second with bursts of 100; negative means no limit.
	// Public routes (Public) get the same rate per client address.
	RateLimit float64
	RateBurst int
	// AuthFailures is how many requests with a wrong bearer token a client
	// address may send per minute; past it, every request of that address
	// that carries a token gets 429 until the minute's allowance refills.
	// 0 means 10; negative means no limit.
	AuthFailures int
	// SessionTimeout ends idle legacy sessions; 0 means 30 minutes.
	SessionTimeout time.Duration
	// MaxSessions caps the legacy (stateful) sessions each caller (token,
	// or client address without auth) may hold open; the next initialize
	// gets 429. 0 means 64; negative means no cap.
	MaxSessions int
}

// A Token is a bearer token and what it may do.
type Token struct {
	Name   string // who holds it, for logs and rate limits
	Scope  string // ScopeRead or ScopeWrite (which includes read)
	Secret string
}

// ModernVersion is the first protocol version served statelessly.
const ModernVersion = "2026-07-28"

// Defaults of HTTPOptions.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultRateLimit      = 50
	DefaultRateBurst      = 100
	DefaultAuthFailures   = 10
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 64
)

// HTTPHandler returns the MCP endpoint at /mcp behind Guard, recovering
// from panics.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	o := opts.withDefaults()
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(opts))
	return Recover(Guard(mux, opts), o.Logger, InternalError)
}

func (o *HTTPOptions) withDefaults() HTTPOptions {
	var d HTTPOptions
	if o != nil {
		d = *o
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.MaxBodyBytes == 0 {
		d.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if d.MaxJSONDepth <= 0 {
		d.MaxJSONDepth = schema.DefaultMaxDepth
	}
	if d.RateLimit == 0 {
		d.RateLimit, d.RateBurst = DefaultRateLimit, DefaultRateBurst
	}
	if d.RateBurst <= 0 {
		d.RateBurst = int(math.Max(1, 2*d.RateLimit))
	}
	if d.AuthFailures == 0 {
		d.AuthFailures = DefaultAuthFailures
	}
	if d.SessionTimeout == 0 {
		d.SessionTimeout = DefaultSessionTimeout
	}
	if d.MaxSessions == 0 {
		d.MaxSessions = DefaultMaxSessions
	}
	return d
}

// Handler returns the MCP endpoint without the guards: requests whose
// MCP-Protocol-Version is 2026-07-28 or later go to the SDK's stateless
// handler, older ones to the stateful handler (sessions, a standalone SSE
// stream, resumption from an event store). Both serve the same SDK server,
// so notifications reach clients of either era.
//
// Before the SDK sees a POST body, Handler reads it whole (a body over
// the cap gets 413) and checks it with schema.CheckJSON: nesting deeper
// than MaxJSONDepth, invalid UTF-8 or duplicate keys get a JSON-RPC parse
// error (HTTP 400). An initialize that would open more than MaxSessions
// legacy sessions for its caller gets a JSON-RPC error (HTTP 429).
// Responses that stream (server-sent events) outlive the server's read
// and write timeouts; see StreamResponse.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	o := opts.withDefaults()
	same := func(*http.Request) *mcpsdk.Server { return s.sdk }
	// Guard checks Host against loopback names and AllowedHosts; the SDK's
	// own check knows only loopback names, so it stands aside when there
	// are others.
	hostCheckOff := len(o.AllowedHosts) > 0
	legacy := mcpsdk.NewStreamableHTTPHandler(same, &mcpsdk.StreamableHTTPOptions{
		EventStore: mcpsdk.NewMemoryEventStore(nil), SessionTimeout: o.SessionTimeout, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger,
		DisableLocalhostProtection: hostCheckOff})
	modern := mcpsdk.NewStreamableHTTPHandler(same, &mcpsdk.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger, DisableLocalhostProtection: hostCheckOff})
	sessions := &sessionCap{max: o.MaxSessions, srv: s.sdk, ids: map[string][]string{}, pending: map[string]int{}}
	listens := &streamCap{max: o.MaxSessions, open: map[string]int{}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPost {
			var ok bool
			if body, ok = readJSONBody(w, r, o.MaxJSONDepth, writeRPCBodyError); !ok {
				return
			}
		}
		if acceptsEventStream(r) {
			w = StreamResponse(w, r)
		}
		// Protocol versions are dates, so they compare as strings.
		if r.Header.Get("MCP-Protocol-Version") >= ModernVersion {
			// A subscriptions/listen stream is 2026-07-28's session: it
			// holds its subscriptions while it is open, so each caller
			// gets as many open at once as it may hold legacy sessions.
			if body != nil && o.MaxSessions >= 0 && isMethod(body, "subscriptions/listen") {
				key := limitKey(r)
				if !listens.acquire(key) {
					writeRPCError(w, http.StatusTooManyRequests, requestID(body), CodeTooManySessions, fmt.Sprintf(
						"too many open subscription streams: this client holds %d, the server's limit (--max-sessions); "+
							"close one, or subscribe to several resources in one subscriptions/listen", o.MaxSessions))
					return
				}
				defer listens.release(key)
			}
			modern.ServeHTTP(w, r)
			return
		}
		if body == nil || r.Header.Get("Mcp-Session-Id") != "" || o.MaxSessions < 0 || !isMethod(body, "initialize") {
			legacy.ServeHTTP(w, r)
			return
		}
		key := limitKey(r)
		if !sessions.acquire(key) {
			writeRPCError(w, http.StatusTooManyRequests, requestID(body), CodeTooManySessions, fmt.Sprintf(
				"too many open MCP sessions: this client holds %d, the server's limit (--max-sessions); end one with an HTTP DELETE "+
					"carrying its Mcp-Session-Id, or let an idle one expire (after %s), then initialize again", o.MaxSessions, o.SessionTimeout))
			return
		}
		defer func() { sessions.release(key, w.Header().Get("Mcp-Session-Id")) }()
		legacy.ServeHTTP(w, r)
	})
}

// CodeTooManySessions is the JSON-RPC error code of an initialize refused
// because its caller holds MaxSessions sessions.
const CodeTooManySessions = -32001

// isMethod reports whether a JSON-RPC message (or batch) holds a request
// of the method. The body has passed CheckJSON, so decoding it is cheap.
func isMethod(body []byte, method string) bool {
	type msg struct {
		Method string `json:"method"`
	}
	var one msg
	if json.Unmarshal(body, &one) == nil {
		return one.Method == method
	}
	var batch []msg
	if json.Unmarshal(body, &batch) == nil {
		return slices.ContainsFunc(batch, func(m msg) bool { return m.Method == method })
	}
	return false
}

// streamCap counts the requests each caller has open, for those (such as
// subscriptions/listen) that stay open as long as the client likes.
type streamCap struct {
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (c *streamCap) acquire(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key] >= c.max {
		return false
	}
	c.open[key]++
	return true
}

func (c *streamCap) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open[key]--; c.open[key] <= 0 {
		delete(c.open, key)
	}
}

// requestID returns the id of a JSON-RPC request, or null.
func requestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || m.ID == nil {
		return json.RawMessage("null")
	}
	return m.ID
}

// sessionCap counts the legacy sessions each caller opened. The SDK keeps
// the sessions (and ends them on DELETE or idle timeout); the count of a
// caller is how many of the sessions it opened are still among the SDK
// server's live ones, plus the initializes in flight.
type sessionCap struct {
	max int
	srv *mcpsdk.Server

	mu      sync.Mutex
	ids     map[string][]string // by caller: the sessions it opened
	pending map[string]int      // by caller: initializes being served
}

func (c *sessionCap) acquire(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ids[key])+c.pending[key] >= c.max || len(c.ids) > 10_000 {
		c.prune()
	}
	if len(c.ids[key])+c.pending[key] >= c.max {
		return false
	}
	c.pending[key]++
	return true
}

// prune forgets the sessions the SDK has closed.
func (c *sessionCap) prune() {
	live := map[string]bool{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = true
	}
	for k, ids := range c.ids {
		if ids = slices.DeleteFunc(ids, func(id string) bool { return !live[id] }); len(ids) == 0 {
			delete(c.ids, k)
		} else {
			c.ids[k] = ids
		}
	}
}

func (c *sessionCap) release(key, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[key]--; c.pending[key] <= 0 {
		delete(c.pending, key)
	}
	if id != "" {
		c.ids[key] = append(c.ids[key], id)
	}
}

// limitKey names who makes a request, for per-caller limits: the bearer
// token's holder when Guard checked one, else the client address.
func limitKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return "token:" + ti.UserID
	}
	return clientAddr(r)
}

// clientAddr is the client's IP address, without the port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// readJSONBody reads a request body whole and checks it with
// schema.CheckJSON, then gives the request a fresh reader over it. On
// failure it answers through fail (413 over the cap, 408 when the body
// does not arrive within the server's read timeout, 400 when it is not
// acceptable JSON) and reports false.
func readJSONBody(w http.ResponseWriter, r *http.Request, maxDepth int,
	fail func(w http.ResponseWriter, status int, msg string, jerr *schema.JSONError)) ([]byte, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		status, msg := BodyError(err)
		fail(w, status, msg, nil)
		return nil, false
	}
	if err := schema.CheckJSON(body, maxDepth); err != nil {
		var jerr *schema.JSONError
		errors.As(err, &jerr)
		fail(w, http.StatusBadRequest, "the body is not JSON this server accepts: "+err.Error(), jerr)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// BodyError turns an error reading a request body into a status and a
// message for the client: 413 over the cap, 408 past the server's read
// timeout, 400 otherwise (the client broke off).
func BodyError(err error) (int, string) {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is over the server's limit of %d bytes (--max-body); send less per call", tooLarge.Limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "the body did not arrive within the server's read timeout (--read-timeout)"
	}
	return http.StatusBadRequest, "the body could not be read: the connection broke off"
}

func writeRPCBodyError(w http.ResponseWriter, status int, msg string, _ *schema.JSONError) {
	code := int64(jsonrpc.CodeParseError)
	if status != http.StatusBadRequest {
		code = jsonrpc.CodeInvalidRequest
	}
	writeRPCError(w, status, json.RawMessage("null"), code, msg)
}

// writeRPCError answers a JSON-RPC error with an HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(data)
}

// InternalError answers a JSON-RPC internal error (HTTP 500): Recover's
// answer on the MCP endpoint.
func InternalError(w http.ResponseWriter, _ *http.Request) {
	writeRPCError(w, http.StatusInternalServerError, json.RawMessage("null"), jsonrpc.CodeInternalError,
		"internal error; the server log has the details")
}

// Guard protects every API route the same way: a Host other than a
// loopback name or one of AllowedHosts gets 403 (DNS rebinding); a browser
// Origin other than a loopback one or the allow-list gets 403; with tokens
// configured a request without a valid bearer token (in the Authorization
// header, or a browser's session cookie from the sign-in page: see Auth)
// gets 401 (the OAuth protected-resource metadata is served, unguarded, at
// its well-known address), and a client address sending more than
// AuthFailures wrong tokens a minute gets 429; each caller gets a rate (429
// with Retry-After above it); bodies are capped (413). Guard is
// NewAuth(opts).Guard(h); routes that must share one allowance of wrong
// tokens and one rate (the sign-in page, WebSockets) use one Auth.
func Guard(h http.Handler, opts *HTTPOptions) http.Handler {
	return NewAuth(opts).Guard(h)
}

// Public returns the guard of the public routes (documents, pages, health):
// the Host check of Guard and a rate per client address; no token and any
// Origin. One guard is shared by every route it wraps, so they share the
// rate.
func Public(opts *HTTPOptions) func(http.Handler) http.Handler {
	o := opts.withDefaults()
	var l *limiters
	if o.RateLimit > 0 {
		l = newLimiters(o.RateLimit, o.RateBurst)
	}
	return func(next http.Handler) http.Handler {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if l == nil || l.allow(w, clientAddr(r)) {
				next.ServeHTTP(w, r)
			}
		})
		return hostGuard(h, o.AllowedHosts)
	}
}

// maxBody caps request bodies; a handler reading past the cap gets an
// error, and requests that declare a larger body are refused at once.
func maxBody(next http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is %d bytes; the limit is %d (--max-body)", r.ContentLength, n), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next.ServeHTTP(w, r)
	})
}

// metadataURL returns where RFC 9728 puts the metadata of a resource:
// /.well-known/oauth-protected-resource followed by the resource's path.
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	return u.String()
}

// verifier checks bearer tokens in constant time against the configured set.
func verifier(tokens []Token) auth.TokenVerifier {
	type entry struct {
		sum [32]byte
		tok Token
	}
	var list []entry
	for _, t := range tokens {
		list = append(list, entry{sha256.Sum256([]byte(t.Secret)), t})
	}
	return func(_ context.Context, secret string, _ *http.Request) (*auth.TokenInfo, error) {
		sum := sha256.Sum256([]byte(secret))
		var found *Token
		for i := range list {
			if subtle.ConstantTimeCompare(sum[:], list[i].sum[:]) == 1 {
				found = &list[i].tok
			}
		}
		if found == nil {
			return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
		}
		scopes := []string{ScopeRead}
		if found.Scope == ScopeWrite {
			scopes = append(scopes, ScopeWrite)
		}
		return &auth.TokenInfo{Scopes: scopes, UserID: found.Name}, nil
	}
}

// authFailureLimit gives each client address an allowance of perMinute
// wrong tokens a minute. A request that carries a token and is refused
// with 401 spends one; while an address has none left, each of its
// requests that carries a token gets 429 before the token is looked at,
// so guessing goes no faster whatever the guesses. Requests without a
// token are not counted: they cannot guess.
//
// A session cookie (Auth) counts as a token: it carries one's proof.
func authFailureLimit(next http.Handler, l *failures) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" && !hasSession(r) {
			next.ServeHTTP(w, r)
			return
		}
		lim, ok := l.refuse(w, r)
		if !ok {
			return
		}
		tw := &trackingWriter{ResponseWriter: w}
		next.ServeHTTP(tw, r)
		if tw.status == http.StatusUnauthorized {
			lim.Allow() // spend one
		}
	})
}

// failures is the allowance of wrong tokens of each client address.
type failures struct {
	perMinute int
	l         *limiters
}

func newFailures(perMinute int) *failures {
	return &failures{perMinute: perMinute, l: newLimiters(float64(perMinute)/60, perMinute)}
}

// refuse returns the allowance of r's client address and true; when it
// has none left, it answers 429 with Retry-After and returns false.
func (f *failures) refuse(w http.ResponseWriter, r *http.Request) (*rate.Limiter, bool) {
	lim, wait, ok := f.over(r)
	if !ok {
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(wait.Seconds()))))
		http.Error(w, fmt.Sprintf("Too Many Requests: more than %d wrong bearer tokens a minute from this address; retry after %s with a valid token",
			f.perMinute, wait.Round(time.Second)), http.StatusTooManyRequests)
	}
	return lim, ok
}

// over returns the allowance of r's client address and true, or, when it
// has none left, how long until it has one and false.
func (f *failures) over(r *http.Request) (*rate.Limiter, time.Duration, bool) {
	lim := f.l.get(clientAddr(r))
	if lim.Tokens() >= 1 {
		return lim, 0, true
	}
	return lim, time.Duration((1 - lim.Tokens()) / float64(lim.Limit()) * float64(time.Second)), false
}

// originGuard refuses browser requests from origins other than loopback
// ones and the allow-list, whatever the method: the SDK checks only Host.
func originGuard(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !originAllowed(o, allowed) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed; start the server with --allow-origin %s to allow it", o, o), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, allowed []string) bool {
	if slices.Contains(allowed, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopback(u.Hostname())
}

// hostGuard refuses requests whose Host is neither a loopback name nor
// allowed: a page that rebinds its own name to this server's address
// still sends its name, so it reads nothing.
func hostGuard(next http.Handler, allowed []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !HostAllowed(r.Host, allowed) {
			name := r.Host
			if h, _, err := net.SplitHostPort(name); err == nil {
				name = h
			}
			http.Error(w, fmt.Sprintf("Forbidden: this server does not answer to the name %q (Host header); start it with --allow-host %s to allow it",
				r.Host, name), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// HostAllowed reports whether a Host header names this server: a loopback
// name or address on any port, or one of allowed (a name, any port; a
// name:port, that port).
func HostAllowed(host string, allowed []string) bool {
	if host == "" {
		return false
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	if IsLoopback(strings.ToLower(name)) {
		return true
	}
	for _, a := range allowed {
		if _, _, err := net.SplitHostPort(a); err == nil {
			if strings.EqualFold(a, host) {
				return true
			}
		} else if strings.EqualFold(strings.Trim(a, "[]"), name) {
			return true
		}
	}
	return false
}

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// limiters keeps a token bucket per key.
type limiters struct {
	perSec float64
	burst  int
	mu     sync.Mutex
	m      map[string]*rate.Limiter
}

func newLimiters(perSec float64, burst int) *limiters {
	return &limiters{perSec: perSec, burst: burst, m: map[string]*rate.Limiter{}}
}

func (l *limiters) get(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[key]
	if !ok {
		if len(l.m) > 10000 { // forget idle callers rather than grow without bound
			clear(l.m)
		}
		lim = rate.NewLimiter(rate.Limit(l.perSec), l.burst)
		l.m[key] = lim
	}
	return lim
}

// allow takes one request from key's bucket, or answers 429 with
// Retry-After and reports false.
func (l *limiters) allow(w http.ResponseWriter, key string) bool {
	res := l.get(key).Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(d.Seconds()))))
		http.Error(w, fmt.Sprintf("Too Many Requests: over %g requests per second (--rate); retry after %s", l.perSec, d.Round(time.Millisecond)), http.StatusTooManyRequests)
		return false
	}
	return true
}

// RequestContext returns the context a non-MCP surface (REST, GraphQL)
// should call Invoke with: the request's, carrying the bearer token's
// scopes as the Caller when Guard checked a token.
func RequestContext(r *http.Request) context.Context {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return WithCaller(r.Context(), Caller{ID: ti.UserID, Scopes: ti.Scopes})
	}
	return r.Context()
}

// InsufficientScope answers the headers RFC 6750 gives a request whose
// token lacks a scope: WWW-Authenticate with error="insufficient_scope"
// and the scope needed. The caller then writes 403 and its body.
func InsufficientScope(h http.Header, scope string) {
	h.Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, error_description="this token lacks the %s scope"`, scope, scope))
}

// Recover answers a panic in next instead of letting it end the
// connection: it logs the panic with its stack and answers 500 with
// answer (a JSON-RPC error, a problem detail...), or, when the response
// has begun, aborts it so the client sees it broken, not complete. The
// process lives on either way (a goroutine's panic, which no middleware
// can catch, must be recovered where the goroutine starts).
func Recover(next http.Handler, log *slog.Logger, answer func(http.ResponseWriter, *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &trackingWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			log.ErrorContext(r.Context(), "HTTP handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if tw.status != 0 {
				panic(http.ErrAbortHandler)
			}
			answer(w, r)
		}()
		next.ServeHTTP(tw, r)
	})
}

// trackingWriter records the status a handler sends. It passes on
// flushing, hijacking and (through Unwrap) deadlines.
type trackingWriter struct {
	http.ResponseWriter
	status int
}

func (t *trackingWriter) WriteHeader(code int) {
	if t.status == 0 && code >= 200 || code == http.StatusSwitchingProtocols {
		t.status = code
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Flush() {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	_ = http.NewResponseController(t.ResponseWriter).Flush()
}

func (t *trackingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(t.ResponseWriter).Hijack()
	if err == nil {
		t.status = http.StatusSwitchingProtocols
	}
	return c, rw, err
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// acceptsEventStream reports whether a request asks for server-sent events.
func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(v, "text/event-stream") {
			return true
		}
	}
	return false
}

// StreamResponse prepares a response that streams (server-sent events)
// once the request's body has been read: the server's read timeout, which
// would cancel the request's context when it passes, is lifted, and its
// write timeout, which bounds a whole response, is replaced by a bound on
// each write (WithStreamWriteTimeout), so a stream lives as long as the
// client reads it and a client that stops reading is dropped.
func StreamResponse(w http.ResponseWriter, r *http.Request) http.ResponseWriter {
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	d, _ := r.Context().Value(streamWriteKey{}).(time.Duration)
	if d <= 0 {
		return w
	}
	return &streamWriter{ResponseWriter: w, rc: rc, timeout: d}
}

type streamWriteKey struct{}

// WithStreamWriteTimeout returns a context (for http.Server.ConnContext)
// that bounds each write of a streamed response (StreamResponse) to d.
func WithStreamWriteTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, streamWriteKey{}, d)
}

// streamWriter sets a write deadline before each write and flush.
type streamWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (s *streamWriter) Write(b []byte) (int, error) {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.ResponseWriter.Write(b)
}

func (s *streamWriter) Flush() {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	_ = s.rc.Flush()
}

func (s *streamWriter) FlushError() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	return s.rc.Flush()
}

// SetWriteDeadline keeps the per-write bound: a handler that lifts the
// deadline for its stream (as the REST event stream does) lifts only the
// deadline between writes.
func (s *streamWriter) SetWriteDeadline(time.Time) error { return nil }

func (s *streamWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
