package graph_test

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

// The oracle test checks query_graph against a brute-force evaluator over
// an in-memory copy of the same random graph: results, counts, order,
// paging and paths, also under tiny work limits, byte limits and deadlines.
//
//	go test -run TestQueryOracle ./graph -lore.oracle.n 20000 -lore.oracle.seed 42
var (
	oracleN    = flag.Int("lore.oracle.n", 1000, "random queries the oracle test runs")
	oracleSeed = flag.Uint64("lore.oracle.seed", 0, "seed of the oracle test (0: from the clock)")
)

// oracleModel: three node types with the same properties, indexed
// differently, and three edge labels, one of them keyed.
func oracleModel() string {
	props := `"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}, "s": {"type": "string"},
	  "u": {"type": "integer"}, "f": {"type": "boolean"}, "t": {"type": "array", "items": {"type": "string"}}}, "additionalProperties": false`
	edge := `"type": "object", "x-lore-edge": {"from": ["A", "B", "C"], "to": ["A", "B", "C"]`
	return `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/oracle.json", "title": "oracle", "$defs": {
	  "A": {"x-lore-node": {"display": "name", "indexed": ["n", "s", "t"], "search": ["name"]}, ` + props + `},
	  "B": {"x-lore-node": {"display": "name", "indexed": ["n"], "search": ["name"]}, ` + props + `},
	  "C": {"x-lore-node": {"display": "name", "search": ["name"]}, ` + props + `},
	  "e1": {` + edge + `}}, "e2": {` + edge + `}}, "k": {` + edge + `, "keyed": true}}}}`
}

var (
	oTypes  = []string{"A", "B", "C"}
	oLabels = []string{"e1", "e2", "k"}
	oWords  = []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "alphabet", "betamax"}
	oStr    = []string{"x", "y", "z", "xy"}
)

// An oNode is a node of the oracle's graph: props hold int, string, bool
// and []string values.
type oNode struct {
	id    string
	typ   string
	props map[string]any
}

type oEdge struct {
	from, to, label, key string
}

func (e oEdge) id() string {
	return graph.EdgeKey{From: graph.ID(e.from), Label: e.label, To: graph.ID(e.to), Key: e.key}.String()
}

type oGraph struct {
	nodes map[string]*oNode
	ids   []string // sorted
	edges []oEdge
	byID  map[string]oEdge
	// out[label][from] and in[label][to] list edges.
	out, in map[string]map[string][]oEdge
}

