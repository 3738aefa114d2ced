package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"
)

// Tool schemas are derived from the Go types the tools decode their
// arguments into and encode their results from, so a schema and its type
// cannot drift: each struct field is a property named by its json tag,
// required unless the tag says omitempty or omitzero. Two more tags add
// what a Go type cannot say:
//
//	schema:"min=1,max=100,default=10"   constraints, comma-separated:
//	    min, max (numbers), minLength, maxLength, minItems, maxItems,
//	    default (a JSON value), enum (values split by |); a bound may name
//	    a constant of limitConsts instead of a number
//	desc:"..."                           the property's description
//
// Fields of graph's types get theirs from graphFieldTags. Input objects
// are closed (additionalProperties: false), so an unknown argument is a
// violation naming it; published output objects stay open for clients
// that tolerate new fields, and the strict copy Lore checks its own
// results against closes them too. (Nested input objects are closed by
// the decoder; see schemaOf.)

// limitConsts are the constants a schema tag may name as a bound: each
// limit is one constant, used by the schema (so by Invoke's validator)
// and by the code that relies on it.
var limitConsts = map[string]int64{
	"MaxWriteItems":     MaxWriteItems,
	"MaxIdempotencyKey": graph.MaxIdempotencyKey,
	"maxCursor":         maxCursor,
	"MaxSearchText":     MaxSearchText,
	"MaxSearchLimit":    MaxSearchLimit,
	"MaxDepth":          MaxNeighborDepth,
	"MaxNeighborLimit":  MaxNeighborLimit,
	"MaxPathHops":       MaxPathHops,
	"MaxPaths":          MaxPaths,
	"MaxChanges":        MaxChanges,
}

// graphFieldTags are the schema and desc tags of graph's types' fields,
// by "Type.jsonName".
var graphFieldTags = map[string]reflect.StructTag{
	"Query.from":         `desc:"ids | type (+where) | search (+type)"`,
	"Query.where":        `desc:"{field: v | {eq|ne|lt|lte|gt|gte|in|contains|prefix|exists: v}}; and/or/not"`,
	"Query.limits":       `schema:"opaque"`,
	"Query.groupBy":      `schema:"opaque" desc:"{field|degree(+buckets), order:count|key, desc}"`,
	"Order.degree":       `schema:"opaque"`,
	"Return.degrees":     `schema:"opaque"`,
	"Step.hops":          `desc:"n or [min,max]"`,
	"Node.properties":    `desc:"As lore://model defines the node's type"`,
	"PathsResult.length": `desc:"Edges in paths[0]; -1: none"`,
	"Group.key":          `schema:"scalar"`,
}

// A jschema is a JSON Schema being built; it marshals its keywords in a
// fixed order and its properties in declaration order.
type jschema struct {
	Type, Desc, Format string
	Enum               []string
	Default            json.RawMessage
	Min, Max           *int64
	MinLen, MaxLen     *int64
	MinItems, MaxItems *int64
	Items              *jschema
	Props              []jprop
	Required           []string
	Closed             bool     // additionalProperties: false
	Values             *jschema // additionalProperties: a map's values
	AnyOf              []*jschema
}

type jprop struct {
	name string
	s    *jschema
}

func (s *jschema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	kv := func(k string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kj, _ := json.Marshal(k)
		vj, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(vj)
	}
	if s.Type != "" {
		kv("type", s.Type)
	}
	if s.Format != "" {
		kv("format", s.Format)
	}
	if len(s.Enum) > 0 {
		kv("enum", s.Enum)
	}
	for _, n := range []struct {
		k string
		v *int64
	}{{"minimum", s.Min}, {"maximum", s.Max}, {"minLength", s.MinLen}, {"maxLength", s.MaxLen}, {"minItems", s.MinItems}, {"maxItems", s.MaxItems}} {
		if n.v != nil {
			kv(n.k, *n.v)
		}
	}
	if s.Default != nil {
		kv("default", s.Default)
	}
	if s.Desc != "" {
		kv("description", s.Desc)
	}
	if s.Items != nil {
		kv("items", s.Items)
	}
	if len(s.AnyOf) > 0 {
		kv("anyOf", s.AnyOf)
	}
	if len(s.Required) > 0 {
		kv("required", s.Required)
	}
	if len(s.Props) > 0 {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(`"properties":{`)
		for i, p := range s.Props {
			if i > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(p.name)
			vj, err := json.Marshal(p.s)
			if err != nil {
				return nil, err
			}
			b.Write(kj)
			b.WriteByte(':')
			b.Write(vj)
		}
		b.WriteByte('}')
	}
	if s.Closed {
		kv("additionalProperties", false)
	} else if s.Values != nil {
		kv("additionalProperties", s.Values)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// schemaMode says what a schema is built for.
type schemaMode int

const (
	inputSchema  schemaMode = iota // closed objects, constraints
	outputSchema                   // open objects: what clients are shown
	strictSchema                   // closed objects: what Lore checks its results against
)

var (
	typeTime   = reflect.TypeFor[time.Time]()
	typeRaw    = reflect.TypeFor[json.RawMessage]()
	typeLabels = reflect.TypeFor[graph.Labels]()
	typeHops   = reflect.TypeFor[graph.Hops]()
	typeDir    = reflect.TypeFor[graph.Direction]()
	typeStatus = reflect.TypeFor[graph.Status]()
)

// schemaOf derives the JSON Schema 2020-12 document of a Go type.
func schemaOf(t reflect.Type, mode schemaMode) json.RawMessage {
	s := derive(t, mode)
	if mode == inputSchema {
		// Nested objects are closed by the decoder (schema.DecodeStrict
		// into Go structs, or graph.ParseQuery): the inventory models read
		// every turn says so once, at the top.
		open(s)
		s.Closed = true
	}
	data, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("mcp: schema of %s: %v", t, err))
	}
	if mode == inputSchema {
		// 2020-12 is MCP's default dialect: the inventory models read
		// every turn leaves it out.
		return data
	}
	// The dialect first, then the rest.
	return append([]byte(`{`+draft+`,`), data[1:]...)
}

