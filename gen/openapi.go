package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/lore-dev/lore/mcp"
)

// The REST surface's paths.
const (
	ToolsPath     = "/api/v1/tools/"
	ResourcesPath = "/api/v1/resources"
	SubscribePath = "/api/v1/subscribe"
)

// Problem media type (RFC 9457).
const problemJSON = "application/problem+json"

type obj = map[string]any

// OpenAPI renders the OpenAPI 3.1.1 document of the REST surface: for each
// tool POST /api/v1/tools/{name} (and GET with query parameters for
// read-only tools), whose request and response bodies are the tool's input
// and output schemas, verbatim except that "$defs" are hoisted into
// components/schemas and local references rewritten to match; then
// GET /api/v1/resources and the server-sent-event stream
// GET /api/v1/subscribe. Errors are RFC 9457 problem details.
func OpenAPI(in Input) ([]byte, error) {
	schemas := obj{"Problem": problemSchema, "Violation": violationSchema}
	paths := obj{}
	for _, t := range in.Tools {
		p := ToolsPath + t.Name
		if _, dup := paths[p]; dup {
			return nil, fmt.Errorf("tool %s: defined twice", t.Name)
		}
		input, err := hoist(schemas, t.Name+".input", t.Input)
		if err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.Name, err)
		}
		if _, err := hoist(schemas, t.Name+".output", t.Output); err != nil {
			return nil, fmt.Errorf("tool %s: output schema: %w", t.Name, err)
		}
		item := obj{"post": postOperation(t, input)}
		if t.ReadOnly {
			get, err := getOperation(t, input)
			if err != nil {
				return nil, fmt.Errorf("tool %s: %w", t.Name, err)
			}
			item["get"] = get
		}
		paths[p] = item
	}
	paths[ResourcesPath] = obj{"get": resourcesOperation(in.Resources)}
	paths[SubscribePath] = obj{"get": subscribeOperation(in.Resources)}
	doc := obj{
		"openapi": "3.1.1",
		"info":    obj{"title": "Lore", "version": APIVersion, "description": summary + "\n\n" + restIntro},
		"servers": []any{obj{"url": "/"}},
		"tags": []any{
			obj{"name": "read", "description": "Read-only tools: POST, or GET with the arguments as query parameters."},
			obj{"name": "write", "description": "Write tools: all-or-nothing batches, POST only."},
			obj{"name": "resources", "description": "Resources by URI and server-sent events when they change."},
		},
		"paths": paths,
		"components": obj{
			"schemas":   schemas,
			"responses": responses,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer",
				"description": "Tokens are optional server configuration. Without tokens configured every call is anonymous; " +
					"with tokens every request needs one, and write tools need a token with the write scope."}},
		},
	}
	return marshal(doc)
}

const restIntro = "Each MCP tool is `POST /api/v1/tools/{name}` with the tool's arguments as the JSON body (an empty body is `{}`) " +
	"and its structured result as the response; read-only tools also answer GET with the arguments as query parameters. " +
	"Every call is validated against the tool's input schema, the same one MCP publishes. " +
	"Errors are RFC 9457 problem details whose `code` is Lore's error code and whose `violations` list every broken rule " +
	"by JSON pointer into the arguments."

// anyone lets an operation be called anonymously or with a bearer token:
// tokens are optional configuration.
var anyone = []any{obj{}, obj{"bearer": []any{}}}

func ref(kind, name string) obj { return obj{"$ref": "#/components/" + kind + "/" + name} }

func jsonContent(schema any) obj { return obj{"application/json": obj{"schema": schema}} }

func postOperation(t *mcp.Tool, input obj) obj {
	desc := t.Description
	if t.Confirm {
		desc += "\n\nDestructive: the body must include `\"confirm\": true`; without it the call fails with 400 " +
			"`confirmation_required` and nothing is deleted. Ask the user first."
	}
	body := obj{"content": jsonContent(ref("schemas", t.Name+".input"))}
	if req, _ := input["required"].([]any); len(req) > 0 {
		body["required"] = true
	} else {
		body["description"] = "An empty body is the same as `{}`."
	}
	res := toolResponses(t)
	res["413"] = ref("responses", "TooLarge")
	return obj{
		"operationId": t.Name, "summary": t.Title, "description": desc, "tags": []any{toolTag(t)},
		"requestBody": body, "responses": res, "security": anyone,
	}
}