func randomGraph(rng *rand.Rand) *oGraph {
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}, out: map[string]map[string][]oEdge{}, in: map[string]map[string][]oEdge{}}
	n := 2 + rng.IntN(30)
	if rng.IntN(6) == 0 {
		n += rng.IntN(60)
	}
	for i := range n {
		nd := &oNode{id: fmt.Sprintf("n/%03d", i), typ: oTypes[rng.IntN(3)], props: map[string]any{}}
		if rng.IntN(8) > 0 {
			var words []string
			for range 1 + rng.IntN(3) {
				words = append(words, oWords[rng.IntN(len(oWords))])
			}
			if rng.IntN(4) == 0 {
				words[0] = strings.ToUpper(words[0][:1]) + words[0][1:]
			}
			nd.props["name"] = strings.Join(words, " ")
		}
		if rng.IntN(5) > 0 {
			nd.props["n"] = rng.IntN(6)
		}
		if rng.IntN(5) > 0 {
			nd.props["s"] = oStr[rng.IntN(len(oStr))]
		}
		if rng.IntN(3) > 0 {
			nd.props["u"] = rng.IntN(6) - 1
		}
		if rng.IntN(3) > 0 {
			nd.props["f"] = rng.IntN(2) == 0
		}
		if rng.IntN(3) == 0 {
			var t []string
			for range rng.IntN(3) {
				t = append(t, oStr[rng.IntN(len(oStr))])
			}
			nd.props["t"] = t
		}
		g.nodes[nd.id] = nd
		g.ids = append(g.ids, nd.id)
	}
	add := func(e oEdge) {
		if _, dup := g.byID[e.id()]; dup {
			return
		}
		g.byID[e.id()] = e
		g.edges = append(g.edges, e)
	}
	pick := func() string { return g.ids[rng.IntN(len(g.ids))] }
	m := n * (1 + rng.IntN(3)) / (1 + rng.IntN(2))
	for range m {
		e := oEdge{from: pick(), to: pick(), label: oLabels[rng.IntN(3)]}
		if rng.IntN(10) == 0 {
			e.to = e.from // a self-loop
		}
		if e.label == "k" {
			for j := range 1 + rng.IntN(2) { // parallel keyed edges
				e.key = "r" + strconv.Itoa(j)
				add(e)
			}
			continue
		}
		add(e)
	}
	for range rng.IntN(3) { // hubs
		h := pick()
		for range n / 2 {
			e := oEdge{from: h, to: pick(), label: oLabels[rng.IntN(2)]}
			if rng.IntN(2) == 0 {
				e.from, e.to = e.to, e.from
			}
			add(e)
		}
	}
	for _, l := range oLabels {
		g.out[l], g.in[l] = map[string][]oEdge{}, map[string][]oEdge{}
	}
	for _, e := range g.edges {
		g.out[e.label][e.from] = append(g.out[e.label][e.from], e)
		g.in[e.label][e.to] = append(g.in[e.label][e.to], e)
	}
	return g
}

// load writes the graph into a new bolt store.
func (g *oGraph) load(t *testing.T, m *schema.Model) *graph.Bolt {
	t.Helper()
	s := graphtest.Open(t, t.TempDir(), m)
	var b graph.Batch
	for _, id := range g.ids {
		nd := g.nodes[id]
		props := graph.Props{}
		for k, v := range nd.props {
			if t, ok := v.([]string); ok {
				arr := make([]any, len(t))
				for i, x := range t {
					arr[i] = x
				}
				v = arr
			}
			props[k] = v
		}
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(id), Type: nd.typ, Properties: props})
	}
	for _, e := range g.edges {
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(e.from), Label: e.label, To: graph.ID(e.to), Key: e.key}})
	}
	if _, err := s.Apply(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	return s
}

// ---- random queries

// An oFilter is a filter as the oracle evaluates it; json renders it.
type oFilter struct {
	conds map[string][]oCond // field -> its operators
	short map[string]bool    // written as {field: value}
	and   []*oFilter
	or    []*oFilter
	not   *oFilter
}

type oCond struct {
	op  string
	val any
}

func (f *oFilter) json() any {
	obj := map[string]any{}
	for field, cs := range f.conds {
		if f.short[field] {
			obj[field] = cs[0].val
			continue
		}
		ops := map[string]any{}
		for _, c := range cs {
			ops[c.op] = c.val
		}
		obj[field] = ops
	}
	for key, list := range map[string][]*oFilter{"and": f.and, "or": f.or} {
		if len(list) > 0 {
			var js []any
			for _, g := range list {
				js = append(js, g.json())
			}
			obj[key] = js
		}
	}
	if f.not != nil {
		obj["not"] = f.not.json()
	}
	return obj
}

var oFields = []string{"name", "n", "s", "u", "f", "t", "id", "type"}

