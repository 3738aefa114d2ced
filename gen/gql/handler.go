// Package gql serves Lore's catalog as GraphQL. gen.SDL renders the schema
// (schema.graphqls) from the MCP tool catalog and gqlgen generates the
// executable schema and the resolvers (make generate); each resolver is one
// call to the catalog, so GraphQL, MCP and REST run the same code with the
// same argument checks.
package gql

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// Options configure the GraphQL handler.
type Options struct {
	Logger *slog.Logger // nil discards
	// AllowedOrigins lists browser origins allowed for WebSocket upgrades besides loopback ones.
	AllowedOrigins []string
	// MaxDepth and MaxComplexity bound a query; 0 means the defaults.
	MaxDepth, MaxComplexity int
	// MaxJSONDepth caps the nesting of the JSON a request carries (a POST
	// body, GET variables and extensions, each WebSocket message), checked
	// before anything decodes it; 0 means schema.DefaultMaxDepth.
	MaxJSONDepth int
	// MaxMessageBytes caps a WebSocket message; 0 means 1 MiB. (Bodies
	// are capped by mcp.Guard.)
	MaxMessageBytes int64
	// Timeout bounds each query and mutation, and MaxResponseBytes its
	// response; 0 means the catalog's ceilings (--timeout, --max-bytes).
	// A subscription runs while its client listens; each event is capped.
	Timeout          time.Duration
	MaxResponseBytes int
}

// Defaults of Options and fixed limits.
const (
	// DefaultMaxDepth allows walking a few hops in one query:
	// getNode { node { neighbors { node { neighbors { node { id } } } } } } is 7 deep.
	DefaultMaxDepth = 12
	// DefaultMaxComplexity allows about thirty tool calls (each costs
	// toolCost plus its selection) per operation, or four introspection
	// walks of the whole schema.
	DefaultMaxComplexity = 1000
	// parserTokenLimit bounds the tokens of one query document.
	parserTokenLimit = 10_000
	// queryCacheSize bounds the parsed queries kept.
	queryCacheSize = 1000
	keepAlive      = 15 * time.Second
	// closeInvalidMessage is graphql-transport-ws's close code for a
	// message it cannot take.
	closeInvalidMessage = 4400
	// closeForbidden is its close code for a connection_init refused.
	closeForbidden = 4403
)

//go:embed schema.graphqls
var sdl []byte

// SDL returns the GraphQL schema document the handler serves.
func SDL() []byte { return sdl }

