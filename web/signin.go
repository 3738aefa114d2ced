package web

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"strings"

	"github.com/lore-dev/lore/mcp"
)

// The sign-in page: on a server with tokens, a browser cannot send an
// Authorization header when it loads a page or opens a WebSocket, so a
// person types a token here once and the browser keeps a session cookie
// (mcp.Auth) that the console, the explorer and their WebSockets then
// use, with the token's scopes.

const cspSignIn = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// maxSignInBody caps the sign-in form: a token and a path.
const maxSignInBody = 8 << 10

// signIn serves GET and POST /signin and POST /signout.
func signIn(a *mcp.Auth) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/signout":
			r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
			if err := a.SignOut(w, r); err != nil {
				signInPage(w, r, a, err.(*mcp.SignInError).Status, err.Error(), "/")
				return
			}
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
		case r.Method == http.MethodPost:
			r.Body = http.MaxBytesReader(w, r.Body, maxSignInBody)
			if err := r.ParseForm(); err != nil {
				status, msg := mcp.BodyError(err)
				signInPage(w, r, a, status, msg, "/console/")
				return
			}
			next := localPath(r.PostForm.Get("next"))
			if _, err := a.SignIn(w, r, r.PostForm.Get("token")); err != nil {
				var se *mcp.SignInError
				errors.As(err, &se)
				signInPage(w, r, a, se.Status, se.Message, next)
				return
			}
			http.Redirect(w, r, next, http.StatusSeeOther)
		default:
			signInPage(w, r, a, http.StatusOK, "", localPath(r.URL.Query().Get("next")))
		}
	})
}

// localPath returns next if it is a path on this server, else the
// console: only a single leading slash, so "//evil.example" (another
// host) and "/\evil.example" (which browsers read alike) are refused, as
// are schemes and control characters. No open redirect.
func localPath(next string) string {
	const home = "/console/"
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) ||
		strings.ContainsFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }) {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return home
	}
	return next
}

// needSignIn redirects a browser that loads a page (the console, the
// explorer) without a valid session to the sign-in page, which brings it
// back; a client that sends an Authorization header gets the page.
func needSignIn(a *mcp.Auth, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Tokens() && strings.HasSuffix(r.URL.Path, "/") && r.Header.Get("Authorization") == "" && !a.SignedIn(r) {
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func signInPage(w http.ResponseWriter, r *http.Request, a *mcp.Auth, status int, problem, next string) {
	var b strings.Builder
	b.WriteString(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · Lore</title>
<link rel="icon" href="/assets/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/assets/site.css">
</head>
<body>
<header class="bar">
  <a class="brand" href="/"><img src="/assets/favicon.svg" alt="">Lore</a>
  <nav><a href="/console/">GraphQL console</a><a href="/explore/">Explorer</a><a href="/llms.txt">llms.txt</a></nav>
</header>
<main class="landing signin">
  <h1>Sign in</h1>
`)
	switch {
	case !a.Tokens():
		b.WriteString(`  <p id="signin-state">This server needs no token: the <a href="/console/">console</a> and the <a href="/explore/">explorer</a> work as they are.</p>
`)
	case a.SignedIn(r):
		b.WriteString(`  <p id="signin-state">This browser is signed in. <a href="` + html.EscapeString(next) + `">Go on</a>, sign in with another token below, or sign out.</p>
  <form method="post" action="/signout"><button type="submit" id="signout">Sign out</button></form>
`)
	default:
		b.WriteString(`  <p id="signin-state">This server asks for a token. Paste one from its tokens file (<code>lore serve --tokens FILE</code>): a read token
    lets you query and follow changes, a write token also lets you change the graph. The browser keeps a sign-in
    for 12 hours in a cookie that pages can neither read nor send to other sites; the token itself is not stored.</p>
`)
	}
	if problem != "" {
		b.WriteString(`  <p class="problem" id="problem" role="alert">` + html.EscapeString(problem) + "</p>\n")
	}
	if a.Tokens() {
		b.WriteString(`  <form method="post" action="/signin" id="signin">
    <input type="hidden" name="next" value="` + html.EscapeString(next) + `">
    <label for="token">Token</label>
    <input type="password" id="token" name="token" autocomplete="current-password" required autofocus>
    <button type="submit">Sign in</button>
  </form>
`)
	}
	b.WriteString("</main>\n</body>\n</html>\n")
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", cspSignIn)
	h.Set("X-Content-Type-Options", "nosniff")
	// Not no-referrer, under which browsers send the form's POST with
	// "Origin: null", which the Origin check refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(b.String()))
}
