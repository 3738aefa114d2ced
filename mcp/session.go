package mcp

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Browsers cannot set an Authorization header on a page load or a
// WebSocket, so a person signs in once (the sign-in page calls
// Auth.SignIn with a token) and the browser then carries a session cookie
// that Guard takes in the token's place, with its scopes.
//
// The cookie is not the token. It holds an expiry and an HMAC-SHA256 of
// it keyed with the token's secret: a copied cookie (a browser profile, a
// debugging proxy's log) gives at most SessionAge of access, never the
// token; the server keeps no session state, so every replica that reads
// the same tokens file accepts it, a restart keeps it, and removing a
// token from the file ends its sessions. Signing out clears the browser's
// copy only; a cookie copied before stays valid until it expires.
//
// A cookie rides along with any request its browser sends, so a request
// authenticated by it must show that it comes from this server's own
// pages (CSRF): an Origin, if present, must be this server's (the
// request's Host) or one of AllowedOrigins — not merely any loopback
// page, since a cookie is shared by every port of a host — and requests
// that change something (any method but GET, HEAD and OPTIONS) or open a
// WebSocket must carry one. The cookie is also SameSite=Strict, so
// browsers do not send it from other sites at all.

// SessionCookie names the cookie of a signed-in browser.
const SessionCookie = "lore_token"

// SessionAge is how long a sign-in lasts.
const SessionAge = 12 * time.Hour

// An Auth checks who makes an HTTP request: bearer tokens in the
// Authorization header, and the session cookies of browsers that signed in
// with one. One Auth holds the per-caller rate and the allowance of wrong
// tokens of each client address, so the routes it guards share them.
type Auth struct {
	o        HTTPOptions
	tokens   auth.TokenVerifier
	secrets  []Token
	rate     *limiters // nil: no rate limit
	failures *failures // nil: no limit on wrong tokens
	now      func() time.Time
}

// NewAuth returns the Auth of opts.
func NewAuth(opts *HTTPOptions) *Auth {
	o := opts.withDefaults()
	a := &Auth{o: o, tokens: verifier(o.Tokens), secrets: o.Tokens, now: time.Now}
	if o.RateLimit > 0 {
		a.rate = newLimiters(o.RateLimit, o.RateBurst)
	}
	if o.AuthFailures > 0 {
		a.failures = newFailures(o.AuthFailures)
	}
	return a
}

// Tokens reports whether the server requires a token (and so a sign-in).
func (a *Auth) Tokens() bool { return len(a.secrets) > 0 }

// Guard protects h as the package's Guard describes.
func (a *Auth) Guard(h http.Handler) http.Handler { return a.guard(h, false) }

// GuardSocket is Guard for an endpoint that authenticates WebSockets in
// their first message (GraphQL's connection_init): a WebSocket upgrade
// that carries neither an Authorization header nor a session cookie passes
// (after the Host, Origin and rate checks) with a Caller that may do
// nothing, and its handler must check the token its client sends through
// SocketAuth before it serves anything. Every other request is guarded
// as by Guard.
func (a *Auth) GuardSocket(h http.Handler) http.Handler { return a.guard(h, true) }

func (a *Auth) guard(h http.Handler, socket bool) http.Handler {
	o := a.o
	h = maxBody(h, o.MaxBodyBytes)
	if a.rate != nil {
		next := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.rate.allow(w, limitKey(r)) {
				next.ServeHTTP(w, r)
			}
		})
	}
	mux := http.NewServeMux()
	if a.Tokens() {
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
		open := h
		h = auth.RequireBearerToken(a.verify, ropts)(h)
		h = a.cookie(h)
		if a.failures != nil {
			h = authFailureLimit(h, a.failures)
		}
		if socket {
			guarded := h
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.Header.Get("Upgrade") == "" || r.Header.Get("Authorization") != "" || hasSession(r) {
					guarded.ServeHTTP(w, r)
					return
				}
				ctx := WithCaller(r.Context(), Caller{}) // no scopes: nothing is allowed until SocketAuth succeeds
				ctx = context.WithValue(ctx, socketKey{}, &socketAuth{a: a, r: r})
				open.ServeHTTP(w, r.WithContext(ctx))
			})
		}
	}
	mux.Handle("/", h)
	return hostGuard(originGuard(mux, o.AllowedOrigins), o.AllowedHosts)
}

// sessionKey marks a request whose bearer token Guard took from the
// session cookie: verify then checks a session, not a token, so a session
// value is no token in an Authorization header and a token is no session.
type sessionKey struct{}

