package graph_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// A step's edgeWhere filters the edges it follows by their properties, on
// every hop: in the example data each person is a member of one team, with
// a role (lead, tech lead or engineer) on the memberOf edge.
func TestStepEdgeWhere(t *testing.T) {
	s := example(t)
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"leads of every team", `{"from":{"type":"Team"},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":{"eq":"lead"}}}]}`,
			[]string{"person/ada-okafor", "person/grace-mwangi", "person/ingrid-halvorsen", "person/kenji-watanabe", "person/maya-patel", "person/samuel-adeyemi"}},
		{"short form", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":"lead"}}]}`,
			[]string{"person/ada-okafor"}},
		{"prefix", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":{"prefix":"TECH"}}}]}`,
			[]string{"person/tomas-rivera"}},
		{"date range", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"since":{"gte":"2022-01-01"}}}]}`,
			[]string{"person/jonas-becker", "person/mei-lin"}},
		{"not, with a node filter", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"not":{"role":"engineer"}},"where":{"name":{"prefix":"T"}}}]}`,
			[]string{"person/tomas-rivera"}},
		// Every hop of a step follows only passing edges: two hops from a
		// lead through lead and tech-lead edges reach the team's tech lead,
		// not its engineers.
		{"every hop", `{"from":{"ids":["person/ada-okafor"]},"traverse":[{"edge":"memberOf","direction":"both","hops":[2,2],"edgeWhere":{"role":{"in":["lead","tech lead"]}}}]}`,
			[]string{"person/tomas-rivera"}},
		{"two steps", `{"from":{"ids":["person/ada-okafor"]},"traverse":[{"edge":"memberOf","edgeWhere":{"role":"lead"}},{"edge":"memberOf","direction":"in","edgeWhere":{"role":"engineer"}}]}`,
			[]string{"person/jonas-becker", "person/mei-lin", "person/priya-natarajan"}},
		{"no edge passes", `{"from":{"ids":["person/ada-okafor"]},"traverse":[{"edge":"memberOf","edgeWhere":{"role":"engineer"}}]}`,
			[]string{}},
		{"a label without the property", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":["memberOf","owns"],"direction":"both","edgeWhere":{"role":{"exists":false}}}]}`,
			[]string{"doc/billing-design", "doc/ledger-runbook", "service/billing", "service/checkout", "service/fraud-scoring", "service/ledger", "service/legacy-invoicer", "service/payments"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, st := range []graph.Store{s, plainStore{s}} {
				if diff := cmp.Diff(tt.want, ids(run(t, st, tt.query, graph.Limits{}))); diff != "" {
					t.Errorf("%T: %s (-want +got):\n%s", st, tt.query, diff)
				}
				count := strings.TrimSuffix(tt.query, "}") + `,"return":{"count":true}}`
				if c := run(t, st, count, graph.Limits{}).Count; c == nil || *c != len(tt.want) {
					t.Errorf("%T: %s: count %s, want %d", st, count, jsonText(c), len(tt.want))
				}
			}
		})
	}
}

// A path through a step with edgeWhere uses only edges that pass it.
func TestStepEdgeWherePaths(t *testing.T) {
	s := example(t)
	res := run(t, s, `{"from":{"ids":["person/ada-okafor"]},"traverse":[{"edge":"memberOf","direction":"both","hops":[1,2],"edgeWhere":{"role":{"ne":"engineer"}}}],"return":{"paths":true}}`, graph.Limits{})
	if diff := cmp.Diff([]string{"person/tomas-rivera", "team/payments"}, ids(res)); diff != "" {
		t.Fatalf("results (-want +got):\n%s", diff)
	}
	want := []graph.Path{
		{Nodes: []graph.ID{"person/ada-okafor", "team/payments", "person/tomas-rivera"}, Edges: []string{"memberOf(person/ada-okafor,team/payments)", "memberOf(person/tomas-rivera,team/payments)"}},
		{Nodes: []graph.ID{"person/ada-okafor", "team/payments"}, Edges: []string{"memberOf(person/ada-okafor,team/payments)"}},
	}
	if diff := cmp.Diff(want, res.Paths); diff != "" {
		t.Errorf("paths (-want +got):\n%s", diff)
	}
}

// An edgeWhere names properties of the step's edge labels; anything else
// is an error at its JSON pointer that lists what the labels have.
func TestStepEdgeWhereErrors(t *testing.T) {
	s := example(t)
	for _, tt := range []struct {
		name, query, ptr string
		says             []string
	}{
		{"unknown property", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"rank":1}}]}`,
			"/traverse/0/edgeWhere/rank", []string{`unknown edge property "rank"`, "memberOf", "role, since"}},
		{"in and", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf"},{"edge":"memberOf","direction":"in","edgeWhere":{"and":[{"role":"lead"},{"rank":1}]}}]}`,
			"/traverse/1/edgeWhere/and/1/rank", []string{`unknown edge property "rank"`}},
		{"a node field", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"name":"Ada"}}]}`,
			"/traverse/0/edgeWhere/name", []string{`unknown edge property "name"`}},
		{"a label without properties", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"owns","edgeWhere":{"role":"lead"}}]}`,
			"/traverse/0/edgeWhere/role", []string{`unknown edge property "role"`, "owns has no properties"}},
		{"not an operator", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","direction":"in","edgeWhere":{"role":{"like":"lead"}}}]}`,
			"/traverse/0/edgeWhere/role/like", []string{"is not an operator"}},
		{"not an object", `{"from":{"ids":["team/payments"]},"traverse":[{"edge":"memberOf","edgeWhere":"lead"}]}`,
			"/traverse/0/edgeWhere", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := graph.ParseQuery(s.Model(), []byte(tt.query))
			var qe *graph.QueryError
			if !errors.As(err, &qe) || !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("ParseQuery(%s): %v, want a QueryError", tt.query, err)
			}
			i := slices.IndexFunc(qe.Violations, func(v schema.Violation) bool { return v.Pointer == tt.ptr })
			if i < 0 {
				t.Fatalf("ParseQuery(%s): %v, want a violation at %s", tt.query, err, tt.ptr)
			}
			for _, s := range tt.says {
				if !strings.Contains(qe.Violations[i].Message, s) {
					t.Errorf("violation at %s: %q does not say %q", tt.ptr, qe.Violations[i].Message, s)
				}
			}
		})
	}
}

func jsonText(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