func randomValue(rng *rand.Rand, field, op string) any {
	if rng.IntN(12) == 0 && op != "prefix" { // a value of another kind
		switch rng.IntN(3) {
		case 0:
			return "3"
		case 1:
			return 2
		}
		if op == "lt" || op == "lte" || op == "gt" || op == "gte" {
			return "y"
		}
		return true
	}
	switch field {
	case "n", "u":
		if op == "prefix" || op == "contains" {
			return strconv.Itoa(rng.IntN(6))
		}
		return rng.IntN(7) - 1
	case "s", "t":
		return oStr[rng.IntN(len(oStr))]
	case "f":
		if op == "lt" || op == "lte" || op == "gt" || op == "gte" || op == "prefix" {
			return "true"
		}
		return rng.IntN(2) == 0
	case "id":
		if op == "prefix" || op == "contains" {
			return fmt.Sprintf("n/0%d", rng.IntN(10))
		}
		return fmt.Sprintf("n/%03d", rng.IntN(50))
	case "type":
		return oTypes[rng.IntN(3)]
	}
	w := oWords[rng.IntN(len(oWords))]
	switch op {
	case "prefix", "contains":
		return strings.ToUpper(w[:1+rng.IntN(3)])[:1] + w[1:1+rng.IntN(3)]
	case "eq", "ne", "in":
		if rng.IntN(2) == 0 {
			return w
		}
	}
	return w + " " + oWords[rng.IntN(len(oWords))]
}

func randomFilter(rng *rand.Rand, depth int) *oFilter {
	f := &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}}
	ops := []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "prefix", "exists"}
	for range 1 + rng.IntN(2) {
		field := oFields[rng.IntN(len(oFields))]
		if _, dup := f.conds[field]; dup {
			continue
		}
		if rng.IntN(3) == 0 {
			f.short[field] = true
			f.conds[field] = []oCond{{"eq", randomValue(rng, field, "eq")}}
			continue
		}
		used := map[string]bool{}
		for range 1 + rng.IntN(2) {
			op := ops[rng.IntN(len(ops))]
			if used[op] {
				continue
			}
			used[op] = true
			var val any
			switch op {
			case "exists":
				val = rng.IntN(3) > 0
			case "in":
				var vs []any
				for range 1 + rng.IntN(3) {
					vs = append(vs, randomValue(rng, field, "eq"))
				}
				val = vs
			default:
				val = randomValue(rng, field, op)
			}
			f.conds[field] = append(f.conds[field], oCond{op, val})
		}
	}
	if depth < 2 && rng.IntN(5) == 0 {
		for range 1 + rng.IntN(2) {
			f.and = append(f.and, randomFilter(rng, depth+1))
		}
	}
	if depth < 2 && rng.IntN(5) == 0 {
		for range 1 + rng.IntN(2) {
			f.or = append(f.or, randomFilter(rng, depth+1))
		}
	}
	if depth < 2 && rng.IntN(7) == 0 {
		f.not = randomFilter(rng, depth+1)
	}
	return f
}

type oStep struct {
	labels   []string
	dir      string
	min, max int
	typ      string
	where    *oFilter
}

type oQuery struct {
	ids    []string
	typ    string
	where  *oFilter
	search string
	steps  []oStep
	final  *oFilter
	fields []string
	paths  bool
	count  bool
	order  []graph.Order
	limit  int
}

