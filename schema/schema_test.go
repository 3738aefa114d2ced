package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultModel(t *testing.T) {
	m := Default()
	wantNodes := []string{"Decision", "Document", "Entity", "Person", "Service", "Team", "Topic"}
	if diff := cmp.Diff(wantNodes, m.NodeTypeNames()); diff != "" {
		t.Errorf("node types (-want +got):\n%s", diff)
	}
	for _, l := range []string{"memberOf", "owns", "dependsOn", "authored", "about", "decides", "supersedes", "references", "relation"} {
		if _, ok := m.Edge(l); !ok {
			t.Errorf("edge label %q missing", l)
		}
	}
	rel, _ := m.Edge("relation")
	if !rel.Keyed || !rel.Allows("Entity", "Entity") {
		t.Errorf("relation = %+v, want keyed Entity->Entity", rel)
	}
}

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidateReportsEveryViolation(t *testing.T) {
	m := Default()
	dec, _ := m.Node("Decision")
	err := dec.Validate(decode(t, `{"title": 5, "status": "maybe", "date": "yesterday", "colour": "red"}`))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v, want *ValidationError", err)
	}
	got := map[string]string{}
	for _, v := range ve.Violations {
		got[v.Pointer] = v.Rule
	}
	want := map[string]string{"/title": "type", "/status": "enum", "/date": "format", "/colour": "additionalProperties"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s\nerror: %v", diff, err)
	}
	for range 2 { // no properties: the verdict is kept, and must stay the same
		if err := dec.Validate(decode(t, `{}`)); err == nil || !strings.Contains(err.Error(), "/title: is required but missing (required)") {
			t.Errorf("empty Decision: %v", err)
		}
		if err := dec.Validate(nil); err == nil {
			t.Error("a Decision with no properties passed")
		}
	}
	about, _ := m.Edge("about")
	if err := about.Validate(nil); err != nil {
		t.Errorf("an about edge with no properties: %v", err)
	}
	if err := dec.Validate(decode(t, `{"title":"t","status":"accepted","date":"2024-02-29","number":3}`)); err != nil {
		t.Errorf("valid Decision: %v", err)
	}
	svc, _ := m.Node("Service")
	if err := svc.Validate(decode(t, `{"name":"x","tier":1.5}`)); err == nil {
		t.Error("tier 1.5 accepted for an integer property")
	}
}

func TestLoadChecks(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"not json", `[`, "not a JSON object"},
		{"draft", `{"$schema":"http://json-schema.org/draft-07/schema#","$defs":{"A":{"x-lore-node":{},"type":"object"}}}`, "/$schema"},
		{"no nodes", `{"$schema":"` + Draft2020 + `","$defs":{}}`, "declares no node type"},
		{"bad name", `{"$schema":"` + Draft2020 + `","$defs":{"my type":{"x-lore-node":{},"type":"object"}}}`, "not an identifier"},
		{"endpoint", `{"$schema":"` + Draft2020 + `","$defs":{"A":{"x-lore-node":{},"type":"object"},"e":{"x-lore-edge":{"from":["A"],"to":["B"]},"type":"object"}}}`, `/$defs/e/x-lore-edge/to/0: names "B", which is not a node type`},
		{"unknown meta key", `{"$schema":"` + Draft2020 + `","$defs":{"A":{"x-lore-node":{"indexd":[]},"type":"object"}}}`, "/$defs/A/x-lore-node"},
		{"indexed unknown", `{"$schema":"` + Draft2020 + `","$defs":{"A":{"x-lore-node":{"indexed":["q"]},"type":"object"}}}`, `"q", which is not a property`},
		{"not object", `{"$schema":"` + Draft2020 + `","$defs":{"A":{"x-lore-node":{},"type":"string"}}}`, "/$defs/A/type"},
		{"bad schema", `{"$schema":"` + Draft2020 + `","$defs":{"A":{"x-lore-node":{},"type":"object","properties":{"n":{"type":"strin"}}}}}`, "not a valid JSON Schema"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestDecodeStrictRefusesUnknownFields(t *testing.T) {
	var line struct {
		Kind string `json:"kind"`
	}
	if err := Decode([]byte(`{"kind":"node","bogus":1}`), &line); err != nil || line.Kind != "node" {
		t.Fatalf("Decode: %v, %+v", err, line)
	}
	if err := DecodeStrict([]byte(`{"kind":"node","bogus":1}`), &line); err == nil || !strings.Contains(err.Error(), `"bogus"`) {
		t.Errorf("DecodeStrict of an unknown field: %v", err)
	}
	for _, bad := range []string{`{"kind":"node"} x`, `{"kind":"node"}{}`} {
		if err := DecodeStrict([]byte(bad), &line); err == nil {
			t.Errorf("DecodeStrict(%s) took the data after the value", bad)
		}
	}
	if err := DecodeStrict([]byte("{\"kind\":\"edge\"} \r\n"), &line); err != nil || line.Kind != "edge" {
		t.Errorf("DecodeStrict with trailing space: %v, %+v", err, line)
	}
}
