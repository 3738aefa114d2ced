package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lore-dev/lore/mcp"
)

// SDL renders the GraphQL schema, gen/gql/schema.graphqls, from the
// catalog's tools and resources. gqlgen turns it into gen/gql.
//
// Read-only tools are Query fields, the others Mutation fields, each named
// GraphQLName(tool) and nullable (a failing tool nulls only its field).
// A tool's top-level input properties are the field's arguments; input
// objects become input types and output objects types; an output object
// the published schema leaves loose but whose names fit one of Lore's
// shared types (Node, Neighbor, Change…) is that type, so every tool that
// returns nodes returns Node, whose neighbors and edges fields call the
// neighbors tool. Whatever GraphQL cannot express (free-form objects,
// unions of scalars, anyOf, tuples) is the JSON scalar; constraints
// (lengths, ranges, patterns) stay in the descriptions of the published
// schemas, and Invoke checks every call against them as it does for MCP.
// Subscriptions follow MCP's resource subscriptions.
func SDL(in Input) ([]byte, error) {
	r := &sdl{types: map[string]*gqlType{}, bySig: map[string]string{}, byDef: map[*jsonSchema]string{}}
	if err := r.addShared(); err != nil {
		return nil, err
	}
	for _, t := range in.Tools {
		if err := r.addTool(t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
	}
	r.addNavigation(in.Tools)
	r.addResources(in.Resources)
	return r.print(), nil
}

// WholeInput reports whether a tool's GraphQL field takes its arguments as
// one JSON argument named "input" (when the input schema is not an object
// schema, admits undeclared properties explicitly, or has property names
// GraphQL cannot spell) rather than one argument per property.
func WholeInput(t *mcp.Tool) bool {
	s, err := parseSchema(t.Input)
	return err != nil || !argumentsFit(s)
}

func argumentsFit(s *jsonSchema) bool {
	if types, _ := withoutNull(s.Type); len(types) > 0 && !slices.Equal(types, []string{"object"}) ||
		s.Bool != nil || s.Ref != "" || len(s.AnyOf)+len(s.OneOf)+len(s.AllOf) > 0 || s.PatternProperties ||
		s.AdditionalProperties != nil && (s.AdditionalProperties.Bool == nil || *s.AdditionalProperties.Bool) {
		return false
	}
	for _, n := range s.names() {
		if !validName(n) {
			return false
		}
	}
	return true
}

const jsonScalar = "JSON"

// A gqlType is an object, input object or enum type of the SDL.
type gqlType struct {
	kind   string // "type", "input" or "enum"
	name   string
	desc   string
	fields []gqlField
	values []string // of an enum
}

// A gqlField is a field, an input field or an argument.
type gqlField struct {
	name, desc string
	typ        string // a type reference: "String!", "[Node!]"
	def        string // the default as a GraphQL literal
	args       []gqlField
	deprecated bool
}

type sdl struct {
	types    map[string]*gqlType
	bySig    map[string]string      // structure → the name of the first type with it
	byDef    map[*jsonSchema]string // a $defs entry → its type
	shared   []sharedType
	query    []gqlField
	mutation []gqlField
	subs     []gqlField
}

// scope is where a schema is being mapped: its document (for $ref), the
// prefix for types named after its $defs, and the direction.
type scope struct {
	doc    *jsonSchema
	prefix string
	input  bool
	shared bool // the shared types' document: no matching against itself
}

// A sharedType is one of Lore's own data structures. A loose output
// object (one the published schema describes only by property names, or
// by a few of its properties) is rendered as the shared type whose key
// names it has and whose fields include all of its names.
type sharedType struct {
	name   string
	key    []string
	schema *jsonSchema
}

// sharedDoc describes the data Lore's tools return, in the graph package's
// JSON shapes.
const sharedDoc = `{"$defs":{
"Node":{"type":"object","description":"A typed vertex of the graph.","required":["id","type","properties","createdAt","updatedAt","revision"],"properties":{
 "id":{"type":"string","x-graphql-type":"ID","description":"The node's ID, for example service/billing."},
 "type":{"type":"string","description":"The node's type, one of the model's node types (describeModel)."},
 "properties":{"type":"object","description":"The node's properties, as the model defines its type."},
 "createdAt":{"type":"string","format":"date-time","description":"When the node was created (RFC 3339)."},
 "updatedAt":{"type":"string","format":"date-time","description":"When the node last changed (RFC 3339)."},
 "revision":{"type":"integer","description":"Starts at 1 and grows by one with every change to the node."},
 "edges":{"type":"array","items":{"$ref":"#/$defs/EdgeCount"},"x-graphql-name":"edgeCounts","description":"The node's edges counted per label and direction; only getNode fills them in."}}},
"EdgeCount":{"type":"object","description":"How many edges with one label a node has in one direction.","required":["label","direction","count"],"properties":{
 "label":{"type":"string"},"direction":{"enum":["out","in","both"]},"count":{"type":"integer"}}},
"Edge":{"type":"object","description":"A labelled, directed edge, by its key; getEdge fills in the rest.","required":["from","label","to"],"properties":{
 "id":{"type":"string","description":"The edge's ID: label(from,to) or label(from,to,key)."},
 "from":{"type":"string","x-graphql-type":"ID"},"label":{"type":"string"},"to":{"type":"string","x-graphql-type":"ID"},
 "key":{"type":"string","description":"Tells apart edges with the same ends and label (keyed labels only)."},
 "properties":{"type":"object","description":"The edge's properties, as the model defines its label."},
 "createdAt":{"type":"string","format":"date-time"},"updatedAt":{"type":"string","format":"date-time"},
 "revision":{"type":"integer","description":"Starts at 1 and grows by one with every change to the edge."}}},
"Neighbor":{"type":"object","description":"A node reached from another, and how many hops away.","required":["node","depth"],"properties":{
 "node":{"$ref":"#/$defs/Node"},"depth":{"type":"integer"}}},
"SearchHit":{"type":"object","description":"A node that matches a search, with its rank score.","required":["node","score"],"properties":{
 "node":{"$ref":"#/$defs/Node"},"score":{"type":"number"}}},
"Path":{"type":"object","description":"A path: its node IDs in order and the IDs of the edges between them.","required":["nodes","edges"],"properties":{
 "nodes":{"type":"array","items":{"type":"string","x-graphql-type":"ID"}},"edges":{"type":"array","items":{"type":"string"}}}},
"Change":{"type":"object","description":"One entry of the change log: everything one committed write did.","required":["seq","time","op"],"properties":{
 "seq":{"type":"integer","description":"The entry's sequence number; pass it as a cursor to read what came after."},
 "time":{"type":"string","format":"date-time"},
 "op":{"type":"string","description":"The tool that wrote, for example upsert_nodes."},
 "nodes":{"type":"array","items":{"$ref":"#/$defs/NodeChange"}},
 "edges":{"type":"array","items":{"$ref":"#/$defs/EdgeChange"}},
 "truncated":{"type":"boolean","description":"Elements of the entry follow those listed: read them with changesSince(cursor: seq - 1, offset: part.next)."},
 "part":{"$ref":"#/$defs/ChangePart"}}},
"ChangePart":{"type":"object","description":"Which elements (nodes, then edges, numbered from 0) of an entry too large for one answer a change lists.","required":["nodeCount","edgeCount","offset"],"properties":{
 "nodeCount":{"type":"integer","description":"The entry's nodes."},"edgeCount":{"type":"integer","description":"The entry's edges."},
 "offset":{"type":"integer","description":"The number of the first element listed."},
 "next":{"type":"integer","description":"The number of the first element after those listed, when there are more."}}},
"NodeChange":{"type":"object","description":"What a write did to one node.","required":["id","type","action","revision"],"properties":{
 "id":{"type":"string","x-graphql-type":"ID"},"type":{"type":"string"},
 "action":{"type":"string","description":"created, updated, unchanged or deleted."},"revision":{"type":"integer"}}},
"Limits":{"type":"object","description":"The bounds a read ran under: the server's ceilings, lowered by the request.","properties":{
 "maxResults":{"type":"integer"},"maxHops":{"type":"integer"},"maxVisited":{"type":"integer"},"timeoutMs":{"type":"integer"},"maxBytes":{"type":"integer"}}},
"ReadStats":{"type":"object","description":"The work a read did.","required":["visited","elapsedMs"],"properties":{
 "visited":{"type":"integer","description":"Nodes and edges visited."},"elapsedMs":{"type":"number"},
 "index":{"type":"string","description":"The property index the read used (Type.property), if any."}}},
"EdgeChange":{"type":"object","description":"What a write did to one edge.","required":["from","label","to","action","revision"],"properties":{
 "from":{"type":"string","x-graphql-type":"ID"},"label":{"type":"string"},"to":{"type":"string","x-graphql-type":"ID"},"key":{"type":"string"},
 "action":{"type":"string","description":"created, updated, unchanged or deleted."},"revision":{"type":"integer"}}}
}}`

// sharedKeys are the names that identify each shared type.
var sharedKeys = []struct {
	name string
	key  []string
}{
	{"Node", []string{"id", "type"}},
	{"EdgeCount", []string{"label", "direction", "count"}},
	{"Edge", []string{"from", "label", "to"}},
	{"Neighbor", []string{"node", "depth"}},
	{"SearchHit", []string{"node", "score"}},
	{"Path", []string{"nodes", "edges"}},
	{"Change", []string{"seq", "op"}},
	{"NodeChange", []string{"id", "action"}},
	{"EdgeChange", []string{"from", "label", "to", "action"}},
	{"Limits", []string{"maxResults", "maxHops", "maxVisited", "timeoutMs", "maxBytes"}},
	{"ReadStats", []string{"visited", "elapsedMs"}},
}

func (r *sdl) addShared() error {
	doc, err := parseSchema([]byte(sharedDoc))
	if err != nil {
		return fmt.Errorf("shared types: %w", err)
	}
	sc := scope{doc: doc, shared: true}
	for _, k := range sharedKeys {
		s := doc.Defs[k.name]
		r.shared = append(r.shared, sharedType{k.name, k.key, s})
		if _, _, err := r.typeOf(sc, &jsonSchema{Ref: "#/$defs/" + k.name}, k.name, false); err != nil {
			return fmt.Errorf("shared type %s: %w", k.name, err)
		}
	}
	return nil
}

// match returns the shared type a loose output object is, or "".
func (r *sdl) match(s *jsonSchema) string {
	names := s.names()
	best := ""
	bestSize := 0
	for _, st := range r.shared {
		fits := true
		for _, k := range st.key {
			fits = fits && slices.Contains(names, k)
		}
		for _, n := range names {
			f := st.schema.prop(n)
			if f == nil {
				fits = false
				break
			}
			// A declared type must agree with the shared one.
			if p := s.prop(n); p != nil && len(p.Type) > 0 && len(f.Type) > 0 && !slices.Equal(p.Type, f.Type) {
				fits = false
			}
		}
		if fits && (best == "" || len(st.schema.Properties) < bestSize) {
			best, bestSize = st.name, len(st.schema.Properties)
		}
	}
	return best
}

// typeOf maps a schema to a GraphQL type reference (without the outer
// "!") and reports whether the schema admits null. name is what a new
// type made for it is called; root marks a tool's whole output.
func (r *sdl) typeOf(sc scope, s *jsonSchema, name string, root bool) (string, bool, error) {
	if s.Ref != "" {
		def, defName, ok := sc.resolve(s.Ref)
		if !ok {
			return jsonScalar, true, nil // outside the document: nothing to name
		}
		if t, ok := r.byDef[def]; ok {
			return t, false, nil
		}
		if def.isObject() && !def.loose() {
			return r.object(sc, def, sc.prefix+pascal(defName), false, def)
		}
		return r.typeOf(sc, def, sc.prefix+pascal(defName), false)
	}
	if s.Bool != nil || len(s.AllOf) > 0 || s.XGraphQLType == jsonScalar {
		return jsonScalar, true, nil
	}
	if branches := append(slices.Clone(s.AnyOf), s.OneOf...); len(branches) > 0 {
		var rest []*jsonSchema
		nullable := false
		for _, b := range branches {
			if len(b.Type) == 1 && b.Type[0] == "null" {
				nullable = true
			} else {
				rest = append(rest, b)
			}
		}
		if t, ok := r.oneOrList(sc, rest, name); ok && len(s.Type) == 0 && len(s.Properties) == 0 {
			return t, true, nil
		}
		if len(rest) != 1 || len(s.Type) > 0 || len(s.Properties) > 0 {
			return jsonScalar, true, nil
		}
		t, n, err := r.typeOf(sc, rest[0], name, root)
		return t, n || nullable, err
	}
	types, nullable := withoutNull(s.Type)
	if len(types) == 0 {
		switch {
		case s.isObject():
			t, _, err := r.object(sc, s, name, root, nil)
			return t, true, err // untyped: null passes the schema
		case len(s.Enum) > 0:
			t, err := r.enum(s, name)
			return t, slices.ContainsFunc(s.Enum, isNull), err
		case s.Const != nil:
			return scalarOf([]json.RawMessage{s.Const}), isNull(s.Const), nil
		}
		return jsonScalar, true, nil
	}
	if len(types) > 1 {
		// A value or a list of them: an input list accepts a single value
		// (GraphQL coerces it to a list of one), which Invoke accepts too.
		if sc.input && len(types) == 2 && slices.Contains(types, "array") && s.Items != nil {
			item := types[0]
			if item == "array" {
				item = types[1]
			}
			if it, _ := withoutNull(s.Items.Type); len(it) == 1 && it[0] == item && item != "object" && item != "array" {
				t, _, err := r.typeOf(sc, s.Items, name, false)
				return "[" + t + "!]", nullable, err
			}
		}
		return jsonScalar, true, nil
	}
	switch types[0] {
	case "string", "integer", "number", "boolean":
		if len(s.Enum) > 0 {
			t, err := r.enum(s, name)
			return t, nullable, err
		}
		switch types[0] {
		case "integer":
			return "Int", nullable, nil
		case "number":
			return "Float", nullable, nil
		case "boolean":
			return "Boolean", nullable, nil
		}
		if s.XGraphQLType == "ID" {
			return "ID", nullable, nil
		}
		return "String", nullable, nil
	case "array":
		if s.PrefixItems {
			return jsonScalar, true, nil
		}
		if s.Items == nil {
			return "[" + jsonScalar + "]", nullable, nil
		}
		t, itemNull, err := r.typeOf(sc, s.Items, singular(name), false)
		if !itemNull {
			t += "!"
		}
		return "[" + t + "]", nullable, err
	case "object":
		t, _, err := r.object(sc, s, name, root, nil)
		return t, nullable, err
	}
	return jsonScalar, true, nil
}

// oneOrList maps an input's anyOf of a scalar type and a list of it
// ({"anyOf":[{"type":"string"},{"type":"array","items":{"type":"string"}}]})
// to a list: GraphQL coerces a single value to a list of one, which Invoke
// accepts too.
func (r *sdl) oneOrList(sc scope, branches []*jsonSchema, name string) (string, bool) {
	if !sc.input || len(branches) != 2 {
		return "", false
	}
	one, list := branches[0], branches[1]
	if len(one.Type) == 1 && one.Type[0] == "array" {
		one, list = list, one
	}
	if len(one.Type) != 1 || len(list.Type) != 1 || list.Type[0] != "array" || list.Items == nil || !slices.Equal(list.Items.Type, one.Type) {
		return "", false
	}
	switch one.Type[0] {
	case "string", "integer", "number", "boolean":
	default:
		return "", false
	}
	t, _, err := r.typeOf(sc, one, name, false)
	if err != nil {
		return "", false
	}
	return "[" + t + "!]", true
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func withoutNull(types []string) ([]string, bool) {
	var out []string
	for _, t := range types {
		if t != "null" {
			out = append(out, t)
		}
	}
	return out, len(out) < len(types)
}

// resolve finds a local reference ("#/$defs/name") in the document.
func (sc scope) resolve(ref string) (*jsonSchema, string, bool) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || sc.doc == nil {
		return nil, "", false
	}
	def, ok := sc.doc.Defs[name]
	return def, name, ok
}

// isObject reports whether s describes objects: typed so, or untyped with
// property names.
func (s *jsonSchema) isObject() bool {
	types, _ := withoutNull(s.Type)
	if len(types) == 1 && types[0] == "object" {
		return true
	}
	return len(types) == 0 && (len(s.Properties) > 0 || len(s.Required) > 0)
}

// loose reports whether an object is free-form for GraphQL: no names, a
// map of undeclared properties, or names GraphQL cannot spell.
func (s *jsonSchema) loose() bool {
	names := s.names()
	if len(names) == 0 || s.PatternProperties || s.AdditionalProperties != nil && (s.AdditionalProperties.Bool == nil || *s.AdditionalProperties.Bool) {
		return true
	}
	for _, n := range names {
		if !validName(n) {
			return true
		}
	}
	return false
}

// object maps an object schema to a type or input type named name (plus
// "Input" for inputs), reusing an existing type of the same structure. def
// is the $defs entry it comes from, if any: such types are registered
// before their fields, so they may refer to themselves.
func (r *sdl) object(sc scope, s *jsonSchema, name string, root bool, def *jsonSchema) (string, bool, error) {
	if s.loose() {
		return jsonScalar, true, nil
	}
	if !sc.input && !sc.shared && !root {
		if m := r.match(s); m != "" {
			return m, false, nil
		}
	}
	kind := "type"
	if sc.input {
		kind, name = "input", name+"Input"
	}
	t := &gqlType{kind: kind, name: r.freeName(name), desc: s.Description}
	if def != nil {
		r.byDef[def] = t.name
		r.types[t.name] = t
	}
	base := strings.TrimSuffix(strings.TrimSuffix(name, "Input"), "Result")
	for _, n := range s.names() {
		ps := s.prop(n)
		if ps == nil {
			ps = &jsonSchema{} // required but not described: any value
		}
		f, err := r.field(sc, ps, n, base+pascal(n), s.requires(n))
		if err != nil {
			return "", false, fmt.Errorf("%s: %w", n, err)
		}
		t.fields = append(t.fields, f)
	}
	if def != nil || root {
		r.types[t.name] = t
		return t.name, false, nil
	}
	return r.register(t), false, nil
}

// field maps one property to a field, input field or argument.
func (r *sdl) field(sc scope, s *jsonSchema, jsonName, typeName string, required bool) (gqlField, error) {
	if len(s.Enum) > 0 {
		typeName = pascal(jsonName) // enumerations name a concept: Direction
	}
	typ, nullable, err := r.typeOf(sc, s, typeName, false)
	if err != nil {
		return gqlField{}, err
	}
	f := gqlField{name: jsonName, desc: s.Description, typ: typ, deprecated: s.Deprecated}
	if s.XGraphQLName != "" {
		f.name = s.XGraphQLName
	}
	if sc.input && s.Default != nil {
		f.def = literal(s.Default, r.types[strings.Trim(typ, "[]!")])
	}
	if required && !nullable && f.def == "" {
		f.typ += "!"
	}
	return f, nil
}

// enum maps a string enumeration to an enum type when every value is a
// GraphQL name; otherwise to the values' scalar, listing them in the
// description.
func (r *sdl) enum(s *jsonSchema, name string) (string, error) {
	var values []string
	for _, raw := range s.Enum {
		if isNull(raw) {
			continue
		}
		var v string
		if json.Unmarshal(raw, &v) != nil || !validName(v) || v == "true" || v == "false" || v == "null" {
			return scalarOf(s.Enum), nil
		}
		values = append(values, v)
	}
	sig := "enum " + strings.Join(values, " ")
	if t, ok := r.bySig[sig]; ok {
		return t, nil
	}
	t := &gqlType{kind: "enum", name: r.freeName(name), desc: s.Description, values: values}
	r.types[t.name] = t
	r.bySig[sig] = t.name
	return t.name, nil
}

// scalarOf is the scalar all the values share, or JSON.
func scalarOf(values []json.RawMessage) string {
	kinds := map[string]bool{}
	for _, raw := range values {
		var v any
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if d.Decode(&v) != nil {
			return jsonScalar
		}
		switch v := v.(type) {
		case string:
			kinds["String"] = true
		case bool:
			kinds["Boolean"] = true
		case json.Number:
			if _, err := v.Int64(); err == nil {
				kinds["Int"] = true
			} else {
				kinds["Float"] = true
			}
		default:
			kinds[jsonScalar] = true
		}
	}
	if kinds["Int"] && kinds["Float"] {
		delete(kinds, "Int")
	}
	if len(kinds) != 1 {
		return jsonScalar
	}
	for k := range kinds {
		return k
	}
	return jsonScalar
}

// register adds t, or returns the existing type with the same structure.
func (r *sdl) register(t *gqlType) string {
	var b strings.Builder
	anon := *t
	anon.name = ""
	printType(&b, &anon)
	sig := b.String()
	if name, ok := r.bySig[sig]; ok {
		return name
	}
	r.types[t.name] = t
	r.bySig[sig] = t.name
	return t.name
}

// freeName returns name, or name with the lowest number from 2 that no
// type has yet.
func (r *sdl) freeName(name string) string {
	if _, taken := r.types[name]; !taken && name != jsonScalar {
		return name
	}
	for i := 2; ; i++ {
		if n := fmt.Sprintf("%s%d", name, i); r.types[n] == nil {
			return n
		}
	}
}

// literal renders a JSON default as a GraphQL value: strings quoted, except
// for enum values.
func literal(raw json.RawMessage, t *gqlType) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	enum := t != nil && t.kind == "enum"
	var lit func(v any) string
	lit = func(v any) string {
		switch v := v.(type) {
		case nil:
			return "null"
		case string:
			if enum && slices.Contains(t.values, v) {
				return v
			}
			q, _ := json.Marshal(v)
			return string(q)
		case json.Number:
			return v.String()
		case bool:
			return fmt.Sprint(v)
		case []any:
			var parts []string
			for _, e := range v {
				parts = append(parts, lit(e))
			}
			return "[" + strings.Join(parts, ", ") + "]"
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, k+": "+lit(v[k]))
			}
			return "{" + strings.Join(parts, ", ") + "}"
		}
		return ""
	}
	return lit(v)
}

