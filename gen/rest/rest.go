// Package rest serves the catalog's tools and resources over plain HTTP, as
// the OpenAPI document gen.OpenAPI renders describes them:
//
//	POST /api/v1/tools/{name}      the arguments as the JSON body ({} if empty)
//	GET  /api/v1/tools/{name}?...  read-only tools, the arguments as query parameters
//	GET  /api/v1/resources?uri=    a resource's contents, with its MIME type
//	GET  /api/v1/subscribe?uri=    server-sent events when the resource changes; each
//	                               carries its change's sequence number as its id, and
//	                               ?since= or Last-Event-ID resumes after one
//	GET  /openapi.json             the committed OpenAPI 3.1 document
//
// Every tool call goes through Catalog.Invoke with the caller from
// mcp.RequestContext, so REST gets the same validation, scopes and byte
// caps as MCP. Errors are RFC 9457 problem details mapped from one table.
// Put the handler behind mcp.Guard for the Origin, token, rate and body
// limits.
package rest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// Options configure the REST handler. The zero value is ready to use.
type Options struct {
	Logger *slog.Logger // nil discards
	// KeepAlive is how often an idle event stream sends a comment line, so
	// that proxies keep it open; 0 means 30 seconds.
	KeepAlive time.Duration
	// MaxJSONDepth caps the nesting of a JSON body or JSON query
	// parameter, checked before anything decodes it; 0 means
	// schema.DefaultMaxDepth.
	MaxJSONDepth int
	// Version is the running build's version, which /openapi.json states
	// as info.version (see gen.Stamped); "" keeps the committed one.
	Version string
}

type handler struct {
	cat       *mcp.Catalog
	log       *slog.Logger
	keepAlive time.Duration
	maxDepth  int
	openAPI   []byte // the document /openapi.json serves
	// params holds each read-only tool's GET parameters by name.
	params map[string]map[string]gen.QueryParam
}

// NewHandler serves /api/v1/... and /openapi.json. It panics if a tool's
// input schema is not a JSON object, which the catalog's tests rule out.
func NewHandler(cat *mcp.Catalog, opts *Options) http.Handler {
	var o Options
	if opts != nil {
		o = *opts
	}
	h := &handler{cat: cat, log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)), keepAlive: cmp.Or(o.KeepAlive, 30*time.Second),
		maxDepth: cmp.Or(max(o.MaxJSONDepth, 0), schema.DefaultMaxDepth), openAPI: gen.Stamped("openapi.json", o.Version), params: map[string]map[string]gen.QueryParam{}}
	for _, t := range cat.Tools() {
		if !t.ReadOnly {
			continue
		}
		ps, err := gen.QueryParams(t.Input)
		if err != nil {
			panic(fmt.Sprintf("rest: tool %s: %v", t.Name, err))
		}
		h.params[t.Name] = map[string]gen.QueryParam{}
		for _, p := range ps {
			h.params[t.Name][p.Name] = p
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc(gen.ToolsPath+"{name}", h.tool)
	mux.HandleFunc(gen.ResourcesPath, h.only(h.resource, http.MethodGet, http.MethodHead))
	mux.HandleFunc(gen.SubscribePath, h.only(streaming(h.subscribe), http.MethodGet))
	mux.HandleFunc("/openapi.json", h.only(h.serveOpenAPI, http.MethodGet, http.MethodHead))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		h.problem(w, r, &mcp.Error{Code: mcp.CodeNotFound, Message: fmt.Sprintf("no endpoint %s; see /openapi.json", r.URL.Path)})
	})
	return mux
}

// only refuses methods other than those listed with 405.
func (h *handler) only(next http.HandlerFunc, methods ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(methods, r.Method) {
			h.notAllowed(w, r, methods, fmt.Sprintf("%s takes %s", r.URL.Path, strings.Join(methods, " or ")))
			return
		}
		next(w, r)
	}
}

func (h *handler) serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(h.openAPI)
}

