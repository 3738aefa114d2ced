package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/time/rate"
)

// HTTPOptions configure the Streamable HTTP endpoint.
type HTTPOptions struct {
	// Logger receives transport logs; nil discards them.
	Logger *slog.Logger
	// AllowedOrigins lists the browser origins ("https://app.example.com")
	// allowed besides loopback ones. Requests from any other Origin get 403.
	AllowedOrigins []string
	// Tokens, if not empty, require a bearer token on every request.
	Tokens []Token
	// ResourceURL is the public URL of the MCP endpoint, named in the OAuth
	// protected-resource metadata and in WWW-Authenticate ("" : none).
	ResourceURL string
	// MaxBodyBytes caps a request body; 0 means 1 MiB.
	MaxBodyBytes int64
	// RateLimit is the requests per second each caller (token, or client
	// address without auth) may make on average, with bursts of RateBurst;
	// 0 means 50 per second with bursts of 100; negative means no limit.
	RateLimit float64
	RateBurst int
	// SessionTimeout ends idle legacy sessions; 0 means 30 minutes.
	SessionTimeout time.Duration
}

// A Token is a bearer token and what it may do.
type Token struct {
	Name   string // who holds it, for logs and rate limits
	Scope  string // ScopeRead or ScopeWrite (which includes read)
	Secret string
}

// ModernVersion is the first protocol version served statelessly.
const ModernVersion = "2026-07-28"

// HTTPHandler returns the MCP endpoint at /mcp behind Guard.
func (s *Server) HTTPHandler(opts *HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(opts))
	return Guard(mux, opts)
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
		d.MaxBodyBytes = 1 << 20
	}
	if d.RateLimit == 0 {
		d.RateLimit, d.RateBurst = 50, 100
	}
	if d.RateBurst <= 0 {
		d.RateBurst = int(math.Max(1, 2*d.RateLimit))
	}
	if d.SessionTimeout == 0 {
		d.SessionTimeout = 30 * time.Minute
	}
	return d
}

// Handler returns the MCP endpoint without the guards: requests whose
// MCP-Protocol-Version is 2026-07-28 or later go to the SDK's stateless
// handler, older ones to the stateful handler (sessions, a standalone SSE
// stream, resumption from an event store). Both serve the same SDK server,
// so notifications reach clients of either era.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	o := opts.withDefaults()
	same := func(*http.Request) *mcpsdk.Server { return s.sdk }
	legacy := mcpsdk.NewStreamableHTTPHandler(same, &mcpsdk.StreamableHTTPOptions{
		EventStore: mcpsdk.NewMemoryEventStore(nil), SessionTimeout: o.SessionTimeout, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger})
	modern := mcpsdk.NewStreamableHTTPHandler(same, &mcpsdk.StreamableHTTPOptions{
		Stateless: true, MaxRequestBodyBytes: o.MaxBodyBytes, Logger: o.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Protocol versions are dates, so they compare as strings.
		if r.Header.Get("MCP-Protocol-Version") >= ModernVersion {
			modern.ServeHTTP(w, r)
			return
		}
		legacy.ServeHTTP(w, r)
	})
}

// Guard protects every HTTP surface the same way: a browser Origin other
// than a loopback one or the allow-list gets 403; with tokens configured a
// request without a valid bearer token gets 401 (the OAuth protected-resource
// metadata is served, unguarded, at its well-known address); each caller
// gets a rate (429 with Retry-After above it); bodies are capped (413).
func Guard(h http.Handler, opts *HTTPOptions) http.Handler {
	o := opts.withDefaults()
	h = maxBody(h, o.MaxBodyBytes)
	if o.RateLimit > 0 {
		h = rateLimit(h, o.RateLimit, o.RateBurst)
	}
	mux := http.NewServeMux()
	if len(o.Tokens) > 0 {
		ropts := &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}
		if o.ResourceURL != "" {
			meta := metadataURL(o.ResourceURL)
			ropts.ResourceMetadataURL = meta
			prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
				Resource: o.ResourceURL, ResourceName: "Lore", BearerMethodsSupported: []string{"header"},
				ScopesSupported: []string{ScopeRead, ScopeWrite}})
			if u, err := url.Parse(meta); err == nil {
				mux.Handle(u.Path, prm)
			}
		}
		h = auth.RequireBearerToken(verifier(o.Tokens), ropts)(h)
	}
	mux.Handle("/", h)
	return originGuard(mux, o.AllowedOrigins)
}

// maxBody caps request bodies; a handler reading past the cap gets an
// error, and requests that declare a larger body are refused at once.
func maxBody(next http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > n {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is %d bytes; the limit is %d", r.ContentLength, n), http.StatusRequestEntityTooLarge)
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

// IsLoopback reports whether host is localhost or a loopback address.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// rateLimit gives each caller (bearer token, else client address) a token
// bucket; a caller over its rate gets 429 with Retry-After.
func rateLimit(next http.Handler, perSec float64, burst int) http.Handler {
	var mu sync.Mutex
	limiters := map[string]*rate.Limiter{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.RemoteAddr
		if host, _, err := net.SplitHostPort(key); err == nil {
			key = host
		}
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
			key = "token:" + ti.UserID
		}
		mu.Lock()
		l, ok := limiters[key]
		if !ok {
			if len(limiters) > 10000 { // forget idle callers rather than grow without bound
				clear(limiters)
			}
			l = rate.NewLimiter(rate.Limit(perSec), burst)
			limiters[key] = l
		}
		mu.Unlock()
		res := l.Reserve()
		if d := res.Delay(); d > 0 {
			res.Cancel()
			w.Header().Set("Retry-After", fmt.Sprint(int(math.Ceil(d.Seconds()))))
			http.Error(w, fmt.Sprintf("Too Many Requests: over %g requests per second; retry after %s", perSec, d.Round(time.Millisecond)), http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
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
