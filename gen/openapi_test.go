package gen_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/mcp"
)

// TestOpenAPICoverage: each tool has exactly one POST operation named after
// it, read-only tools one GET operation more, with the tool's schemas as
// components; nothing else is under /api/v1/tools.
func TestOpenAPICoverage(t *testing.T) {
	in := gen.Default()
	doc := render(t, in)
	var want, got []string
	for _, tl := range in.Tools {
		want = append(want, "POST "+gen.ToolsPath+tl.Name+" "+tl.Name)
		if tl.ReadOnly {
			want = append(want, "GET "+gen.ToolsPath+tl.Name+" "+tl.Name+"_get")
		}
		for _, suffix := range []string{".input", ".output"} {
			if _, ok := doc.Components.Schemas[tl.Name+suffix]; !ok {
				t.Errorf("no component %s%s", tl.Name, suffix)
			}
		}
	}
	for path, item := range doc.Paths {
		if !strings.HasPrefix(path, gen.ToolsPath) {
			continue
		}
		for method, op := range item {
			got = append(got, strings.ToUpper(method)+" "+path+" "+op.OperationID)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool operations (-want +got):\n%s", diff)
	}
	for _, p := range []string{gen.ResourcesPath, gen.SubscribePath} {
		if _, ok := doc.Paths[p]["get"]; !ok {
			t.Errorf("no GET %s", p)
		}
	}
}

// TestOpenAPIHoisting: no "$defs" or "#/$defs" is left in the document
// (TestOpenAPIExtraTool shows a tool's definitions become components).
func TestOpenAPIHoisting(t *testing.T) {
	data, err := gen.OpenAPI(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	if s := string(data); strings.Contains(s, `"$defs"`) || strings.Contains(s, `"#/$defs/`) {
		t.Error("the document still has $defs or references into them")
	}
}

// TestOpenAPIExtraTool: a tool added to the catalog gets its operations
// and components with no change to the renderer, and a reference in a
// definition to the schema's root or to another definition is rewritten.
func TestOpenAPIExtraTool(t *testing.T) {
	in := gen.Default()
	in.Tools = append(in.Tools, &mcp.Tool{Name: "extra_tool", Title: "An extra tool", Description: "Echoes a word.", ReadOnly: true,
		Input: json.RawMessage(`{"type":"object","required":["word"],"properties":{"word":{"type":"string"},"tree":{"$ref":"#/$defs/tree"}},` +
			`"$defs":{"tree":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/tree"}},"up":{"$ref":"#"}}}}}`),
		Output: json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}}}`)})
	doc := render(t, in)
	item := doc.Paths[gen.ToolsPath+"extra_tool"]
	if op := item["post"]; op.OperationID != "extra_tool" || op.Summary != "An extra tool" {
		t.Errorf("POST: got %+v", op)
	}
	get := item["get"]
	if get.OperationID != "extra_tool_get" {
		t.Errorf("GET: got %+v", get)
	}
	var names []string
	for _, p := range get.Parameters {
		names = append(names, p.Name)
	}
	if diff := cmp.Diff([]string{"tree", "word"}, names); diff != "" {
		t.Errorf("GET parameters (-want +got):\n%s", diff)
	}
	var tree struct {
		Properties struct {
			Kids struct {
				Items struct {
					Ref string `json:"$ref"`
				} `json:"items"`
			} `json:"kids"`
			Up struct {
				Ref string `json:"$ref"`
			} `json:"up"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(doc.Components.Schemas["extra_tool.input.tree"], &tree); err != nil {
		t.Fatal(err)
	}
	if got, want := tree.Properties.Kids.Items.Ref, "#/components/schemas/extra_tool.input.tree"; got != want {
		t.Errorf("definition to definition: got %q, want %q", got, want)
	}
	if got, want := tree.Properties.Up.Ref, "#/components/schemas/extra_tool.input"; got != want {
		t.Errorf("definition to root: got %q, want %q", got, want)
	}

	for name, input := range map[string]string{
		"outside":  `{"type":"object","properties":{"a":{"$ref":"lore://model#/$defs/Service"}}}`,
		"missing":  `{"type":"object","properties":{"a":{"$ref":"#/$defs/nope"}}}`,
		"anchor":   `{"type":"object","properties":{"a":{"$ref":"#here"}}}`,
		"with $id": `{"$id":"urn:x","type":"object"}`,
	} {
		in := gen.Default()
		in.Tools = append(in.Tools, &mcp.Tool{Name: "bad_tool", Input: json.RawMessage(input), Output: json.RawMessage(`{}`)})
		if _, err := gen.OpenAPI(in); err == nil {
			t.Errorf("%s: rendered a schema it cannot carry over", name)
		}
	}
}

// TestQueryParams: GET parameters decode by the property's types, and a
// value of the wrong type stays a string for the input schema to refuse.
func TestQueryParams(t *testing.T) {
	ps, err := gen.QueryParams(json.RawMessage(`{"type":"object","required":["id"],"properties":{` +
		`"id":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"ok":{"type":"boolean"},"dir":{"enum":["in","out"]},` +
		`"edge":{"type":["string","array"]},"from":{"type":"object"},"where":{"$ref":"#/$defs/f"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]gen.QueryParam{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	if !byName["id"].Required || byName["n"].Required {
		t.Error("required is wrong")
	}
	for _, tt := range []struct {
		param  string
		values []string
		want   string
	}{
		{"id", []string{"service/billing"}, `"service/billing"`},
		{"id", []string{"42"}, `"42"`},
		{"id", []string{`"quoted"`}, `"\"quoted\""`},
		{"n", []string{"10"}, `10`},
		{"n", []string{"1.5"}, `"1.5"`},
		{"n", []string{"ten"}, `"ten"`},
		{"x", []string{"1.5"}, `1.5`},
		{"x", []string{"2"}, `2`},
		{"ok", []string{"true"}, `true`},
		{"ok", []string{"yes"}, `"yes"`},
		{"dir", []string{"in"}, `"in"`},
		{"edge", []string{"dependsOn"}, `"dependsOn"`},
		{"edge", []string{`"dependsOn"`}, `"dependsOn"`},
		{"edge", []string{`["a","b"]`}, `["a","b"]`},
		{"edge", []string{"a", "b"}, `["a","b"]`},
		{"from", []string{`{"type":"Service"}`}, `{"type":"Service"}`},
		{"from", []string{`Service`}, `"Service"`},
		{"where", []string{`{"tier":0}`}, `{"tier":0}`},
	} {
		if got := string(byName[tt.param].Decode(tt.values)); got != tt.want {
			t.Errorf("%s=%q: got %s, want %s", tt.param, tt.values, got, tt.want)
		}
	}
	for name, json := range map[string]bool{"id": false, "n": false, "dir": false, "edge": true, "from": true, "where": true} {
		if byName[name].JSON != json {
			t.Errorf("%s: JSON = %v, want %v", name, !json, json)
		}
	}
}

// skeleton is the part of an OpenAPI document the tests look at.
type skeleton struct {
	Paths map[string]map[string]struct {
		OperationID string `json:"operationId"`
		Summary     string `json:"summary"`
		Parameters  []struct {
			Name string `json:"name"`
		} `json:"parameters"`
	} `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

func render(t *testing.T, in gen.Input) *skeleton {
	t.Helper()
	data, err := gen.OpenAPI(in)
	if err != nil {
		t.Fatal(err)
	}
	var doc skeleton
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}