func (h *handler) tool(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	t, ok := h.cat.Tool(name)
	if !ok {
		h.problem(w, r, fmt.Errorf("%w %q", mcp.ErrUnknownTool, name))
		return
	}
	var args json.RawMessage
	switch {
	case r.Method == http.MethodPost:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			h.problem(w, r, err)
			return
		}
		if len(bytes.TrimSpace(body)) > 0 {
			if err := schema.CheckJSON(body, h.maxDepth); err != nil {
				h.problem(w, r, jsonProblem("the body", "", err))
				return
			}
		}
		args = body
	case r.Method == http.MethodGet && t.ReadOnly:
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			h.problem(w, r, &mcp.Error{Code: mcp.CodeInvalid, Message: "the query string is malformed: " + err.Error()})
			return
		}
		if args, err = h.queryArgs(name, q); err != nil {
			h.problem(w, r, err)
			return
		}
	case r.Method == http.MethodGet:
		h.notAllowed(w, r, []string{http.MethodPost}, fmt.Sprintf("%s writes: call it with POST and the arguments as a JSON body", name))
		return
	default:
		allow := []string{http.MethodPost}
		if t.ReadOnly {
			allow = []string{http.MethodGet, http.MethodPost}
		}
		h.notAllowed(w, r, allow, fmt.Sprintf("%s takes %s", name, strings.Join(allow, " or ")))
		return
	}
	res, err := h.cat.Invoke(mcp.RequestContext(r), name, args)
	if err != nil {
		h.problem(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(res.Structured)
}

// queryArgs builds a read-only tool's arguments from its query parameters,
// each decoded by its property's types. Parameters that are not properties
// are passed on as strings, so that Invoke refuses them by pointer like any
// unknown property. A value that may be JSON is checked with
// schema.CheckJSON before it is decoded; one it refuses is taken as a
// string (which the input schema then refuses by pointer if the argument
// cannot be one), unless it is meant as an object or array (it starts with
// { or [, and the argument cannot be a string): that is refused with the
// reason.
func (h *handler) queryArgs(tool string, q url.Values) (json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	for k, vs := range q {
		p, ok := h.params[tool][k]
		if !ok {
			p = gen.QueryParam{Name: k, Types: []string{"string"}}
		}
		if p.List && len(vs) == 1 && !strings.HasPrefix(strings.TrimSpace(vs[0]), "[") {
			args[k] = p.Decode(vs) // a word, or a comma list
			continue
		}
		if len(vs) == 1 && (p.JSON || !slices.Equal(p.Types, []string{"string"})) {
			if err := schema.CheckJSON([]byte(vs[0]), h.maxDepth); err != nil {
				v := strings.TrimSpace(vs[0])
				if v != "" && (v[0] == '{' || v[0] == '[') && (p.JSON || !slices.Contains(p.Types, "string")) {
					return nil, jsonProblem("query parameter "+k, "/"+k, err)
				}
				args[k], _ = json.Marshal(vs[0])
				continue
			}
		}
		args[k] = p.Decode(vs)
	}
	data, _ := json.Marshal(args)
	return data, nil
}

// jsonProblem is the tool error of JSON input schema.CheckJSON refused,
// with a violation at its pointer under at.
func jsonProblem(what, at string, err error) *mcp.Error {
	v := schema.Violation{Pointer: at, Rule: "json", Message: err.Error()}
	var jerr *schema.JSONError
	if errors.As(err, &jerr) {
		v.Pointer, v.Message = at+jerr.Pointer, jerr.Reason
	}
	return &mcp.Error{Code: mcp.CodeInvalid, Message: what + " is not JSON this server accepts: " + err.Error(), Violations: []schema.Violation{v}}
}

// streaming lets an event stream outlive the server's read and write
// timeouts (mcp.StreamResponse).
func streaming(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		next(mcp.StreamResponse(w, r), r)
	}
}