// NewHandler serves /graphql (POST, GET, SSE and graphql-transport-ws).
// Put it behind mcp.Guard: the bearer token Guard checks becomes the
// caller of every tool call, with its scopes.
//
// Before gqlgen parses anything, the handler checks it: a POST body is
// read whole (413 over Guard's cap) and must be acceptable JSON
// (schema.CheckJSON) of the GraphQL-over-HTTP shape; so must GET's
// variables and extensions and every WebSocket message (a bad one closes
// the socket with 4400). A GET must carry a header a cross-site page
// cannot send without a CORS preflight (Preflighted), so an <img> or a
// form cannot run an operation. Each query and mutation runs under the
// deadline and its response under the byte cap; a field that would call
// the catalog after the deadline is not resolved. A read-only token
// calling a mutation gets 403 with RFC 6750's insufficient_scope.
func NewHandler(cat *mcp.Catalog, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = discard
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	if o.MaxComplexity <= 0 {
		o.MaxComplexity = DefaultMaxComplexity
	}
	if o.MaxJSONDepth <= 0 {
		o.MaxJSONDepth = schema.DefaultMaxDepth
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = 1 << 20
	}
	ceil := cat.Ceilings()
	if o.Timeout <= 0 {
		o.Timeout = time.Duration(ceil.TimeoutMs) * time.Millisecond
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = ceil.MaxBytes
	}
	es := NewExecutableSchema(Config{Resolvers: &Resolver{Cat: cat, log: o.Logger}})
	srv := handler.New(es)
	srv.AddTransport(&transport.Websocket{
		Implementation: checkedWebsocket{inner: transport.CoderWebsocketImplementation{AcceptOptions: websocket.AcceptOptions{
			OriginPatterns: originPatterns(o.AllowedOrigins)}}, maxDepth: o.MaxJSONDepth},
		KeepAlivePingInterval: keepAlive,
		PingPongInterval:      keepAlive, // a graphql-transport-ws client that stops answering pings is dropped
		PayloadReadLimit:      &o.MaxMessageBytes,
		InitFunc:              socketInit,
		// A socket that sends no connection_init is closed: on a server
		// with tokens it has not authenticated yet (mcp.Auth.GuardSocket).
		InitTimeout: keepAlive,
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: keepAlive}) // before POST, which would take its requests
	srv.AddTransport(transport.POST{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.Options{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](queryCacheSize))
	srv.SetParserTokenLimit(parserTokenLimit)
	srv.Use(extension.Introspection{})
	srv.Use(&limits{maxDepth: o.MaxDepth, maxCost: o.MaxComplexity})
	srv.SetErrorPresenter(presenter(o.Logger))
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		o.Logger.ErrorContext(ctx, "graphql resolver panicked", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		return errInternal
	})
	srv.AroundFields(func(ctx context.Context, next graphql.Resolver) (any, error) {
		// A field that calls the catalog waits for one of its operation's
		// slots; past the operation's deadline (or once the client has
		// gone), or once the operation has read its budget from the
		// catalog, it is not resolved.
		if fc := graphql.GetFieldContext(ctx); fc != nil && fc.IsResolver {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			release, err := slot(ctx)
			if err != nil {
				return nil, err
			}
			defer release()
		}
		return next(ctx)
	})
	srv.AroundResponses(func(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
		oc := graphql.GetOperationContext(ctx)
		stream := oc.Operation != nil && oc.Operation.Operation == ast.Subscription
		if st, ok := ctx.Value(stateKey{}).(*requestState); ok && stream && !st.stream {
			// Over plain POST a subscription would hold the request open
			// until its first event.
			e := gqlerror.Errorf("a subscription needs a stream: open a WebSocket (graphql-transport-ws) or POST with Accept: text/event-stream")
			e.Extensions = map[string]any{"code": "BAD_REQUEST"}
			return &graphql.Response{Errors: gqlerror.List{e}}
		}
		if !stream {
			// A subscription's events are small and its replay, which runs
			// in its own goroutine, may read the whole change log: only
			// queries and mutations get a deadline and a budget.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errDeadline)
			defer cancel()
			ctx = withOpLimits(ctx, gatherFactor*o.MaxResponseBytes)
		}
		resp := next(ctx)
		if resp == nil {
			return nil
		}
		if !stream && errors.Is(context.Cause(ctx), errDeadline) {
			resp.Errors = collapse(resp.Errors, codeDeadline, fmt.Sprintf("the operation ran past the server's deadline of %s (--timeout)", o.Timeout))
		}
		if spent(ctx) {
			resp.Data = nil
			resp.Errors = collapse(resp.Errors, codeTooLarge, fmt.Sprintf("the operation read over %d bytes from the catalog, %d times "+
				"the response cap (--max-bytes), before it was done", gatherFactor*o.MaxResponseBytes, gatherFactor))
		} else if len(resp.Data) > o.MaxResponseBytes {
			e := gqlerror.Errorf("the response would be %d bytes, over the server's cap of %d (--max-bytes); ask for less: fewer fields, "+
				"smaller limits or a shallower walk", len(resp.Data), o.MaxResponseBytes)
			e.Extensions = map[string]any{"code": codeTooLarge}
			resp.Data = nil
			resp.Errors = append(resp.Errors, e)
		}
		return resp
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.Context().Err(); err != nil {
			// gqlgen answers null to a request whose context is over before
			// it starts; answer what the other surfaces do (mcp.ErrorKinds).
			e := mcp.ErrorOf(err)
			k := mcp.KindOf(e.Code)
			requestError(w, k.Status, k.GraphQL, e.Message)
			return
		}
		st := &requestState{}
		r = r.WithContext(context.WithValue(mcp.RequestContext(r), stateKey{}, st))
		switch {
		case r.Header.Get("Upgrade") != "":
			// A WebSocket: hijacking lifts the server's deadlines, and
			// checkedWebsocket checks each message.
			st.stream = true
		case r.Method == http.MethodGet:
			if !Preflighted(r) {
				requestError(w, http.StatusBadRequest, "PREFLIGHT_REQUIRED", "a GET of /graphql must carry a Content-Type of application/json or a "+
					"GraphQL-Require-Preflight header, which a page on another site cannot send without asking first (CSRF protection); "+
					"or use POST with a JSON body. The console is at /console/.")
				return
			}
			q := r.URL.Query()
			for _, name := range []string{"variables", "extensions"} {
				if v := q.Get(name); v != "" {
					if msg := checkObject(name, []byte(v), o.MaxJSONDepth); msg != "" {
						requestError(w, http.StatusBadRequest, "BAD_REQUEST", msg)
						return
					}
				}
			}
		case r.Method == http.MethodPost:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				status, msg := mcp.BodyError(err)
				requestError(w, status, "BAD_REQUEST", msg)
				return
			}
			if msg := checkParams(body, o.MaxJSONDepth); msg != "" {
				requestError(w, http.StatusBadRequest, "BAD_REQUEST", msg)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if strings.Contains(r.Header.Get("Accept"), "text/event-stream") { // gqlgen's SSE transport takes it
				st.stream = true
				w = mcp.StreamResponse(w, r)
			}
		}
		srv.ServeHTTP(&scopeWriter{ResponseWriter: w, st: st}, r)
	})
}