func getOperation(t *mcp.Tool, input obj) (obj, error) {
	params, err := queryParams(input)
	if err != nil {
		return nil, err
	}
	var list []any
	for _, p := range params {
		prop := p.schema
		param := obj{"name": p.Name, "in": "query", "required": p.Required}
		desc, _ := prop["description"].(string)
		if p.JSON {
			param["content"] = jsonContent(prop)
			desc = sentences("JSON-encoded.", desc)
			if p.allows("string") {
				desc = sentences(desc, "A value that is not JSON is taken as a string.")
			}
		} else {
			param["schema"] = prop
		}
		if desc != "" {
			param["description"] = desc
		}
		list = append(list, param)
	}
	op := obj{
		"operationId": t.Name + "_get", "summary": t.Title + " (GET)",
		"description": t.Description + "\n\nThe same call as POST, with each top-level argument as a query parameter: " +
			"scalars as plain values, objects and arrays (and arguments that may be either) JSON-encoded. " +
			"A parameter given more than once is an array of strings. Unknown parameters are refused like unknown properties.",
		"tags": []any{toolTag(t)}, "responses": toolResponses(t), "security": anyone,
	}
	if list != nil {
		op["parameters"] = list
	}
	return op, nil
}

// sentences joins two bits of prose, ending the first with a full stop.
func sentences(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	if !strings.HasSuffix(a, ".") {
		a += "."
	}
	return a + " " + b
}

func toolTag(t *mcp.Tool) string {
	if t.ReadOnly {
		return "read"
	}
	return "write"
}

func toolResponses(t *mcp.Tool) obj {
	res := obj{
		"200":     obj{"description": t.Title + ": the tool's structured result.", "content": jsonContent(ref("schemas", t.Name+".output"))},
		"400":     ref("responses", "BadRequest"),
		"401":     ref("responses", "Unauthorized"),
		"403":     ref("responses", "Forbidden"),
		"404":     ref("responses", "NotFound"),
		"429":     ref("responses", "TooManyRequests"),
		"504":     ref("responses", "DeadlineExceeded"),
		"default": ref("responses", "Problem"),
	}
	if !t.ReadOnly {
		res["409"] = ref("responses", "Conflict")
	}
	return res
}

func uriParam(desc string) obj {
	return obj{"name": "uri", "in": "query", "required": true, "description": desc, "schema": obj{"type": "string", "minLength": 1}}
}

func resourceList(rs []mcp.ResourceSpec) string {
	var names []string
	for _, r := range rs {
		names = append(names, "`"+r.URI+r.Template+"`")
	}
	return strings.Join(names, ", ")
}

// resourceContent lists the resources' MIME types, each any JSON value.
func resourceContent(rs []mcp.ResourceSpec) obj {
	c := obj{}
	for _, r := range rs {
		c[r.MIMEType] = obj{"schema": obj{}}
	}
	return c
}

func resourcesOperation(rs []mcp.ResourceSpec) obj {
	return obj{
		"operationId": "read_resource", "summary": "Read a resource", "tags": []any{"resources"}, "security": anyone,
		"description": "Reads one resource by URI, as MCP resources/read does. Resources: " + resourceList(rs) + ".",
		"parameters":  []any{uriParam("The resource URI.")},
		"responses": obj{
			"200": obj{"description": "The resource's contents, as they are (every resource is JSON), with its MIME type as the Content-Type.",
				"content": resourceContent(rs)},
			"400": ref("responses", "BadRequest"), "401": ref("responses", "Unauthorized"), "403": ref("responses", "Forbidden"),
			"404": ref("responses", "NotFound"), "429": ref("responses", "TooManyRequests"), "default": ref("responses", "Problem"),
		},
	}
}

