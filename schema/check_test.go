package schema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckJSON(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		depth    int
		want     string // "" : accepted; else a part of the error
	}{
		{"object", `{"a":[1,{"b":"c"}],"d":null}`, 0, ""},
		{"scalar", ` 12 `, 0, ""},
		{"at the limit", strings.Repeat("[", 64) + strings.Repeat("]", 64), 0, ""},
		{"over the limit", strings.Repeat("[", 65) + strings.Repeat("]", 65), 0, "nested deeper than 64 levels"},
		{"over a set limit", `{"a":{"b":{"c":1}}}`, 2, "nested deeper than 2 levels at /a/b"},
		{"deep and unbalanced", strings.Repeat(`{"a":`, 40000), 0, "nested deeper than 64 levels"},
		{"brackets in strings do not count", `["` + strings.Repeat("[", 100) + `"]`, 0, ""},
		{"duplicate key", `{"a":1,"b":{"c":1,"c":2}}`, 0, "the same key appears twice in one object at /b/c"},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", 0, "invalid UTF-8"},
		{"invalid UTF-8 in a key", "{\"\xc3\":1}", 0, "invalid UTF-8"},
		{"lone surrogate", `{"a":"\ud800"}`, 0, "surrogate"},
		{"trailing data", `{} {}`, 0, "data after the JSON value"},
		{"trailing garbage", `{} x`, 0, "data after the JSON value"},
		{"truncated", `{"a":`, 0, "unexpected end"},
		{"empty", ``, 0, "no JSON value"},
		{"not JSON", `{a:1}`, 0, "invalid character"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckJSON([]byte(tt.in), tt.depth)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckJSON(%.40q) = %v, want nil", tt.in, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckJSON(%.40q) = %v, want an error containing %q", tt.in, err, tt.want)
			}
		})
	}
}

// FuzzCheckJSON: CheckJSON never panics, and whatever it accepts
// encoding/json decodes (numbers as json.Number).
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":null}]}`, `"x"`, `[[[]]]`, `{"a":1,"a":2}`, "\"\xff\"", `{"a":"\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := CheckJSON(data, 8); err != nil {
			return
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			t.Fatalf("CheckJSON accepted %q, which encoding/json refuses: %v", data, err)
		}
	})
}