// cookie passes a request that carries a session cookie and no
// Authorization header (which wins) on with the cookie's value as its
// bearer token, after the CSRF checks.
func (a *Auth) cookie(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || !hasSession(r) {
			next.ServeHTTP(w, r)
			return
		}
		if msg := a.crossSite(r, false); msg != "" {
			http.Error(w, "Forbidden: "+msg, http.StatusForbidden)
			return
		}
		c, _ := r.Cookie(SessionCookie)
		r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, true))
		r.Header = r.Header.Clone()
		r.Header.Set("Authorization", "Bearer "+c.Value)
		next.ServeHTTP(w, r)
	})
}

func hasSession(r *http.Request) bool {
	c, err := r.Cookie(SessionCookie)
	return err == nil && c.Value != ""
}

// crossSite returns why a browser request that a session cookie
// authenticates (or, with signIn, that signs in or out) may come from
// another site's page, or "". An Origin must be this server's own or
// allowed; requests that change something and WebSockets must carry one.
func (a *Auth) crossSite(r *http.Request, signIn bool) string {
	origin := r.Header.Get("Origin")
	if origin == "" {
		safe := (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions) && r.Header.Get("Upgrade") == ""
		if safe && !signIn {
			return ""
		}
		return "a browser request that signs in or uses the sign-in cookie to change something or open a WebSocket must carry an Origin header " +
			"(browsers send one; other clients should send the token in an Authorization header instead of the cookie)"
	}
	if slices.Contains(a.o.AllowedOrigins, origin) {
		return ""
	}
	if u, err := url.Parse(origin); err == nil && (u.Scheme == "http" || u.Scheme == "https") && strings.EqualFold(u.Host, r.Host) {
		return ""
	}
	return fmt.Sprintf("the sign-in cookie works only for this server's own pages, and Origin %q is not this server (%s); "+
		"start the server with --allow-origin %s to allow that page", origin, r.Host, origin)
}

// verify checks a bearer token, or a session when cookie put it there.
func (a *Auth) verify(ctx context.Context, secret string, r *http.Request) (*auth.TokenInfo, error) {
	if r.Context().Value(sessionKey{}) == nil {
		return a.tokens(ctx, secret, r)
	}
	t, exp, ok := a.session(secret)
	if !ok {
		return nil, fmt.Errorf("%w: the sign-in has expired or its token is no longer valid; sign in again at /signin", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: scopesOf(t), UserID: t.Name, Expiration: exp}, nil
}

func scopesOf(t Token) []string {
	if t.Scope == ScopeWrite {
		return []string{ScopeRead, ScopeWrite}
	}
	return []string{ScopeRead}
}

// sessionValue returns the cookie value of a session of t until exp:
// the expiry in Unix seconds, a dot, and its MAC.
func sessionValue(t Token, exp time.Time) string {
	e := exp.Unix()
	return strconv.FormatInt(e, 10) + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(t.Secret, e))
}

func sessionMAC(secret string, exp int64) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "lore session\x00%d", exp)
	return m.Sum(nil)
}

// session returns the token a session value was made with, and its
// expiry, if it is unexpired and its MAC matches a configured token.
func (a *Auth) session(v string) (Token, time.Time, bool) {
	es, ms, ok := strings.Cut(v, ".")
	e, err := strconv.ParseInt(es, 10, 64)
	mac, err2 := base64.RawURLEncoding.DecodeString(ms)
	now := a.now()
	if !ok || err != nil || err2 != nil || len(mac) != sha256.Size || e <= now.Unix() || e > now.Add(SessionAge+time.Minute).Unix() {
		return Token{}, time.Time{}, false
	}
	var found *Token
	for i := range a.secrets { // every one, in constant time each
		if hmac.Equal(mac, sessionMAC(a.secrets[i].Secret, e)) {
			found = &a.secrets[i]
		}
	}
	if found == nil {
		return Token{}, time.Time{}, false
	}
	return *found, time.Unix(e, 0), true
}

// A SignInError is why SignIn refused: the HTTP status to answer and a
// message for the person.
type SignInError struct {
	Status  int
	Message string
}

func (e *SignInError) Error() string { return e.Message }

