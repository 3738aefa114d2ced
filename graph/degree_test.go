package graph_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// exampleDegrees counts, from the example dataset's lines, each node's
// edges with one of labels (none: every label) in dir, a self-loop twice
// for both; it also returns each node's type.
func exampleDegrees(t *testing.T, labels []string, dir string) (deg map[string]int, typ map[string]string) {
	t.Helper()
	deg, typ = map[string]int{}, map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(schema.ExampleData()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Kind, ID, Type, From, Label, To string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Kind == "node":
			typ[l.ID] = l.Type
		case len(labels) == 0 || slices.Contains(labels, l.Label):
			if dir != "in" {
				deg[l.From]++
			}
			if dir != "out" {
				deg[l.To]++
			}
		}
	}
	return deg, typ
}

// TestDegreeExample checks degree filters, orders and projections on the
// example dataset against counts made from its lines.
func TestDegreeExample(t *testing.T) {
	s := example(t)
	byDeg := func(deg map[string]int, typ map[string]string, nodeType string, keep func(int) bool, desc bool) []string {
		var out []string
		for id, ty := range typ {
			if ty == nodeType && keep(deg[id]) {
				out = append(out, id)
			}
		}
		slices.SortFunc(out, func(a, b string) int {
			c := cmp.Compare(deg[a], deg[b])
			if desc {
				c = -c
			}
			return cmp.Or(c, strings.Compare(a, b))
		})
		return out
	}
	all := func(int) bool { return true }
	in, typ := exampleDegrees(t, []string{"dependsOn"}, "in")
	out, _ := exampleDegrees(t, []string{"dependsOn"}, "out")
	both, _ := exampleDegrees(t, nil, "both")
	owns, _ := exampleDegrees(t, []string{"owns", "leads"}, "out")
	top5 := byDeg(in, typ, "Service", all, true)[:5]
	if in[top5[0]] < 2 {
		t.Fatalf("the example data's top service has in-degree %d: the test shows nothing", in[top5[0]])
	}
	for _, tt := range []struct {
		name, query string
		want        []string
		degrees     map[string]map[string]int // with return.degrees: key -> degree of each result
	}{
		{"top 5 by in-degree",
			`{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5}`, top5, nil},
		{"ascending out-degree",
			`{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":["dependsOn"]}}]}`, byDeg(out, typ, "Service", all, false), nil},
		{"where gte",
			`{"from":{"type":"Service"},"where":{"degree":{"edge":"dependsOn","direction":"in","gte":2}}}`,
			slices.Sorted(slices.Values(byDeg(in, typ, "Service", func(n int) bool { return n >= 2 }, false))), nil},
		{"from.where eq 0",
			`{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","eq":0}}}}`,
			slices.Sorted(slices.Values(byDeg(in, typ, "Service", func(n int) bool { return n == 0 }, false))), nil},
		{"every label, both, in a not",
			`{"from":{"type":"Person"},"where":{"not":{"degree":{"direction":"both","lt":4}}}}`,
			slices.Sorted(slices.Values(byDeg(both, typ, "Person", func(n int) bool { return n >= 4 }, false))), nil},
		{"step where, two labels",
			`{"from":{"type":"Service"},"traverse":[{"edge":"owns","direction":"in","where":{"degree":{"edge":["owns","leads"],"gt":2}}}]}`,
			slices.Sorted(slices.Values(byDeg(owns, typ, "Team", func(n int) bool { return n > 2 }, false))), nil},
		{"projection",
			`{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":5,"return":{"fields":["id"],"degrees":[{"edge":"dependsOn","direction":"in"},{"direction":"both"}]}}`,
			top5, map[string]map[string]int{"dependsOn:in": in, "*:both": both}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, s, tt.query, graph.Limits{})
			if diff := gocmp.Diff(tt.want, ids(res)); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			for _, n := range res.Nodes {
				if tt.degrees == nil {
					if _, ok := n["degrees"]; ok {
						t.Errorf("%v has degrees, not asked for", n["id"])
					}
					continue
				}
				want := map[string]int64{}
				for k, deg := range tt.degrees {
					want[k] = int64(deg[fmt.Sprint(n["id"])])
				}
				if diff := gocmp.Diff(want, n["degrees"]); diff != "" {
					t.Errorf("%v: degrees (-want +got):\n%s", n["id"], diff)
				}
			}
		})
	}
}

// TestDegreeQueryErrors checks that a bad degree term is reported at its
// pointer.
func TestDegreeQueryErrors(t *testing.T) {
	m := schema.Default()
	for _, tt := range []struct{ name, query, want string }{
		{"unknown label in orderBy", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOnn"}}]}`, `/orderBy/0/degree/edge: unknown edge label "dependsOnn"`},
		{"unknown label in where", `{"from":{"type":"Service"},"where":{"degree":{"edge":["owns","x"],"gt":1}}}`, `/where/degree/edge/1: unknown edge label "x"`},
		{"unknown label in return", `{"from":{"type":"Service"},"return":{"degrees":[{"edge":"x"}]}}`, `/return/degrees/0/edge: unknown edge label "x"`},
		{"no operator", `{"from":{"type":"Service"},"where":{"degree":{"edge":"owns"}}}`, `/where/degree: a degree filter needs an operator`},
		{"bad key", `{"from":{"type":"Service"},"where":{"degree":{"edge":"owns","exists":true}}}`, `/where/degree/exists: is not a key of a degree filter`},
		{"not a number", `{"from":{"type":"Service"},"where":{"degree":{"gt":"1"}}}`, `/where/degree/gt`},
		{"in an edgeWhere", `{"from":{"type":"Service"},"traverse":[{"edgeWhere":{"degree":{"gt":1}}}]}`, `/traverse/0/edgeWhere/degree: an edgeWhere filters edges`},
		{"field and degree", `{"from":{"type":"Service"},"orderBy":[{"field":"name","degree":{}}]}`, `/orderBy/0`},
		{"with count", `{"from":{"type":"Service"},"return":{"count":true,"degrees":[{}]}}`, `/return: count returns only`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := graph.ParseQuery(m, []byte(tt.query))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseQuery: %v; want an error with %q", err, tt.want)
			}
		})
	}
}
