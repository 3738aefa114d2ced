// Package gql serves Lore's catalog as GraphQL. gen.SDL renders the schema
// (schema.graphqls) from the MCP tool catalog and gqlgen generates the
// executable schema and the resolvers (make generate); each resolver is one
// call to the catalog, so GraphQL, MCP and REST run the same code with the
// same argument checks.
package gql

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// Options configure the GraphQL handler.
type Options struct {
	Logger *slog.Logger // nil discards
	// AllowedOrigins lists browser origins allowed for WebSocket upgrades besides loopback ones.
	AllowedOrigins []string
	// MaxDepth and MaxComplexity bound a query; 0 means the defaults.
	MaxDepth, MaxComplexity int
}

// Defaults of Options and fixed limits.
const (
	// DefaultMaxDepth allows walking a few hops in one query:
	// getNode { node { neighbors { node { neighbors { node { id } } } } } } is 7 deep.
	DefaultMaxDepth = 12
	// DefaultMaxComplexity allows about thirty tool calls (each costs
	// toolCost plus its selection) per operation.
	DefaultMaxComplexity = 1000
	// toolCost is the complexity of a field that calls the catalog.
	toolCost = 25
	// parserTokenLimit bounds the tokens of one query document.
	parserTokenLimit = 10_000
	// queryCacheSize bounds the parsed queries kept.
	queryCacheSize = 1000
	keepAlive      = 15 * time.Second
)

//go:embed schema.graphqls
var sdl []byte

// SDL returns the GraphQL schema document the handler serves.
func SDL() []byte { return sdl }

// NewHandler serves /graphql (POST, GET, SSE and graphql-transport-ws).
// Put it behind mcp.Guard: the bearer token Guard checks becomes the
// caller of every tool call, with its scopes.
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
	es := NewExecutableSchema(Config{Resolvers: &Resolver{Cat: cat, log: o.Logger}})
	srv := handler.New(costed{es})
	srv.AddTransport(&transport.Websocket{
		Implementation: transport.CoderWebsocketImplementation{AcceptOptions: websocket.AcceptOptions{
			OriginPatterns: originPatterns(o.AllowedOrigins)}},
		KeepAlivePingInterval: keepAlive,
	})
	srv.AddTransport(transport.SSE{KeepAlivePingInterval: keepAlive}) // before POST, which would take its requests
	srv.AddTransport(transport.POST{})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.Options{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](queryCacheSize))
	srv.SetParserTokenLimit(parserTokenLimit)
	srv.Use(extension.Introspection{})
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	srv.Use(depthLimit{max: o.MaxDepth})
	srv.SetErrorPresenter(presenter(o.Logger))
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		o.Logger.ErrorContext(ctx, "graphql resolver panicked", "panic", fmt.Sprint(v))
		return errInternal
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.ServeHTTP(w, r.WithContext(mcp.RequestContext(r)))
	})
}

// originPatterns lets loopback pages and the allowed origins open
// WebSockets; coder/websocket refuses other cross-origin upgrades.
func originPatterns(allowed []string) []string {
	patterns := []string{"localhost", "localhost:*", "127.0.0.1", "127.0.0.1:*", `\[::1\]`, `\[::1\]:*`}
	return append(patterns, allowed...)
}

// costed gives each field that calls the catalog (the root fields and
// fields with arguments, such as Node.neighbors) a cost of toolCost plus
// its selection; other fields cost what gqlgen counts by default.
type costed struct{ graphql.ExecutableSchema }

func (c costed) Complexity(ctx context.Context, typeName, field string, child int, args map[string]any) (int, bool) {
	if strings.HasPrefix(field, "__") {
		return 0, false
	}
	s := c.Schema()
	def := s.Types[typeName]
	root := s.Query != nil && typeName == s.Query.Name || s.Mutation != nil && typeName == s.Mutation.Name ||
		s.Subscription != nil && typeName == s.Subscription.Name
	var fd *ast.FieldDefinition
	if def != nil {
		fd = def.Fields.ForName(field)
	}
	if fd != nil && (root || len(fd.Arguments) > 0) {
		return toolCost + child, true
	}
	return c.ExecutableSchema.Complexity(ctx, typeName, field, child, args)
}

var errInternal = errors.New("internal error")

// codes are the GraphQL error codes of the catalog's error codes.
var codes = map[string]string{
	mcp.CodeInvalid:   "INVALID_ARGUMENT",
	mcp.CodeNotFound:  "NOT_FOUND",
	mcp.CodeConflict:  "CONFLICT",
	mcp.CodeForbidden: "FORBIDDEN",
	mcp.CodeConfirm:   "CONFIRMATION_REQUIRED",
	mcp.CodeCancelled: "CANCELLED",
	mcp.CodeInternal:  "INTERNAL",
}

// categories map the graph's error categories (resource reads return
// them) to codes.
var categories = []struct {
	err  error
	code string
}{
	{graph.ErrNotFound, mcp.CodeNotFound},
	{graph.ErrInvalid, mcp.CodeInvalid},
	{graph.ErrConflict, mcp.CodeConflict},
}

// presenter turns a resolver's error into the GraphQL error a client
// sees: a tool error keeps its message, with extensions.code and the
// violations by JSON pointer; gqlgen's own errors (parsing, validation,
// limits) pass as they are; anything else is logged and shown as
// "internal error".
func presenter(log *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		gerr := graphql.DefaultErrorPresenter(ctx, err)
		var te *mcp.Error
		if !errors.As(err, &te) {
			for _, c := range categories {
				if errors.Is(err, c.err) {
					te = &mcp.Error{Code: c.code, Message: err.Error()}
					break
				}
			}
		}
		if te == nil && errors.Is(err, context.Canceled) {
			te = &mcp.Error{Code: mcp.CodeCancelled, Message: "the call was cancelled"}
		}
		if te != nil {
			out := &gqlerror.Error{Message: te.Message, Path: gerr.Path, Locations: gerr.Locations,
				Extensions: map[string]any{"code": codeOf(te.Code)}}
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

func codeOf(code string) string {
	if c, ok := codes[code]; ok {
		return c
	}
	return strings.ToUpper(code)
}
