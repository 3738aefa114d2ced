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

// TestDegreeIndexPaging pages, a few results at a time, through queries
// the degree index answers (an order by one degree, both ways, with and
// without a range; a range as the start set, by ID) on the example
// dataset, against counts made from its lines, and checks that they read
// no more than the pages need.
func TestDegreeIndexPaging(t *testing.T) {
	s := example(t)
	in, typ := exampleDegrees(t, []string{"dependsOn"}, "in")
	var services []string
	for id, ty := range typ {
		if ty == "Service" {
			services = append(services, id)
		}
	}
	order := func(keep func(int) bool, desc bool) []string {
		var out []string
		for _, id := range services {
			if keep(in[id]) {
				out = append(out, id)
			}
		}
		slices.SortFunc(out, func(a, b string) int {
			c := cmp.Compare(in[a], in[b])
			if desc {
				c = -c
			}
			return cmp.Or(c, strings.Compare(a, b))
		})
		return out
	}
	all := func(int) bool { return true }
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"desc", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":3}`, order(all, true)},
		// Lowest first, the nodes of degree 0 come first: they are found by
		// reading the type by ID, nodes of other degrees included.
		{"asc", `{"from":{"type":"Service"},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"}}],"limit":3}`, order(all, false)},
		{"desc in a range", `{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","gte":1,"lt":3}}},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"},"desc":true}],"limit":2}`,
			order(func(n int) bool { return n >= 1 && n < 3 }, true)},
		{"asc from 0 to 1", `{"from":{"type":"Service"},"where":{"degree":{"edge":"dependsOn","direction":"in","lte":1}},"orderBy":[{"degree":{"edge":"dependsOn","direction":"in"}}],"limit":4}`,
			order(func(n int) bool { return n <= 1 }, false)},
		{"range as the start set", `{"from":{"type":"Service","where":{"degree":{"edge":"dependsOn","direction":"in","gte":1}}},"limit":2}`,
			slices.Sorted(slices.Values(order(func(n int) bool { return n >= 1 }, false)))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var q map[string]any
			if err := json.Unmarshal([]byte(tt.query), &q); err != nil {
				t.Fatal(err)
			}
			limit := int(q["limit"].(float64))
			for pages := 0; ; pages++ {
				data, _ := json.Marshal(q)
				res := run(t, s, string(data), graph.Limits{})
				if res.Truncated {
					t.Fatalf("page %d truncated: %s", pages, res.Note)
				}
				// A page of nodes of nonzero degree, followed by one, reads
				// them and one more from the index, and their nodes.
				page := ids(res)
				next := len(got) + len(page)
				indexOnly := next < len(tt.want) && in[tt.want[next]] > 0 && (len(got) == 0 || in[got[len(got)-1]] > 0)
				for _, id := range page {
					indexOnly = indexOnly && in[id] > 0
				}
				if indexOnly && res.Stats.Visited > limit+1 {
					t.Errorf("page %d visited %d for %d results", pages, res.Stats.Visited, limit)
				}
				got = append(got, page...)
				if res.Cursor == "" || pages > 100 {
					break
				}
				q["cursor"] = res.Cursor
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pages (-want +got):\n%s", diff)
			}
		})
	}
}