// socketInit authenticates a WebSocket that mcp.Auth.GuardSocket let
// open without credentials by the token in its connection_init payload
// ({"authorization": "Bearer TOKEN"}); a missing or wrong one closes the
// socket with graphql-transport-ws's 4403 Forbidden before any operation
// runs. A socket whose upgrade carried a token or a session cookie was
// authenticated by the guard and keeps that caller.
func socketInit(ctx context.Context, p transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	check := mcp.SocketAuth(ctx)
	if check == nil {
		return ctx, nil, nil
	}
	authed, err := check(ctx, p.Authorization())
	if err != nil {
		ctx = transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, closeForbidden), "Forbidden")
		return ctx, nil, err
	}
	return authed, nil, nil
}

// recoverGoroutine, deferred in each goroutine a resolver starts (so that
// it runs before the goroutine's other deferred calls), logs a panic there
// with its stack instead of letting it end the process;
// gqlgen recovers only the goroutines it starts. The subscription then
// ends, as when its feed closes.
func recoverGoroutine(ctx context.Context, log *slog.Logger, what string) {
	if v := recover(); v != nil {
		log.ErrorContext(ctx, "graphql subscription panicked", "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	}
}

// errDeadline is the cause of an operation's context past its deadline.
var errDeadline = errors.New("the operation ran past the server's deadline")

// collapse replaces the errors with code (one per field left unresolved)
// by one error that says what happened and how many fields it left null.
func collapse(errs gqlerror.List, code, what string) gqlerror.List {
	n := 0
	out := gqlerror.List{}
	for _, e := range errs {
		if c, _ := e.Extensions["code"].(string); c == code {
			n++
			continue
		}
		out = append(out, e)
	}
	e := gqlerror.Errorf("%s; %d field(s) were left unresolved (null) and lists may be cut short: ask for less (smaller limits, "+
		"fewer fields, a shallower walk) or split the operation", what, n)
	e.Extensions = map[string]any{"code": code}
	return append(out, e)
}

// Codes of the errors of an operation stopped before it was done: past
// its deadline (the table's), or over its read budget (GraphQL's own).
var codeDeadline = mcp.KindOf(mcp.CodeDeadline).GraphQL

const codeTooLarge = "RESPONSE_TOO_LARGE"

// Preflighted reports whether a request carries something a browser sends
// cross-site only after a CORS preflight, which this server never grants:
// a Content-Type other than the three a form may send, or a
// GraphQL-Require-Preflight (or Apollo's Apollo-Require-Preflight or
// X-Apollo-Operation-Name) header. An <img>, a link or a form cannot.
func Preflighted(r *http.Request) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !simpleTypes[mt] {
			return true
		}
	}
	for _, h := range []string{"GraphQL-Require-Preflight", "Apollo-Require-Preflight", "X-Apollo-Operation-Name"} {
		if r.Header.Get(h) != "" {
			return true
		}
	}
	return false
}

