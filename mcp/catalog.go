// Package mcp is Lore's canonical surface: the catalog of tools, resources
// and prompts, declared once, and the MCP server that serves it on the
// official Go SDK over stdio and Streamable HTTP in both protocol eras.
//
// Every surface calls a tool through Catalog.Invoke, which validates the
// arguments against the tool's JSON Schema 2020-12 input schema (every
// violation, with its pointer, formats asserted), applies defaults, calls
// the handler with the caller's limits and returns structured output capped
// in bytes. REST and GraphQL are generated from the same definitions.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// ModelURI is the URI of the model resource. Output schemas refer to the
// model's node types as ModelURI#/$defs/TYPE.
const ModelURI = "lore://model"

// Options configure a Catalog. The zero value serves every tool under the
// default ceilings.
type Options struct {
	// ReadOnly leaves the write tools out of the catalog.
	ReadOnly bool
	// Ceilings bound every read; zero fields take graph.DefaultCeilings.
	Ceilings graph.Limits
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger
	// MaxDepth is the deepest nesting a call's arguments may have; 0 means
	// schema.DefaultMaxDepth. Arguments are checked (schema.CheckJSON)
	// before anything decodes them.
	MaxDepth int
	// Observe, if set, hears of every Invoke once it returns: the tool's
	// name, how long the call took and its outcome (nil, or the error
	// Invoke returned: a *Error, or ErrUnknownTool). Metrics use it. It
	// runs on the caller's goroutine and must not block.
	Observe func(ctx context.Context, tool string, d time.Duration, err error)
}

// A Catalog is the set of tools over one store.
type Catalog struct {
	store    graph.Store
	ceilings graph.Limits
	log      *slog.Logger
	maxDepth int // of arguments; 0: schema.DefaultMaxDepth
	observe  func(ctx context.Context, tool string, d time.Duration, err error)
	tools    []*Tool
	byName   map[string]*Tool
	outputs  map[string]*jsonschema.Schema
}

// Scopes a caller may hold.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
)

// A Caller is who makes a call. Calls whose context carries no Caller (stdio,
// the CLI, tests) hold every scope.
type Caller struct {
	// ID names the caller in logs and rate limits ("" for anonymous).
	ID string
	// Scopes lists what the caller may do: ScopeRead, ScopeWrite.
	Scopes []string
}

type callerKey struct{}

// WithCaller returns a context carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller in ctx and whether there is one.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

func allowed(ctx context.Context, scope string) bool {
	c, ok := CallerFrom(ctx)
	return !ok || slices.Contains(c.Scopes, scope) || scope == ScopeRead && slices.Contains(c.Scopes, ScopeWrite)
}

// NewCatalog builds the catalog over s. It panics if a tool's schemas do
// not compile, which the package's tests rule out.
func NewCatalog(s graph.Store, opts *Options) *Catalog {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Catalog{store: s, ceilings: graph.DefaultCeilings, log: o.Logger, maxDepth: o.MaxDepth, observe: o.Observe,
		byName: map[string]*Tool{}, outputs: map[string]*jsonschema.Schema{}}
	c.ceilings, _ = o.Ceilings.Clamp(graph.Limits{})
	// The tools' published schemas do not depend on the model; the strict
	// output schemas that tests check results with refer to the model of
	// the catalog's start.
	comp := newCompiler(s.Model())
	for _, t := range Definitions(s.Model()) {
		if t.Write && o.ReadOnly {
			continue
		}
		if _, dup := c.byName[t.Name]; dup {
			panic("mcp: duplicate tool " + t.Name)
		}
		t.defaults = topDefaults(t.Input)
		t.in = mustCompile(comp, "lore:tool/"+t.Name+"/input", t.Input)
		c.outputs[t.Name] = mustCompile(comp, "lore:tool/"+t.Name+"/output", cmpOr(t.strictOutput, t.Output))
		c.tools = append(c.tools, t)
		c.byName[t.Name] = t
	}
	return c
}

// Definitions returns every tool of the catalog for a model, write tools
// included, in presentation order, with compact schemas: what the
// generated surfaces are rendered from. The published schemas do not depend
// on the model.
func Definitions(m *schema.Model) []*Tool {
	ts := tools(m)
	for _, t := range ts {
		if !ValidToolName(t.Name) {
			panic(fmt.Sprintf("mcp: tool name %q does not match %s", t.Name, toolNamePattern))
		}
		t.Input, t.Output = compact(t.Input), compact(t.Output)
		if t.strictOutput != nil {
			t.strictOutput = compact(t.strictOutput)
		}
	}
	return ts
}

// Store returns the store the catalog serves.
func (c *Catalog) Store() graph.Store { return c.store }

// Model returns the store's model in use, which follows the store's: a
// model put in use while the catalog serves (another replica's lore model
// apply) is the one its reads and writes see.
func (c *Catalog) Model() *schema.Model { return c.store.Model() }

// Ceilings returns the read ceilings.
func (c *Catalog) Ceilings() graph.Limits { return c.ceilings }

// Tools returns the catalog's tools in presentation order.
func (c *Catalog) Tools() []*Tool { return slices.Clone(c.tools) }

// Tool returns the named tool.
func (c *Catalog) Tool(name string) (*Tool, bool) { t, ok := c.byName[name]; return t, ok }

const toolNamePattern = `^[a-z][a-z0-9_]{0,63}$`

