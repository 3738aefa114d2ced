//go:build openapi

// The OpenAPI validators (libopenapi-validator, kin-openapi) build only
// with the openapi tag, which CI's make test-race sets: compiling them was
// the largest part of a cold make test.

package gen_test

import (
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/lore-dev/lore/gen"
)

// TestOpenAPIValid: the committed document is OpenAPI 3.1 by
// libopenapi-validator's check against the specification's schema, and
// kin-openapi loads and validates it (which catches references that only
// resolve under a schema's own base).
func TestOpenAPIValid(t *testing.T) {
	data := gen.Committed("openapi.json")
	doc, err := libopenapi.NewDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("libopenapi-validator: building the model: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("libopenapi-validator: %s", e.Error())
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.KeywordLocation, se.Reason)
			}
		}
	}

	kdoc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		t.Fatalf("kin-openapi: loading: %v", err)
	}
	if !kdoc.IsOpenAPI31OrLater() {
		t.Errorf("kin-openapi reads version %q, want 3.1", kdoc.OpenAPI)
	}
	if err := kdoc.Validate(t.Context()); err != nil {
		t.Errorf("kin-openapi: %v", err)
	}
}