func (h *handler) resource(w http.ResponseWriter, r *http.Request) {
	uri, ok := h.uriParam(w, r)
	if !ok {
		return
	}
	res, err := h.cat.ReadResource(mcp.RequestContext(r), uri)
	if err != nil {
		h.problem(w, r, err)
		return
	}
	// The contents as they are, with their MIME type: every resource is
	// JSON, and a client reads it as JSON, not as a string inside one.
	w.Header().Set("Content-Type", res.MIMEType)
	w.Write([]byte(res.Text))
}

// uriParam reads the uri query parameter, answering 400 if it is missing.
func (h *handler) uriParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	uri := r.URL.Query().Get("uri")
	if uri == "" {
		h.problem(w, r, &mcp.Error{Code: mcp.CodeInvalid, Message: "the uri query parameter is required",
			Violations: []schema.Violation{{Pointer: "/uri", Rule: "required", Message: "missing: pass ?uri=lore://..."}}})
		return "", false
	}
	return uri, true
}

// subscribable reports whether uri names a resource or fits a resource
// template (a node that does not exist yet may be followed).
func subscribable(uri string) bool {
	for _, r := range mcp.Resources() {
		if r.URI == uri {
			return true
		}
		if prefix, _, ok := strings.Cut(r.Template, "{"); ok && len(uri) > len(prefix) && strings.HasPrefix(uri, prefix) {
			return true
		}
	}
	return false
}

type updated struct {
	URI string `json:"uri"`
	Seq uint64 `json:"seq,omitempty"`
}

// subscribe streams server-sent events: "ready" once the subscription is
// live, then "updated" for every committed change that touched the URI.
func (h *handler) subscribe(w http.ResponseWriter, r *http.Request) {
	uri, ok := h.uriParam(w, r)
	if !ok {
		return
	}
	if !subscribable(uri) {
		h.problem(w, r, &mcp.Error{Code: mcp.CodeNotFound, Message: fmt.Sprintf("%q names no resource; resources: %s", uri, resourceNames())})
		return
	}
	ctx := r.Context()
	since, resume, err := sinceParam(r)
	if err != nil {
		h.problem(w, r, err)
		return
	}
	// Before "ready": a change after it is never missed.
	var updates <-chan mcp.Update
	if resume {
		updates, err = h.cat.UpdatesSince(ctx, since)
	} else {
		updates, err = h.cat.Updates(ctx)
	}
	if err != nil {
		h.problem(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // the stream outlives the server's write timeout
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data updated) error {
		b, _ := json.Marshal(data)
		id := ""
		if data.Seq > 0 {
			// The change's sequence number: a client that reconnects with it
			// as Last-Event-ID (or ?since=) gets the changes after it.
			id = fmt.Sprintf("id: %d\n", data.Seq)
		}
		if _, err := fmt.Fprintf(w, "event: %s\n%sdata: %s\n\n", event, id, b); err != nil {
			return err
		}
		return rc.Flush()
	}
	if err := send("ready", updated{URI: uri}); err != nil {
		h.log.DebugContext(ctx, "event stream failed", "uri", uri, "error", err)
		return
	}
	tick := time.NewTicker(h.keepAlive)
	defer tick.Stop()
	for {
		select {
		case u, ok := <-updates:
			if !ok {
				return
			}
			if slices.Contains(u.URIs, uri) {
				err = send("updated", updated{URI: uri, Seq: u.Change.Seq})
			}
		case <-tick.C:
			if _, err = io.WriteString(w, ": keep-alive\n\n"); err == nil {
				err = rc.Flush()
			}
		case <-ctx.Done():
			return
		}
		if err != nil {
			h.log.DebugContext(ctx, "event stream failed", "uri", uri, "error", err)
			return
		}
	}
}

// sinceParam reads where a stream resumes: ?since=, or the Last-Event-ID
// header an EventSource sends when it reconnects (an event id is a change's
// sequence number).
func sinceParam(r *http.Request) (since uint64, ok bool, err error) {
	v, at := r.URL.Query().Get("since"), "/since"
	if v == "" {
		v, at = r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	}
	if v == "" {
		return 0, false, nil
	}
	since, perr := strconv.ParseUint(v, 10, 64)
	if perr != nil {
		return 0, false, &mcp.Error{Code: mcp.CodeInvalid, Message: fmt.Sprintf("%s must be a change's sequence number (an event id), not %q", strings.TrimPrefix(at, "/"), v),
			Violations: []schema.Violation{{Pointer: at, Rule: "type", Message: "want a non-negative integer"}}}
	}
	return since, true, nil
}

func resourceNames() string {
	var names []string
	for _, r := range mcp.Resources() {
		names = append(names, r.URI+r.Template)
	}
	return strings.Join(names, ", ")
}

// toolError turns any error into a tool error with a code; errors without
// one are logged and reported as internal.
func (h *handler) toolError(r *http.Request, err error) *mcp.Error {
	var te *mcp.Error
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &te):
		if te.Code == mcp.CodeConfirm {
			c := *te
			c.Message += ". Over REST: send the same body with \"confirm\": true."
			c.Violations = []schema.Violation{{Pointer: "/confirm", Rule: "const", Message: "must be true for a destructive call"}}
			return &c
		}
		return te
	case errors.Is(err, mcp.ErrUnknownTool):
		var names []string
		for _, t := range h.cat.Tools() {
			names = append(names, t.Name)
		}
		return &mcp.Error{Code: mcp.CodeNotFound, Message: fmt.Sprintf("%v; the tools are %s", err, strings.Join(names, ", "))}
	case errors.As(err, &tooLarge):
		return &mcp.Error{Code: mcp.CodeTooLarge, Message: fmt.Sprintf("the body is over the server's limit of %d bytes; send less per call", tooLarge.Limit)}
	case errors.Is(err, os.ErrDeadlineExceeded):
		_, msg := mcp.BodyError(err)
		return &mcp.Error{Code: mcp.CodeTimeout, Message: msg}
	}
	if e := mcp.ErrorOf(err); e != nil {
		return e
	}
	h.log.ErrorContext(r.Context(), "REST call failed", "path", r.URL.Path, "error", err)
	return &mcp.Error{Code: mcp.CodeInternal, Message: "internal error; the server log has the details"}
}