// simpleTypes are the content types a page may send cross-site without a
// preflight (the Fetch standard's CORS-safelisted request header).
var simpleTypes = map[string]bool{"application/x-www-form-urlencoded": true, "multipart/form-data": true, "text/plain": true}

// checkParams checks a POST body before gqlgen decodes it: acceptable JSON
// (schema.CheckJSON), an object whose query and operationName are strings
// and whose variables and extensions are objects (or null). It returns
// what is wrong, or "". gqlgen's own errors name Go types.
func checkParams(body []byte, maxDepth int) string {
	if err := schema.CheckJSON(body, maxDepth); err != nil {
		return "the body is not JSON this server accepts: " + err.Error()
	}
	var params map[string]json.RawMessage
	if body = bytes.TrimSpace(body); body[0] != '{' || json.Unmarshal(body, &params) != nil {
		return `the body must be a JSON object: {"query": "...", "operationName": "...", "variables": {...}, "extensions": {...}}`
	}
	for _, name := range []string{"query", "operationName"} {
		if v, ok := params[name]; ok && v[0] != '"' && string(v) != "null" {
			return fmt.Sprintf("%q must be a string, not %s", name, kind(v))
		}
	}
	for _, name := range []string{"variables", "extensions"} {
		if v, ok := params[name]; ok && v[0] != '{' && string(v) != "null" {
			return fmt.Sprintf("%q must be a JSON object (or null), not %s", name, kind(v))
		}
	}
	return ""
}

// checkObject checks a GET parameter that must hold a JSON object.
func checkObject(name string, v []byte, maxDepth int) string {
	if err := schema.CheckJSON(v, maxDepth); err != nil {
		return fmt.Sprintf("the %s parameter is not JSON this server accepts: %v", name, err)
	}
	if v = bytes.TrimSpace(v); v[0] != '{' {
		return fmt.Sprintf("the %s parameter must be a JSON object, not %s", name, kind(v))
	}
	return ""
}

