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

// exampleNodes reads the example dataset's nodes: each one's type and
// properties, by ID.
func exampleNodes(t *testing.T) map[string]struct {
	Type       string
	Properties map[string]any
} {
	t.Helper()
	out := map[string]struct {
		Type       string
		Properties map[string]any
	}{}
	sc := bufio.NewScanner(bytes.NewReader(schema.ExampleData()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Kind, ID, Type string
			Properties     map[string]any
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		if l.Kind == "node" {
			out[l.ID] = struct {
				Type       string
				Properties map[string]any
			}{l.Type, l.Properties}
		}
	}
	return out
}

// tally counts keys and orders them as groupBy does by default: most
// first, ties by key.
func tally(keys []string) []string {
	n := map[string]int{}
	for _, k := range keys {
		n[k]++
	}
	var out []string
	for k := range n {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(-cmp.Compare(n[a], n[b]), strings.Compare(a, b)) })
	for i, k := range out {
		out[i] = fmt.Sprintf("%s:%d", k, n[k])
	}
	return out
}

func groupStrings(res *graph.QueryResult) []string {
	var out []string
	for _, g := range res.Groups {
		out = append(out, fmt.Sprintf("%v:%d", g.Key, g.Count))
	}
	return out
}

// TestGroupByExample checks groupings on the example dataset against
// counts made from its lines.
func TestGroupByExample(t *testing.T) {
	s := example(t)
	nodes := exampleNodes(t)
	in, typ := exampleDegrees(t, []string{"dependsOn"}, "in")
	var languages, lifecycles, tiers, buckets, roles []string
	for id, n := range nodes {
		switch n.Type {
		case "Service":
			languages = append(languages, n.Properties["language"].(string))
			lifecycles = append(lifecycles, n.Properties["lifecycle"].(string))
			tiers = append(tiers, fmt.Sprint(n.Properties["tier"]))
			b := "0"
			switch d := in[id]; {
			case d >= 3:
				b = "3"
			case d >= 1:
				b = "1"
			}
			buckets = append(buckets, b)
		case "Person":
			roles = append(roles, n.Properties["role"].(string))
		}
	}
	// The types of the nodes one edge away from the first team, either way.
	var team string
	for id, ty := range typ {
		if ty == "Team" && (team == "" || id < team) {
			team = id
		}
	}
	var around []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(schema.ExampleData()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct{ Kind, From, To string }
		json.Unmarshal(sc.Bytes(), &l)
		for _, pair := range [][2]string{{l.From, l.To}, {l.To, l.From}} {
			if l.Kind == "edge" && pair[0] == team && pair[1] != team && !seen[pair[1]] {
				seen[pair[1]] = true
				around = append(around, typ[pair[1]])
			}
		}
	}
	byKey := func(groups []string) []string {
		out := slices.Clone(groups)
		slices.SortFunc(out, func(a, b string) int {
			return strings.Compare(a[:strings.LastIndex(a, ":")], b[:strings.LastIndex(b, ":")])
		})
		return out
	}
	for _, tt := range []struct {
		name, query string
		want        []string
	}{
		{"services per language", `{"from":{"type":"Service"},"groupBy":{"field":"language"}}`, tally(languages)},
		{"top 2 roles", `{"from":{"type":"Person"},"groupBy":{"field":"role"},"limit":2}`, tally(roles)[:2]},
		{"lifecycles by key", `{"from":{"type":"Service"},"groupBy":{"field":"lifecycle","order":"key"}}`, byKey(tally(lifecycles))},
		{"tiers by key, descending", `{"from":{"type":"Service"},"groupBy":{"field":"tier","order":"key","desc":true}}`,
			reversed(byKey(tally(tiers)))},
		{"fewest first", `{"from":{"type":"Service"},"groupBy":{"field":"language","desc":false}}`, fewestFirst(tally(languages))},
		{"in-degree buckets", `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOn","direction":"in"},"buckets":[1,3],"order":"key"}}`,
			byKey(tally(buckets))},
		{"types around a team", `{"from":{"ids":["` + team + `"]},"traverse":[{"direction":"both"}],"groupBy":{"field":"type"}}`, tally(around)},
		{"a whole type by type", `{"from":{"type":"Service"},"groupBy":{"field":"type"}}`, []string{fmt.Sprintf("Service:%d", len(languages))}},
		{"a property some nodes lack", `{"from":{"type":"Person"},"groupBy":{"field":"bio","order":"key","desc":true},"limit":1000}`, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, s, tt.query, graph.Limits{})
			got := groupStrings(res)
			if tt.want == nil { // the bio case: by key, descending, the null group still last
				lacking := 0
				for _, n := range nodes {
					if _, ok := n.Properties["bio"]; n.Type == "Person" && !ok {
						lacking++
					}
				}
				if last := res.Groups[len(res.Groups)-1]; last.Key != nil || last.Count != int64(lacking) || lacking == 0 {
					t.Errorf("last group %v, want the null key", last)
				}
				return
			}
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if res.Count == nil || res.Truncated {
				t.Errorf("count %v, truncated %v", res.Count, res.Truncated)
			}
		})
	}

	// Paging one group at a time gives the groups in order, each once.
	q := `{"from":{"type":"Service"},"groupBy":{"field":"language"},"limit":1}`
	var got []string
	cursor := ""
	for range 100 {
		res, err := runCursor(s, q, cursor)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, groupStrings(res)...)
		if *res.Count != len(tally(languages)) {
			t.Errorf("count %d, want %d groups", *res.Count, len(tally(languages)))
		}
		if cursor = res.Cursor; cursor == "" {
			break
		}
	}
	if diff := gocmp.Diff(tally(languages), got); diff != "" {
		t.Errorf("paged groups (-want +got):\n%s", diff)
	}

	// Past the work bound, no group: a partial count is not the count.
	res := run(t, s, `{"from":{"type":"Service"},"groupBy":{"field":"language"},"limits":{"maxVisited":5}}`, graph.Limits{})
	if len(res.Groups) != 0 || !res.Truncated || res.Reason != graph.ReasonWork || res.Note == "" {
		t.Errorf("under maxVisited 5: %d groups, truncated %v (%s), note %q", len(res.Groups), res.Truncated, res.Reason, res.Note)
	}
	// Past the results ceiling, the page is capped and says so.
	res = run(t, s, `{"from":{"type":"Person"},"groupBy":{"field":"email"},"limit":100}`, graph.Limits{MaxResults: 10})
	if len(res.Groups) != 10 || res.Cursor == "" || !slices.Contains(res.Capped, "maxResults") {
		t.Errorf("under maxResults 10: %d groups, cursor %q, capped %v", len(res.Groups), res.Cursor, res.Capped)
	}
}

