package schema

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPropertyTypes(t *testing.T) {
	m, err := Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/pt.json", "title": "pt", "$defs": {
	  "str": {"type": ["string", "null"]},
	  "T": {"x-lore-node": {"indexed": ["a"]}, "type": "object", "allOf": [{"properties": {"viaAllOf": {"type": "boolean"}}}],
	    "properties": {"a": {"type": "integer"}, "e": {"enum": ["x", 1, null]}, "c": {"const": [1]}, "r": {"$ref": "#/$defs/str"},
	      "arr": {"type": "array"}, "free": {"description": "anything"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	nt, _ := m.Node("T")
	for prop, want := range map[string][]string{
		"a": {"integer"}, "e": {"null", "number", "string"}, "c": {"array"}, "r": {"null", "string"}, "arr": {"array"},
		"viaAllOf": {"boolean"}, "free": nil, "undeclared": nil,
	} {
		if diff := cmp.Diff(want, nt.PropertyTypes(prop)); diff != "" {
			t.Errorf("PropertyTypes(%q) (-want +got):\n%s", prop, diff)
		}
	}
	svc, _ := Default().Node("Service")
	if diff := cmp.Diff([]string{"string"}, svc.PropertyTypes("lifecycle")); diff != "" {
		t.Errorf("Service.lifecycle (-want +got):\n%s", diff)
	}
}