// SignIn checks a token a person typed into the sign-in page and, if it
// is valid, sets the session cookie and returns the token's caller. It
// refuses a request whose Origin is missing or not this server's (login
// CSRF: 403), a client address past its allowance of wrong tokens (429,
// with Retry-After), and a wrong token (401, which spends one of the
// allowance); it sets no cookie then.
func (a *Auth) SignIn(w http.ResponseWriter, r *http.Request, token string) (Caller, error) {
	if !a.Tokens() {
		return Caller{}, &SignInError{http.StatusNotFound, "this server needs no token (it was started without --tokens), so there is nothing to sign in to"}
	}
	if msg := a.crossSite(r, true); msg != "" {
		return Caller{}, &SignInError{http.StatusForbidden, msg}
	}
	var lim interface{ Allow() bool }
	if a.failures != nil {
		l, wait, ok := a.failures.over(r)
		if !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds()+0.999)))
			return Caller{}, &SignInError{http.StatusTooManyRequests, fmt.Sprintf(
				"too many wrong tokens from this address (more than %d a minute); wait %s and try again", a.failures.perMinute, wait.Round(time.Second))}
		}
		lim = l
	}
	ti, err := a.tokens(r.Context(), strings.TrimSpace(token), r)
	if err != nil {
		if lim != nil {
			lim.Allow() // spend one
		}
		return Caller{}, &SignInError{http.StatusUnauthorized, "that token is not one this server knows; check it and try again (tokens are in the server's --tokens file)"}
	}
	t := a.secretOf(ti.UserID)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sessionValue(t, a.now().Add(SessionAge)), Path: "/",
		MaxAge: int(SessionAge / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	return Caller{ID: ti.UserID, Scopes: ti.Scopes}, nil
}

func (a *Auth) secretOf(name string) Token {
	for _, t := range a.secrets {
		if t.Name == name {
			return t
		}
	}
	return Token{}
}

// SignOut clears the session cookie; a request from another site's page
// gets a SignInError (403) and keeps it.
func (a *Auth) SignOut(w http.ResponseWriter, r *http.Request) error {
	if msg := a.crossSite(r, true); msg != "" {
		return &SignInError{http.StatusForbidden, msg}
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure(r)})
	return nil
}

// secure reports whether the browser talks to the server over TLS: the
// connection is TLS, or the page that sent the request is https (a
// TLS-terminating proxy in front).
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(r.Header.Get("Origin"), "https://")
}

// SignedIn reports whether r carries a valid session cookie, or whether
// the server needs none (no tokens).
func (a *Auth) SignedIn(r *http.Request) bool {
	if !a.Tokens() {
		return true
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	_, _, ok := a.session(c.Value)
	return ok
}

type socketKey struct{}

type socketAuth struct {
	a *Auth
	r *http.Request
}

// ErrSocketAuth is the error of a WebSocket whose first message carries no
// valid token.
var ErrSocketAuth = errors.New(`forbidden: this server requires a token; send {"authorization": "Bearer TOKEN"} as the connection_init payload, or sign in at /signin`)

// SocketAuth returns, for a WebSocket that GuardSocket let open without
// credentials, the check of the Authorization value ("Bearer TOKEN") its
// client sends in its first message: it returns ctx with the token's
// Caller, or ErrSocketAuth. A wrong token spends one of the client
// address's allowance. SocketAuth returns nil when the upgrade carried
// credentials that Guard checked, or the server has no tokens.
func SocketAuth(ctx context.Context) func(ctx context.Context, authorization string) (context.Context, error) {
	s, _ := ctx.Value(socketKey{}).(*socketAuth)
	if s == nil {
		return nil
	}
	return func(ctx context.Context, authorization string) (context.Context, error) {
		if strings.TrimSpace(authorization) == "" {
			return ctx, ErrSocketAuth
		}
		var lim interface{ Allow() bool }
		if s.a.failures != nil {
			l, _, ok := s.a.failures.over(s.r)
			if !ok {
				return ctx, fmt.Errorf("%w (too many wrong tokens from this address; wait a minute)", ErrSocketAuth)
			}
			lim = l
		}
		scheme, secret, _ := strings.Cut(strings.TrimSpace(authorization), " ")
		if strings.EqualFold(scheme, "bearer") && secret != "" {
			if ti, err := s.a.tokens(ctx, strings.TrimSpace(secret), s.r); err == nil {
				return WithCaller(ctx, Caller{ID: ti.UserID, Scopes: ti.Scopes}), nil
			}
		}
		if lim != nil {
			lim.Allow()
		}
		return ctx, ErrSocketAuth
	}
}
