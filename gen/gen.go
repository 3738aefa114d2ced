// Package gen renders Lore's generated surfaces from the MCP catalog: the
// OpenAPI 3.1 document, the GraphQL SDL (gqlgen turns it into gen/gql),
// llms.txt and llms-full.txt, the MCP server card and the registry
// server.json. The renderers are pure: the same catalog gives the same
// bytes. `make generate` (gen/cmd/generate) writes them; the package embeds
// the committed copies, and a golden test keeps the two equal.
package gen

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// Input is what the renderers read.
type Input struct {
	// Tools and Resources are the catalog's, in presentation order.
	Tools     []*mcp.Tool
	Resources []mcp.ResourceSpec
}

// Default is the input of `make generate`: the catalog's tools for the
// default model (the published schemas do not depend on the model).
func Default() Input {
	return Input{Tools: mcp.Definitions(schema.Default()), Resources: mcp.Resources()}
}

// A File is one generated file, its path relative to the repository root.
type File struct {
	Path string
	Data []byte
}

// Files renders every generated file.
func Files(in Input) ([]File, error) {
	var files []File
	for _, r := range []struct {
		paths  []string
		render func(Input) ([]byte, error)
	}{
		{[]string{"gen/openapi.json"}, OpenAPI},
		{[]string{"gen/gql/schema.graphqls"}, SDL},
		{[]string{"llms.txt", "gen/llms.txt"}, LLMs},
		{[]string{"gen/llms-full.txt"}, LLMsFull},
		{[]string{"gen/server-card.json"}, ServerCard},
		{[]string{"gen/server.json"}, ServerJSON},
	} {
		data, err := r.render(in)
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", r.paths[0], err)
		}
		for _, p := range r.paths {
			files = append(files, File{Path: p, Data: data})
		}
	}
	return files, nil
}

// The committed copies, served by a running server.
//
//go:embed openapi.json llms.txt llms-full.txt server-card.json server.json
var committed embed.FS

// Committed returns the committed copy of a generated file under gen/,
// by its name there ("openapi.json").
func Committed(name string) []byte {
	data, err := committed.ReadFile(name)
	if err != nil {
		panic("gen: " + name + " is not embedded")
	}
	return data
}

// Stamped returns the committed copy of a generated document that states
// a version (openapi.json: info.version; server-card.json: version) with
// version, the running build's, in its place, so a served document names
// the same version as every other surface; the committed copy, generated
// without a build, states APIVersion. An empty version, or another file,
// returns the committed copy as it is.
func Stamped(name, version string) []byte {
	data := Committed(name)
	if version == "" {
		return data
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(data, &doc) != nil {
		return data
	}
	v, _ := json.Marshal(version)
	switch name {
	case "openapi.json":
		var info map[string]json.RawMessage
		if json.Unmarshal(doc["info"], &info) != nil {
			return data
		}
		info["version"] = v
		doc["info"], _ = json.Marshal(info)
	case "server-card.json":
		doc["version"] = v
	default:
		return data
	}
	out, err := marshal(doc)
	if err != nil {
		return data
	}
	return out
}
