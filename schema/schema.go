// Package schema loads, checks and compiles Lore models.
//
// A model is one JSON Schema 2020-12 document. Each node type and each edge
// type is an entry of its "$defs", marked by an "x-lore-node" or "x-lore-edge"
// keyword; other "$defs" entries are ordinary shared definitions. Because the
// document is itself a valid schema, a tool's output schema can "$ref" a node
// type and validate exactly as the model does:
//
//	{
//	  "$schema": "https://json-schema.org/draft/2020-12/schema",
//	  "$defs": {
//	    "Person":   {"x-lore-node": {"display": "name", "indexed": ["email"]},
//	                 "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
//	    "memberOf": {"x-lore-edge": {"from": ["Person"], "to": ["Team"]}, "type": "object"}
//	  }
//	}
//
// "x-lore-node" takes "display" (the property that names a node), "indexed"
// (properties with equality and range indexes) and "search" (properties
// whose text is searchable). "x-lore-edge" takes "from" and "to" (the node
// types an edge may join) and "keyed" (the edge carries a key, so several
// edges of one label may join the same two nodes).
//
// The package imports nothing of Lore's.
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Draft2020 is the only "$schema" a model may declare.
const Draft2020 = "https://json-schema.org/draft/2020-12/schema"

// MaxNameLen is the longest node type, edge label or property name.
const MaxNameLen = 64

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// ValidName reports whether s may name a node type, an edge label or a property.
func ValidName(s string) bool { return len(s) <= MaxNameLen && nameRE.MatchString(s) }

//go:embed models/default.json
var defaultModel []byte

//go:embed models/example.ndjson
var exampleData []byte

// ExampleData returns the embedded example dataset for the default model: a
// small fictional company (Tessellate) with its teams, people, services,
// documents and architecture decisions, as Lore NDJSON.
func ExampleData() []byte { return bytes.Clone(exampleData) }

// DefaultJSON returns the embedded default model document.
func DefaultJSON() []byte { return bytes.Clone(defaultModel) }

// Default returns the embedded default model. It panics if the embedded
// document is broken, which a test rules out.
func Default() *Model {
	m, err := Load(defaultModel)
	if err != nil {
		panic("schema: default model: " + err.Error())
	}
	return m
}

// A Model is a checked and compiled property-graph model. It is immutable
// and safe for concurrent use.
type Model struct {
	raw   []byte
	id    string
	title string
	nodes map[string]*NodeType
	edges map[string]*EdgeType
	nodeN []string // sorted names
	edgeN []string
}

// A NodeType is one node type of a model.
type NodeType struct {
	Name        string
	Title       string
	Description string
	// Display names the property that gives a node its human name ("" if none).
	Display string
	// Indexed lists the properties with equality and range indexes.
	Indexed []string
	// Search lists the properties whose text is searchable.
	Search []string
	// Properties lists the declared property names, sorted.
	Properties []string
	// Required lists the required property names, sorted.
	Required []string
	// Schema is the node type's schema as it appears in the model.
	Schema json.RawMessage

	compiled *jsonschema.Schema
	empty    emptyResult
}

// An EdgeType is one edge label of a model.
type EdgeType struct {
	Name        string
	Title       string
	Description string
	From, To    []string // node types an edge may start and end at
	// Keyed edges carry a key that is part of their identity.
	Keyed bool
	// Properties lists the declared property names, sorted.
	Properties []string
	Schema     json.RawMessage

	compiled *jsonschema.Schema
	empty    emptyResult
}

// ID returns the model's "$id" ("" if it has none).
func (m *Model) ID() string { return m.id }

// Title returns the model's title.
func (m *Model) Title() string { return m.title }

// JSON returns the model document exactly as it was loaded.
func (m *Model) JSON() []byte { return bytes.Clone(m.raw) }

// Node returns the node type called name.
func (m *Model) Node(name string) (*NodeType, bool) { t, ok := m.nodes[name]; return t, ok }

// Edge returns the edge type labelled name.
func (m *Model) Edge(name string) (*EdgeType, bool) { t, ok := m.edges[name]; return t, ok }

// NodeTypeNames returns the node type names, sorted.
func (m *Model) NodeTypeNames() []string { return slices.Clone(m.nodeN) }

// EdgeLabels returns the edge labels, sorted.
func (m *Model) EdgeLabels() []string { return slices.Clone(m.edgeN) }

