package schema

import (
	"bytes"
	"encoding/json"
	"testing"
)

// quickModel uses every keyword a quick judges, and some it leaves to the
// validator.
const quickModel = `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/q.json", "title": "q", "$defs": {
  "str": {"type": "string", "maxLength": 3},
  "Q": {"x-lore-node": {}, "type": "object", "required": ["s"], "additionalProperties": false, "properties": {
    "s": {"type": "string", "minLength": 2, "maxLength": 4},
    "i": {"type": "integer", "minimum": -3, "maximum": 10},
    "n": {"type": "number"},
    "e": {"enum": ["a", "b"]},
    "en": {"enum": ["x", 1]},
    "f": {"type": "string", "format": "date"},
    "arr": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 2},
    "obj": {"type": "object", "properties": {"k": {"type": "boolean"}}, "required": ["k"], "additionalProperties": {"type": "string"}},
    "nul": {"type": ["null", "string"]},
    "pat": {"type": "string", "pattern": "^a"},
    "r": {"$ref": "#/$defs/str"},
    "free": {},
    "never": false,
    "frac": {"type": "number", "maximum": 2.5}}},
  "Open": {"x-lore-node": {}, "type": "object", "properties": {"x": {"type": "integer"}}}}}`

// TestQuick checks that a quick accepts only what the validator accepts,
// and that it accepts the common valid values itself.
func TestQuick(t *testing.T) {
	m, err := Load([]byte(quickModel))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		typ, props string
		quick      bool // the quick accepts it (so the validator must)
	}{
		{"Q", `{"s":"ab"}`, true},
		{"Q", `{"s":"abcd","i":-3,"n":1.5e3,"e":"b","f":"2024-02-29","arr":["x","yz"],"obj":{"k":true,"z":"s"},"nul":null,"free":[{"a":1}]}`, true},
		{"Q", `{"s":"éèêë","i":10,"nul":"x"}`, true},
		{"Q", `{"s":"a"}`, false},
		{"Q", `{"s":"abcde"}`, false},
		{"Q", `{"s":"ééééé"}`, false},
		{"Q", `{}`, false},
		{"Q", `{"s":"ab","extra":1}`, false},
		{"Q", `{"s":"ab","i":11}`, false},
		{"Q", `{"s":"ab","i":-4}`, false},
		{"Q", `{"s":"ab","i":1.5}`, false},
		{"Q", `{"s":"ab","i":2.0}`, false}, // an integer, left to the validator
		{"Q", `{"s":"ab","i":1e1}`, false},
		{"Q", `{"s":"ab","i":"1"}`, false},
		{"Q", `{"s":"ab","i":99999999999999999999}`, false},
		{"Q", `{"s":"ab","n":"1"}`, false},
		{"Q", `{"s":"ab","e":"c"}`, false},
		{"Q", `{"s":"ab","e":1}`, false},
		{"Q", `{"s":"ab","en":"x"}`, false},
		{"Q", `{"s":"ab","f":"2024-02-30"}`, false},
		{"Q", `{"s":"ab","arr":[]}`, false},
		{"Q", `{"s":"ab","arr":["a","b","c"]}`, false},
		{"Q", `{"s":"ab","arr":["abcd"]}`, false},
		{"Q", `{"s":"ab","arr":[1]}`, false},
		{"Q", `{"s":"ab","obj":{"z":"s"}}`, false},
		{"Q", `{"s":"ab","obj":{"k":true,"z":1}}`, false},
		{"Q", `{"s":"ab","obj":{"k":"true"}}`, false},
		{"Q", `{"s":"ab","nul":1}`, false},
		{"Q", `{"s":"ab","pat":"abc"}`, false},
		{"Q", `{"s":"ab","pat":"bc"}`, false},
		{"Q", `{"s":"ab","r":"abc"}`, false},
		{"Q", `{"s":"ab","never":null}`, false},
		{"Q", `{"s":"ab","frac":1}`, false},
		{"Q", `{"s":null}`, false},
		{"Open", `{"x":1,"y":{"z":[true]}}`, true},
		{"Open", `{"x":-0}`, true},
		{"Open", `{"x":"1"}`, false},
	} {
		nt, _ := m.Node(tt.typ)
		if nt.quick == nil {
			t.Fatalf("%s has no quick", tt.typ)
		}
		v := decodeUseNumber(t, tt.props)
		q := nt.quick.valid(v)
		full := nt.compiled.Validate(v) == nil
		if q && !full {
			t.Errorf("%s %s: the quick accepts what the validator refuses", tt.typ, tt.props)
		}
		if q != tt.quick {
			t.Errorf("%s %s: the quick says %v, want %v (the validator says %v)", tt.typ, tt.props, q, tt.quick, full)
		}
	}
	// Every type of the default model has a quick.
	d := Default()
	for _, nt := range d.NodeTypes() {
		if nt.quick == nil {
			t.Errorf("the default model's %s has no quick", nt.Name)
		}
	}
	for _, et := range d.EdgeTypes() {
		if et.quick == nil {
			t.Errorf("the default model's %s has no quick", et.Name)
		}
	}
}

func decodeUseNumber(t testing.TB, s string) map[string]any {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzQuick checks on arbitrary properties that a quick accepts only what
// the validator accepts.
func FuzzQuick(f *testing.F) {
	for _, s := range []string{`{"s":"ab","i":3,"arr":["x"],"obj":{"k":false}}`, `{"s":"abc","e":"a","nul":null,"f":"2020-01-01"}`, `{"x":5,"y":"z"}`} {
		f.Add([]byte(s))
	}
	m, err := Load([]byte(quickModel))
	if err != nil {
		f.Fatal(err)
	}
	d := Default()
	var types []*NodeType
	types = append(types, m.NodeTypes()...)
	types = append(types, d.NodeTypes()...)
	f.Fuzz(func(t *testing.T, data []byte) {
		var v map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&v) != nil || v == nil {
			return
		}
		for _, nt := range types {
			if nt.quick.valid(v) && nt.compiled.Validate(v) != nil {
				t.Errorf("%s %s: the quick accepts what the validator refuses", nt.Name, data)
			}
		}
	})
}
