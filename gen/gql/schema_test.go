package gql_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/gen/gql"
)

const introspection = `{ __schema {
	queryType { name } mutationType { name } subscriptionType { name }
	types { kind name description
		fields { name description args { ...value } type { ...ref } isDeprecated }
		inputFields { ...value }
		enumValues { name description isDeprecated } } } }
fragment value on __InputValue { name description type { ...ref } defaultValue }
fragment ref on __Type { kind name ofType { kind name ofType { kind name ofType { kind name } } } }`

type typeRef struct {
	Kind, Name string
	OfType     *typeRef
}

func (r *typeRef) String() string {
	switch r.Kind {
	case "NON_NULL":
		return r.OfType.String() + "!"
	case "LIST":
		return "[" + r.OfType.String() + "]"
	}
	return r.Name
}

type inputValue struct {
	Name, Description string
	Type              *typeRef
	DefaultValue      *string
}

// TestSchemaIsCommitted: the schema the running server introspects is
// gen/gql/schema.graphqls, type by type, field by field, descriptions and
// defaults included (gqlgen has been rerun since gen.SDL changed), and that
// file is what gen.SDL renders now.
func TestSchemaIsCommitted(t *testing.T) {
	committed, err := os.ReadFile("schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gql.SDL(), committed) {
		t.Error("gql.SDL() is not the committed schema.graphqls")
	}
	rendered, err := gen.SDL(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rendered, committed) {
		t.Error("schema.graphqls is stale: run make generate")
	}

	f := newFixture(t, nil)
	res := f.query(t, introspection, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("introspection: %+v", res.Errors)
	}
	var s struct {
		QueryType, MutationType, SubscriptionType struct{ Name string }
		Types                                     []struct {
			Kind, Name, Description string
			Fields                  []struct {
				Name, Description string
				Args              []inputValue
				Type              *typeRef
				IsDeprecated      bool
			}
			InputFields []inputValue
			EnumValues  []struct {
				Name, Description string
				IsDeprecated      bool
			}
		}
	}
	if err := json.Unmarshal(res.Data["__schema"], &s); err != nil {
		t.Fatal(err)
	}
	var live []string
	add := func(format string, args ...any) { live = append(live, fmt.Sprintf(format, args...)) }
	value := func(owner string, v inputValue) {
		def := ""
		if v.DefaultValue != nil {
			def = " = " + *v.DefaultValue
		}
		add("%s(%s: %s%s) %q", owner, v.Name, v.Type, def, v.Description)
	}
	add("roots %s %s %s", s.QueryType.Name, s.MutationType.Name, s.SubscriptionType.Name)
	for _, ty := range s.Types {
		if strings.HasPrefix(ty.Name, "__") || ty.Kind == "SCALAR" && builtin(ty.Name) {
			continue
		}
		add("%s %s %q", ty.Kind, ty.Name, ty.Description)
		for _, fd := range ty.Fields {
			add("%s.%s: %s %q deprecated=%v", ty.Name, fd.Name, fd.Type, fd.Description, fd.IsDeprecated)
			for _, a := range fd.Args {
				value(ty.Name+"."+fd.Name, a)
			}
		}
		for _, v := range ty.InputFields {
			value(ty.Name, v)
		}
		for _, v := range ty.EnumValues {
			add("%s.%s %q deprecated=%v", ty.Name, v.Name, v.Description, v.IsDeprecated)
		}
	}

	doc, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(committed)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	var file []string
	addf := func(format string, args ...any) { file = append(file, fmt.Sprintf(format, args...)) }
	fvalue := func(owner string, v *ast.ArgumentDefinition) {
		def := ""
		if v.DefaultValue != nil {
			def = " = " + v.DefaultValue.String()
		}
		addf("%s(%s: %s%s) %q", owner, v.Name, v.Type, def, v.Description)
	}
	addf("roots %s %s %s", doc.Query.Name, doc.Mutation.Name, doc.Subscription.Name)
	for _, ty := range doc.Types {
		if strings.HasPrefix(ty.Name, "__") || ty.BuiltIn {
			continue
		}
		addf("%s %s %q", ty.Kind, ty.Name, ty.Description)
		for _, fd := range ty.Fields {
			if strings.HasPrefix(fd.Name, "__") {
				continue
			}
			deprecated := fd.Directives.ForName("deprecated") != nil
			if ty.Kind == ast.InputObject {
				fvalue(ty.Name, &ast.ArgumentDefinition{Name: fd.Name, Description: fd.Description, Type: fd.Type, DefaultValue: fd.DefaultValue})
				continue
			}
			addf("%s.%s: %s %q deprecated=%v", ty.Name, fd.Name, fd.Type, fd.Description, deprecated)
			for _, a := range fd.Arguments {
				fvalue(ty.Name+"."+fd.Name, a)
			}
		}
		for _, v := range ty.EnumValues {
			addf("%s.%s %q deprecated=%v", ty.Name, v.Name, v.Description, v.Directives.ForName("deprecated") != nil)
		}
	}
	slices.Sort(live)
	slices.Sort(file)
	if diff := cmp.Diff(file, live); diff != "" {
		t.Errorf("the running server's schema differs from schema.graphqls (-file +live):\n%s", diff)
	}
	if len(live) < 100 {
		t.Errorf("only %d schema lines compared", len(live))
	}
}

func builtin(scalar string) bool {
	return slices.Contains([]string{"String", "Int", "Float", "Boolean", "ID"}, scalar)
}
