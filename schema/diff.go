package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A ModelChange is one difference between two models.
type ModelChange struct {
	// Change is "added", "removed" or "changed".
	Change string `json:"change"`
	// What is "node type", "edge label", "property", "required",
	// "indexed", "search", "display", "endpoints" or "keyed".
	What string `json:"what"`
	// Name is the type or label, and for a property "Type.property".
	Name string `json:"name"`
	// Detail says what changed, where a change is not plain.
	Detail string `json:"detail,omitempty"`
}

func (c ModelChange) String() string {
	mark := map[string]string{"added": "+", "removed": "-", "changed": "~"}[c.Change]
	s := fmt.Sprintf("%s %s %s", mark, c.What, c.Name)
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Diff lists what changes from model a to model b: node types and edge
// labels added or removed; for each kept one, properties added, removed or
// given another schema, required properties, the x-lore keywords (indexed,
// search, display, an edge's endpoints and keyed). The list is ordered by
// name, then by kind of change. It says nothing of stored data: whether a
// store's elements fit b is a question for the store (graph.CheckModel).
func Diff(a, b *Model) []ModelChange {
	var out []ModelChange
	add := func(change, what, name, format string, args ...any) {
		out = append(out, ModelChange{Change: change, What: what, Name: name, Detail: fmt.Sprintf(format, args...)})
	}
	names := func(x, y []string) []string {
		return slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(x), y...))))
	}
	for _, n := range names(a.nodeN, b.nodeN) {
		ta, inA := a.nodes[n]
		tb, inB := b.nodes[n]
		switch {
		case !inA:
			add("added", "node type", n, "")
			continue
		case !inB:
			add("removed", "node type", n, "")
			continue
		}
		diffProps(n, ta.Schema, tb.Schema, ta.Properties, tb.Properties, add)
		diffList("indexed", n, ta.Indexed, tb.Indexed, add)
		diffList("search", n, ta.Search, tb.Search, add)
		if ta.Display != tb.Display {
			add("changed", "display", n, "%s -> %s", orNone(ta.Display), orNone(tb.Display))
		}
	}
	for _, n := range names(a.edgeN, b.edgeN) {
		ea, inA := a.edges[n]
		eb, inB := b.edges[n]
		switch {
		case !inA:
			add("added", "edge label", n, "")
			continue
		case !inB:
			add("removed", "edge label", n, "")
			continue
		}
		diffProps(n, ea.Schema, eb.Schema, ea.Properties, eb.Properties, add)
		if !slices.Equal(ea.From, eb.From) || !slices.Equal(ea.To, eb.To) {
			add("changed", "endpoints", n, "%s -> %s was %s -> %s", strings.Join(eb.From, "|"), strings.Join(eb.To, "|"),
				strings.Join(ea.From, "|"), strings.Join(ea.To, "|"))
		}
		if ea.Keyed != eb.Keyed {
			add("changed", "keyed", n, "%t -> %t", ea.Keyed, eb.Keyed)
		}
	}
	return out
}

// diffProps compares the properties of one type or label.
func diffProps(typ string, sa, sb json.RawMessage, pa, pb []string, add func(change, what, name, format string, args ...any)) {
	propsA, propsB := propertySchemas(sa), propertySchemas(sb)
	ra, rb := requiredOf(sa), requiredOf(sb)
	all := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(pa), pb...))))
	for _, p := range all {
		name := typ + "." + p
		xa, inA := propsA[p]
		xb, inB := propsB[p]
		switch {
		case !inA:
			add("added", "property", name, "%s", xb)
		case !inB:
			add("removed", "property", name, "")
		case xa != xb:
			add("changed", "property", name, "%s -> %s", xa, xb)
		}
	}
	diffList("required", typ, ra, rb, add)
	if restA, restB := schemaWithout(sa), schemaWithout(sb); restA != restB {
		add("changed", "schema", typ, "other keywords than properties and required differ")
	}
}

// diffList reports the names added to and removed from a list keyword.
func diffList(what, typ string, a, b []string, add func(change, what, name, format string, args ...any)) {
	for _, p := range b {
		if !slices.Contains(a, p) {
			add("added", what, typ+"."+p, "")
		}
	}
	for _, p := range a {
		if !slices.Contains(b, p) {
			add("removed", what, typ+"."+p, "")
		}
	}
}

// requiredOf returns a schema's required property names.
func requiredOf(raw json.RawMessage) []string {
	var s struct {
		Required []string `json:"required"`
	}
	json.Unmarshal(raw, &s)
	return s.Required
}

// propertySchemas returns each property's schema as canonical JSON.
func propertySchemas(raw json.RawMessage) map[string]string {
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	json.Unmarshal(raw, &s)
	out := make(map[string]string, len(s.Properties))
	for p, v := range s.Properties {
		out[p] = canonical(v)
	}
	return out
}

// schemaWithout returns a type's schema without its properties, required
// list and x-lore keyword, as canonical JSON.
func schemaWithout(raw json.RawMessage) string {
	var s map[string]any
	json.Unmarshal(raw, &s)
	for _, k := range []string{"properties", "required", "x-lore-node", "x-lore-edge", "title", "description"} {
		delete(s, k)
	}
	return canonical(s)
}

// canonical encodes v with sorted keys (encoding/json sorts map keys).
func canonical(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
