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
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
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

// ValidName reports whether s may name a node type, an edge label or a
// property: a letter, then letters, digits and underscores (ASCII), at
// most MaxNameLen bytes. (Every edge a batch writes is checked: a loop,
// not a regular expression.)
func ValidName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= c && c <= '9' || c == '_'):
		default:
			return false
		}
	}
	return true
}

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
	// declared names the entries marked x-lore-node, valid or not, so
	// that a mistake in one is reported once, not again at every edge
	// that names it.
	declared map[string]bool
	warnings []Violation
}

// Warnings lists the model's suspicious choices: legal, but probably not
// what its author meant (a search property that holds no text, say).
// They are sorted by pointer; a valid model may have some.
func (m *Model) Warnings() []Violation { return m.warnings }

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

// Version identifies the model document: the first 16 hexadecimal digits
// of the SHA-256 of its bytes, so two stores, replicas or releases that
// report the same version use the same model, and any edit gives a new one.
func (m *Model) Version() string {
	h := sha256.Sum256(m.raw)
	return hex.EncodeToString(h[:8])
}

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
		nodes: map[string]*NodeType{}, edges: map[string]*EdgeType{}, declared: map[string]bool{}}
	for name, raw := range top.Defs {
		m.addDef(name, raw, &probs)
	}
	if len(m.declared) == 0 {
		probs.add("/$defs", "declares no node type; mark at least one entry with %q", "x-lore-node")
	}
	for _, e := range m.edges {
		for dir, types := range map[string][]string{"from": e.From, "to": e.To} {
			if len(types) == 0 {
				probs.add(defPtr(e.Name)+"/x-lore-edge/"+dir, "must list at least one node type")
			}
			for i, t := range types {
				if !m.declared[t] {
					probs.add(fmt.Sprintf("%s/x-lore-edge/%s/%d", defPtr(e.Name), dir, i),
						"names %q, which is not a node type; node types are %s", t, strings.Join(sortedKeys(m.declared), ", "))
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
	sort.SliceStable(m.warnings, func(i, j int) bool { return m.warnings[i].Pointer < m.warnings[j].Pointer })
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
		m.declared[name] = true
		return
	}
	if d.Node != nil {
		m.declared[name] = true
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
	for i, p := range d.Required {
		if _, ok := d.Properties[p]; !ok && len(d.Properties) > 0 {
			m.warn(fmt.Sprintf("%s/required/%d", ptr, i), "names %q, which is not in properties: no value can be checked against a schema", p)
		}
	}
	if d.Node != nil {
		var meta nodeMeta
		if !keywordArgs(ptr+"/x-lore-node", d.Node, &meta, nodeKeywordHelp, probs) {
			return
		}
		check := func(at string, p string) bool {
			if _, ok := d.Properties[p]; !ok {
				probs.add(at, "names %q, which is not a property of %s; its properties are %s", p, name, listOrNone(props))
				return false
			}
			return true
		}
		if meta.Display != "" && check(ptr+"/x-lore-node/display", meta.Display) {
			if k := propKinds(d.Properties[meta.Display]); k != nil && !k["string"] {
				m.warn(ptr+"/x-lore-node/display", "names %q, which does not hold a string: clients show it as the node's name", meta.Display)
			}
		}
		for i, p := range meta.Indexed {
			at := fmt.Sprintf("%s/x-lore-node/indexed/%d", ptr, i)
			if check(at, p) {
				if k := propKinds(d.Properties[p]); k != nil && !k["string"] && !k["number"] && !k["boolean"] {
					m.warn(at, "names %q, which holds no strings, numbers or booleans: the index keeps only those (scalars, or the scalars of an array)", p)
				}
			}
		}
		for i, p := range meta.Search {
			at := fmt.Sprintf("%s/x-lore-node/search/%d", ptr, i)
			if check(at, p) {
				if k := propKinds(d.Properties[p]); k != nil && !k["string"] {
					m.warn(at, "names %q, which holds no text: search finds numbers by their digits, and never booleans or objects; "+
						"list it under indexed to look it up by value", p)
				}
			}
		}
		m.nodes[name] = &NodeType{Name: name, Title: d.Title, Description: d.Description, Display: meta.Display,
			Indexed: meta.Indexed, Search: meta.Search, Properties: props, Required: required, Schema: raw}
		return
	}
	var meta edgeMeta
	if !keywordArgs(ptr+"/x-lore-edge", d.Edge, &meta, edgeKeywordHelp, probs) {
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

// What the x-lore keywords take, for their error messages.
var (
	nodeKeywordHelp = map[string]string{
		"":        `an object: {"display": "name", "indexed": ["email"], "search": ["name", "bio"]}`,
		"display": "a property name (a string)",
		"indexed": "an array of property names",
		"search":  "an array of property names",
	}
	edgeKeywordHelp = map[string]string{
		"":      `an object: {"from": ["Person"], "to": ["Team"], "keyed": false}`,
		"from":  "an array of node type names",
		"to":    "an array of node type names",
		"keyed": "true or false",
	}
)

// keywordArgs decodes an x-lore keyword's value into v, and reports one
// problem if it does not fit, at the pointer of the part that is wrong,
// saying what that part takes.
func keywordArgs(ptr string, raw json.RawMessage, v any, help map[string]string, probs *problems) bool {
	err := strictUnmarshal(raw, v)
	if err == nil {
		return true
	}
	var known []string
	for k := range help {
		if k != "" {
			known = append(known, k)
		}
	}
	sort.Strings(known)
	var de *DecodeError
	if !errors.As(decodeError(err), &de) {
		probs.add(ptr, "want %s", help[""])
		return false
	}
	switch {
	case de.UnknownField != "":
		hint := ""
		if near := closest(de.UnknownField, known); near != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", near)
		}
		probs.add(ptr, "takes no %q%s; it takes %s", de.UnknownField, hint, strings.Join(known, ", "))
	case de.Pointer != "":
		field := strings.TrimPrefix(de.Pointer, "/")
		if i := strings.IndexByte(field, '/'); i >= 0 {
			field = field[:i]
		}
		what, ok := help[field]
		if !ok {
			what = de.Reason
		}
		probs.add(ptr+"/"+field, "want %s, got %s", what, gotOf(de.Reason))
	default:
		probs.add(ptr, "want %s", help[""])
	}
	return false
}

// gotOf returns the "got …" part of a decode error's reason.
func gotOf(reason string) string {
	if _, got, ok := strings.Cut(reason, ", got "); ok {
		return got
	}
	return "something else"
}

// closest returns the name in names nearest to s (at most two edits, or
// one is a prefix of the other), or "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		d := editDistance(s, n)
		if strings.HasPrefix(n, s) || strings.HasPrefix(s, n) {
			d = min(d, 1)
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// propKinds returns the JSON kinds a property's schema allows, looking
// through arrays at their items ("string", "number" for integers too,
// "boolean", "object", "null"), or nil where its "type" does not say
// (a $ref, a combinator, no type).
func propKinds(raw json.RawMessage) map[string]bool {
	var s struct {
		Type  any             `json:"type"`
		Items json.RawMessage `json:"items"`
		Enum  []any           `json:"enum"`
		Const any             `json:"const"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var types []string
	switch t := s.Type.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if str, ok := x.(string); ok {
				types = append(types, str)
			}
		}
	default:
		return nil
	}
	kinds := map[string]bool{}
	for _, t := range types {
		switch t {
		case "integer", "number":
			kinds["number"] = true
		case "array":
			if len(s.Items) == 0 {
				return nil
			}
			items := propKinds(s.Items)
			if items == nil {
				return nil
			}
			for k := range items {
				kinds[k] = true
			}
		default:
			kinds[t] = true
		}
	}
	return kinds
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (m *Model) warn(ptr, format string, args ...any) {
	m.warnings = append(m.warnings, Violation{Pointer: ptr, Message: fmt.Sprintf(format, args...)})
}

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
