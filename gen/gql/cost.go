package gql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// Costs of fields. A field that calls the catalog (a root field, or a
// field with arguments such as Node.neighbors) costs toolCost plus its
// selection; __schema and __type cost as much as the schema they write
// out; every other field costs 1 plus its selection.
const (
	toolCost          = 25
	schemaWalkCost    = 200 // __schema: the whole schema, about 200 KB with GraphiQL's selection
	typeWalkCost      = 10  // __type: one type
	defaultFieldsCost = 1
)

// limits refuses an operation whose selections nest deeper than maxDepth
// or whose cost is over maxCost, before any resolver runs. gqlgen's own
// complexity limit walks a fragment again at every spread, so a document
// whose fragments each spread the next one twice costs 2^n steps to
// refuse; limits measures each fragment once (the measure of a fragment
// does not depend on where it is spread), so its walk is linear in the
// document's size. It also counts introspection, which gqlgen's skips.
// Depth does not count introspection fields, whose nesting is fixed by the
// introspection schema.
type limits struct {
	maxDepth, maxCost int
	roots             map[string]bool // the names of the operations' root types
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = (*limits)(nil)

func (*limits) ExtensionName() string { return "Limits" }

func (l *limits) Validate(es graphql.ExecutableSchema) error {
	l.roots = map[string]bool{}
	s := es.Schema()
	for _, d := range []*ast.Definition{s.Query, s.Mutation, s.Subscription} {
		if d != nil {
			l.roots[d.Name] = true
		}
	}
	return nil
}

func (l *limits) MutateOperationContext(_ context.Context, oc *graphql.OperationContext) *gqlerror.Error {
	op := oc.Doc.Operations.ForName(oc.OperationName)
	if op == nil {
		return nil
	}
	w := walker{roots: l.roots, done: map[string]measure{}, visiting: map[string]bool{}}
	m := w.set(op.SelectionSet)
	if m.depth > l.maxDepth {
		err := gqlerror.Errorf("query depth %d exceeds the limit of %d; split the query or walk fewer levels at once", m.depth, l.maxDepth)
		err.Extensions = map[string]any{"code": "DEPTH_LIMIT_EXCEEDED"}
		return err
	}
	if m.cost > l.maxCost {
		err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d; ask for fewer fields, aliases or fragments per operation",
			m.cost, l.maxCost)
		err.Extensions = map[string]any{"code": "COMPLEXITY_LIMIT_EXCEEDED"}
		return err
	}
	return nil
}

// A measure is the depth and cost of a selection set.
type measure struct{ depth, cost int }

// walker measures selection sets, remembering each fragment's measure.
// visiting holds the fragments being measured, so a fragment that spreads
// itself (which validation refuses anyway) cannot loop.
type walker struct {
	roots    map[string]bool
	done     map[string]measure
	visiting map[string]bool
}

func (w *walker) set(set ast.SelectionSet) measure {
	var out measure
	for _, s := range set {
		var m measure
		switch s := s.(type) {
		case *ast.Field:
			child := w.set(s.SelectionSet)
			m.cost = add(w.fieldCost(s), child.cost)
			if !strings.HasPrefix(s.Name, "__") {
				m.depth = 1 + child.depth
			}
		case *ast.InlineFragment:
			m = w.set(s.SelectionSet)
		case *ast.FragmentSpread:
			m = w.fragment(s)
		default:
			panic(fmt.Sprintf("gql: unknown selection %T", s))
		}
		out.depth = max(out.depth, m.depth)
		out.cost = add(out.cost, m.cost)
	}
	return out
}

func (w *walker) fragment(s *ast.FragmentSpread) measure {
	if m, ok := w.done[s.Name]; ok {
		return m
	}
	if s.Definition == nil || w.visiting[s.Name] {
		return measure{}
	}
	w.visiting[s.Name] = true
	m := w.set(s.Definition.SelectionSet)
	delete(w.visiting, s.Name)
	w.done[s.Name] = m
	return m
}

// fieldCost is a field's own cost, without its selection.
func (w *walker) fieldCost(f *ast.Field) int {
	switch f.Name {
	case "__schema":
		return schemaWalkCost
	case "__type":
		return typeWalkCost
	}
	root := f.ObjectDefinition != nil && w.roots[f.ObjectDefinition.Name]
	if root || f.Definition != nil && len(f.Definition.Arguments) > 0 {
		return toolCost
	}
	return defaultFieldsCost
}

// add adds costs without overflowing: fragments spread twice at every
// level double the cost at each, which overflows an int at 63 levels.
func add(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

// gatherFactor sizes an operation's budget of catalog output: the tool
// results and resources its fields read may add up to gatherFactor times
// the response cap. Fields select part of what a tool returns, so the
// results run larger than the response; the budget stops a walk that
// fans out long before the deadline, with its memory bounded.
const gatherFactor = 8

// errGathered is the cause of a field left unresolved because its
// operation had read its budget of catalog output.
var errGathered = errors.New("the operation read more from the catalog than the server allows")

// fieldsAtOnce is how many of an operation's fields may call the catalog
// at once. gqlgen resolves the items of a list concurrently, so without a
// bound a walk starts a tool call for every item of every list at once
// and the budget and deadline stop none of them.
const fieldsAtOnce = 4

// An operation's limits while it runs: what it may still read from the
// catalog, in bytes, and the slots of its fields calling the catalog.
type opLimits struct {
	left  atomic.Int64
	slots chan struct{}
}

type opKey struct{}

// withOpLimits gives an operation's context a budget of n bytes and
// fieldsAtOnce slots.
func withOpLimits(ctx context.Context, n int) context.Context {
	l := &opLimits{slots: make(chan struct{}, fieldsAtOnce)}
	l.left.Store(int64(n))
	return context.WithValue(ctx, opKey{}, l)
}

// spend takes n bytes of catalog output from the operation's budget; past
// it, the field fails with errGathered.
func spend(ctx context.Context, n int) error {
	if l, ok := ctx.Value(opKey{}).(*opLimits); ok && l.left.Add(-int64(n)) < 0 {
		return errGathered
	}
	return nil
}

// spent reports whether the operation's budget is gone.
func spent(ctx context.Context) bool {
	l, ok := ctx.Value(opKey{}).(*opLimits)
	return ok && l.left.Load() < 0
}

// slot waits for one of the operation's slots and returns its release; it
// fails when the operation ends (deadline, client gone) or its budget is
// gone while it waits.
func slot(ctx context.Context) (func(), error) {
	l, ok := ctx.Value(opKey{}).(*opLimits)
	if !ok {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	release := func() { <-l.slots }
	if l.left.Load() < 0 {
		release()
		return nil, errGathered
	}
	return release, nil
}
