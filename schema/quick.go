package schema

import (
	"encoding/json"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A quick is a type's schema compiled a second time, for the keywords
// models use most: type, enum (of strings), format, required, properties,
// additionalProperties, items, minItems and maxItems, minLength and
// maxLength, and integer minimum and maximum. It answers at once, without
// allocating, that a value the schema accepts is valid; for any other
// value, or one it cannot judge, it says to ask the validator, which then
// finds every violation with its usual messages. The validator's walk
// allocated a third of the objects of an import into PostgreSQL, and took
// a tenth of Lore's CPU time.
type quick struct {
	all            bool  // the true schema
	types          uint8 // quickTypes bits; 0 means any
	enum           []string
	format         *jsonschema.Format
	minLen, maxLen int // -1: none
	minItems       int // -1: none
	maxItems       int
	min, max       *int64
	required       []string
	props          map[string]*quick // nil for a property it cannot judge
	noExtra        bool              // additionalProperties: false
	extra          *quick            // additionalProperties' schema
	extraSlow      bool              // one it cannot judge
	items          *quick
	itemsSlow      bool
}

// The JSON types, as quick.types bits.
const (
	qNull uint8 = 1 << iota
	qBoolean
	qNumber
	qInteger
	qString
	qArray
	qObject
)

var quickTypeNames = map[string]uint8{"null": qNull, "boolean": qBoolean, "number": qNumber, "integer": qInteger,
	"string": qString, "array": qArray, "object": qObject}

// quickFields lists the fields of a compiled jsonschema.Schema that a
// quick judges, or may ignore (identifiers and annotations, which assert
// nothing). A schema with any other field set has no quick: a keyword it
// does not know, or one a later version of the library adds, leaves the
// value to the validator.
var quickFields = map[string]bool{
	"Bool": true, "Types": true, "Enum": true, "Format": true, "Required": true, "Properties": true,
	"AdditionalProperties": true, "Items2020": true, "MinItems": true, "MaxItems": true,
	"MinLength": true, "MaxLength": true, "Minimum": true, "Maximum": true,
	"DraftVersion": true, "Location": true, "ID": true, "Anchor": true, "DynamicAnchor": true,
	"Title": true, "Description": true, "Default": true, "Comment": true, "ReadOnly": true, "WriteOnly": true,
	"Examples": true, "Deprecated": true,
}

// compileQuick returns s's quick, or nil if s uses what a quick does not
// judge.
func compileQuick(s *jsonschema.Schema, depth int) *quick {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	if s.Bool != nil {
		if *s.Bool {
			return &quick{all: true}
		}
		return nil // the false schema: the validator says why
	}
	sv := reflect.ValueOf(s).Elem()
	for i, f := range reflect.VisibleFields(sv.Type()) {
		if f.IsExported() && !quickFields[f.Name] && !sv.Field(i).IsZero() {
			return nil
		}
	}
	q := &quick{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1, required: s.Required, format: s.Format}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			bit, ok := quickTypeNames[t]
			if !ok {
				return nil
			}
			q.types |= bit
		}
	}
	if s.Enum != nil {
		for _, v := range s.Enum.Values {
			str, ok := v.(string)
			if !ok {
				return nil
			}
			q.enum = append(q.enum, str)
		}
		if q.enum == nil {
			return nil // an empty enum accepts nothing
		}
	}
	if s.Format != nil && s.Format.Name == "regex" {
		return nil // the validator may check it with its own engine
	}
	for _, b := range []struct {
		from *int
		to   *int
	}{{s.MinLength, &q.minLen}, {s.MaxLength, &q.maxLen}, {s.MinItems, &q.minItems}, {s.MaxItems, &q.maxItems}} {
		if b.from != nil {
			*b.to = *b.from
		}
	}
	for _, b := range []struct {
		from *big.Rat
		to   **int64
	}{{s.Minimum, &q.min}, {s.Maximum, &q.max}} {
		if b.from == nil {
			continue
		}
		if !b.from.IsInt() || !b.from.Num().IsInt64() {
			return nil
		}
		n := b.from.Num().Int64()
		*b.to = &n
	}
	if len(s.Properties) > 0 {
		q.props = make(map[string]*quick, len(s.Properties))
		for name, p := range s.Properties {
			q.props[name] = compileQuick(p, depth+1)
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		q.noExtra = !a
	case *jsonschema.Schema:
		q.extra = compileQuick(a, depth+1)
		q.extraSlow = q.extra == nil
	default:
		return nil
	}
	if s.Items2020 != nil {
		q.items = compileQuick(s.Items2020, depth+1)
		q.itemsSlow = q.items == nil
	}
	return q
}

// valid reports whether the schema certainly accepts v; false means the
// validator must judge it.
func (q *quick) valid(v any) bool {
	if q.all {
		return true
	}
	var t uint8
	switch v.(type) {
	case nil:
		t = qNull
	case bool:
		t = qBoolean
	case string:
		t = qString
	case json.Number:
		t = qNumber
	case []any:
		t = qArray
	case map[string]any:
		t = qObject
	default:
		return false
	}
	if q.types != 0 && q.types&t == 0 {
		if t != qNumber || q.types&qInteger == 0 {
			return false
		}
		if _, ok := simpleInt(v.(json.Number)); !ok {
			return false
		}
	}
	if q.enum != nil {
		s, ok := v.(string)
		if !ok || !slices.Contains(q.enum, s) {
			return false
		}
	}
	if q.format != nil && q.format.Validate(v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		if q.minLen >= 0 || q.maxLen >= 0 {
			n := utf8.RuneCountInString(x)
			if q.minLen >= 0 && n < q.minLen || q.maxLen >= 0 && n > q.maxLen {
				return false
			}
		}
	case json.Number:
		if q.min != nil || q.max != nil {
			n, ok := simpleInt(x)
			if !ok || q.min != nil && n < *q.min || q.max != nil && n > *q.max {
				return false
			}
		}
	case map[string]any:
		for _, r := range q.required {
			if _, ok := x[r]; !ok {
				return false
			}
		}
		for k, e := range x {
			if p, ok := q.props[k]; ok {
				if p == nil || !p.valid(e) {
					return false
				}
				continue
			}
			if q.noExtra || q.extraSlow || q.extra != nil && !q.extra.valid(e) {
				return false
			}
		}
	case []any:
		if q.minItems >= 0 && len(x) < q.minItems || q.maxItems >= 0 && len(x) > q.maxItems {
			return false
		}
		if q.itemsSlow && len(x) > 0 {
			return false
		}
		if q.items != nil {
			for _, e := range x {
				if !q.items.valid(e) {
					return false
				}
			}
		}
	}
	return true
}

// simpleInt returns n's value if it is written as an integer (digits, a
// leading minus at most) that fits an int64.
func simpleInt(n json.Number) (int64, bool) {
	s := string(n)
	if s != "" && s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}