// A problem is an RFC 9457 problem detail with Lore's code and violations.
type problem struct {
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Status     int                `json:"status"`
	Detail     string             `json:"detail,omitempty"`
	Code       string             `json:"code"`
	Violations []schema.Violation `json:"violations,omitempty"`
}

func (h *handler) problem(w http.ResponseWriter, r *http.Request, err error) {
	e := h.toolError(r, err)
	k := mcp.KindOf(e.Code)
	status := k.Status
	if status == http.StatusBadRequest && len(e.Violations) == 0 {
		// Every 400 lists what to fix, as violations; this one has no
		// better place than the whole request.
		c := *e
		c.Violations = []schema.Violation{{Pointer: "", Rule: e.Code, Message: e.Message}}
		e = &c
	}
	data, _ := json.Marshal(problem{Type: "about:blank", Title: k.Title, Status: status,
		Detail: e.Message, Code: e.Code, Violations: e.Violations})
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if e.Code == mcp.CodeForbidden && e.Scope != "" {
		mcp.InsufficientScope(w.Header(), e.Scope)
	}
	w.WriteHeader(status)
	w.Write(data)
}

func (h *handler) notAllowed(w http.ResponseWriter, r *http.Request, allow []string, msg string) {
	w.Header().Set("Allow", strings.Join(allow, ", "))
	h.problem(w, r, &mcp.Error{Code: mcp.CodeMethod, Message: msg})
}

// InternalError answers 500 with a problem detail and nothing more: what
// a client sees when a handler panicked (mcp.Recover).
func InternalError(w http.ResponseWriter, _ *http.Request) {
	k := mcp.KindOf(mcp.CodeInternal)
	status := k.Status
	data, _ := json.Marshal(problem{Type: "about:blank", Title: k.Title, Status: status,
		Detail: "internal error; the server log has the details", Code: k.Code})
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(data)
}
