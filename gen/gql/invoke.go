package gql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"

	"github.com/lore-dev/lore/gen/gql/model"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// The generated resolvers (schema.resolvers.go) are one line each: a call
// to invoke, navigate or one of the methods below.

// invoke calls a tool through the catalog, as MCP and REST do, and decodes
// its structured output into the field's type. Invoke checks the arguments
// against the tool's input schema, so whatever GraphQL's types cannot say
// (lengths, ranges, patterns) is enforced here too, with the same
// violations.
func invoke[T any](ctx context.Context, cat *mcp.Catalog, tool string, args any) (T, error) {
	var out T
	data, err := json.Marshal(args)
	if err != nil {
		return out, err
	}
	res, err := cat.Invoke(ctx, tool, data)
	if err != nil {
		return out, err
	}
	if err := spend(ctx, len(res.Structured)); err != nil {
		return out, err
	}
	if err := decode(res.Structured, &out); err != nil {
		return out, fmt.Errorf("%s: decoding the output: %w", tool, err)
	}
	return out, nil
}

// decode reads JSON keeping numbers exact in JSON scalars.
func decode(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

// arguments returns the field's arguments as the client sent them (with
// the schema's defaults for those left out), ready to be the tool's JSON
// arguments. A null argument counts as left out: JSON Schema would refuse
// null where GraphQL makes an argument optional.
func arguments(ctx context.Context) map[string]any {
	fc := graphql.GetFieldContext(ctx)
	args := fc.Field.ArgumentMap(graphql.GetOperationContext(ctx).Variables)
	for k, v := range args {
		if v == nil {
			delete(args, k)
		}
	}
	return args
}

// wholeInput returns the one "input" argument of a tool whose arguments
// GraphQL takes whole (gen.WholeInput).
//
//lint:ignore U1000 the generated resolver of such a tool calls it; today's tools all take arguments
func wholeInput(ctx context.Context) any {
	return arguments(ctx)["input"]
}

// navigate calls a tool from a node: the field's arguments and the node's
// id. It returns one property of the tool's output.
func navigate[T any](ctx context.Context, cat *mcp.Catalog, tool string, from *model.Node, part string) (T, error) {
	var out T
	args := arguments(ctx)
	args["id"] = from.ID
	res, err := invoke[map[string]json.RawMessage](ctx, cat, tool, args)
	if err != nil {
		return out, err
	}
	if raw, ok := res[part]; ok {
		if err := decode(raw, &out); err != nil {
			return out, fmt.Errorf("%s: decoding %s: %w", tool, part, err)
		}
	}
	return out, nil
}

// nodeEdgeCounts decodes the edge counts get_node includes (JSON "edges").
func (r *nodeResolver) nodeEdgeCounts(_ context.Context, obj *model.Node) ([]*model.EdgeCount, error) {
	if len(obj.Edges) == 0 {
		return nil, nil
	}
	var out []*model.EdgeCount
	if err := decode(obj.Edges, &out); err != nil {
		return nil, fmt.Errorf("edge counts: %w", err)
	}
	return out, nil
}

// queryResource reads a resource as MCP resources/read does.
func (r *queryResolver) queryResource(ctx context.Context, uri string) (*model.Resource, error) {
	return readResource(ctx, r.Cat, uri)
}

func readResource(ctx context.Context, cat *mcp.Catalog, uri string) (*model.Resource, error) {
	res, err := cat.ReadResource(ctx, uri)
	if err != nil {
		return nil, err
	}
	if err := spend(ctx, len(res.Text)); err != nil {
		return nil, err
	}
	return &model.Resource{URI: res.URI, MimeType: res.MIMEType, Text: res.Text}, nil
}

// resourceJSON parses a JSON resource's text.
func (r *resourceResolver) resourceJSON(_ context.Context, obj *model.Resource) (any, error) {
	if !strings.Contains(obj.MimeType, "json") {
		return nil, nil
	}
	var v any
	if err := decode([]byte(obj.Text), &v); err != nil {
		return nil, fmt.Errorf("resource %s: %w", obj.URI, err)
	}
	return v, nil
}

// resourceUpdateResource reads the updated resource; a node deleted since
// reads as null.
func (r *resourceUpdateResolver) resourceUpdateResource(ctx context.Context, obj *model.ResourceUpdate) (*model.Resource, error) {
	res, err := readResource(ctx, r.Cat, obj.URI)
	if errors.Is(err, graph.ErrNotFound) {
		return nil, nil
	}
	return res, err
}

// resourceUpdateNode reads the node of a lore://node/ID update through
// get_node; a deleted node is null.
func (r *resourceUpdateResolver) resourceUpdateNode(ctx context.Context, obj *model.ResourceUpdate) (*model.Node, error) {
	id, ok := strings.CutPrefix(obj.URI, mcp.NodeURI(""))
	if !ok {
		return nil, nil
	}
	res, err := invoke[*model.GetNodeResult](ctx, r.Cat, "get_node", map[string]any{"id": id})
	var te *mcp.Error
	if errors.As(err, &te) && te.Code == mcp.CodeNotFound {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return res.Node, nil
}
