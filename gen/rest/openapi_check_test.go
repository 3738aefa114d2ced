//go:build openapi

package rest_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/lore-dev/lore/gen"
)

// Under the openapi build tag every fixture checks its exchanges against
// the committed OpenAPI document with libopenapi-validator and kin-openapi.
func init() {
	newConformer = func(t *testing.T, url string) conformFunc {
		data := gen.Committed("openapi.json")
		doc, err := libopenapi.NewDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		lib, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		kdoc, err := openapi3.NewLoader().LoadFromData(data)
		if err != nil {
			t.Fatal(err)
		}
		kdoc.Servers = openapi3.Servers{{URL: url}} // the document's "/" is relative to wherever it is served
		kin, err := legacy.NewRouter(kdoc)
		if err != nil {
			t.Fatal(err)
		}
		return (&conformer{lib: lib, kin: kin}).check
	}
}

// A conformer holds both libraries loaded with the committed document.
type conformer struct {
	lib validator.Validator
	kin routers.Router
}

func (c *conformer) check(t *testing.T, req *http.Request, reqBody []byte, resp *http.Response, body []byte, checkRequest bool) {
	t.Helper()
	fresh := func() *http.Request {
		r := req.Clone(t.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		return r
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if checkRequest {
		if ok, errs := c.lib.ValidateHttpRequest(fresh()); !ok {
			for _, e := range errs {
				t.Errorf("libopenapi-validator: request %s %s: %s", req.Method, req.URL.RequestURI(), e.Error())
			}
		}
	}
	if ok, errs := c.lib.ValidateHttpResponse(fresh(), resp); !ok {
		for _, e := range errs {
			t.Errorf("libopenapi-validator: %s %s → %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, e.Error())
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.KeywordLocation, se.Reason)
			}
		}
	}

	r := fresh()
	route, params, err := c.kin.FindRoute(r)
	if err != nil {
		t.Errorf("kin-openapi: %s %s: %v", req.Method, req.URL.RequestURI(), err)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if checkRequest {
		if err := openapi3filter.ValidateRequest(t.Context(), in); err != nil {
			t.Errorf("kin-openapi: request %s %s: %v", req.Method, req.URL.RequestURI(), err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateResponse(t.Context(), out); err != nil {
		t.Errorf("kin-openapi: response to %s %s (%d %s): %v", req.Method, req.URL.RequestURI(), resp.StatusCode, body, err)
	}
}