func subscribeOperation(rs []mcp.ResourceSpec) obj {
	return obj{
		"operationId": "subscribe", "summary": "Follow a resource's changes", "tags": []any{"resources"}, "security": anyone,
		"description": "A server-sent-event stream for one resource URI (" + resourceList(rs) + "). It opens with " +
			"`event: ready` once the subscription is live, then sends `event: updated` with `data: {\"uri\": ..., \"seq\": ...}` " +
			"for every committed change that touched the URI (seq is the change's sequence number, for changes_since, and the event's `id`), " +
			"and a comment line now and then to keep the connection open. Read the resource again to see the new state. " +
			"A client that reconnects with `Last-Event-ID` (as EventSource does), or `?since=`, first gets the changes after that one.",
		"parameters": []any{uriParam("The resource URI to follow; a node's URI may name a node that does not exist yet."),
			obj{"name": "since", "in": "query", "required": false, "description": "Resume after this change's sequence number (an event id).",
				"schema": obj{"type": "integer", "minimum": 0}},
			obj{"name": "Last-Event-ID", "in": "header", "required": false, "description": "As since; EventSource sends it when it reconnects.",
				"schema": obj{"type": "string"}}},
		"responses": obj{
			"200": obj{"description": "The event stream.", "content": obj{"text/event-stream": obj{
				"schema": obj{"type": "string", "description": "Events `ready` and `updated`; each `data` line is a JSON object {uri, seq}."}}}},
			"400": ref("responses", "BadRequest"), "401": ref("responses", "Unauthorized"), "403": ref("responses", "Forbidden"),
			"404": ref("responses", "NotFound"), "429": ref("responses", "TooManyRequests"), "default": ref("responses", "Problem"),
		},
	}
}

func problemResponse(desc string) obj {
	return obj{"description": desc, "content": obj{problemJSON: obj{"schema": ref("schemas", "Problem")}}}
}

// guardText is the body of a refusal by mcp.Guard, which answers before
// the REST handler sees the request.
var guardText = obj{"text/plain": obj{"schema": obj{"type": "string"}}}

var responses = obj{
	"Problem": problemResponse("Any other error (500 internal: the server log has the details)."),
	"BadRequest": problemResponse("The arguments break the input schema or a model rule (`invalid_argument`, every violation listed), " +
		"or a destructive call lacks `\"confirm\": true` (`confirmation_required`)."),
	"NotFound":         problemResponse("A node, edge, resource or tool the call names does not exist (`not_found`)."),
	"Conflict":         problemResponse("A stale expectedRevision or a reused idempotency key (`conflict`)."),
	"DeadlineExceeded": problemResponse("The call ran past its deadline (`deadline_exceeded`); ask for less."),
	"Forbidden": obj{"description": "The token lacks the scope the tool needs (`forbidden`, problem details), " +
		"or the request came from a browser Origin that is not allowed (plain text).",
		"content": obj{problemJSON: obj{"schema": ref("schemas", "Problem")}, "text/plain": guardText["text/plain"]}},
	"TooLarge": obj{"description": "The body is over the server's limit.",
		"content": obj{problemJSON: obj{"schema": ref("schemas", "Problem")}, "text/plain": guardText["text/plain"]}},
	"Unauthorized": obj{"description": "The server has tokens configured and the request has no valid bearer token.", "content": guardText},
	"TooManyRequests": obj{"description": "The caller is over its request rate.", "content": guardText,
		"headers": obj{"Retry-After": obj{"description": "Seconds to wait.", "schema": obj{"type": "integer"}}}},
}

// errorCodes lists the codes of the one error table, mcp.ErrorKinds.
func errorCodes() []any {
	var codes []any
	for _, k := range mcp.ErrorKinds {
		codes = append(codes, k.Code)
	}
	return codes
}

// errorTable renders mcp.ErrorKinds as "code (HTTP status, GRAPHQL_CODE)".
func errorTable() string {
	var rows []string
	for _, k := range mcp.ErrorKinds {
		rows = append(rows, fmt.Sprintf("%s (%d, %s)", k.Code, k.Status, k.GraphQL))
	}
	return strings.Join(rows, ", ") + "."
}