func fewestFirst(groups []string) []string {
	out := slices.Clone(groups)
	count := func(s string) string { return s[strings.LastIndex(s, ":")+1:] }
	slices.SortStableFunc(out, func(a, b string) int {
		var na, nb int
		fmt.Sscan(count(a), &na)
		fmt.Sscan(count(b), &nb)
		return cmp.Or(cmp.Compare(na, nb), strings.Compare(a[:strings.LastIndex(a, ":")], b[:strings.LastIndex(b, ":")]))
	})
	return out
}

// TestGroupByErrors checks that a bad groupBy is reported at its pointer
// with the valid choices.
func TestGroupByErrors(t *testing.T) {
	m := schema.Default()
	for _, tt := range []struct{ name, query, want string }{
		{"unknown field", `{"from":{"type":"Service"},"groupBy":{"field":"licence"}}`, `/groupBy/field: unknown field "licence" for Service; fields are id, type,`},
		{"field and degree", `{"from":{"type":"Service"},"groupBy":{"field":"tier","degree":{}}}`, `/groupBy: give exactly one of: field (type or a property), degree`},
		{"neither", `{"from":{"type":"Service"},"groupBy":{}}`, `/groupBy: give exactly one of`},
		{"unknown label", `{"from":{"type":"Service"},"groupBy":{"degree":{"edge":"dependsOnn"}}}`, `/groupBy/degree/edge: unknown edge label "dependsOnn"`},
		{"bad order", `{"from":{"type":"Service"},"groupBy":{"field":"tier","order":"size"}}`, `/groupBy/order: value must be one of 'count', 'key'`},
		{"buckets without degree", `{"from":{"type":"Service"},"groupBy":{"field":"tier","buckets":[1]}}`, `/groupBy/buckets: buckets group degrees`},
		{"buckets not increasing", `{"from":{"type":"Service"},"groupBy":{"degree":{},"buckets":[1,5,5]}}`, `/groupBy/buckets/2: bounds must increase`},
		{"negative bucket", `{"from":{"type":"Service"},"groupBy":{"degree":{},"buckets":[-1]}}`, `/groupBy/buckets/0`},
		{"with orderBy", `{"from":{"type":"Service"},"groupBy":{"field":"tier"},"orderBy":[{"field":"name"}]}`, `/orderBy: groupBy orders the groups`},
		{"with return", `{"from":{"type":"Service"},"groupBy":{"field":"tier"},"return":{"count":true}}`, `/return: groupBy returns groups`},
		{"unknown key", `{"from":{"type":"Service"},"groupBy":{"field":"tier","top":3}}`, `/groupBy/top: is not a key of groupBy: field, degree, buckets, order, desc`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := graph.ParseQuery(m, []byte(tt.query))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseQuery: %v; want an error with %q", err, tt.want)
			}
		})
	}
	// A cursor of groups does not page the nodes of the same query without
	// groupBy, nor the other way round.
	s := example(t)
	grouped := `{"from":{"type":"Service"},"groupBy":{"field":"language"},"limit":1}`
	res, err := runCursor(s, grouped, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCursor(s, `{"from":{"type":"Service"},"limit":1}`, res.Cursor); err == nil {
		t.Error("a cursor of groups paged nodes")
	}
	plain, err := runCursor(s, `{"from":{"type":"Service"},"orderBy":[{"field":"name"}],"limit":1}`, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runCursor(s, grouped, plain.Cursor); err == nil {
		t.Error("a cursor of nodes paged groups")
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
