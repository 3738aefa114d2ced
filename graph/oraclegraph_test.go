package graph_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

// Random graphs and queries for the oracle test (oracle_test.go).

// oracleModel: three node types with the same properties, indexed
// differently, and three edge labels with the same properties, one of them
// keyed. m holds values of mixed kinds, null among them.
func oracleModel() string {
	props := `"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}, "s": {"type": "string"},
	  "u": {"type": "integer"}, "f": {"type": "boolean"}, "t": {"type": "array", "items": {"type": "string"}},
	  "m": {"type": ["string", "integer", "boolean", "null"]}}, "additionalProperties": false`
	edge := `"type": "object", "properties": {"w": {"type": "integer"}, "r": {"type": "string"}}, "additionalProperties": false,
	  "x-lore-edge": {"from": ["A", "B", "C"], "to": ["A", "B", "C"]`
	return `{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/oracle.json", "title": "oracle", "$defs": {
	  "A": {"x-lore-node": {"display": "name", "indexed": ["n", "s", "t", "m"], "search": ["name"]}, ` + props + `},
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

// An oEdge is an edge of the oracle's graph: props hold int and string
// values.
type oEdge struct {
	from, to, label, key string
	props                map[string]any
}

// input is the edge as a batch writes it.
func (e oEdge) input() graph.EdgeInput {
	in := graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(e.from), Label: e.label, To: graph.ID(e.to), Key: e.key}}
	if len(e.props) > 0 {
		in.Properties = graph.Props(maps.Clone(e.props))
	}
	return in
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
		if rng.IntN(3) > 0 {
			nd.props["m"] = mixedValue(rng)
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
	props := func() map[string]any {
		p := map[string]any{}
		if rng.IntN(4) > 0 {
			p["w"] = rng.IntN(5)
		}
		if rng.IntN(3) > 0 {
			p["r"] = oStr[rng.IntN(len(oStr))]
		}
		return p
	}
	m := n * (1 + rng.IntN(3)) / (1 + rng.IntN(2))
	for range m {
		e := oEdge{from: pick(), to: pick(), label: oLabels[rng.IntN(3)]}
		if rng.IntN(10) == 0 {
			e.to = e.from // a self-loop
		}
		if e.label == "k" {
			for j := range 1 + rng.IntN(2) { // parallel keyed edges
				e.key = "r" + strconv.Itoa(j)
				e.props = props()
				add(e)
			}
			continue
		}
		e.props = props()
		add(e)
	}
	for range rng.IntN(3) { // hubs
		h := pick()
		for range n / 2 {
			e := oEdge{from: h, to: pick(), label: oLabels[rng.IntN(2)]}
			if rng.IntN(2) == 0 {
				e.from, e.to = e.to, e.from
			}
			e.props = props()
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
func (g *oGraph) load(t *testing.T, m *schema.Model) graph.Store {
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
		b.Edges = append(b.Edges, e.input())
	}
	if _, err := s.Apply(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	return s
}

// An oFilter is a filter as the oracle evaluates it; json renders it.
type oFilter struct {
	conds map[string][]oCond // field -> its operators
	short map[string]bool    // written as {field: value}
	and   []*oFilter
	or    []*oFilter
	not   *oFilter
	// deg, with degOps, is a condition on a node's degree.
	deg    *graph.Degree
	degOps []oCond
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
	if f.deg != nil {
		d := map[string]any{}
		if len(f.deg.Edge) > 0 {
			d["edge"] = f.deg.Edge
		}
		if f.deg.Direction != "" {
			d["direction"] = f.deg.Direction
		}
		for _, c := range f.degOps {
			d[c.op] = c.val
		}
		obj["degree"] = d
	}
	return obj
}

// randomDegree returns a degree of some labels (perhaps none, perhaps one
// twice) in some direction (perhaps the default).
func randomDegree(rng *rand.Rand) *graph.Degree {
	d := &graph.Degree{Direction: graph.Direction([]string{"", "out", "in", "both"}[rng.IntN(4)])}
	for range rng.IntN(3) {
		d.Edge = append(d.Edge, oLabels[rng.IntN(len(oLabels))])
	}
	return d
}

// oFields are the fields a node filter names, oEdgeFields those an edge
// filter (a step's edgeWhere) names: the edges' properties.
var (
	oFields     = []string{"name", "n", "s", "u", "f", "t", "id", "type"}
	oIndexedA   = []string{"n", "s", "t", "m"} // A's indexed fields
	oEdgeFields = []string{"w", "r"}
)

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
	case "m": // of mixed kinds, null among them (indexed, but absent to a filter)
		switch op {
		case "lt", "lte", "gt", "gte":
			return []any{"x", 2, "xy", 0}[rng.IntN(4)]
		case "prefix", "contains":
			return []string{"x", "X", "y"}[rng.IntN(3)]
		}
		return mixedValue(rng)
	case "n", "u", "w":
		if op == "prefix" || op == "contains" {
			return strconv.Itoa(rng.IntN(6))
		}
		return rng.IntN(7) - 1
	case "s", "t", "r":
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

// condValue draws the value of a condition op on field: a boolean for
// exists, one to three values for in, else one value, each drawn by draw
// (randomValue, or indexValue for an index's conditions).
func condValue(rng *rand.Rand, field, op string, draw func(*rand.Rand, string, string) any) any {
	switch op {
	case "exists":
		return rng.IntN(3) > 0
	case "in":
		var vs []any
		for range 1 + rng.IntN(3) {
			vs = append(vs, draw(rng, field, "eq"))
		}
		return vs
	}
	return draw(rng, field, op)
}

// randomFilter returns a filter on fields (oFields or oEdgeFields).
func randomFilter(rng *rand.Rand, depth int, fields []string) *oFilter {
	f := &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}}
	ops := []string{"eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "prefix", "exists"}
	for range 1 + rng.IntN(2) {
		field := fields[rng.IntN(len(fields))]
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
			f.conds[field] = append(f.conds[field], oCond{op, condValue(rng, field, op, randomValue)})
		}
	}
	if fields[0] == oFields[0] && rng.IntN(4) == 0 { // a node filter: on a degree
		f.deg = randomDegree(rng)
		used := map[string]bool{}
		for range 1 + rng.IntN(2) {
			op := []string{"eq", "ne", "lt", "lte", "gt", "gte"}[rng.IntN(6)]
			if !used[op] {
				used[op] = true
				f.degOps = append(f.degOps, oCond{op, rng.IntN(5)})
			}
		}
	}
	if depth < 2 && rng.IntN(5) == 0 {
		for range 1 + rng.IntN(2) {
			f.and = append(f.and, randomFilter(rng, depth+1, fields))
		}
	}
	if depth < 2 && rng.IntN(5) == 0 {
		for range 1 + rng.IntN(2) {
			f.or = append(f.or, randomFilter(rng, depth+1, fields))
		}
	}
	if depth < 2 && rng.IntN(7) == 0 {
		f.not = randomFilter(rng, depth+1, fields)
	}
	return f
}

type oStep struct {
	labels   []string
	dir      string
	min, max int
	typ      string
	where    *oFilter
	// edgeWhere filters the edges the step follows by their properties.
	edgeWhere *oFilter
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
	// degrees are return.degrees.
	degrees []graph.Degree
	group   *graph.GroupBy
}

// randomLabels draws a step's labels: none (every label), one, or two.
func randomLabels(rng *rand.Rand) []string {
	switch rng.IntN(4) {
	case 0:
		return nil
	case 1:
		return []string{oLabels[rng.IntN(3)]}
	}
	l := []string{oLabels[rng.IntN(3)], oLabels[rng.IntN(3)]}
	if l[0] == l[1] {
		return l[:1]
	}
	return l
}

func randomQuery(rng *rand.Rand, g *oGraph) *oQuery {
	if rng.IntN(5) == 0 {
		return randomIndexQuery(rng)
	}
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
			q.where = randomFilter(rng, 0, oFields)
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
		st.labels = randomLabels(rng)
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
			st.where = randomFilter(rng, 1, oFields)
			if rng.IntN(2) == 0 { // on A's indexed fields: the index can narrow what the step reached
				st.typ, st.where = "A", randomFilter(rng, 1, oIndexedA)
			}
		}
		if rng.IntN(4) == 0 {
			st.edgeWhere = randomFilter(rng, 1, oEdgeFields)
		}
		q.steps = append(q.steps, st)
		if hops == 0 {
			break
		}
	}
	if rng.IntN(3) == 0 {
		q.final = randomFilter(rng, 0, oFields)
	}
	switch rng.IntN(8) {
	case 0:
		q.count = true
	case 1, 2:
		q.paths = true
	case 3:
		q.fields = []string{"id", "name", "n"}
	}
	if !q.count && rng.IntN(3) == 0 {
		for range 1 + rng.IntN(2) {
			q.degrees = append(q.degrees, *randomDegree(rng))
		}
	}
	if !q.count && rng.IntN(2) == 0 {
		for range 1 + rng.IntN(3) {
			if rng.IntN(3) == 0 {
				q.order = append(q.order, graph.Order{Degree: randomDegree(rng), Desc: rng.IntN(2) == 0})
				continue
			}
			q.order = append(q.order, graph.Order{Field: oFields[rng.IntN(len(oFields))], Desc: rng.IntN(2) == 0})
		}
	}
	if rng.IntN(5) > 0 {
		q.limit = 1 + rng.IntN(8)
	}
	if rng.IntN(6) == 0 {
		q.group = randomGroupBy(rng)
		q.count, q.paths, q.fields, q.degrees, q.order = false, false, nil, nil, nil
	}
	switch rng.IntN(6) {
	case 0:
		degreeOrderQuery(rng, q)
	case 1:
		reachOrderQuery(rng, g, q)
	}
	return q
}

// degreeOrderQuery makes q a query the degree index orders: a whole type
// by one degree (one label, out or in), with no traversal, often a degree
// range on the same degree, sometimes another filter, and a small limit,
// so that paging goes through the index, across to the nodes of degree
// 0, and on.
func degreeOrderQuery(rng *rand.Rand, q *oQuery) {
	d := &graph.Degree{Edge: graph.Labels{oLabels[rng.IntN(len(oLabels))]}, Direction: graph.Direction([]string{"", "out", "in"}[rng.IntN(3)])}
	q.ids, q.search, q.steps, q.count, q.group = nil, "", nil, false, nil
	q.typ = oTypes[rng.IntN(len(oTypes))]
	q.order = []graph.Order{{Degree: d, Desc: rng.IntN(3) > 0}}
	q.where, q.final = nil, nil
	switch rng.IntN(4) {
	case 0:
		f := &oFilter{conds: map[string][]oCond{}, short: map[string]bool{}, deg: d}
		for _, op := range []string{"gte", "gt", "lte", "lt", "eq"} {
			if rng.IntN(3) == 0 {
				f.degOps = append(f.degOps, oCond{op, rng.IntN(4)})
			}
		}
		if len(f.degOps) > 0 {
			q.where = f
			if rng.IntN(3) == 0 {
				q.order = nil // a range as the start set, by ID
			}
		}
	case 1:
		q.final = randomFilter(rng, 0, oFields)
	}
	q.limit = 1 + rng.IntN(4)
	if rng.IntN(4) == 0 { // the whole type grouped by the degree: the index counts it
		q.order, q.where, q.final, q.paths, q.fields, q.degrees = nil, nil, nil, false, nil, nil
		q.group = &graph.GroupBy{Degree: d}
		if rng.IntN(2) == 0 {
			q.group.Buckets = []int64{1, 2 + int64(rng.IntN(3))}
		}
	}
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
		if st.edgeWhere != nil {
			s["edgeWhere"] = st.edgeWhere.json()
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
	if q.degrees != nil {
		ret["degrees"] = q.degrees
	}
	if len(ret) > 0 {
		doc["return"] = ret
	}
	if len(q.order) > 0 {
		doc["orderBy"] = q.order
	}
	if q.group != nil {
		doc["groupBy"] = groupJSON(q.group)
	}
	if q.limit > 0 {
		doc["limit"] = q.limit
	}
	if cursor != "" {
		doc["cursor"] = cursor
	}
	doc["explain"] = true // the oracle counts the plans it checked
	if len(limits) > 0 {
		doc["limits"] = limits
	}
	data, _ := json.Marshal(doc)
	return string(data)
}
