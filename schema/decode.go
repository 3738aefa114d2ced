package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	sjson "github.com/segmentio/encoding/json"
)

// Decode decodes one JSON value into v the way the validator needs it,
// numbers as json.Number (so integers are judged exactly), and refuses data
// after the value. It is segmentio's decoder, already in the build through
// the MCP SDK: on the hot paths (every tool call's arguments, every
// property record read) it costs a fraction of encoding/json's Decoder,
// which allocates a buffer per value. Decode objects into a map made
// beforehand: into a nil map or an interface it makes one of 64 slots.
//
// Its errors are *DecodeError: they speak of the input (a JSON pointer,
// the kind of value expected), never of the Go types decoded into.
func Decode(data []byte, v any) error { return decodeWith(data, v, sjson.UseNumber) }

// DecodeStrict is Decode that also refuses object fields v does not
// declare (a struct's unknown keys).
func DecodeStrict(data []byte, v any) error {
	return decodeWith(data, v, sjson.UseNumber|sjson.DisallowUnknownFields)
}

func decodeWith(data []byte, v any, flags sjson.ParseFlags) error {
	rest, err := sjson.Parse(data, v, flags)
	if err != nil {
		return decodeError(err)
	}
	if len(rest) != 0 {
		return &DecodeError{Reason: "data after the JSON value"}
	}
	return nil
}

// A DecodeError says why a JSON value does not fit what it was decoded
// into, in the input's own terms.
type DecodeError struct {
	// Pointer locates the offending value ("" for the whole value or
	// where the decoder does not say).
	Pointer string
	// Reason says what is wrong: "want an integer from 0 to 255, got 300".
	Reason string
	// UnknownField is the name of a field the value does not take, if
	// that is the problem.
	UnknownField string
}

func (e *DecodeError) Error() string {
	if e.Pointer == "" {
		return e.Reason
	}
	return "at " + e.Pointer + ": " + e.Reason
}

// decodeError translates a decoder's error, which names Go types and
// struct fields, into a DecodeError.
func decodeError(err error) error {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		de := &DecodeError{Reason: "want " + describeType(ute.Type) + ", got " + describeValue(ute.Value)}
		if ute.Field != "" {
			de.Pointer = "/" + strings.Join(escapeAll(strings.Split(ute.Field, ".")), "/")
		}
		return de
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		var field string
		if json.Unmarshal([]byte(name), &field) != nil {
			field = strings.Trim(name, `"`)
		}
		return &DecodeError{Reason: "unknown field " + name, UnknownField: field}
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &DecodeError{Reason: fmt.Sprintf("not JSON at byte %d: %s", se.Offset, msg)}
	}
	// What remains (segmentio's own syntax errors) names no Go type, but
	// may quote the rest of the input: keep it short.
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return &DecodeError{Reason: msg}
}

func escapeAll(tokens []string) []string {
	for i, t := range tokens {
		tokens[i] = escape(t)
	}
	return tokens
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	numberType = reflect.TypeFor[json.Number]()
)

// describeType names the JSON a Go type takes.
func describeType(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return "an RFC 3339 time string, such as 2024-05-01T12:00:00Z"
	case numberType:
		return "a number"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", int64(-1)<<(bits-1), int64(math.MaxInt64>>(64-bits)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64>>(64-t.Bits())))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another kind of value"
}

// describeValue names the value a decoder refused: segmentio gives the
// input from the value on, encoding/json the value's kind.
func describeValue(v string) string {
	if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		v = u // segmentio quotes the rest of the input
	}
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "another kind of value"
	case strings.HasPrefix(v, "number"): // "number 300 overflows", or encoding/json's "number 1e30"
		if n := strings.TrimSuffix(strings.TrimPrefix(v, "number "), " overflows"); n != "number" && n != "" {
			return n + ", which is out of range"
		}
		return "a number"
	case v == "string" || v == "bool" || v == "array" || v == "object":
		return map[string]string{"string": "a string", "bool": "a boolean", "array": "an array", "object": "an object"}[v]
	}
	switch v[0] {
	case '"':
		var s string
		if d := json.NewDecoder(strings.NewReader(v)); d.Decode(&s) == nil && len(s) <= 40 {
			return fmt.Sprintf("%q", s)
		}
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	n := v
	if i := strings.IndexAny(n, ",]} \t\r\n"); i >= 0 {
		n = n[:i]
	}
	if len(n) > 40 {
		return "a number"
	}
	return n
}