func randomQuery(rng *rand.Rand, g *oGraph) *oQuery {
	q := &oQuery{}
	switch rng.IntN(3) {
	case 0:
		for range 1 + rng.IntN(4) {
			if rng.IntN(8) == 0 {
				q.ids = append(q.ids, "n/missing")
				continue
			}
			q.ids = append(q.ids, g.ids[rng.IntN(len(g.ids))])
		}
	case 1:
		q.typ = oTypes[rng.IntN(3)]
		if rng.IntN(3) > 0 {
			q.where = randomFilter(rng, 0)
		}
	default:
		w := oWords[rng.IntN(len(oWords))]
		q.search = w[:1+rng.IntN(len(w))]
		if rng.IntN(4) == 0 {
			q.search += " " + oWords[rng.IntN(len(oWords))][:2]
		}
		if rng.IntN(2) == 0 {
			q.typ = oTypes[rng.IntN(3)]
		}
	}
	hops := 6
	for range rng.IntN(4) {
		st := oStep{dir: []string{"out", "in", "both"}[rng.IntN(3)]}
		switch rng.IntN(4) {
		case 0:
		case 1:
			st.labels = []string{oLabels[rng.IntN(3)]}
		default:
			st.labels = []string{oLabels[rng.IntN(3)], oLabels[rng.IntN(3)]}
			if st.labels[0] == st.labels[1] {
				st.labels = st.labels[:1]
			}
		}
		st.max = 1 + rng.IntN(min(3, hops))
		st.min = rng.IntN(st.max + 1)
		if rng.IntN(3) == 0 {
			st.min = 1 // the common case: hops n
		}
		hops -= st.max
		if rng.IntN(4) == 0 {
			st.typ = oTypes[rng.IntN(3)]
		}
		if rng.IntN(4) == 0 {
			st.where = randomFilter(rng, 1)
		}
		q.steps = append(q.steps, st)
		if hops == 0 {
			break
		}
	}
	if rng.IntN(3) == 0 {
		q.final = randomFilter(rng, 0)
	}
	switch rng.IntN(8) {
	case 0:
		q.count = true
	case 1, 2:
		q.paths = true
	case 3:
		q.fields = []string{"id", "name", "n"}
	}
	if !q.count && rng.IntN(2) == 0 {
		for range 1 + rng.IntN(3) {
			q.order = append(q.order, graph.Order{Field: oFields[rng.IntN(len(oFields))], Desc: rng.IntN(2) == 0})
		}
	}
	if rng.IntN(5) > 0 {
		q.limit = 1 + rng.IntN(8)
	}
	return q
}

// json renders the query; cursor and limits are added per call.
func (q *oQuery) json(cursor string, limits map[string]int) string {
	from := map[string]any{}
	switch {
	case len(q.ids) > 0:
		from["ids"] = q.ids
	case q.search != "":
		from["search"] = q.search
		if q.typ != "" {
			from["type"] = q.typ
		}
	default:
		from["type"] = q.typ
		if q.where != nil {
			from["where"] = q.where.json()
		}
	}
	doc := map[string]any{"from": from}
	var steps []any
	for _, st := range q.steps {
		s := map[string]any{"direction": st.dir}
		switch len(st.labels) {
		case 0:
		case 1:
			s["edge"] = st.labels[0]
		default:
			s["edge"] = st.labels
		}
		if st.min == 1 && st.max > 1 && len(steps)%2 == 0 {
			s["hops"] = st.max
		} else if st.min != 1 || st.max != 1 {
			s["hops"] = []int{st.min, st.max}
		}
		if st.typ != "" {
			s["type"] = st.typ
		}
		if st.where != nil {
			s["where"] = st.where.json()
		}
		steps = append(steps, s)
	}
	if len(steps) > 0 {
		doc["traverse"] = steps
	}
	if q.final != nil {
		doc["where"] = q.final.json()
	}
	ret := map[string]any{}
	if q.count {
		ret["count"] = true
	}
	if q.paths {
		ret["paths"] = true
	}
	if q.fields != nil {
		ret["fields"] = q.fields
	}
	if len(ret) > 0 {
		doc["return"] = ret
	}
	if len(q.order) > 0 {
		doc["orderBy"] = q.order
	}
	if q.limit > 0 {
		doc["limit"] = q.limit
	}
	if cursor != "" {
		doc["cursor"] = cursor
	}
	if len(limits) > 0 {
		doc["limits"] = limits
	}
	data, _ := json.Marshal(doc)
	return string(data)
}

// ---- the brute-force evaluator

