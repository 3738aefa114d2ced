package graph_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// Index-ordered scans on the example data: each query paged through in
// pages of 2 and 3, against a brute-force order of the type's nodes (the
// documented order: by value, numbers before strings, missing values
// last whatever the direction, then by ID), with the plan and the index
// each page reports.
func TestIndexOrderedScans(t *testing.T) {
	s := example(t)
	lower := strings.ToLower
	for _, tc := range []struct {
		name, typ, where, order string
		field                   string // the order's property ("" for by ID)
		desc                    bool
		keep                    func(p graph.Props) bool
		index                   string // stats.index of the first page
		plan                    string // in the first page's plan
	}{
		{name: "tier ascending", typ: "Service", field: "tier", index: "Service.tier", plan: "walk index Service.tier ascending"},
		{name: "tier descending", typ: "Service", field: "tier", desc: true, index: "Service.tier", plan: "walk index Service.tier descending"},
		{name: "tier range descending", typ: "Service", where: `{"tier":{"gte":1,"lt":3}}`, field: "tier", desc: true,
			keep: func(p graph.Props) bool { n, ok := num(p["tier"]); return ok && n >= 1 && n < 3 }, index: "Service.tier", plan: "walk index"},
		{name: "lifecycle prefix, any case", typ: "Service", where: `{"lifecycle":{"prefix":"PRO"}}`, field: "lifecycle",
			keep: func(p graph.Props) bool { v, _ := p["lifecycle"].(string); return strings.HasPrefix(lower(v), "pro") }, index: "Service.lifecycle", plan: "walk index Service.lifecycle ascending"},
		{name: "decision date descending", typ: "Decision", field: "date", desc: true, index: "Decision.date", plan: "walk index Decision.date descending"},
		{name: "decision number, status in", typ: "Decision", where: `{"status":{"in":["accepted","superseded"]}}`, field: "number", desc: true,
			keep: func(p graph.Props) bool { return p["status"] == "accepted" || p["status"] == "superseded" }, index: "Decision.status", plan: "sort every result by orderBy"},
		{name: "email prefix", typ: "Person", where: `{"email":{"prefix":"A"}}`, field: "email",
			keep: func(p graph.Props) bool { v, _ := p["email"].(string); return strings.HasPrefix(lower(v), "a") }, index: "Person.email", plan: "walk index Person.email"},
		{name: "role, not indexed filter", typ: "Person", where: `{"name":{"contains":"a"}}`, field: "role", desc: true,
			keep: func(p graph.Props) bool { v, _ := p["name"].(string); return strings.Contains(lower(v), "a") }, index: "Person.role"},
		{name: "by id", typ: "Service", plan: "scan type Service in ID order; stream"},
		{name: "by id, few matches", typ: "Service", where: `{"tier":{"lte":1}}`, index: "Service.tier", plan: "look up index Service.tier",
			keep: func(p graph.Props) bool { n, ok := num(p["tier"]); return ok && n <= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			var all []*graph.Node
			for after := ""; ; {
				page, err := s.NodesByType(t.Context(), tc.typ, graph.Page{After: after, Limit: graph.MaxPageSize})
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, page.Nodes...)
				if after = page.Next; after == "" {
					break
				}
			}
			for _, n := range all {
				if tc.keep == nil || tc.keep(n.Properties) {
					want = append(want, string(n.ID))
				}
			}
			props := map[string]graph.Props{}
			for _, n := range all {
				props[string(n.ID)] = n.Properties
			}
			if tc.field != "" {
				slices.SortFunc(want, func(a, b string) int {
					va, vb := props[a][tc.field], props[b][tc.field]
					switch {
					case va == nil && vb == nil:
						return strings.Compare(a, b)
					case va == nil:
						return 1
					case vb == nil:
						return -1
					}
					c := compareScalars(va, vb)
					if tc.desc {
						c = -c
					}
					return cmp.Or(c, strings.Compare(a, b))
				})
			}
			if len(want) < 3 {
				t.Fatalf("the example data has %d results: too few to page through", len(want))
			}
			order := "[]"
			if tc.field != "" {
				order = fmt.Sprintf(`[{"field":%q,"desc":%v}]`, tc.field, tc.desc)
			} else {
				order = `[{"field":"id"}]`
			}
			where := ""
			if tc.where != "" {
				where = `,"where":` + tc.where
			}
			for _, limit := range []int{2, 3} {
				var got []string
				cursor := ""
				for page := 0; ; page++ {
					q := fmt.Sprintf(`{"from":{"type":%q%s},"orderBy":%s,"limit":%d,"explain":true`, tc.typ, where, order, limit)
					if cursor != "" {
						q += fmt.Sprintf(`,"cursor":%q`, cursor)
					}
					res := run(t, s, q+"}", graph.Limits{})
					if page == 0 && (res.Stats.Index != tc.index || !strings.Contains(res.Plan, tc.plan)) {
						t.Errorf("limit %d: index %q, plan %q; want index %q, a plan with %q", limit, res.Stats.Index, res.Plan, tc.index, tc.plan)
					}
					got = append(got, ids(res)...)
					if res.Cursor == "" {
						break
					}
					if page > len(want) {
						t.Fatalf("limit %d: no end after %d pages", limit, page)
					}
					cursor = res.Cursor
				}
				if !slices.Equal(got, want) {
					t.Errorf("limit %d: pages hold %v, want %v", limit, got, want)
				}
			}
		})
	}
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

// compareScalars orders two property values as orderBy does: booleans,
// then numbers, then strings.
func compareScalars(a, b any) int {
	kind := func(v any) int {
		switch v.(type) {
		case bool:
			return 1
		case json.Number:
			return 2
		case string:
			return 3
		}
		return 4
	}
	if c := cmp.Compare(kind(a), kind(b)); c != 0 {
		return c
	}
	switch x := a.(type) {
	case json.Number:
		fa, _ := num(x)
		fb, _ := num(b)
		return cmp.Compare(fa, fb)
	case string:
		return strings.Compare(x, b.(string))
	case bool:
		return cmp.Compare(fmt.Sprint(x), fmt.Sprint(b))
	}
	return 0
}