// kind names the type of a JSON value for a message.
func kind(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// requestError answers a request gqlgen never saw, in GraphQL's shape.
func requestError(w http.ResponseWriter, status int, code, msg string) {
	data, _ := json.Marshal(map[string]any{"errors": []any{map[string]any{"message": msg, "extensions": map[string]any{"code": code}}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(data)
}

// InternalError answers 500 with an internal error in GraphQL's shape:
// what a client sees when a handler panicked (mcp.Recover).
func InternalError(w http.ResponseWriter, _ *http.Request) {
	requestError(w, http.StatusInternalServerError, "INTERNAL", "internal error; the server log has the details")
}

// requestState is what the HTTP layer and resolving a request tell each
// other: whether the request streams its responses (a WebSocket or
// server-sent events), and the scope a token lacked, which the response
// must say.
type requestState struct {
	stream bool
	mu     sync.Mutex
	scope  string
}

type stateKey struct{}

// scopeWriter turns a response whose errors include a missing scope into
// 403 with WWW-Authenticate (RFC 6750): POST and GET responses are written
// after the operation has run, so the state is known by then.
type scopeWriter struct {
	http.ResponseWriter
	st    *requestState
	wrote bool
}

func (s *scopeWriter) WriteHeader(code int) {
	if s.wrote {
		return // gqlgen answers some failures twice (a refused WebSocket upgrade); the first status stands
	}
	s.wrote = true
	s.st.mu.Lock()
	scope := s.st.scope
	s.st.mu.Unlock()
	if scope != "" && code == http.StatusOK {
		mcp.InsufficientScope(s.Header(), scope)
		code = http.StatusForbidden
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *scopeWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *scopeWriter) Flush() {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

func (s *scopeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

func (s *scopeWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// checkedWebsocket checks every WebSocket message with schema.CheckJSON
// before gqlgen decodes it; a message that fails closes the socket with
// 4400 and the reason.
type checkedWebsocket struct {
	inner    transport.CoderWebsocketImplementation
	maxDepth int
}

func (c checkedWebsocket) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	conn, err := c.inner.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	return &checkedConn{WebsocketConn: conn, maxDepth: c.maxDepth}, nil
}

type checkedConn struct {
	transport.WebsocketConn
	maxDepth int
}

func (c *checkedConn) NextReader() (int, io.Reader, error) {
	typ, rd, err := c.WebsocketConn.NextReader()
	if err != nil {
		return typ, rd, err
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return typ, nil, err
	}
	if err := schema.CheckJSON(data, c.maxDepth); err != nil {
		reason := "message is not JSON this server accepts: " + err.Error()
		if len(reason) > 123 { // the most a close frame carries
			reason = reason[:123]
		}
		_ = c.WriteClose(closeInvalidMessage, strings.ToValidUTF8(reason, ""))
		return typ, nil, fmt.Errorf("graphql websocket: %s", reason)
	}
	return typ, bytes.NewReader(data), nil
}

// SetReadLimit and SetReadDeadline pass gqlgen's limits on to the socket.
func (c *checkedConn) SetReadLimit(n int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(n)
	}
}

func (c *checkedConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}

// originPatterns lets loopback pages and the allowed origins open
// WebSockets; coder/websocket refuses other cross-origin upgrades.
func originPatterns(allowed []string) []string {
	patterns := []string{"localhost", "localhost:*", "127.0.0.1", "127.0.0.1:*", `\[::1\]`, `\[::1\]:*`}
	return append(patterns, allowed...)
}

var errInternal = errors.New("internal error")

// presenter turns a resolver's error into the GraphQL error a client
// sees: a tool error keeps its message, with extensions.code and the
// violations by JSON pointer; gqlgen's own errors (parsing, validation,
// limits) pass as they are; anything else is logged and shown as
// "internal error".
func presenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gerr := graphql.DefaultErrorPresenter(ctx, err)
		var te *mcp.Error
		switch {
		case errors.Is(err, errDeadline):
			// The operation's own deadline: collapse makes one error of these.
			return &gqlerror.Error{Message: "not resolved: " + errDeadline.Error(), Path: gerr.Path, Locations: gerr.Locations,
				Extensions: map[string]any{"code": codeDeadline}}
		case errors.Is(err, errGathered):
			return &gqlerror.Error{Message: "not resolved: " + errGathered.Error(), Path: gerr.Path, Locations: gerr.Locations,
				Extensions: map[string]any{"code": codeTooLarge}}
		case !errors.Is(err, errInternal):
			te = mcp.ErrorOf(err)
		}
		if te != nil && te.Code == mcp.CodeForbidden && te.Scope != "" {
			if st, ok := ctx.Value(stateKey{}).(*requestState); ok {
				st.mu.Lock()
				st.scope = te.Scope
				st.mu.Unlock()
			}
		}
		if te != nil {
			out := &gqlerror.Error{Message: te.Message, Path: gerr.Path, Locations: gerr.Locations,
				Extensions: map[string]any{"code": mcp.KindOf(te.Code).GraphQL}}
			if len(te.Violations) > 0 {
				out.Extensions["violations"] = te.Violations
			}
			return out
		}
		if errors.Is(err, errInternal) || gerr.Err != nil && !errors.As(gerr.Err, new(*gqlerror.Error)) {
			// A resolver's error nobody translated: never show its text.
			log.ErrorContext(ctx, "graphql resolver failed", "path", gerr.Path.String(), "error", err)
			return &gqlerror.Error{Message: "internal error", Path: gerr.Path, Locations: gerr.Locations,
				Extensions: map[string]any{"code": "INTERNAL"}}
		}
		return gerr
	}
}
