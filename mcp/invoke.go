package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lore-dev/lore/schema"
)

// newCompiler returns a JSON Schema compiler that asserts formats and knows
// the model under ModelURI, so output schemas can $ref its node types.
func newCompiler(m *schema.Model) *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(modelForRefs(m)))
	if err != nil {
		panic("mcp: model: " + err.Error())
	}
	if err := c.AddResource(ModelURI, doc); err != nil {
		panic("mcp: model: " + err.Error())
	}
	return c
}

// modelForRefs returns the model document with its "$id" set to ModelURI,
// the address output schemas use for it.
func modelForRefs(m *schema.Model) []byte {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(m.JSON(), &doc); err != nil {
		panic("mcp: model: " + err.Error())
	}
	doc["$id"] = json.RawMessage(`"` + ModelURI + `"`)
	out, _ := json.Marshal(doc)
	return out
}

func mustCompile(c *jsonschema.Compiler, url string, doc json.RawMessage) *jsonschema.Schema {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		panic(fmt.Sprintf("mcp: %s: %v", url, err))
	}
	if err := c.AddResource(url, v); err != nil {
		panic(fmt.Sprintf("mcp: %s: %v", url, err))
	}
	s, err := c.Compile(url)
	if err != nil {
		panic(fmt.Sprintf("mcp: %s: %v", url, err))
	}
	return s
}

// checkArgs validates a call's arguments against the tool's input schema,
// reporting every violation, and fills in the top-level defaults.
func (c *Catalog) checkArgs(t *Tool, args json.RawMessage) (json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	// Before any decoding: what a decoder would change silently (invalid
	// UTF-8, a key given twice) or take long over (deep nesting).
	if err := schema.CheckJSON(args, c.maxDepth); err != nil {
		var je *schema.JSONError
		if errors.As(err, &je) && je.Pointer != "" {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("the arguments of %s are not JSON Lore accepts:", t.Name),
				Violations: []schema.Violation{{Pointer: je.Pointer, Message: je.Reason}}}
		}
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("the arguments of %s are not JSON Lore accepts: %v", t.Name, err)}
	}
	// Objects are decoded into a map made here: into an interface, the
	// decoder would make one of 64 slots for a call's handful of arguments.
	obj := map[string]any{}
	if args[0] != '{' {
		return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("the arguments of %s must be a JSON object", t.Name)}
	}
	if err := schema.Decode(args, &obj); err != nil {
		return nil, &Error{Code: CodeInvalid, Message: "the arguments are not JSON: " + err.Error()}
	}
	if err := t.in.Validate(obj); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, &Error{Code: CodeInvalid, Message: err.Error()}
		}
		vs := schema.Flatten(ve)
		return nil, &Error{Code: CodeInvalid, Violations: vs,
			Message: fmt.Sprintf("the arguments of %s break its input schema in %d place(s); fix each and call again:", t.Name, len(vs))}
	}
	missing := false
	for k := range t.defaults {
		if _, ok := obj[k]; !ok {
			missing = true
		}
	}
	if !missing {
		return args, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, &Error{Code: CodeInvalid, Message: err.Error()}
	}
	for k, d := range t.defaults {
		if _, ok := m[k]; !ok {
			m[k] = d
		}
	}
	return json.Marshal(m)
}

// topDefaults reads the "default" of each top-level property of a schema.
func topDefaults(doc json.RawMessage) map[string]json.RawMessage {
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc, &s); err != nil {
		panic("mcp: input schema: " + err.Error())
	}
	out := map[string]json.RawMessage{}
	for k, p := range s.Properties {
		if p.Default != nil {
			out[k] = p.Default
		}
	}
	return out
}

// An output is a tool's result before encoding.
type output interface {
	// text renders the result for a reader.
	text() string
}

// A trimmer is an output holding a list that can be shortened to fit the
// byte cap: keep(n) keeps the first n items and marks the output truncated.
type trimmer interface {
	output
	items() int
	keep(n int)
}

// A committer is the output of a committed write. render never answers
// it with an error: its shortest form (the sequence number and counts)
// always says the write was committed.
type committer interface {
	trimmer
	committed()
}

// render encodes out, shortening its list until it fits under the byte cap.
// The output is never cut mid-JSON: items are dropped whole, and the output
// says it was truncated and why.
func (c *Catalog) render(out output) (*Result, error) {
	data, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	max := c.ceilings.MaxBytes
	if len(data) > max {
		tr, ok := out.(trimmer)
		if !ok {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf(
				"the result is %d bytes, over the server's cap of %d; ask for less (fewer fields or a smaller limit)", len(data), max)}
		}
		// Binary search for the most items that fit. keep reslices within
		// the list's capacity, so it can grow back to any earlier length.
		lo, hi := 0, tr.items()
		for lo < hi {
			mid := (lo + hi + 1) / 2
			tr.keep(mid)
			if d, _ := json.Marshal(tr); len(d) <= max {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		tr.keep(lo)
		if data, err = json.Marshal(tr); err != nil {
			return nil, err
		}
		if _, ok := out.(committer); len(data) > max && !ok {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf(
				"even an empty page is %d bytes, over the server's cap of %d; ask for less", len(data), max)}
		}
	}
	return &Result{Structured: data, Text: out.text()}, nil
}

// clip shortens s to n runes for a text rendering.
func clip(s string, n int) string {
	if len(s) <= n && !strings.ContainsAny(s, "\n\r\t") {
		return s // the common case: short, one line
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