// addTool adds a tool's root field and the types it needs.
func (r *sdl) addTool(t *mcp.Tool) error {
	in, err := parseSchema(t.Input)
	if err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	out, err := parseSchema(t.Output)
	if err != nil {
		return fmt.Errorf("output schema: %w", err)
	}
	base := pascal(t.Name)
	f := gqlField{name: GraphQLName(t.Name), desc: fmt.Sprintf("%s: %s\n\nMCP tool `%s`; REST `POST /api/v1/tools/%s`.", t.Title, t.Description, t.Name, t.Name)}
	if argumentsFit(in) {
		if f.args, err = r.arguments(scope{doc: in, prefix: base, input: true}, in, base, nil); err != nil {
			return err
		}
	} else {
		whole := gqlField{name: "input", typ: jsonScalar, desc: "The tool's arguments, as its input schema describes them."}
		if len(in.Required) > 0 {
			whole.typ += "!"
		}
		f.args = []gqlField{whole}
	}
	// Root fields are nullable: a failing tool nulls only its own field.
	if f.typ, _, err = r.typeOf(scope{doc: out, prefix: base}, out, base+"Result", true); err != nil {
		return err
	}
	if t.ReadOnly {
		r.query = append(r.query, f)
	} else {
		r.mutation = append(r.mutation, f)
	}
	return nil
}

