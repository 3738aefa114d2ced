package schema

import (
	"errors"
	"strings"
	"testing"
)

// modelWith returns a model document with a Person and a Team node type
// and a memberOf edge, with the given x-lore-node of Person and
// x-lore-edge of memberOf, and Person's properties.
func modelWith(personNode, memberOfEdge, personProps string) string {
	if personProps == "" {
		personProps = `{"name": {"type": "string"}, "email": {"type": "string"}, "age": {"type": "integer"},
			"tags": {"type": "array", "items": {"type": "string"}}, "admin": {"type": "boolean"}, "home": {"type": "object"}}`
	}
	return `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": {
		"Person": {"type": "object", "x-lore-node": ` + personNode + `, "properties": ` + personProps + `},
		"Team": {"type": "object", "x-lore-node": {"display": "name"}, "properties": {"name": {"type": "string"}}},
		"memberOf": {"type": "object", "x-lore-edge": ` + memberOfEdge + `}}}`
}

// TestModelAuthoringErrors: each mistake in an x-lore keyword is one
// problem, at a pointer that exists in the document, in the model's terms
// (never a Go type or field name), saying what the keyword takes.
func TestModelAuthoringErrors(t *testing.T) {
	okEdge := `{"from": ["Person"], "to": ["Team"]}`
	for _, tc := range []struct {
		name, doc   string
		ptr, substr string
	}{
		{"misspelt keyword of a node type", modelWith(`{"display": "name", "index": ["email"]}`, okEdge, ""),
			"/$defs/Person/x-lore-node", `takes no "index" (did you mean "indexed"?); it takes display, indexed, search`},
		{"misspelt keyword of an edge label", modelWith(`{"display": "name"}`, `{"form": ["Person"], "to": ["Team"]}`, ""),
			"/$defs/memberOf/x-lore-edge", `takes no "form" (did you mean "from"?)`},
		{"from is a string", modelWith(`{"display": "name"}`, `{"from": "Person", "to": ["Team"]}`, ""),
			"/$defs/memberOf/x-lore-edge/from", "want an array of node type names, got a string"},
		{"keyed is a string", modelWith(`{"display": "name"}`, `{"from": ["Person"], "to": ["Team"], "keyed": "yes"}`, ""),
			"/$defs/memberOf/x-lore-edge/keyed", "want true or false, got a string"},
		{"display is an array", modelWith(`{"display": ["name"]}`, okEdge, ""),
			"/$defs/Person/x-lore-node/display", "want a property name (a string), got an array"},
		{"indexed is a string", modelWith(`{"indexed": "email"}`, okEdge, ""),
			"/$defs/Person/x-lore-node/indexed", "want an array of property names, got a string"},
		{"x-lore-node is an array", modelWith(`["name"]`, okEdge, ""),
			"/$defs/Person/x-lore-node", `want an object: {"display": "name"`},
		{"display names no property", modelWith(`{"display": "nam"}`, okEdge, ""),
			"/$defs/Person/x-lore-node/display", `names "nam", which is not a property of Person; its properties are admin, age, email, home, name, tags`},
		{"search names no property", modelWith(`{"search": ["name", "bio"]}`, okEdge, ""),
			"/$defs/Person/x-lore-node/search/1", `names "bio", which is not a property of Person`},
		{"edge names no node type", modelWith(`{"display": "name"}`, `{"from": ["Persn"], "to": ["Team"]}`, ""),
			"/$defs/memberOf/x-lore-edge/from/0", `names "Persn", which is not a node type; node types are Person, Team`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load([]byte(tc.doc))
			var me *ModelError
			if !errors.As(err, &me) {
				t.Fatalf("want a ModelError, got %v", err)
			}
			if len(me.Violations) != 1 {
				t.Fatalf("want one problem, got %d:\n%v", len(me.Violations), err)
			}
			v := me.Violations[0]
			if v.Pointer != tc.ptr || !strings.Contains(v.Message, tc.substr) {
				t.Errorf("got %s: %s\nwant %s: …%s…", v.Pointer, v.Message, tc.ptr, tc.substr)
			}
			for _, leak := range []string{"Go ", "struct", "nodeMeta", "edgeMeta", "[]string", "json:", "unmarshal"} {
				if strings.Contains(v.Message, leak) {
					t.Errorf("the message speaks of Go (%q): %s", leak, v.Message)
				}
			}
		})
	}
}

// TestModelWarnings: legal but suspicious choices load, with a warning at
// the keyword that makes them; sound ones warn of nothing.
func TestModelWarnings(t *testing.T) {
	okEdge := `{"from": ["Person"], "to": ["Team"]}`
	for _, tc := range []struct {
		name, node string
		want       map[string]string // pointer → part of the message
	}{
		{"sound", `{"display": "name", "indexed": ["email", "age", "tags", "admin"], "search": ["name", "tags"]}`, nil},
		{"search on an integer", `{"search": ["name", "age"]}`,
			map[string]string{"/$defs/Person/x-lore-node/search/1": `names "age", which holds no text`}},
		{"search on a boolean and an object", `{"search": ["admin", "home"]}`, map[string]string{
			"/$defs/Person/x-lore-node/search/0": `"admin", which holds no text`,
			"/$defs/Person/x-lore-node/search/1": `"home", which holds no text`}},
		{"display on a number", `{"display": "age"}`,
			map[string]string{"/$defs/Person/x-lore-node/display": `"age", which does not hold a string`}},
		{"index on an object", `{"indexed": ["home"]}`,
			map[string]string{"/$defs/Person/x-lore-node/indexed/0": `"home", which holds no strings, numbers or booleans`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Load([]byte(modelWith(tc.node, okEdge, "")))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, w := range m.Warnings() {
				got[w.Pointer] = w.Message
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got warnings %v, want at %v", got, tc.want)
			}
			for ptr, sub := range tc.want {
				if !strings.Contains(got[ptr], sub) {
					t.Errorf("at %s: got %q, want …%s…", ptr, got[ptr], sub)
				}
			}
		})
	}
	if w := Default().Warnings(); len(w) != 0 {
		t.Errorf("the default model warns: %v", w)
	}
}