// ValidToolName reports whether name matches ^[a-z][a-z0-9_]{0,63}$.
func ValidToolName(name string) bool {
	if name == "" || len(name) > 64 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// A Tool is one operation of the catalog, declared once for every surface.
type Tool struct {
	Name  string
	Title string
	// Description is written for a model choosing a tool.
	Description string
	// Input and Output are JSON Schema 2020-12 documents.
	Input, Output json.RawMessage
	// Write tools need the write scope and are absent from read-only catalogs.
	Write bool
	// Annotations: ReadOnly, Destructive and Idempotent hints. OpenWorld is
	// always false: a tool sees only the store.
	ReadOnly, Destructive, Idempotent bool
	// Confirm marks tools that ask for confirmation before they run: their
	// input has a "confirm" boolean, and a call without confirm: true
	// fails with CodeConfirm.
	Confirm bool
	// Icon is an SVG data URI.
	Icon string

	// strictOutput is what ValidateOutput checks: Output with every
	// object closed and, for nodes, references into the model, which only
	// Lore can resolve.
	strictOutput json.RawMessage
	// schemaIn, if set, is the type the input schema is derived from, for
	// a tool that decodes its arguments itself.
	schemaIn reflect.Type

	run      func(ctx context.Context, c *Catalog, args json.RawMessage) (output, error)
	in       *jsonschema.Schema
	defaults map[string]json.RawMessage
}

// define declares a tool whose handler takes the decoded input In and
// returns Out: its input schema is derived from In (or from schemaIn, if
// the tool decodes its arguments itself) and its output schemas from Out
// (schemagen.go). The arguments are decoded strictly: a field In does not
// declare is refused, by name.
func define[In any, Out output](t Tool, run func(ctx context.Context, c *Catalog, in *In) (Out, error)) *Tool {
	inType := reflect.TypeFor[In]()
	if t.schemaIn != nil {
		inType = t.schemaIn
	}
	t.Input = schemaOf(inType, inputSchema)
	t.Output = schemaOf(reflect.TypeFor[Out](), outputSchema)
	t.strictOutput = schemaOf(reflect.TypeFor[Out](), strictSchema)
	t.run = func(ctx context.Context, c *Catalog, args json.RawMessage) (output, error) {
		in := new(In)
		if err := schema.DecodeStrict(args, in); err != nil {
			// The arguments passed the input schema; what remains (a number
			// too large for its field, say) is told in the arguments' terms.
			var de *schema.DecodeError
			if errors.As(err, &de) && de.Pointer != "" {
				return nil, &Error{Code: CodeInvalid, Message: "the arguments of " + t.Name + " do not fit",
					Violations: []schema.Violation{{Pointer: de.Pointer, Message: de.Reason}}}
			}
			return nil, &Error{Code: CodeInvalid, Message: "the arguments of " + t.Name + ": " + err.Error()}
		}
		out, err := run(ctx, c, in)
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return &t
}

// toolError turns a handler's error into an *Error; errors outside the
// table (ErrorKinds) are logged and reported as internal.
func (c *Catalog) toolError(ctx context.Context, name string, err error) *Error {
	if e := ErrorOf(err); e != nil {
		return e
	}
	c.log.ErrorContext(ctx, "tool call failed", "tool", name, "error", err)
	return internalError()
}

// A Result is a tool's successful output: Structured is the JSON object
// the output schema describes, Text a short rendering for a reader.
type Result struct {
	Structured json.RawMessage
	Text       string
}

// Invoke validates args against the named tool's input schema, applies its
// defaults and runs it. Tool errors are returned as *Error; an unknown tool
// is ErrUnknownTool. A panic in the tool is logged with its stack and
// returned as an internal *Error: no call ends the process.
func (c *Catalog) Invoke(ctx context.Context, name string, args json.RawMessage) (res *Result, err error) {
	if c.observe != nil {
		start := time.Now()
		defer func() { c.observe(ctx, name, time.Since(start), err) }() // after the recover below
	}
	defer func() {
		if v := recover(); v != nil {
			logPanic(ctx, c.log, "tool call panicked", v, "tool", name)
			res, err = nil, internalError()
		}
	}()
	t, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if t.Write && !allowed(ctx, ScopeWrite) {
		return nil, &Error{Code: CodeForbidden, Scope: ScopeWrite,
			Message: fmt.Sprintf("insufficient_scope: %s needs the %q scope; this token has read access only", name, ScopeWrite)}
	}
	if !allowed(ctx, ScopeRead) {
		return nil, &Error{Code: CodeForbidden, Scope: ScopeRead, Message: fmt.Sprintf("insufficient_scope: %s needs the %q scope", name, ScopeRead)}
	}
	args, err = c.checkArgs(t, args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		// The caller has gone or its deadline has passed: nothing starts.
		return nil, c.toolError(ctx, name, err)
	}
	out, err := t.run(ctx, c, args)
	if err != nil {
		return nil, c.toolError(ctx, name, err)
	}
	return c.render(out)
}

// ErrUnknownTool is returned by Invoke for a name the catalog lacks.
var ErrUnknownTool = errors.New("unknown tool")

// ValidateOutput checks a tool's structured output against its output
// schema; tests run it on every call.
func (c *Catalog) ValidateOutput(name string, structured json.RawMessage) error {
	s, ok := c.outputs[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(structured))
	if err != nil {
		return err
	}
	if err := s.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &schema.ValidationError{Violations: schema.Flatten(ve)}
		}
		return err
	}
	return nil
}

func cmpOr(a, b json.RawMessage) json.RawMessage {
	if a != nil {
		return a
	}
	return b
}

func compact(doc json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, doc); err != nil {
		panic("mcp: schema: " + err.Error())
	}
	return b.Bytes()
}
