package gen_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// TestGolden: the committed files are exactly what the generator renders
// now, and the embedded copies are the committed files. Run make generate
// after changing the catalog.
func TestGolden(t *testing.T) {
	files, err := gen.Files(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		disk, err := os.ReadFile(filepath.Join("..", f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(disk, f.Data) {
			t.Errorf("%s is stale: run make generate", f.Path)
		}
		if name, ok := strings.CutPrefix(f.Path, "gen/"); ok && !strings.Contains(name, "/") {
			if !bytes.Equal(gen.Committed(name), disk) {
				t.Errorf("the embedded %s differs from the file", name)
			}
		}
	}
}

// TestNewToolReachesEverySurface: a tool added to the catalog appears in
// every generated document with no other edit.
func TestNewToolReachesEverySurface(t *testing.T) {
	in := gen.Default()
	in.Tools = append(in.Tools, &mcp.Tool{Name: "count_widgets", Title: "Count widgets", Description: "Counts the widgets of a node, for a test.",
		Input:    json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"id":{"type":"string"}}}`),
		Output:   json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","properties":{"count":{"type":"integer"}}}`),
		ReadOnly: true})
	files, err := gen.Files(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"gen/openapi.json":        `"operationId": "count_widgets"`,
		"gen/gql/schema.graphqls": "countWidgets(",
		"llms.txt":                "- [count_widgets](/llms-full.txt#count_widgets): Counts the widgets",
		"gen/llms-full.txt":       "### count_widgets",
		"gen/server-card.json":    `"name": "count_widgets"`,
	}
	for _, f := range files {
		if w, ok := want[f.Path]; ok && !bytes.Contains(f.Data, []byte(w)) {
			t.Errorf("%s does not have the new tool (%s)", f.Path, w)
		}
	}
}

// TestNewOutputFieldReachesEverySurface: a field added to a tool's output
// struct is in the output schema MCP lists, the OpenAPI component, the
// GraphQL type and llms-full.txt, by generation alone.
func TestNewOutputFieldReachesEverySurface(t *testing.T) {
	type nodeWithAge struct { // get_node's output, with one more field
		Node       *graph.Node `json:"node"`
		AgeSeconds int64       `json:"ageSeconds"`
	}
	in := gen.Default()
	for i, tool := range in.Tools {
		if tool.Name == "get_node" {
			c := *tool
			c.Output = mcp.OutputSchema(reflect.TypeFor[nodeWithAge]())
			in.Tools[i] = &c
			if !strings.Contains(string(c.Output), `"ageSeconds":{"type":"integer"}`) {
				t.Errorf("the MCP output schema lacks the field: %s", c.Output)
			}
		}
	}
	files, err := gen.Files(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"gen/openapi.json":        `"ageSeconds": {`,
		"gen/gql/schema.graphqls": "ageSeconds: Int!",
		"gen/llms-full.txt":       `"ageSeconds"`,
	}
	for _, f := range files {
		if w, ok := want[f.Path]; ok {
			if !bytes.Contains(f.Data, []byte(w)) {
				t.Errorf("%s does not have the new field (%s)", f.Path, w)
			}
			delete(want, f.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("not rendered: %v", want)
	}
}
