package schema

import (
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// A Violation is one broken rule, located by a JSON pointer into the
// validated value (RFC 6901; "" is the value itself).
type Violation struct {
	Pointer string `json:"pointer"`
	// Rule is the JSON Schema keyword that failed, such as "required" or "type".
	Rule    string `json:"rule,omitempty"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	ptr := v.Pointer
	if ptr == "" {
		ptr = "/"
	}
	if v.Rule == "" {
		return ptr + ": " + v.Message
	}
	return fmt.Sprintf("%s: %s (%s)", ptr, v.Message, v.Rule)
}

// A ValidationError lists every violation found in one value.
type ValidationError struct {
	Violations []Violation
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return strings.Join(parts, "; ")
}

var printer = message.NewPrinter(language.English)

func validate(s *jsonschema.Schema, v map[string]any) error {
	if v == nil {
		v = map[string]any{}
	}
	err := s.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Violations: []Violation{{Message: err.Error()}}}
	}
	return &ValidationError{Violations: Flatten(ve)}
}

// Flatten turns a jsonschema validation error tree into its leaves, one
// violation each, sorted by pointer. A missing required property or a
// property that is not allowed is reported at the property's own pointer.
func Flatten(ve *jsonschema.ValidationError) []Violation {
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		ptr := pointer(e.InstanceLocation)
		rule := ""
		if kp := e.ErrorKind.KeywordPath(); len(kp) > 0 {
			rule = kp[len(kp)-1]
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, p := range k.Missing {
				out = append(out, Violation{Pointer: ptr + "/" + escape(p), Rule: rule, Message: "is required but missing"})
			}
			return
		case *kind.AdditionalProperties:
			for _, p := range k.Properties {
				out = append(out, Violation{Pointer: ptr + "/" + escape(p), Rule: rule, Message: "is not an allowed property"})
			}
			return
		case *kind.Maximum: // exact numbers: the library's message rounds them to floats
			out = append(out, Violation{Pointer: ptr, Rule: rule, Message: "is " + exact(k.Got) + ", above the maximum of " + exact(k.Want)})
			return
		case *kind.Minimum:
			out = append(out, Violation{Pointer: ptr, Rule: rule, Message: "is " + exact(k.Got) + ", below the minimum of " + exact(k.Want)})
			return
		}
		out = append(out, Violation{Pointer: ptr, Rule: rule, Message: e.ErrorKind.LocalizedString(printer)})
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// exact prints a number as JSON would: an integer whole, else a decimal.
func exact(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escape(t))
	}
	return b.String()
}