var problemSchema = obj{
	"type":        "object",
	"description": "An RFC 9457 problem detail with Lore's error code and, for invalid arguments, every violation.",
	"required":    []any{"type", "title", "status", "code"},
	"properties": obj{
		"type":   obj{"type": "string", "description": "about:blank: the code says what went wrong."},
		"title":  obj{"type": "string", "description": "The HTTP status phrase."},
		"status": obj{"type": "integer", "minimum": 400, "maximum": 599},
		"detail": obj{"type": "string", "description": "What went wrong and how to fix it."},
		"code": obj{"type": "string", "enum": errorCodes(), "description": "Lore's error code, as MCP's tool errors and GraphQL's " +
			"extensions.code (upper case) report it: " + errorTable()},
		"violations": obj{"type": "array", "items": ref("schemas", "Violation")},
	},
}

var violationSchema = obj{
	"type":     "object",
	"required": []any{"pointer", "message"},
	"properties": obj{
		"pointer": obj{"type": "string", "description": "JSON pointer into the arguments (\"\" is the whole object)."},
		"rule":    obj{"type": "string", "description": "The JSON Schema keyword or model rule broken."},
		"message": obj{"type": "string"},
	},
}

// componentName is what OpenAPI tools accept as a component name.
var componentName = regexp.MustCompile(`^[a-zA-Z0-9.\-_]+$`)

// hoist decodes a tool schema, moves its root "$defs" into schemas as
// NAME.DEF, rewrites its local references to point into
// components/schemas, stores the rest as NAME and returns it.
func hoist(schemas obj, name string, raw json.RawMessage) (obj, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var root obj
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	defs, _ := root["$defs"].(obj)
	delete(root, "$defs")
	add := func(n string, s any) error {
		if !componentName.MatchString(n) {
			return fmt.Errorf("component name %q has characters OpenAPI tools reject", n)
		}
		if _, dup := schemas[n]; dup {
			return fmt.Errorf("component %q defined twice", n)
		}
		if err := rewriteRefs(s, name, defs); err != nil {
			return err
		}
		schemas[n] = s
		return nil
	}
	for _, k := range sortedKeys(defs) {
		if err := add(name+"."+k, defs[k]); err != nil {
			return nil, err
		}
	}
	return root, add(name, root)
}

// Keywords whose values are data, not schemas: a "$ref" key there is not
// a reference.
var dataKeywords = []string{"const", "default", "enum", "examples", "example"}

// rewriteRefs rewrites the local references in a schema that is or sits in
// the component named base, whose root "$defs" were defs.
func rewriteRefs(v any, base string, defs obj) error {
	switch v := v.(type) {
	case obj:
		for k, sub := range v {
			switch {
			case k == "$id" || k == "$anchor" || k == "$dynamicRef" || k == "$dynamicAnchor":
				return fmt.Errorf("%s is not supported in a published schema: references would resolve differently in OpenAPI", k)
			case k == "$ref":
				s, ok := sub.(string)
				if !ok {
					return fmt.Errorf("$ref is not a string")
				}
				r, err := rewriteRef(s, base, defs)
				if err != nil {
					return err
				}
				v[k] = r
			case slices.Contains(dataKeywords, k):
			default:
				if err := rewriteRefs(sub, base, defs); err != nil {
					return err
				}
			}
		}
	case []any:
		for _, sub := range v {
			if err := rewriteRefs(sub, base, defs); err != nil {
				return err
			}
		}
	}
	return nil
}

func rewriteRef(ref, base string, defs obj) (string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return "", fmt.Errorf("$ref %q points outside the schema; published schemas are self-contained", ref)
	}
	frag, err := url.PathUnescape(frag)
	if err != nil || frag != "" && frag[0] != '/' {
		return "", fmt.Errorf("$ref %q is not a JSON pointer", ref)
	}
	const prefix = "#/components/schemas/"
	rest, ok := strings.CutPrefix(frag, "/$defs/")
	if !ok {
		return prefix + base + frag, nil
	}
	token, tail, _ := strings.Cut(rest, "/")
	def := strings.ReplaceAll(strings.ReplaceAll(token, "~1", "/"), "~0", "~")
	if _, ok := defs[def]; !ok {
		return "", fmt.Errorf("$ref %q names a missing definition", ref)
	}
	if tail != "" {
		tail = "/" + tail
	}
	return prefix + base + "." + def + tail, nil
}

