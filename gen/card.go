package gen

import (
	"encoding/json"

	"github.com/lore-dev/lore/mcp"
)

// APIVersion is the version of Lore's API the generated documents describe.
const APIVersion = "0.1.0"

type cardTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]bool `json:"annotations"`
}

type cardResource struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
	Name        string `json:"name"`
	Description string `json:"description"`
	MIMEType    string `json:"mimeType"`
}

// ServerCard renders the MCP server card (SEP-2127, served at
// /.well-known/mcp/server-card): the endpoint, its protocol versions and a
// static list of tools and resources.
func ServerCard(in Input) ([]byte, error) {
	card := map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
		"name":        "io.github.lore-dev/lore",
		"title":       "Lore",
		"version":     APIVersion,
		"description": summary,
		"remotes": []map[string]any{{"type": "streamable-http", "url": "/mcp",
			"supportedProtocolVersions": []string{"2025-11-25", mcp.ModernVersion},
			"authentication":            map[string]any{"schemes": []string{"bearer"}, "required": false}}},
		"capabilities": map[string]any{"tools": map[string]bool{"listChanged": true}, "prompts": map[string]bool{"listChanged": true},
			"resources": map[string]bool{"subscribe": true, "listChanged": true}, "completions": map[string]any{}},
	}
	var tools []cardTool
	for _, t := range in.Tools {
		tools = append(tools, cardTool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: t.Input,
			Annotations: map[string]bool{"readOnlyHint": t.ReadOnly, "destructiveHint": t.Destructive, "idempotentHint": t.Idempotent, "openWorldHint": false}})
	}
	var res []cardResource
	for _, r := range in.Resources {
		res = append(res, cardResource{URI: r.URI, URITemplate: r.Template, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
	}
	card["tools"], card["resources"] = tools, res
	return marshal(card)
}

// ServerJSON renders the MCP registry's server.json.
func ServerJSON(Input) ([]byte, error) {
	return marshal(map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name":        "io.github.lore-dev/lore",
		"title":       "Lore",
		"description": "MCP-native knowledge graph: typed nodes and edges, search, paths, queries, live subscriptions.",
		"version":     APIVersion,
		"repository":  map[string]string{"url": "https://github.com/lore-dev/lore", "source": "github"},
		"packages": []map[string]any{{"registryType": "oci", "identifier": "ghcr.io/lore-dev/lore", "version": APIVersion,
			"transport": map[string]string{"type": "stdio"}, "runtimeArguments": []map[string]string{{"type": "positional", "value": "mcp"}}}},
	})
}

func marshal(v any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}