// NodeTypes returns the node types, sorted by name.
func (m *Model) NodeTypes() []*NodeType {
	out := make([]*NodeType, len(m.nodeN))
	for i, n := range m.nodeN {
		out[i] = m.nodes[n]
	}
	return out
}

// EdgeTypes returns the edge types, sorted by label.
func (m *Model) EdgeTypes() []*EdgeType {
	out := make([]*EdgeType, len(m.edgeN))
	for i, n := range m.edgeN {
		out[i] = m.edges[n]
	}
	return out
}

// Allows reports whether an edge of this type may join a node of type from to a node of type to.
func (e *EdgeType) Allows(from, to string) bool {
	return slices.Contains(e.From, from) && slices.Contains(e.To, to)
}

// IsIndexed reports whether prop has an equality and range index.
func (t *NodeType) IsIndexed(prop string) bool { return slices.Contains(t.Indexed, prop) }

// Validate checks a node's properties against its type, reporting every
// violation. props must hold JSON values as encoding/json decodes them
// (json.Number or float64 for numbers).
func (t *NodeType) Validate(props map[string]any) error {
	if len(props) == 0 {
		return t.empty.of(t.compiled)
	}
	return validate(t.compiled, props)
}

// Validate checks an edge's properties against its type, reporting every violation.
func (e *EdgeType) Validate(props map[string]any) error {
	if len(props) == 0 {
		return e.empty.of(e.compiled)
	}
	return validate(e.compiled, props)
}

// emptyResult holds a type's verdict on no properties, which most edges
// have: it is the same every time, and the validator's walk is not free
// (a tenth of the checking of an import of 20k edges).
type emptyResult struct {
	once sync.Once
	err  error
}

func (r *emptyResult) of(s *jsonschema.Schema) error {
	r.once.Do(func() { r.err = validate(s, nil) })
	return r.err
}

// nodeMeta and edgeMeta are the shapes of the x-lore-node and x-lore-edge keywords.
type nodeMeta struct {
	Display string   `json:"display"`
	Indexed []string `json:"indexed"`
	Search  []string `json:"search"`
}

type edgeMeta struct {
	From  []string `json:"from"`
	To    []string `json:"to"`
	Keyed bool     `json:"keyed"`
}

type defEntry struct {
	Title       string                     `json:"title"`
	Description string                     `json:"description"`
	Type        any                        `json:"type"`
	Properties  map[string]json.RawMessage `json:"properties"`
	Required    []string                   `json:"required"`
	Node        json.RawMessage            `json:"x-lore-node"`
	Edge        json.RawMessage            `json:"x-lore-edge"`
}

// Load parses, checks and compiles a model document. The error lists every
// problem found, each with the JSON pointer of the offending part.
func Load(doc []byte) (*Model, error) {
	var top struct {
		Schema *string                    `json:"$schema"`
		ID     string                     `json:"$id"`
		Title  string                     `json:"title"`
		Defs   map[string]json.RawMessage `json:"$defs"`
	}
	if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("model: not a JSON object")
	}
	if err := CheckJSON(doc, DefaultMaxDepth); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("model: %w", decodeError(err))
	}
	var probs problems
	if top.Schema == nil {
		probs.add("/$schema", "missing; declare %q", Draft2020)
	} else if *top.Schema != Draft2020 {
		probs.add("/$schema", "is %q; a model must be JSON Schema 2020-12 (%q)", *top.Schema, Draft2020)
	}
	m := &Model{raw: bytes.Clone(doc), id: top.ID, title: top.Title,
		nodes: map[string]*NodeType{}, edges: map[string]*EdgeType{}}
	for name, raw := range top.Defs {
		m.addDef(name, raw, &probs)
	}
	if len(m.nodes) == 0 {
		probs.add("/$defs", "declares no node type; mark at least one entry with %q", "x-lore-node")
	}
	for _, e := range m.edges {
		for dir, types := range map[string][]string{"from": e.From, "to": e.To} {
			if len(types) == 0 {
				probs.add(defPtr(e.Name)+"/x-lore-edge/"+dir, "must list at least one node type")
			}
			for i, t := range types {
				if _, ok := m.nodes[t]; !ok {
					probs.add(fmt.Sprintf("%s/x-lore-edge/%s/%d", defPtr(e.Name), dir, i),
						"names %q, which is not a node type; node types are %s", t, strings.Join(sortedKeys(m.nodes), ", "))
				}
			}
		}
	}
	if len(probs) == 0 {
		if err := m.compile(); err != nil {
			return nil, err
		}
	}
	if err := probs.err(); err != nil {
		return nil, err
	}
	m.nodeN = sortedKeys(m.nodes)
	m.edgeN = sortedKeys(m.edges)
	return m, nil
}

