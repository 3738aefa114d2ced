// Package web is what a person and a crawler see: the one HTTP mux that
// mounts every surface — MCP at /mcp, REST at /api/v1 and /openapi.json,
// GraphQL at /graphql — behind the shared protections (mcp.Guard), beside
// the public documents (llms.txt, llms-full.txt, the GraphQL schema, the
// MCP server card) and the pages for people: the landing page at /, the
// GraphQL console at /console/ and the graph explorer at /explore/.
package web

import (
	"bytes"
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/gen/gql"
	"github.com/lore-dev/lore/gen/rest"
	"github.com/lore-dev/lore/mcp"
)

// Options configure the handler.
type Options struct {
	// HTTP configures the MCP endpoint and the protections every surface
	// shares: Host and Origin allow-lists, bearer tokens, rate, body and
	// JSON nesting limits.
	HTTP mcp.HTTPOptions
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Version and StorePath are shown on the landing page; empty shows
	// "unknown" and "(in memory)". With tokens configured the page shows
	// neither the store nor its counts.
	Version, StorePath string
	// Command is this program's absolute path, which the landing page's
	// snippet for desktop apps runs (they do not read the shell's PATH);
	// "" shows a placeholder.
	Command string
	// Metrics, if set, counts and times every request by surface and is
	// served at /metrics, behind the guard (a bearer token when tokens
	// are configured, like the API). Nil serves no /metrics.
	Metrics *Metrics
	// Ready are the checks of /readyz, run in order; none means ready
	// whenever the process serves HTTP.
	Ready []Check
	// ReadyTimeout bounds each check of /readyz; 0 means
	// DefaultReadyTimeout. A check still running then has failed.
	ReadyTimeout time.Duration
}

// NewHandler returns the server's whole HTTP surface. Every route checks
// the Host header (mcp.Guard, mcp.Public); a panic in any handler is
// logged with its stack and answered 500 in the route's own shape (a
// JSON-RPC error on /mcp, a GraphQL error on /graphql, a problem detail
// elsewhere) instead of ending the connection.
func NewHandler(srv *mcp.Server, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTP.Logger == nil {
		o.HTTP.Logger = o.Logger
	}
	cat := srv.Catalog()
	api := http.NewServeMux()
	api.Handle("/mcp", withSeqFloor(srv.Handler(&o.HTTP)))
	restH := rest.NewHandler(cat, &rest.Options{Logger: o.Logger, MaxJSONDepth: o.HTTP.MaxJSONDepth, Version: o.Version})
	api.Handle("/api/", withSeqFloor(restH))
	graphql := withSeqFloor(gql.NewHandler(cat, &gql.Options{Logger: o.Logger, AllowedOrigins: o.HTTP.AllowedOrigins,
		MaxJSONDepth: o.HTTP.MaxJSONDepth, MaxMessageBytes: o.HTTP.MaxBodyBytes}))

	if o.Metrics != nil {
		api.Handle("GET /metrics", o.Metrics.Handler())
	}

	// One Auth guards every API route, so they share each caller's rate
	// and each address's allowance of wrong tokens with the sign-in page.
	auth := mcp.NewAuth(&o.HTTP)
	mux := http.NewServeMux()
	mux.Handle("/", auth.Guard(api))
	// GraphQL's WebSockets may also authenticate in their first message.
	mux.Handle("/graphql", auth.GuardSocket(graphql))
	// Public documents describe the server, not its data: no token, any
	// origin; the Host check and a rate per client address.
	public := mcp.Public(&o.HTTP)
	markdown := "text/markdown; charset=utf-8"
	llms := gen.Committed("llms.txt")
	full := append(bytes.Clone(gen.Committed("llms-full.txt")), gen.ModelSection(cat.Model())...)
	card := gen.Stamped("server-card.json", o.Version)
	mux.Handle("GET /llms.txt", public(static(llms, markdown)))
	mux.Handle("GET /.well-known/llms.txt", public(static(llms, markdown)))
	mux.Handle("GET /llms-full.txt", public(static(full, markdown)))
	mux.Handle("GET /.well-known/llms-full.txt", public(static(full, markdown)))
	mux.Handle("GET /openapi.json", public(static(gen.Stamped("openapi.json", o.Version), "application/json")))
	mux.Handle("GET /schema.graphqls", public(static(gql.SDL(), "text/plain; charset=utf-8")))
	mux.Handle("GET /.well-known/mcp/server-card", public(static(card, "application/json")))
	mux.Handle("GET /.well-known/mcp.json", public(static(card, "application/json")))
	// Pages for people: public like the documents; the data they show
	// comes through /graphql, behind the guard.
	// With tokens, a browser signs in once (/signin) and the console and
	// the explorer send it there until it has.
	pages := public(newAssets())
	mux.Handle("GET /{$}", public(landing(cat, &o)))
	mux.Handle("GET /console/", needSignIn(auth, pages))
	mux.Handle("GET /explore/", needSignIn(auth, pages))
	mux.Handle("GET /assets/", pages)
	signin := public(signIn(auth))
	mux.Handle("GET /signin", signin)
	mux.Handle("POST /signin", signin)
	mux.Handle("POST /signout", signin)
	// Health for load balancers and orchestrators: GETs without side
	// effects or data, so public (no token, any Origin) like the documents.
	mux.Handle("GET /healthz", public(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write([]byte(`{"status":"ok"}` + "\n"))
	})))
	mux.Handle("GET /readyz", public(readyz(o.Ready, cmp.Or(o.ReadyTimeout, DefaultReadyTimeout))))
	return o.Metrics.measure(mcp.Recover(mux, o.Logger, internalError))
}

// An Endpoint is a place the handler serves: what it is, and its path.
type Endpoint struct {
	Name, Path string
}

// Endpoints are the handler's surfaces and pages, in the order a person
// meets them: lore serve logs each one's URL when it starts.
func Endpoints() []Endpoint {
	return []Endpoint{
		{"landing page", "/"},
		{"MCP", "/mcp"},
		{"GraphQL console", "/console/"},
		{"graph explorer", "/explore/"},
		{"GraphQL", "/graphql"},
		{"OpenAPI", "/openapi.json"},
		{"llms.txt", "/llms.txt"},
	}
}

// internalError answers a panic in the shape of the route it hit.
func internalError(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/mcp":
		mcp.InternalError(w, r)
	case r.URL.Path == "/graphql":
		gql.InternalError(w, r)
	default:
		rest.InternalError(w, r)
	}
}

// static serves fixed bytes, cacheable for a day, readable from any origin.
func static(data []byte, contentType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "public, max-age=86400")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write(data)
	})
}