// A QueryParam is how GET /api/v1/tools/{name} takes one top-level
// argument of a read-only tool.
type QueryParam struct {
	Name     string
	Required bool
	// Types are the JSON types the argument may have ("integer" counts as
	// its own type), from its "type", "enum" or "const"; none means any.
	Types []string
	// JSON is set when the value is JSON-encoded: objects, arrays, and
	// arguments whose schema allows either or does not say.
	JSON bool
	// List is set when the argument may be a list of strings: a value
	// such as a,b (no JSON array) is split at the commas, and a repeated
	// parameter is a list too.
	List   bool
	schema obj
}

func (p QueryParam) allows(typ string) bool {
	return len(p.Types) == 0 || slices.Contains(p.Types, typ) || typ == "integer" && slices.Contains(p.Types, "number")
}

// Decode turns a query parameter's values into the argument's JSON: a
// value the argument's types allow as JSON (a number, true, an object...)
// is that JSON; anything else is a JSON string, so that the input schema
// check reports a wrong type with its pointer. Repeated values make an
// array of strings.
func (p QueryParam) Decode(values []string) json.RawMessage {
	if len(values) != 1 {
		data, _ := json.Marshal(values)
		return data
	}
	v := values[0]
	if t := strings.TrimSpace(v); p.List && !strings.HasPrefix(t, "[") && (strings.Contains(v, ",") || !slices.Contains(p.Types, "string")) {
		data, _ := json.Marshal(strings.Split(v, ","))
		return data
	}
	if p.JSON || !slices.Equal(p.Types, []string{"string"}) {
		d := json.NewDecoder(strings.NewReader(v))
		d.UseNumber()
		var x any
		if d.Decode(&x) == nil && !d.More() && p.allows(jsonType(x)) {
			if _, isString := x.(string); !isString || p.JSON {
				return json.RawMessage(strings.TrimSpace(v))
			}
		}
	}
	data, _ := json.Marshal(v)
	return data
}

func jsonType(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

var scalarTypes = []string{"string", "integer", "number", "boolean"}

// QueryParams lists the query parameters of a read-only tool's GET form,
// one per top-level property of its input schema, sorted by name.
func QueryParams(input json.RawMessage) ([]QueryParam, error) {
	d := json.NewDecoder(bytes.NewReader(input))
	d.UseNumber()
	var root obj
	if err := d.Decode(&root); err != nil {
		return nil, err
	}
	return queryParams(root)
}

func queryParams(root obj) ([]QueryParam, error) {
	props, _ := root["properties"].(obj)
	req, _ := root["required"].([]any)
	var out []QueryParam
	for _, name := range sortedKeys(props) {
		s, ok := props[name].(obj)
		if !ok {
			return nil, fmt.Errorf("property %q: the schema is not an object", name)
		}
		p := QueryParam{Name: name, Required: slices.Contains(req, any(name)), Types: typesOf(s), schema: s}
		p.JSON = len(p.Types) == 0
		branches, _ := s["anyOf"].([]any)
		for _, b := range append(branches, map[string]any(s)) {
			b, _ := b.(map[string]any)
			items, _ := b["items"].(map[string]any)
			if b["type"] == "array" && items["type"] == "string" {
				p.List = true
			}
			if t, ok := b["type"].(string); ok && len(branches) > 0 {
				p.Types = append(p.Types, t)
			}
		}
		for _, t := range p.Types {
			p.JSON = p.JSON || !slices.Contains(scalarTypes, t)
		}
		out = append(out, p)
	}
	return out, nil
}

// typesOf reads the JSON types a schema allows from its "type", else from
// its "enum" or "const" values; nil means it does not say.
func typesOf(s obj) []string {
	var types []string
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok {
				types = append(types, x)
			}
		}
		return types
	}
	vals, _ := s["enum"].([]any)
	if c, ok := s["const"]; ok {
		vals = []any{c}
	}
	for _, v := range vals {
		if t := jsonType(v); !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	slices.Sort(types)
	return types
}

func sortedKeys(m obj) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
