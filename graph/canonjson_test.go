package graph

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encodingJSON is what canonicalProps wrote before appendCanonical: an
// encoding/json Encoder's output without HTML escaping.
func encodingJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// checkCanonical checks that appendCanonical writes what encoding/json
// writes, or declines exactly the values that are not pure JSON.
func checkCanonical(t *testing.T, v any) {
	t.Helper()
	got, ok := appendCanonical(nil, v)
	if !ok {
		if pureJSON(v) {
			if _, err := encodingJSON(v); err == nil {
				t.Errorf("appendCanonical declined %#v, which is pure JSON", v)
			}
		}
		return
	}
	if !pureJSON(v) {
		t.Errorf("appendCanonical encoded %#v, which is not pure JSON, as %s", v, got)
	}
	want, err := encodingJSON(v)
	if err != nil {
		t.Fatalf("encoding/json refused %#v (%v), appendCanonical wrote %s", v, err, got)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("appendCanonical(%#v) = %s, encoding/json writes %s", v, got, want)
	}
}

func TestAppendCanonical(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", "plain", json.Number("0"), json.Number("-12.5e+3"), json.Number("1E9"),
		"quote \" backslash \\ slash / <html> & 'apostrophe'",
		"controls \x00\x01\b\f\n\r\t\x1f\x7f",
		"line\u2028paragraph\u2029 é 漢字 🙂",
		map[string]any{"b": json.Number("2"), "a": []any{nil, "x", map[string]any{}}, "": true, "é": "k", "\n": "nl"},
		map[string]any{"nilmap": map[string]any(nil), "nilslice": []any(nil), "empty": []any{}},
		map[string]any{"k01": 1, "k02": 2, "k03": 3, "k04": 4, "k05": 5, "k06": 6, "k07": 7, "k08": 8, "k09": 9,
			"k10": 10, "k11": 11, "k12": 12, "k13": 13, "k14": 14, "k15": 15, "k16": 16, "k17": 17, "k18": 18}, // ints: not pure
		map[string]any{"k01": "1", "k02": "2", "k03": "3", "k04": "4", "k05": "5", "k06": "6", "k07": "7", "k08": "8", "k09": "9",
			"k10": "10", "k11": "11", "k12": "12", "k13": "13", "k14": "14", "k15": "15", "k16": "16", "k17": "17", "k18": "18"},
		// Not pure JSON: declined, left to encoding/json.
		"bad \xff utf-8", map[string]any{"bad \xfe key": "v"}, []any{"ok", "bad \xc3"},
		json.Number(""), json.Number("01"), json.Number("1."), json.Number("1e"), json.Number("-"), json.Number("0x10"),
		json.Number(".5"), json.Number("NaN"), json.Number("1e+"),
		1, 2.5, int64(3), []string{"a"}, map[string]string{"a": "b"}, struct{}{},
	} {
		checkCanonical(t, v)
	}
}

// FuzzAppendCanonical decodes arbitrary JSON as imports do (numbers as
// json.Number) and checks that appendCanonical encodes it as
// encoding/json does.
func FuzzAppendCanonical(f *testing.F) {
	for _, seed := range []string{
		`{"name":"service 1","tier":2,"tags":["a","b"],"nested":{"z":null,"a":true}}`,
		`["\u2028\u2029\u0000\b\f\n\r\t\"\\/<>&", -0.5e-7, 1E+2, {}]`,
		`{"\u00e9":"\ud83d\ude00","":""}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		checkCanonical(t, v)
		if s, ok := v.(string); ok {
			checkCanonical(t, json.Number(s)) // an arbitrary number literal
		}
		checkCanonical(t, string(data)) // arbitrary bytes as a string
	})
}