func (g *oGraph) field(nd *oNode, field string) (any, bool) {
	switch field {
	case "id":
		return nd.id, true
	case "type":
		return nd.typ, true
	}
	v, ok := nd.props[field]
	return v, ok
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
	return f.not == nil || !g.match(nd, f.not)
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// searchTerms drops the stopwords of a search, unless nothing else is left.
func searchTerms(s string) []string {
	all := slices.Compact(words(s))
	terms := slices.DeleteFunc(slices.Clone(all), func(w string) bool {
		return slices.Contains(strings.Fields("a an and are as at be by for from in is it of on or that the this to was with"), w)
	})
	if len(terms) == 0 {
		return all
	}
	return terms
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
			if len(toks) > 0 && !slices.ContainsFunc(terms, func(t string) bool {
				return !slices.ContainsFunc(toks, func(w string) bool { return strings.HasPrefix(w, t) })
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

// neighbours lists the (node, edge) pairs one hop from id along a step.
func (g *oGraph) neighbours(st *oStep, id string, f func(next string, e oEdge)) {
	labels := st.labels
	if len(labels) == 0 {
		labels = oLabels
	}
	for _, l := range labels {
		if st.dir != "in" {
			for _, e := range g.out[l][id] {
				f(e.to, e)
			}
		}
		if st.dir != "out" {
			for _, e := range g.in[l][id] {
				f(e.from, e)
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
func (g *oGraph) sortValue(id, field string) any {
	v, ok := g.field(g.nodes[id], field)
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
			va, vb := g.sortValue(a, o.Field), g.sortValue(b, o.Field)
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

// segment reports whether edges i..j-1 of p follow the step's labels and direction.
func (g *oGraph) segment(st *oStep, p graph.Path, i, j int) bool {
	for x := i; x < j; x++ {
		e := g.byID[p.Edges[x]]
		if len(st.labels) > 0 && !slices.Contains(st.labels, e.label) {
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

// ---- the test

type oracleRun struct {
	t     *testing.T
	s     graph.Store
	g     *oGraph
	q     *oQuery
	start []string
	want  []string // the result, in the query's order
	ctx   string   // what to print with a failure
	stats *oracleStats
}

type oracleStats struct {
	queries, calls, truncated, cutOrdered, partial, lossless, deadlineCuts int
}

func (r *oracleRun) fail(format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: %s", r.ctx, fmt.Sprintf(format, args...))
}

func (r *oracleRun) call(cursor string, limits map[string]int) (*graph.QueryResult, bool) {
	r.t.Helper()
	doc := r.q.json(cursor, limits)
	q, err := graph.ParseQuery(r.s.Model(), []byte(doc))
	if err != nil {
		r.fail("ParseQuery(%s): %v", doc, err)
		return nil, false
	}
	res, err := graph.Run(r.t.Context(), r.s, q, graph.Limits{})
	if err != nil {
		if limits["maxBytes"] > 0 && errors.Is(err, graph.ErrInvalid) && strings.Contains(err.Error(), "alone takes") {
			return nil, false // a result larger than the byte limit: said plainly
		}
		r.fail("Run(%s): %v", doc, err)
		return nil, false
	}
	r.stats.calls++
	if res.More != (res.Cursor != "") || res.Truncated != (res.Reason != "") {
		r.fail("Run(%s): more %v with cursor %q, truncated %v with reason %q", doc, res.More, res.Cursor, res.Truncated, res.Reason)
	}
	return res, true
}

// pageIDs checks one page: every node and path correct; it returns the IDs.
func (r *oracleRun) pageIDs(res *graph.QueryResult, doc string) []string {
	r.t.Helper()
	var out []string
	if r.q.paths && len(res.Paths) != len(res.Nodes) {
		r.fail("%s: %d paths for %d nodes", doc, len(res.Paths), len(res.Nodes))
		return nil
	}
	for i, n := range res.Nodes {
		id, _ := n["id"].(string)
		if !slices.Contains(r.want, id) {
			r.fail("%s: %s is not a result (want %v)", doc, id, r.want)
		}
		if r.q.paths {
			if why := r.g.checkPath(r.q, r.start, res.Paths[i], id); why != "" {
				r.fail("%s: path %v to %s %s", doc, res.Paths[i], id, why)
			}
		}
		out = append(out, id)
	}
	return out
}

// page pages through the whole result with the limits and checks what the
// pages hold. exact: the limits are deterministic, so the pages must hold
// every result (but for start nodes the engine names as partial).
func (r *oracleRun) page(limits map[string]int, exact bool) {
	r.t.Helper()
	q := r.q
	ranked := q.search != "" && len(q.steps) == 0 && len(q.order) == 0
	var got []string
	var partial []string
	cursor, clean := "", true
	for calls := 0; ; calls++ {
		if calls > 5000 {
			r.fail("no end after %d calls with limits %v", calls, limits)
			return
		}
		res, ok := r.call(cursor, limits)
		if !ok {
			return
		}
		doc := q.json(cursor, limits)
		if q.count {
			switch {
			case res.Count == nil:
				r.fail("%s: no count", doc)
			case !res.Truncated && *res.Count != len(r.want), *res.Count > len(r.want):
				r.fail("%s: count %d (truncated %v), want %d", doc, *res.Count, res.Truncated, len(r.want))
			case res.Cursor != "":
				r.fail("%s: a count with a cursor", doc)
			}
			if res.Truncated {
				r.stats.truncated++
			}
			return
		}
		ids := r.pageIDs(res, doc)
		if res.Truncated && res.Reason != graph.ReasonBytes {
			r.stats.truncated++
			if res.Reason == graph.ReasonDeadline {
				r.stats.deadlineCuts++
			}
		}
		if len(q.order) > 0 {
			// Ordered pages are exactly-once and in order, always: a bound
			// leaves a page empty, or shorter, never out of order.
			if len(got)+len(ids) > len(r.want) || !slices.Equal(ids, r.want[len(got):len(got)+len(ids)]) {
				r.fail("%s: ordered page %v, want the next of %v after %v", doc, ids, r.want, got)
				return
			}
			if len(ids) == 0 && res.Truncated {
				r.stats.cutOrdered++
				if res.Cursor != cursor {
					r.fail("%s: a cut ordered read moved its cursor", doc)
				}
				if exact && cursor != "" && res.Reason == graph.ReasonWork {
					r.fail("%s: a deterministic limit cut an ordered read that an earlier page completed", doc)
				}
				return // a retry would be cut the same way, or not: nothing more to check
			}
			got = append(got, ids...)
			if res.Cursor == "" {
				break
			}
			cursor = res.Cursor
			continue
		}
		cutWork := res.Truncated && res.Reason != graph.ReasonBytes
		if cutWork {
			clean = false
		}
		if clean && !ranked {
			// A page of a result no bound cut: the next results in order.
			if len(got)+len(ids) > len(r.want) || !slices.Equal(ids, r.want[len(got):len(got)+len(ids)]) {
				r.fail("%s: page %v, want the next of %v after %v", doc, ids, r.want, got)
				return
			}
		}
		for _, p := range res.Partial {
			partial = append(partial, string(p))
		}
		got = append(got, ids...)
		if res.Cursor == "" {
			if res.Truncated && res.Reason != graph.ReasonBytes {
				return // nothing can continue it: what came was correct
			}
			break
		}
		cursor = res.Cursor
	}
	// The pages hold every result: each once when no bound cut the work.
	set := map[string]int{}
	for _, id := range got {
		set[id]++
	}
	if clean && len(got) != len(set) {
		r.fail("%s: a result returned twice in exact paging: %v", q.json("", limits), got)
	}
	if len(partial) > 0 {
		r.stats.partial++
		_, lower := r.g.evaluate(q, slices.DeleteFunc(slices.Clone(r.start), func(id string) bool { return slices.Contains(partial, id) }))
		for _, id := range lower {
			if set[id] == 0 {
				r.fail("%s: pages miss %s, which start nodes other than the partial %v reach", q.json("", limits), id, partial)
			}
		}
		return
	}
	for _, id := range r.want {
		if set[id] == 0 {
			r.fail("%s: pages miss %s (got %v, want %v)", q.json("", limits), id, got, r.want)
			return
		}
	}
	if !clean {
		r.stats.lossless++
	}
}

func TestQueryOracle(t *testing.T) {
	seed := *oracleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d: rerun with go test -run TestQueryOracle ./graph -lore.oracle.seed %d", seed, seed)
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f7265))
	stats := &oracleStats{}
	for gi := 0; stats.queries < *oracleN && !t.Failed(); gi++ {
		g := randomGraph(rng)
		s := g.load(t, m)
		for qi := 0; qi < 60 && stats.queries < *oracleN && !t.Failed(); qi++ {
			stats.queries++
			q := randomQuery(rng, g)
			start := g.starts(q)
			_, want := g.evaluate(q, start)
			if len(q.order) > 0 {
				g.order(q, want)
			}
			r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: stats,
				ctx: fmt.Sprintf("seed %d, graph %d (%d nodes, %d edges), query %d %s", seed, gi, len(g.ids), len(g.edges), qi, q.json("", nil))}
			r.page(nil, true)
			r.page(map[string]int{"maxVisited": []int{1, 30, 300}[qi%3] + rng.IntN([]int{30, 300, 3000}[qi%3])}, true)
			if rng.IntN(3) == 0 {
				r.page(map[string]int{"maxBytes": 2048 + 300 + rng.IntN(1000)}, true)
			}
			if rng.IntN(3) == 0 {
				r.page(map[string]int{"timeoutMs": 1, "maxVisited": 1 + rng.IntN(2000)}, false)
			}
		}
	}
	t.Logf("%d queries, %d calls; %d truncated pages (%d by the deadline), %d cut ordered reads, %d pagings with partial start nodes, %d cut pagings that still held every result",
		stats.queries, stats.calls, stats.truncated, stats.deadlineCuts, stats.cutOrdered, stats.partial, stats.lossless)
}

// A path is a shortest walk from the start node it names, also when
// another start node of the same pass reaches its nodes first: from c and
// b, z is 2 hops from b (b→y→z) but 1 from c, so c→y→z is no path to it
// (its length is not z's distance from c).
func TestQueryPathIsShortest(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	g := &oGraph{nodes: map[string]*oNode{}, byID: map[string]oEdge{}, out: map[string]map[string][]oEdge{}, in: map[string]map[string][]oEdge{}}
	for _, id := range []string{"n/a", "n/b", "n/c", "n/y", "n/z"} {
		g.nodes[id] = &oNode{id: id, typ: "A", props: map[string]any{}}
		g.ids = append(g.ids, id)
	}
	for _, l := range oLabels {
		g.out[l], g.in[l] = map[string][]oEdge{}, map[string][]oEdge{}
	}
	for _, e := range []oEdge{{from: "n/c", to: "n/y"}, {from: "n/b", to: "n/y"}, {from: "n/c", to: "n/z"}, {from: "n/y", to: "n/z"}} {
		e.label = "e1"
		g.edges = append(g.edges, e)
		g.byID[e.id()] = e
		g.out["e1"][e.from] = append(g.out["e1"][e.from], e)
		g.in["e1"][e.to] = append(g.in["e1"][e.to], e)
	}
	s := g.load(t, m)
	// The first chunk of start nodes is one node: n/a; n/c and n/b then
	// share a pass.
	q := &oQuery{ids: []string{"n/a", "n/c", "n/b"}, steps: []oStep{{labels: []string{"e1"}, dir: "out", min: 2, max: 2}}, paths: true}
	start := g.starts(q)
	_, want := g.evaluate(q, start)
	r := &oracleRun{t: t, s: s, g: g, q: q, start: start, want: want, stats: &oracleStats{}, ctx: q.json("", nil)}
	r.page(nil, true)
	if !slices.Equal(want, []string{"n/z"}) {
		t.Errorf("oracle: %v", want)
	}
}