// open leaves every object of s open.
func open(s *jschema) {
	s.Closed = false
	for _, p := range s.Props {
		open(p.s)
	}
	for _, a := range s.AnyOf {
		open(a)
	}
	if s.Items != nil {
		open(s.Items)
	}
}

func derive(t reflect.Type, mode schemaMode) *jschema {
	switch t {
	case typeTime:
		return &jschema{Type: "string", Format: "date-time"}
	case typeRaw:
		// Lore's raw JSON fields are objects (filters, a type's schema);
		// a schema with no keyword at all would accept anything.
		return &jschema{Type: "object"}
	case typeLabels:
		// A label or a list of them: anyOf, never a type array, which
		// some clients refuse.
		return &jschema{AnyOf: []*jschema{{Type: "string"}, {Type: "array", Items: &jschema{Type: "string"}}}}
	case typeHops:
		two := int64(2)
		return &jschema{AnyOf: []*jschema{{Type: "integer"}, {Type: "array", Items: &jschema{Type: "integer"}, MinItems: &two, MaxItems: &two}}}
	case typeDir:
		return &jschema{Enum: []string{"out", "in", "both"}}
	case typeStatus:
		return &jschema{Type: "string", Enum: []string{string(graph.Created), string(graph.Updated), string(graph.Unchanged), string(graph.Deleted)}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return derive(t.Elem(), mode)
	case reflect.String:
		return &jschema{Type: "string"}
	case reflect.Bool:
		return &jschema{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &jschema{Type: "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		zero := int64(0)
		return &jschema{Type: "integer", Min: &zero}
	case reflect.Float32, reflect.Float64:
		return &jschema{Type: "number"}
	case reflect.Slice, reflect.Array:
		return &jschema{Type: "array", Items: derive(t.Elem(), mode)}
	case reflect.Map:
		s := &jschema{Type: "object"}
		if t.Elem().Kind() != reflect.Interface {
			s.Values = derive(t.Elem(), mode)
		}
		return s
	case reflect.Interface:
		return &jschema{}
	case reflect.Struct:
		s := &jschema{Type: "object", Closed: mode != outputSchema}
		addFields(s, t, mode)
		return s
	}
	panic(fmt.Sprintf("mcp: no schema for %s", t))
}

// addFields adds a struct's fields (and those of its embedded structs) to
// an object schema.
func addFields(s *jschema, t reflect.Type, mode schemaMode) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(s, ft, mode)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		tag := f.Tag
		if t.PkgPath() == reflect.TypeFor[graph.Node]().PkgPath() {
			tag = graphFieldTags[t.Name()+"."+name]
		}
		if tag.Get("schema") == "-" {
			continue
		}
		p := derive(f.Type, mode)
		if err := constrain(p, tag, mode); err != nil {
			panic(fmt.Sprintf("mcp: %s.%s: %v", t, f.Name, err))
		}
		s.Props = append(s.Props, jprop{name, p})
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !optional && (mode != inputSchema || p.Default == nil) {
			s.Required = append(s.Required, name)
		}
	}
}

// constrain applies a field's schema and desc tags.
func constrain(p *jschema, tag reflect.StructTag, mode schemaMode) error {
	p.Desc = tag.Get("desc")
	rules := tag.Get("schema")
	if rules == "" {
		return nil
	}
	for rule := range strings.SplitSeq(rules, ",") {
		k, v, _ := strings.Cut(rule, "=")
		switch k {
		case "opaque":
			// graph.ParseQuery checks what is inside against the query
			// language's schema; the inventory keeps the bare type (and
			// the desc tag, if any).
			if mode == inputSchema {
				t := "object"
				if p.Type == "array" {
					t = "array"
				}
				*p = jschema{Type: t, Desc: p.Desc}
			}
			continue
		}
		if k == "scalar" {
			// A value of any JSON type but object and array (a group's key).
			*p = jschema{Desc: p.Desc, AnyOf: []*jschema{{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "null"}}}
			continue
		}
		if k == "enum" {
			p.Enum, p.Type = strings.Split(v, "|"), "" // the values say the type
			continue
		}
		if k == "default" {
			if mode == inputSchema {
				p.Default = json.RawMessage(v)
			}
			continue
		}
		n, ok := limitConsts[v]
		if !ok {
			var err error
			if n, err = strconv.ParseInt(v, 10, 64); err != nil {
				return fmt.Errorf("schema tag %q: %q is neither a number nor a limit constant", rule, v)
			}
		}
		if mode != inputSchema {
			continue // outputs describe what is, inputs what may be
		}
		target := p
		if len(p.AnyOf) > 0 && k != "minItems" && k != "maxItems" {
			target = p.AnyOf[0]
		}
		switch k {
		case "min":
			target.Min = &n
		case "max":
			target.Max = &n
		case "minLength":
			target.MinLen = &n
		case "maxLength":
			target.MaxLen = &n
		case "minItems":
			target.MinItems = &n
		case "maxItems":
			target.MaxItems = &n
		default:
			return fmt.Errorf("schema tag %q: unknown rule %s", rule, k)
		}
	}
	return nil
}

// OutputSchema returns the published output schema of a Go type, as a
// tool returning it declares it: what MCP lists and the generated
// surfaces are rendered from.
func OutputSchema(t reflect.Type) json.RawMessage { return compact(schemaOf(t, outputSchema)) }
