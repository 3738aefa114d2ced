package graph_test

import (
	"cmp"
	"fmt"
	"github.com/kljensen/snowball/english"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/lore-dev/lore/graph"
)

// The oracle test's brute-force evaluator: what a query returns, computed
// from the in-memory graph by the documented semantics (step.go), and
// whether a returned path is one.

func (g *oGraph) field(nd *oNode, field string) (any, bool) {
	switch field {
	case "id":
		return nd.id, true
	case "type":
		return nd.typ, true
	}
	v, ok := nd.props[field]
	return v, ok && v != nil // null is no value
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func oEqual(a, b any) bool {
	fa, an := number(a)
	fb, bn := number(b)
	if an || bn {
		return an && bn && fa == fb
	}
	return a == b // strings, bools
}

// oCompare orders two numbers or two strings.
func oCompare(a, b any) (int, bool) {
	fa, an := number(a)
	fb, bn := number(b)
	if an && bn {
		return cmp.Compare(fa, fb), true
	}
	sa, as := a.(string)
	sb, bs := b.(string)
	if as && bs {
		return strings.Compare(sa, sb), true
	}
	return 0, false
}

func (g *oGraph) matchCond(nd *oNode, field string, c oCond) bool {
	v, present := g.field(nd, field)
	switch c.op {
	case "exists":
		return present == c.val.(bool)
	case "ne":
		return !present || !g.matchCond(nd, field, oCond{"eq", c.val})
	}
	if !present {
		return false
	}
	arr, isArr := v.([]string)
	switch c.op {
	case "eq":
		if isArr {
			return slices.ContainsFunc(arr, func(x string) bool { return oEqual(x, c.val) })
		}
		return oEqual(v, c.val)
	case "in":
		return slices.ContainsFunc(c.val.([]any), func(w any) bool { return g.matchCond(nd, field, oCond{"eq", w}) })
	case "lt", "lte", "gt", "gte":
		r, ok := oCompare(v, c.val)
		if !ok {
			return false
		}
		return map[string]bool{"lt": r < 0, "lte": r <= 0, "gt": r > 0, "gte": r >= 0}[c.op]
	case "contains":
		if isArr {
			return slices.ContainsFunc(arr, func(x string) bool { return oEqual(x, c.val) })
		}
		s, ok1 := v.(string)
		sub, ok2 := c.val.(string)
		return ok1 && ok2 && strings.Contains(strings.ToLower(s), strings.ToLower(sub))
	case "prefix":
		s, ok1 := v.(string)
		p, ok2 := c.val.(string)
		return ok1 && ok2 && strings.HasPrefix(strings.ToLower(s), strings.ToLower(p))
	}
	panic("unknown op " + c.op)
}

func (g *oGraph) match(nd *oNode, f *oFilter) bool {
	if f == nil {
		return true
	}
	for field, cs := range f.conds {
		for _, c := range cs {
			if !g.matchCond(nd, field, c) {
				return false
			}
		}
	}
	for _, h := range f.and {
		if !g.match(nd, h) {
			return false
		}
	}
	if len(f.or) > 0 && !slices.ContainsFunc(f.or, func(h *oFilter) bool { return g.match(nd, h) }) {
		return false
	}
	if f.deg != nil {
		n := g.degree(nd.id, f.deg)
		for _, c := range f.degOps {
			v := c.val.(int)
			if !map[string]bool{"eq": n == v, "ne": n != v, "lt": n < v, "lte": n <= v, "gt": n > v, "gte": n >= v}[c.op] {
				return false
			}
		}
	}
	return f.not == nil || !g.match(nd, f.not)
}

// degree counts id's edges with one of d's labels (none: any) in d's
// direction (default out): for both, its out-edges plus its in-edges, so
// a self-loop twice.
func (g *oGraph) degree(id string, d *graph.Degree) int {
	n := 0
	for _, e := range g.edges {
		if len(d.Edge) > 0 && !slices.Contains(d.Edge, e.label) {
			continue
		}
		if e.from == id && d.Direction != "in" {
			n++
		}
		if e.to == id && (d.Direction == "in" || d.Direction == "both") {
			n++
		}
	}
	return n
}

// degreeKey is the key of d in a result's degrees: labels, colon,
// direction.
func degreeKey(d graph.Degree) string {
	l := strings.Join(d.Edge, ",")
	if l == "" {
		l = "*"
	}
	return l + ":" + cmp.Or(string(d.Direction), "out")
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// searchTerms returns the English stems of the words of a search, its
// stopwords dropped unless nothing else is left, each once (at its last
// place): the last also matches as a prefix.
func searchTerms(s string) []string {
	all := words(s)
	terms := slices.DeleteFunc(slices.Clone(all), func(w string) bool {
		return slices.Contains(strings.Fields("a an and are as at be by for from in is it of on or that the this to was with"), w)
	})
	if len(terms) == 0 {
		terms = all
	}
	var out []string
	for _, w := range terms {
		w = english.Stem(w, true)
		out = append(slices.DeleteFunc(out, func(x string) bool { return x == w }), w)
	}
	return out
}

// starts returns the start set, sorted.
func (g *oGraph) starts(q *oQuery) []string {
	var out []string
	switch {
	case len(q.ids) > 0:
		for _, id := range q.ids {
			if g.nodes[id] != nil && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	case q.search != "":
		terms := searchTerms(q.search)
		for _, id := range g.ids {
			nd := g.nodes[id]
			if q.typ != "" && nd.typ != q.typ {
				continue
			}
			name, _ := nd.props["name"].(string)
			toks := words(name)
			for i, w := range toks {
				toks[i] = english.Stem(w, true)
			}
			if len(toks) > 0 && !slices.ContainsFunc(terms, func(t string) bool {
				last := t == terms[len(terms)-1]
				return !slices.ContainsFunc(toks, func(w string) bool { return w == t || last && strings.HasPrefix(w, t) })
			}) {
				out = append(out, id)
			}
		}
	default:
		for _, id := range g.ids {
			if nd := g.nodes[id]; nd.typ == q.typ && g.match(nd, q.where) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// follows reports whether a step follows e: its edgeWhere, read on the
// edge's properties, holds (labels and direction are the caller's).
func (g *oGraph) follows(st *oStep, e oEdge) bool {
	return g.match(&oNode{props: e.props}, st.edgeWhere)
}

// neighbours lists the (node, edge) pairs one hop from id along a step.
func (g *oGraph) neighbours(st *oStep, id string, f func(next string, e oEdge)) {
	labels := st.labels
	if len(labels) == 0 {
		labels = oLabels
	}
	for _, l := range labels {
		if st.dir != "in" {
			for _, e := range g.out[l][id] {
				if g.follows(st, e) {
					f(e.to, e)
				}
			}
		}
		if st.dir != "out" {
			for _, e := range g.in[l][id] {
				if g.follows(st, e) {
					f(e.from, e)
				}
			}
		}
	}
}

// dist returns the shortest-walk distances from s along a step, up to max.
func (g *oGraph) dist(st *oStep, s string) map[string]int {
	d := map[string]int{s: 0}
	frontier := []string{s}
	for level := 1; level <= st.max && len(frontier) > 0; level++ {
		var next []string
		for _, x := range frontier {
			g.neighbours(st, x, func(y string, _ oEdge) {
				if _, ok := d[y]; !ok {
					d[y] = level
					next = append(next, y)
				}
			})
		}
		frontier = next
	}
	return d
}

func (g *oGraph) keep(st *oStep, id string) bool {
	nd := g.nodes[id]
	return (st.typ == "" || nd.typ == st.typ) && g.match(nd, st.where)
}

// evaluate returns the start set, each step's result and the query's
// result (sorted by ID) from the given start set.
func (g *oGraph) evaluate(q *oQuery, start []string) (levels [][]string, result []string) {
	cur := start
	levels = append(levels, cur)
	for i := range q.steps {
		st := &q.steps[i]
		set := map[string]bool{}
		for _, s := range cur {
			for v, dv := range g.dist(st, s) {
				if dv >= st.min && dv <= st.max && g.keep(st, v) {
					set[v] = true
				}
			}
		}
		cur = slices.Sorted(maps.Keys(set))
		levels = append(levels, cur)
	}
	for _, id := range cur {
		if g.match(g.nodes[id], q.final) {
			result = append(result, id)
		}
	}
	return levels, result
}

// oSortValue is a node's orderBy value as the engine documents it; nil
// when missing.
func (g *oGraph) sortValue(id string, o graph.Order) any {
	if o.Degree != nil {
		return g.degree(id, o.Degree)
	}
	v, ok := g.field(g.nodes[id], o.Field)
	if !ok {
		return nil
	}
	return v
}

func kind(v any) int {
	switch v.(type) {
	case bool:
		return 1
	case int:
		return 2
	case string:
		return 3
	}
	return 4
}

// order sorts ids as a query orders its results: by each orderBy value
// (missing last whatever the direction; false before true; arrays tie),
// then by ID.
func (g *oGraph) order(q *oQuery, ids []string) {
	slices.SortFunc(ids, func(a, b string) int {
		for _, o := range q.order {
			va, vb := g.sortValue(a, o), g.sortValue(b, o)
			switch {
			case va == nil && vb == nil:
				continue
			case va == nil:
				return 1
			case vb == nil:
				return -1
			}
			c, ok := oCompare(va, vb)
			if !ok {
				c = cmp.Compare(kind(va), kind(vb))
				if ba, isBool := va.(bool); isBool && c == 0 {
					c = cmp.Compare(b2i(ba), b2i(vb.(bool)))
				}
			}
			if o.Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return strings.Compare(a, b)
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// checkPath reports why p is not a path to v for q from the start set, or
// "" if it is one: a walk from a start node that splits into one segment
// per step, each a shortest walk along the step's labels and direction
// whose length lies in its hop range and whose end the step keeps.
func (g *oGraph) checkPath(q *oQuery, start []string, p graph.Path, v string) string {
	if len(p.Nodes) != len(p.Edges)+1 {
		return fmt.Sprintf("%d nodes and %d edges", len(p.Nodes), len(p.Edges))
	}
	if string(p.Nodes[len(p.Nodes)-1]) != v {
		return "does not end at the result"
	}
	if !slices.Contains(start, string(p.Nodes[0])) {
		return "does not begin at a start node"
	}
	for i, id := range p.Edges {
		e, ok := g.byID[id]
		if !ok {
			return fmt.Sprintf("edge %s does not exist", id)
		}
		a, b := string(p.Nodes[i]), string(p.Nodes[i+1])
		if !(e.from == a && e.to == b || e.from == b && e.to == a) {
			return fmt.Sprintf("edge %s does not join %s and %s", id, a, b)
		}
	}
	// fits[k][i]: the walk's first i edges can be the first k steps.
	n := len(p.Edges)
	fits := make([][]bool, len(q.steps)+1)
	for k := range fits {
		fits[k] = make([]bool, n+1)
	}
	fits[0][0] = true
	for k := range q.steps {
		st := &q.steps[k]
		for i := 0; i <= n; i++ {
			if !fits[k][i] {
				continue
			}
			d := g.dist(st, string(p.Nodes[i]))
			for j := i + st.min; j <= min(n, i+st.max); j++ {
				if g.segment(st, p, i, j) && d[string(p.Nodes[j])] == j-i && g.keep(st, string(p.Nodes[j])) {
					fits[k+1][j] = true
				}
			}
		}
	}
	if !fits[len(q.steps)][n] {
		return "does not split into one shortest walk per step within its hops"
	}
	return ""
}

// segment reports whether edges i..j-1 of p follow the step's labels and
// direction, and pass its edgeWhere.
func (g *oGraph) segment(st *oStep, p graph.Path, i, j int) bool {
	for x := i; x < j; x++ {
		e := g.byID[p.Edges[x]]
		if len(st.labels) > 0 && !slices.Contains(st.labels, e.label) || !g.follows(st, e) {
			return false
		}
		fwd := e.from == string(p.Nodes[x]) && e.to == string(p.Nodes[x+1])
		bwd := e.to == string(p.Nodes[x]) && e.from == string(p.Nodes[x+1])
		if st.dir == "out" && !fwd || st.dir == "in" && !bwd {
			return false
		}
	}
	return true
}
