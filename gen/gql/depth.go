package gql

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// depthLimit refuses operations whose selections nest deeper than max,
// counting through fragments; gqlgen has no such limit. Introspection
// fields (__schema, __type) are left to gqlparser's own limit.
type depthLimit struct{ max int }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (depthLimit) ExtensionName() string                   { return "DepthLimit" }
func (depthLimit) Validate(graphql.ExecutableSchema) error { return nil }
func (d depthLimit) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	if n := depth(op.SelectionSet, map[string]bool{}); n > d.max {
		err := gqlerror.Errorf("query depth %d exceeds the limit of %d", n, d.max)
		err.Extensions = map[string]any{"code": "DEPTH_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

// depth is the deepest nesting of fields in set. visiting holds the
// fragments being expanded, so a fragment that spreads itself (which
// validation refuses anyway) cannot loop.
func depth(set ast.SelectionSet, visiting map[string]bool) int {
	deepest := 0
	for _, s := range set {
		n := 0
		switch s := s.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			n = 1 + depth(s.SelectionSet, visiting)
		case *ast.InlineFragment:
			n = depth(s.SelectionSet, visiting)
		case *ast.FragmentSpread:
			if visiting[s.Name] || s.Definition == nil {
				continue
			}
			visiting[s.Name] = true
			n = depth(s.Definition.SelectionSet, visiting)
			delete(visiting, s.Name)
		default:
			panic(fmt.Sprintf("gql: unknown selection %T", s))
		}
		deepest = max(deepest, n)
	}
	return deepest
}
