package schema

import (
	"encoding/json"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// PropertyTypes returns the JSON types the node type's property prop may
// hold, as its schema declares them: its "type", or the types of the
// values of its "enum" or "const", directly or through "$ref" or an
// "allOf" (each of which must hold too). Types are "null", "boolean",
// "number", "integer", "string", "array" and "object". nil means the
// schema does not say (any JSON value may be there).
func (t *NodeType) PropertyTypes(prop string) []string {
	if t.compiled == nil {
		return nil
	}
	return declaredTypes(propertySchema(t.compiled, prop, 0), 0)
}

// maxSchemaDepth bounds the walk through $ref and allOf.
const maxSchemaDepth = 8

// propertySchema finds the schema the object schema s gives property prop.
func propertySchema(s *jsonschema.Schema, prop string, depth int) *jsonschema.Schema {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	if p, ok := s.Properties[prop]; ok {
		return p
	}
	if p := propertySchema(s.Ref, prop, depth+1); p != nil {
		return p
	}
	for _, a := range s.AllOf {
		if p := propertySchema(a, prop, depth+1); p != nil {
			return p
		}
	}
	return nil
}

func declaredTypes(s *jsonschema.Schema, depth int) []string {
	if s == nil || depth > maxSchemaDepth {
		return nil
	}
	switch {
	case s.Types != nil && !s.Types.IsEmpty():
		return s.Types.ToStrings()
	case s.Const != nil:
		return []string{jsonType(*s.Const)}
	case s.Enum != nil && len(s.Enum.Values) > 0:
		var out []string
		for _, v := range s.Enum.Values {
			out = append(out, jsonType(v))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	if ts := declaredTypes(s.Ref, depth+1); ts != nil {
		return ts
	}
	for _, a := range s.AllOf {
		if ts := declaredTypes(a, depth+1); ts != nil {
			return ts
		}
	}
	return nil
}

// jsonType names the JSON type of a value as jsonschema decodes it.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64, float32, int, int64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}