// arguments maps an input object's properties, except skip, to arguments.
func (r *sdl) arguments(sc scope, in *jsonSchema, base string, skip []string) ([]gqlField, error) {
	var args []gqlField
	for _, n := range in.names() {
		if slices.Contains(skip, n) {
			continue
		}
		ps := in.prop(n)
		if ps == nil {
			ps = &jsonSchema{}
		}
		a, err := r.field(sc, ps, n, base+pascal(n), in.requires(n))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		args = append(args, a)
	}
	return args, nil
}

// NavigationTool is the tool behind Node's neighbors and edges fields.
const NavigationTool = "neighbors"

// addNavigation gives Node the fields that walk the graph: neighbors and
// edges, with the neighbors tool's arguments less the node's own id and
// the cursor (a list field returns no cursor to continue with), and, for
// edges, less depth: a node's edges are one hop away.
func (r *sdl) addNavigation(tools []*mcp.Tool) {
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Name == NavigationTool })
	if i < 0 {
		return
	}
	in, err := parseSchema(tools[i].Input)
	if err != nil || !argumentsFit(in) || in.prop("id") == nil {
		return
	}
	sc, base := scope{doc: in, prefix: pascal(NavigationTool), input: true}, pascal(NavigationTool)
	near, err1 := r.arguments(sc, in, base, []string{"id", "cursor"})
	edges, err2 := r.arguments(sc, in, base, []string{"id", "depth", "cursor"})
	if err1 != nil || err2 != nil {
		return
	}
	node := r.types["Node"]
	node.fields = append(node.fields,
		gqlField{name: "neighbors", args: near, typ: "[Neighbor!]",
			desc: "The nodes linked to this one, nearest first: the neighbors tool from this node."},
		gqlField{name: "edges", args: edges, typ: "[Edge!]",
			desc: "The edges at this node, one per neighbour (the first that reaches it): the neighbors tool from this node, one hop."})
}

