package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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

// A model document with a key twice, or nested past the depth limit, is
// refused with the JSON pointer; decoders would keep the last key silently.
func TestLoadRefusesAmbiguousJSON(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"duplicate key", `{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"A":{"type":"object","x-lore-node":{}},"A":{"type":"object"}}}`,
			"the same key appears twice in one object at /$defs/A"},
		{"deep", `{"$defs":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 101), "nested deeper than 64 levels"},
		{"invalid UTF-8", "{\"title\":\"\xff\"}", "invalid UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Decoding errors speak of the input, never of the Go types decoded into.
func TestDecodeErrorsNameNoGoType(t *testing.T) {
	type inner struct {
		X int8 `json:"x"`
	}
	type in struct {
		N    int64     `json:"n"`
		T    time.Time `json:"createdAt"`
		Obs  []string  `json:"observations"`
		Deep inner     `json:"deep"`
	}
	for _, tt := range []struct{ data, want string }{
		{`{"n":"x"}`, `at /n: want an integer from -9223372036854775808 to 9223372036854775807, got "x"`},
		{`{"n":1e30}`, `at /n: want an integer from -9223372036854775808 to 9223372036854775807, got 1e30`},
		{`{"createdAt":"yesterday"}`, `at /createdAt: want an RFC 3339 time string, such as 2024-05-01T12:00:00Z, got "yesterday"`},
		{`{"createdAt":5}`, `at /createdAt: want an RFC 3339 time string, such as 2024-05-01T12:00:00Z, got 5`},
		{`{"observations":[1]}`, `at /observations/0: want a string, got 1`},
		{`{"deep":{"x":300}}`, `at /deep/x: want an integer from -128 to 127, got 300, which is out of range`},
		{`{"other":1}`, `unknown field "other"`},
	} {
		var v in
		err := DecodeStrict([]byte(tt.data), &v)
		var de *DecodeError
		if !errors.As(err, &de) || err.Error() != tt.want {
			t.Errorf("DecodeStrict(%s) = %v, want %q", tt.data, err, tt.want)
		}
		if err != nil && (strings.Contains(err.Error(), "Go ") || strings.Contains(err.Error(), "schema.") || strings.Contains(err.Error(), "int64")) {
			t.Errorf("DecodeStrict(%s) = %v names a Go type", tt.data, err)
		}
	}
}

// FuzzModel: Load never panics on any document, and a model it accepts
// round-trips its document and validates an empty property set without
// panicking.
func FuzzModel(f *testing.F) {
	f.Add(DefaultJSON())
	for _, s := range []string{
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"A":{"type":"object","x-lore-node":{"display":"n","indexed":["n"],"search":["n"]},"properties":{"n":{"type":"string"}}},"e":{"type":"object","x-lore-edge":{"from":["A"],"to":["A"],"keyed":true}}}}`,
		`{"$defs":{"A":{"x-lore-node":{},"x-lore-edge":{}}}}`, `[]`, `{"$defs":{"A":{"$ref":"#/$defs/A","type":"object","x-lore-node":{}}}}`,
		`{"$schema":"https://json-schema.org/draft/2020-12/schema","$defs":{"A":{"type":"object","x-lore-node":{},"properties":{"p":{"pattern":"("}}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		m, err := Load(doc)
		if err != nil {
			return
		}
		if !bytes.Equal(m.JSON(), doc) {
			t.Fatal("the model's document differs from the one loaded")
		}
		for _, nt := range m.NodeTypes() {
			_ = nt.Validate(nil)
			_ = nt.Validate(map[string]any{"x": "y"})
		}
		for _, et := range m.EdgeTypes() {
			_ = et.Validate(nil)
		}
	})
}
