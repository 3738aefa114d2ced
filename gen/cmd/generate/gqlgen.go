package main

import (
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/99designs/gqlgen/codegen/templates"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/mcp"
)

// gqlgenConfig is gqlgen's configuration; its paths are relative to the
// repository root, where make generate runs.
const gqlgenConfig = "gen/gql/gqlgen.yml"

// generateGraphQL runs gqlgen over gen/gql/schema.graphqls in-process, with
// a plugin that writes every resolver's body: the generated resolvers are
// one-line calls, and nothing in gen/gql/*.resolvers.go is edited by hand.
func generateGraphQL() error {
	cfg, err := config.LoadConfig(gqlgenConfig)
	if err != nil {
		return err
	}
	p := &invokePlugin{tools: map[string]*mcp.Tool{}}
	for _, t := range gen.Default().Tools {
		p.tools[gen.GraphQLName(t.Name)] = t
	}
	if err := api.Generate(cfg, api.AddPlugin(p)); err != nil {
		return fmt.Errorf("gqlgen: %w", err)
	}
	return nil
}

// invokePlugin implements gqlgen's plugin.ResolverImplementer.
type invokePlugin struct {
	tools map[string]*mcp.Tool // by GraphQL field name
}

func (p *invokePlugin) Name() string { return "lore-invoke" }

// navigation maps Node's navigation fields to the part of the neighbors
// tool's output each returns.
var navigation = map[string]string{"neighbors": "nodes", "edges": "edges"}

// Implement returns a resolver's body, whatever was there before:
//   - a tool's Query or Mutation field calls the tool through Invoke with
//     the field's arguments as the client sent them;
//   - Node's navigation fields call the neighbors tool from the node;
//   - any other field calls the hand-written method named after the type
//     and field (Subscription.nodeChanged: r.subscriptionNodeChanged) with
//     the resolver's own parameters.
func (p *invokePlugin) Implement(_ string, f *codegen.Field) string {
	obj := f.Object.Name
	typ := templates.CurrentImports.LookupType(f.TypeReference.GO)
	if t, ok := p.tools[f.Name]; ok && (obj == "Query" || obj == "Mutation") {
		args := "arguments(ctx)"
		if gen.WholeInput(t) {
			args = "wholeInput(ctx)"
		}
		return fmt.Sprintf("return invoke[%s](ctx, r.Cat, %q, %s)", typ, t.Name, args)
	}
	if part, ok := navigation[f.Name]; ok && obj == "Node" {
		return fmt.Sprintf("return navigate[%s](ctx, r.Cat, %q, obj, %q)", typ, gen.NavigationTool, part)
	}
	params := []string{"ctx"}
	if !f.Object.Root {
		params = append(params, "obj")
	}
	for _, a := range f.Args {
		params = append(params, a.VarName)
	}
	return fmt.Sprintf("return r.%s%s(%s)", templates.LcFirst(obj), f.GoFieldName, strings.Join(params, ", "))
}