// addResources adds resource reads and the subscriptions that mirror MCP's
// resource subscriptions.
func (r *sdl) addResources(resources []mcp.ResourceSpec) {
	var uris []string
	for _, res := range resources {
		uris = append(uris, "`"+res.URI+res.Template+"` ("+res.Title+")")
	}
	r.query = append(r.query, gqlField{name: "resource", typ: "Resource",
		args: []gqlField{{name: "uri", typ: "String!"}},
		desc: "Read a resource, as MCP resources/read does: " + strings.Join(uris, ", ") + "."})
	r.types["Resource"] = &gqlType{kind: "type", name: "Resource", desc: "A resource's contents.", fields: []gqlField{
		{name: "uri", typ: "String!"},
		{name: "mimeType", typ: "String!"},
		{name: "text", typ: "String!"},
		{name: "json", typ: jsonScalar, desc: "The text parsed, when the resource is JSON."},
	}}
	r.types["ResourceUpdate"] = &gqlType{kind: "type", name: "ResourceUpdate",
		desc: "A committed change that touched a subscribed resource: what MCP's notifications/resources/updated says, with the change itself.",
		fields: []gqlField{
			{name: "uri", typ: "String!", desc: "The subscribed resource."},
			{name: "change", typ: "Change!"},
			{name: "resource", typ: "Resource", desc: "The resource as it is now, read when selected."},
			{name: "node", typ: "Node", desc: "For lore://node/ID: the node as it is now (getNode), read when selected; null once deleted."},
		}}
	since := gqlField{name: "since", typ: "Int",
		desc: "First replay the change log after this sequence number (changesSince), then follow; absent: only new changes."}
	r.subs = []gqlField{
		{name: "resourceUpdated", typ: "ResourceUpdate!", args: []gqlField{{name: "uri", typ: "String!"}, since},
			desc: "Every committed change that touches the resource, as MCP resources/subscribe reports it."},
		{name: "nodeChanged", typ: "ResourceUpdate!", args: []gqlField{{name: "id", typ: "ID!"}, since},
			desc: "Every committed change to a node or to an edge at it (the resource lore://node/ID)."},
		{name: "typeChanged", typ: "ResourceUpdate!", args: []gqlField{{name: "type", typ: "String!"}, since},
			desc: "Every committed change to a node of a type (the resource lore://type/TYPE)."},
		{name: "changes", typ: "Change!", args: []gqlField{since},
			desc: "Every committed change, in order (the resource lore://changes)."},
	}
}