func (m *Model) addDef(name string, raw json.RawMessage, probs *problems) {
	ptr := defPtr(name)
	var d defEntry
	if err := json.Unmarshal(raw, &d); err != nil {
		probs.add(ptr, "is not a schema object: %v", decodeError(err))
		return
	}
	if d.Node == nil && d.Edge == nil {
		return // a shared definition
	}
	if d.Node != nil && d.Edge != nil {
		probs.add(ptr, "has both x-lore-node and x-lore-edge; pick one")
		return
	}
	if !ValidName(name) {
		probs.add(ptr, "name %q is not an identifier (letters, digits and _, starting with a letter, at most %d)", name, MaxNameLen)
	}
	if d.Type != "object" {
		probs.add(ptr+"/type", `must be "object"`)
	}
	props := sortedKeys(d.Properties)
	for _, p := range props {
		if !ValidName(p) {
			probs.add(ptr+"/properties/"+escape(p), "property name %q is not an identifier", p)
		}
	}
	required := slices.Sorted(slices.Values(d.Required))
	if d.Node != nil {
		var meta nodeMeta
		if err := strictUnmarshal(d.Node, &meta); err != nil {
			probs.add(ptr+"/x-lore-node", "%v; it takes display, indexed and search", decodeError(err))
			return
		}
		check := func(kw string, names []string) {
			for i, p := range names {
				if _, ok := d.Properties[p]; !ok {
					probs.add(fmt.Sprintf("%s/x-lore-node/%s/%d", ptr, kw, i), "names %q, which is not a property of %s", p, name)
				}
			}
		}
		if meta.Display != "" {
			check("display", []string{meta.Display})
		}
		check("indexed", meta.Indexed)
		check("search", meta.Search)
		m.nodes[name] = &NodeType{Name: name, Title: d.Title, Description: d.Description, Display: meta.Display,
			Indexed: meta.Indexed, Search: meta.Search, Properties: props, Required: required, Schema: raw}
		return
	}
	var meta edgeMeta
	if err := strictUnmarshal(d.Edge, &meta); err != nil {
		probs.add(ptr+"/x-lore-edge", "%v; it takes from, to and keyed", decodeError(err))
		return
	}
	m.edges[name] = &EdgeType{Name: name, Title: d.Title, Description: d.Description, From: meta.From, To: meta.To,
		Keyed: meta.Keyed, Properties: props, Schema: raw}
}

// compile compiles the whole document once, then looks up each type's schema.
func (m *Model) compile() error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(m.raw))
	if err != nil {
		return fmt.Errorf("model: %v", err)
	}
	const url = "lore:model.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return fmt.Errorf("model: %v", err)
	}
	if _, err := c.Compile(url); err != nil {
		return fmt.Errorf("model: not a valid JSON Schema 2020-12 document: %v", err)
	}
	for name, t := range m.nodes {
		if t.compiled, err = c.Compile(url + "#" + defPtr(name)); err != nil {
			return fmt.Errorf("model: %s: %v", defPtr(name), err)
		}
	}
	for name, e := range m.edges {
		if e.compiled, err = c.Compile(url + "#" + defPtr(name)); err != nil {
			return fmt.Errorf("model: %s: %v", defPtr(name), err)
		}
	}
	return nil
}

func defPtr(name string) string { return "/$defs/" + escape(name) }

// escape escapes one JSON pointer reference token (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// problems collects model check failures.
type problems []Violation

func (p *problems) add(ptr, format string, args ...any) {
	*p = append(*p, Violation{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	sort.SliceStable(p, func(i, j int) bool { return p[i].Pointer < p[j].Pointer })
	return &ModelError{Violations: p}
}

// A ModelError lists the problems of a model document.
type ModelError struct{ Violations []Violation }

func (e *ModelError) Error() string {
	var b strings.Builder
	b.WriteString("model is invalid:")
	for _, v := range e.Violations {
		fmt.Fprintf(&b, "\n  %s: %s", v.Pointer, v.Message)
	}
	return b.String()
}
