package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

const summary = "Lore is an MCP-native knowledge graph server: typed nodes and labelled edges with properties, " +
	"described in JSON Schema 2020-12. Its canonical API is MCP (tools and subscribable resources); " +
	"the same operations are REST endpoints (OpenAPI 3.1) and GraphQL fields."

const connect = "Connect an MCP client to `/mcp` (Streamable HTTP, protocol versions 2025-11-25 and 2026-07-28), " +
	"or run `lore mcp` for stdio. Each operation has one name everywhere: the MCP tool `get_node` is " +
	"`POST /api/v1/tools/get_node` and the GraphQL field `getNode`; read-only tools are GraphQL queries and also " +
	"answer `GET /api/v1/tools/{name}` with query parameters, the others are mutations. " +
	"Resources are read with MCP `resources/read`, `GET /api/v1/resources?uri=` or GraphQL `resource(uri)`; " +
	"changes arrive through MCP `resources/subscribe`, GraphQL subscriptions and server-sent events at `/api/v1/subscribe?uri=`. " +
	"Errors name every broken rule with a JSON pointer; reads are bounded and say when they were truncated."

// GraphQLName is a tool's GraphQL field: its name in camelCase.
func GraphQLName(tool string) string {
	p := pascal(tool)
	if p == "" {
		return p
	}
	return strings.ToLower(p[:1]) + p[1:]
}

func kind(t *mcp.Tool) string {
	switch {
	case t.ReadOnly:
		return "read-only"
	case t.Destructive:
		return "destructive; asks for confirmation"
	}
	return "writes"
}

// LLMs renders llms.txt (llmstxt.org): a title, a summary, how to
// connect, and lists of links to every tool, resource and API description.
// Links are relative to the server root.
func LLMs(in Input) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Lore\n\n> %s\n\n%s\n\n## Tools\n\n", summary, connect)
	for _, t := range in.Tools {
		fmt.Fprintf(&b, "- [%s](/llms-full.txt#%s): %s (%s)\n", t.Name, t.Name, t.Description, kind(t))
	}
	b.WriteString("\n## Resources\n\n")
	for _, r := range in.Resources {
		if r.URI != "" {
			fmt.Fprintf(&b, "- [%s](/api/v1/resources?uri=%s): %s\n", r.URI, r.URI, r.Description)
		}
	}
	for _, r := range in.Resources {
		if r.Template != "" {
			fmt.Fprintf(&b, "- [%s](/llms-full.txt#resources): %s (a URI template)\n", r.Template, r.Description)
		}
	}
	b.WriteString(`
## API descriptions

- [OpenAPI 3.1](/openapi.json): the REST API, one operation per tool
- [GraphQL schema](/schema.graphqls): the GraphQL SDL served at /graphql (queries, mutations, subscriptions)
- [MCP server card](/.well-known/mcp/server-card): the MCP endpoint, its protocol versions, tools and resources

## Optional

- [llms-full.txt](/llms-full.txt): every tool with its input and output JSON Schemas, every resource, and the live model's node and edge types
`)
	return b.Bytes(), nil
}

// LLMsFull renders llms-full.txt: llms.txt's opening, then each tool with
// its schemas and each resource. A running server appends the live model
// (ModelSection).
func LLMsFull(in Input) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Lore\n\n> %s\n\n%s\n\n## Tools\n", summary, connect)
	for _, t := range in.Tools {
		fmt.Fprintf(&b, "\n### %s\n\n%s: %s\n\n", t.Name, t.Title, t.Description)
		fmt.Fprintf(&b, "MCP tool `%s` (%s) · REST `POST /api/v1/tools/%s` · GraphQL %s `%s`\n\n", t.Name, kind(t), t.Name,
			map[bool]string{true: "query", false: "mutation"}[t.ReadOnly], GraphQLName(t.Name))
		for _, s := range []struct {
			name string
			doc  json.RawMessage
		}{{"Input", t.Input}, {"Output", t.Output}} {
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, s.doc, "", "  "); err != nil {
				return nil, fmt.Errorf("%s: %w", t.Name, err)
			}
			fmt.Fprintf(&b, "%s schema:\n\n```json\n%s\n```\n\n", s.name, pretty.Bytes())
		}
	}
	b.WriteString("## Resources\n\nEvery resource is subscribable: a committed write notifies exactly the URIs it touched.\n\n")
	for _, r := range in.Resources {
		fmt.Fprintf(&b, "- `%s` (%s): %s\n", r.URI+r.Template, r.MIMEType, r.Description)
	}
	b.WriteString("\n## Errors\n\nA call that breaks a tool's input schema or a model rule fails with every violation listed by JSON pointer: " +
		"an MCP tool result with `isError: true`, a REST `application/problem+json` response (400 invalid, 403 forbidden, 404 not found, 409 conflict), " +
		"a GraphQL error with `extensions.code`. Nothing is written by a rejected call.\n")
	return b.Bytes(), nil
}

// ModelSection renders a model's node types and edge labels, for the
// llms-full.txt a running server serves.
func ModelSection(m *schema.Model) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n## Model: %s\n\nNode types:\n\n", m.Title())
	for _, t := range m.NodeTypes() {
		fmt.Fprintf(&b, "- `%s`: %s Properties: %s.\n", t.Name, t.Description, strings.Join(t.Properties, ", "))
	}
	b.WriteString("\nEdge labels:\n\n")
	for _, e := range m.EdgeTypes() {
		fmt.Fprintf(&b, "- `%s` (%s → %s): %s\n", e.Name, strings.Join(e.From, "|"), strings.Join(e.To, "|"), e.Description)
	}
	return b.Bytes()
}