const header = `# Code generated by gen/cmd/generate. DO NOT EDIT.
#
# Lore's GraphQL schema, rendered by gen.SDL from the MCP tool catalog:
# read-only tools are Query fields, the others Mutation fields, each named
# after its tool in camelCase. Every call goes through the catalog's
# Invoke, which checks the arguments against the tool's JSON Schema.

"""
Any JSON value: what a tool's schema leaves free-form, or what GraphQL cannot express.
"""
scalar JSON
`

func (r *sdl) print() []byte {
	var b strings.Builder
	b.WriteString(header)
	for _, root := range []struct {
		name   string
		fields []gqlField
	}{{"Query", r.query}, {"Mutation", r.mutation}, {"Subscription", r.subs}} {
		if len(root.fields) > 0 {
			b.WriteString("\n")
			printType(&b, &gqlType{kind: "type", name: root.name, fields: root.fields})
		}
	}
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		b.WriteString("\n")
		printType(&b, r.types[n])
	}
	return []byte(b.String())
}

func printType(b *strings.Builder, t *gqlType) {
	printDesc(b, "", t.desc)
	fmt.Fprintf(b, "%s %s {\n", t.kind, t.name)
	for _, v := range t.values {
		fmt.Fprintf(b, "  %s\n", v)
	}
	for _, f := range t.fields {
		printDesc(b, "  ", f.desc)
		b.WriteString("  " + f.name)
		if len(f.args) > 0 {
			described := slices.ContainsFunc(f.args, func(a gqlField) bool { return a.desc != "" })
			b.WriteString("(")
			for i, a := range f.args {
				if described {
					b.WriteString("\n")
					printDesc(b, "    ", a.desc)
					b.WriteString("    ")
				} else if i > 0 {
					b.WriteString(", ")
				}
				printValue(b, a)
			}
			if described {
				b.WriteString("\n  ")
			}
			b.WriteString(")")
		}
		b.WriteString(": " + f.typ)
		if f.def != "" {
			b.WriteString(" = " + f.def)
		}
		if f.deprecated {
			b.WriteString(" @deprecated")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
}

// printValue prints an argument or input field: name, type, default.
func printValue(b *strings.Builder, a gqlField) {
	b.WriteString(a.name + ": " + a.typ)
	if a.def != "" {
		b.WriteString(" = " + a.def)
	}
	if a.deprecated {
		b.WriteString(" @deprecated")
	}
}

func printDesc(b *strings.Builder, indent, desc string) {
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return
	}
	if !strings.Contains(desc, "\n") {
		var q bytes.Buffer
		e := json.NewEncoder(&q)
		e.SetEscapeHTML(false)
		_ = e.Encode(desc)
		fmt.Fprintf(b, "%s%s\n", indent, strings.TrimSpace(q.String()))
		return
	}
	b.WriteString(indent + `"""` + "\n")
	for _, line := range strings.Split(strings.ReplaceAll(desc, `"""`, `\"""`), "\n") {
		if line == "" {
			b.WriteString("\n")
		} else {
			b.WriteString(indent + line + "\n")
		}
	}
	b.WriteString(indent + `"""` + "\n")
}

// A jsonSchema is the part of a JSON Schema 2020-12 document the GraphQL
// mapping reads. Properties keep their document order, so the SDL lists
// fields as the tool declares them.
type jsonSchema struct {
	// Bool is set for the boolean schemas true and false.
	Bool *bool

	Type                 []string
	Properties           []property
	Required             []string
	Items                *jsonSchema
	AdditionalProperties *jsonSchema // nil when absent
	Enum                 []json.RawMessage
	Const                json.RawMessage
	AnyOf, OneOf, AllOf  []*jsonSchema
	Ref                  string
	Defs                 map[string]*jsonSchema
	Default              json.RawMessage
	Description          string
	Deprecated           bool

	// PrefixItems (a tuple) and PatternProperties (a map) send the schema
	// to the JSON scalar.
	PrefixItems, PatternProperties bool

	// XGraphQLType "ID" makes a string an ID, "JSON" anything the JSON
	// scalar; XGraphQLName renames a field (the Go type bound to its object
	// then maps the JSON name).
	XGraphQLType, XGraphQLName string
}

type property struct {
	Name   string
	Schema *jsonSchema
}

// prop returns the schema of a declared property, or nil.
func (s *jsonSchema) prop(name string) *jsonSchema {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// requires reports whether name is in s's "required".
func (s *jsonSchema) requires(name string) bool { return slices.Contains(s.Required, name) }

// names lists the property names s declares or requires, declared ones
// first, in document order.
func (s *jsonSchema) names() []string {
	var out []string
	for _, p := range s.Properties {
		out = append(out, p.Name)
	}
	for _, r := range s.Required {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func parseSchema(doc []byte) (*jsonSchema, error) {
	s := new(jsonSchema)
	if err := json.Unmarshal(doc, s); err != nil {
		return nil, err
	}
	return s, nil
}

// UnmarshalJSON decodes a schema, a boolean schema included.
func (s *jsonSchema) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "true" || string(data) == "false" {
		b := string(data) == "true"
		*s = jsonSchema{Bool: &b}
		return nil
	}
	var raw struct {
		Type                 json.RawMessage        `json:"type"`
		Properties           json.RawMessage        `json:"properties"`
		Required             []string               `json:"required"`
		Items                *jsonSchema            `json:"items"`
		AdditionalProperties *jsonSchema            `json:"additionalProperties"`
		Enum                 []json.RawMessage      `json:"enum"`
		Const                json.RawMessage        `json:"const"`
		AnyOf                []*jsonSchema          `json:"anyOf"`
		OneOf                []*jsonSchema          `json:"oneOf"`
		AllOf                []*jsonSchema          `json:"allOf"`
		Ref                  string                 `json:"$ref"`
		Defs                 map[string]*jsonSchema `json:"$defs"`
		Default              json.RawMessage        `json:"default"`
		Description          string                 `json:"description"`
		Deprecated           bool                   `json:"deprecated"`
		PrefixItems          json.RawMessage        `json:"prefixItems"`
		PatternProperties    json.RawMessage        `json:"patternProperties"`
		XGraphQLType         string                 `json:"x-graphql-type"`
		XGraphQLName         string                 `json:"x-graphql-name"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*s = jsonSchema{Required: raw.Required, Items: raw.Items, AdditionalProperties: raw.AdditionalProperties,
		Enum: raw.Enum, Const: raw.Const, AnyOf: raw.AnyOf, OneOf: raw.OneOf, AllOf: raw.AllOf, Ref: raw.Ref, Defs: raw.Defs,
		Default: raw.Default, Description: raw.Description, Deprecated: raw.Deprecated,
		PrefixItems: raw.PrefixItems != nil, PatternProperties: raw.PatternProperties != nil,
		XGraphQLType: raw.XGraphQLType, XGraphQLName: raw.XGraphQLName}
	if raw.Type != nil {
		var one string
		if err := json.Unmarshal(raw.Type, &one); err == nil {
			s.Type = []string{one}
		} else if err := json.Unmarshal(raw.Type, &s.Type); err != nil {
			return fmt.Errorf("type: %w", err)
		}
	}
	if raw.Properties != nil {
		props, err := orderedProperties(raw.Properties)
		if err != nil {
			return fmt.Errorf("properties: %w", err)
		}
		s.Properties = props
	}
	return nil
}

// orderedProperties decodes a "properties" object keeping its key order.
func orderedProperties(data json.RawMessage) ([]property, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []property
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		ps := new(jsonSchema)
		if err := d.Decode(ps); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, property{name, ps})
	}
	return out, nil
}

// pascal turns a tool or property name into a type name: "get_node" →
// "GetNode", "nodeTypes" → "NodeTypes".
func pascal(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			up = true
		case up:
			b.WriteString(strings.ToUpper(string(r)))
			up = false
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// singular names the items of a list: "hits" → "Hit", "entries" → "Entry";
// other names stay as they are.
func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "ies") && len(s) > 4:
		return s[:len(s)-3] + "y"
	case strings.HasSuffix(s, "ss"):
		return s
	case strings.HasSuffix(s, "s") && len(s) > 3:
		return s[:len(s)-1]
	}
	return s
}

// validName reports whether s is a GraphQL name (and not a reserved one).
func validName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}
