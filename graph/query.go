package graph

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lore-dev/lore/schema"
)

// A Query is Lore's JSON query language: read-only by construction (it has
// no verb that writes). Its JSON Schema is QuerySchema.
//
//	{
//	  "from":     {"ids": ["service/billing"]} | {"type": "Service", "where": {…}} | {"search": "billing", "type": "Service"},
//	  "traverse": [{"edge": "dependsOn", "direction": "in", "hops": [1, 3], "type": "Service", "where": {…}, "edgeWhere": {…}}],
//	  "where":    {"lifecycle": "production"},
//	  "return":   {"fields": ["id", "type", "name"], "degrees": [{"edge": "dependsOn", "direction": "in"}], "paths": false, "count": false},
//	  "orderBy":  [{"field": "name", "desc": false}, {"degree": {"edge": "dependsOn", "direction": "in"}, "desc": true}],
//	  "groupBy":  {"field": "lifecycle", "order": "count"} | {"degree": {"edge": "dependsOn", "direction": "in"}, "buckets": [1, 10, 100]},
//	  "limit": 50, "cursor": "…",
//	  "limits": {"timeoutMs": 2000, "maxVisited": 100000},
//	  "explain": false
//	}
//
// A filter is {field: value} (equals) or {field: {op: value}} with op one of
// eq, ne, lt, lte, gt, gte, in, contains, prefix, exists; conditions in one
// object must all hold, and "and", "or" and "not" combine filters. Fields
// are id, type, createdAt, updatedAt, revision and property names; in a
// step's edgeWhere, which filters the edges the step follows, they are the
// names of the edges' properties.
//
// A node's degree is a field too: {"degree": {"edge": "dependsOn",
// "direction": "in", "gte": 100}} in a node filter (with eq, ne, lt, lte,
// gt, gte), {"degree": {…}} in place of "field" in an orderBy entry, and
// return.degrees, which adds to each result "degrees": {"dependsOn:in":
// 12}. A Degree says which edges count.
//
// A GroupBy returns groups of the results, each with its count, in
// place of the results themselves.
//
// A traversal step reaches the nodes whose shortest distance from some of
// its start nodes lies within its hops (step.go says it exactly); Run and
// QueryResult say how results are bounded and paged.
type Query struct {
	From     From            `json:"from"`
	Traverse []Step          `json:"traverse,omitempty"`
	Where    json.RawMessage `json:"where,omitempty"`
	Return   Return          `json:"return,omitzero"`
	OrderBy  []Order         `json:"orderBy,omitempty"`
	GroupBy  *GroupBy        `json:"groupBy,omitempty"`
	Limit    int             `json:"limit,omitempty"`
	Cursor   string          `json:"cursor,omitempty"`
	Limits   Limits          `json:"limits,omitzero"`
	// Explain asks for the result's Plan.
	Explain bool `json:"explain,omitempty"`

	where *filter
}

// From chooses the start set.
type From struct {
	IDs    []ID            `json:"ids,omitempty"`
	Type   string          `json:"type,omitempty"`
	Where  json.RawMessage `json:"where,omitempty"`
	Search string          `json:"search,omitempty"`

	where *filter
}

// A Step follows edges from the current nodes.
type Step struct {
	Edge      Labels          `json:"edge,omitempty"`
	Direction Direction       `json:"direction,omitempty"`
	Hops      Hops            `json:"hops,omitzero"`
	Type      string          `json:"type,omitempty"`
	Where     json.RawMessage `json:"where,omitempty"`
	// EdgeWhere filters the edges the step follows by their properties:
	// on every hop, an edge that fails it is not followed. Empty: every
	// edge with the step's labels.
	EdgeWhere json.RawMessage `json:"edgeWhere,omitempty"`

	where, edgeWhere *filter
}

// Labels is one edge label or several.
type Labels []string

// UnmarshalJSON accepts a string or an array of strings.
func (l *Labels) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*l = Labels{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// Hops is a hop range: [Min, Max] edges from the step's start.
type Hops struct{ Min, Max int }

// UnmarshalJSON accepts n (from 1 to n hops) or [min, max].
func (h *Hops) UnmarshalJSON(data []byte) error {
	var n int
	if err := json.Unmarshal(data, &n); err == nil {
		*h = Hops{1, n}
		return nil
	}
	var r [2]int
	if err := json.Unmarshal(data, &r); err != nil {
		return err
	}
	*h = Hops{r[0], r[1]}
	return nil
}

// MarshalJSON writes [min, max].
func (h Hops) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{h.Min, h.Max}) }

// Return says what a query returns.
type Return struct {
	Fields []string `json:"fields,omitempty"`
	// Degrees adds to each result its degrees, by Degree.Key: "degrees":
	// {"dependsOn:in": 12}.
	Degrees []Degree `json:"degrees,omitempty"`
	Paths   bool     `json:"paths,omitempty"`
	Count   bool     `json:"count,omitempty"`
	// EdgeProperties asks (with Paths) for the properties of the paths'
	// edges; the surface that serves the query reads them.
	EdgeProperties bool `json:"edgeProperties,omitempty"`
}

// An Order sorts results by a field or by a degree (one of the two).
type Order struct {
	Field  string  `json:"field,omitempty"`
	Degree *Degree `json:"degree,omitempty"`
	Desc   bool    `json:"desc,omitempty"`
}

// A Degree names a node's degree: the number of its edges with one of
// the labels in Edge (empty: every label) in Direction (empty: out). Both
// counts out-edges plus in-edges, so a self-loop counts twice, as
// DegreeCounter says.
type Degree struct {
	Edge      Labels    `json:"edge,omitempty"`
	Direction Direction `json:"direction,omitempty"`
}

// Key names the degree in a result's degrees: the labels joined by
// commas ("*" for every label), a colon and the direction, as in
// "dependsOn:in".
func (d Degree) Key() string {
	l := "*"
	if len(d.Edge) > 0 {
		l = strings.Join(d.Edge, ",")
	}
	return l + ":" + string(cmpDir(d.Direction))
}

func cmpDir(d Direction) Direction {
	if d == "" {
		return Out
	}
	return d
}

//go:embed query.schema.json
var querySchema []byte

// QuerySchema returns the query language's JSON Schema (2020-12).
func QuerySchema() []byte { return bytes.Clone(querySchema) }

var compiledQuerySchema = sync.OnceValue(func() *jsonschema.Schema { return compileQuerySchema("") })

// compileQuerySchema compiles the query language's schema, or the part of
// it a fragment ("#/$defs/filter") names. The embedded schema compiles, as
// the package's tests show: an error is a bug.
func compileQuerySchema(fragment string) *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(querySchema))
	if err != nil {
		panic(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("lore:query.json", doc); err != nil {
		panic(err)
	}
	return c.MustCompile("lore:query.json" + fragment)
}

// A QueryError lists every problem of an invalid query, each located by a
// JSON pointer into the query and saying what would be valid.
type QueryError struct {
	Violations []schema.Violation
}

func (e *QueryError) Error() string {
	parts := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		parts[i] = v.String()
	}
	return "invalid query: " + strings.Join(parts, "; ")
}

func (e *QueryError) Unwrap() error { return ErrInvalid }

// MaxQueryBytes is the largest query document accepted.
const MaxQueryBytes = 64 << 10

// ParseQuery decodes and validates a query against the language's schema
// and the model: unknown types, labels and fields are errors that name
// their JSON pointer and list what the model has.
func ParseQuery(m *schema.Model, data []byte) (*Query, error) {
	if len(data) > MaxQueryBytes {
		return nil, &QueryError{[]schema.Violation{{Message: fmt.Sprintf("the query is %d bytes; the limit is %d", len(data), MaxQueryBytes)}}}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, &QueryError{[]schema.Violation{{Message: "not JSON: " + err.Error()}}}
	}
	if err := compiledQuerySchema().Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, &QueryError{explain(schema.Flatten(ve))}
		}
		return nil, &QueryError{[]schema.Violation{{Message: err.Error()}}}
	}
	var q Query
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&q); err != nil {
		return nil, &QueryError{[]schema.Violation{{Message: err.Error()}}}
	}
	if err := q.check(m); err != nil {
		return nil, err
	}
	return &q, nil
}

// check validates the query against the model and compiles its filters.
func (q *Query) check(m *schema.Model) error {
	v := &checker{m: m}
	scope := []string(nil) // node types the current nodes may have; nil: any
	f := q.From
	if n := btoi(len(f.IDs) > 0) + btoi(f.Type != "" && f.Search == "") + btoi(f.Search != ""); n != 1 || len(f.IDs) > 0 && (f.Type != "" || len(f.Where) > 0) || f.Search != "" && len(f.Where) > 0 {
		v.add("/from", "give exactly one of: ids; type, with an optional where; search, with an optional type")
		return &QueryError{v.problems}
	}
	switch {
	case q.From.Type != "":
		if v.nodeType("/from/type", q.From.Type) {
			scope = []string{q.From.Type}
		}
		q.From.where = v.filter("/from/where", q.From.Where, fields{nodes: scope})
	case q.From.Search != "":
		if q.From.Type != "" && v.nodeType("/from/type", q.From.Type) {
			scope = []string{q.From.Type}
		}
		if len(queryTerms(q.From.Search)) == 0 {
			v.add("/from/search", "has no words to look for")
		}
	default:
		for i, id := range q.From.IDs {
			if err := id.Check(); err != nil {
				v.add(fmt.Sprintf("/from/ids/%d", i), unwrapMsg(err))
			}
		}
	}
	for i := range q.Traverse {
		st := &q.Traverse[i]
		ptr := fmt.Sprintf("/traverse/%d", i)
		for j, l := range st.Edge {
			if _, ok := m.Edge(l); !ok {
				v.add(fmt.Sprintf("%s/edge", ptr)+edgeIndex(len(st.Edge), j), fmt.Sprintf("unknown edge label %q; the model has %s", l, list(m.EdgeLabels())))
			}
		}
		if st.Hops == (Hops{}) {
			st.Hops = Hops{1, 1}
		}
		if st.Hops.Min > st.Hops.Max {
			v.add(ptr+"/hops", fmt.Sprintf("min %d is above max %d; write [min, max] with min <= max", st.Hops.Min, st.Hops.Max))
		}
		if st.Direction == "" {
			st.Direction = Out
		}
		scope = reachable(m, scope, st)
		if st.Type != "" && v.nodeType(ptr+"/type", st.Type) {
			scope = []string{st.Type}
		}
		st.where = v.filter(ptr+"/where", st.Where, fields{nodes: scope})
		labels := st.Edge
		if len(labels) == 0 {
			labels = m.EdgeLabels()
		}
		st.edgeWhere = v.filter(ptr+"/edgeWhere", st.EdgeWhere, fields{edge: true, edges: labels})
	}
	q.where = v.filter("/where", q.Where, fields{nodes: scope})
	for i, f := range q.Return.Fields {
		v.field(fmt.Sprintf("/return/fields/%d", i), f, scope, true)
	}
	for i := range q.Return.Degrees {
		v.degree(fmt.Sprintf("/return/degrees/%d", i), &q.Return.Degrees[i])
	}
	for i, o := range q.OrderBy {
		ptr := fmt.Sprintf("/orderBy/%d", i)
		switch {
		case (o.Field == "") == (o.Degree == nil):
			v.add(ptr, "give exactly one of: field, degree")
		case o.Degree != nil:
			v.degree(ptr+"/degree", o.Degree)
		default:
			v.field(ptr+"/field", o.Field, scope, false)
		}
	}
	if q.GroupBy != nil {
		v.checkGroupBy(q, scope)
	}
	if q.Return.Count && (q.Return.Paths || len(q.Return.Fields) > 0 || len(q.Return.Degrees) > 0) {
		v.add("/return", "count returns only the number of results; drop fields, degrees and paths, or count")
	}
	if q.Return.EdgeProperties && !q.Return.Paths {
		v.add("/return/edgeProperties", "edgeProperties are the properties of the paths' edges: set paths: true too")
	}
	if len(v.problems) > 0 {
		return &QueryError{v.problems}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// operators lists the filter operators, for error messages.
const operators = "eq, ne, lt, lte, gt, gte, in, contains, prefix and exists"

// explain makes schema violations of a filter say what would be valid, and
// drops the noise of the branch that did not apply.
func explain(vs []schema.Violation) []schema.Violation {
	var out []schema.Violation
	for _, v := range vs {
		if v.Rule == "type" && slices.ContainsFunc(vs, func(w schema.Violation) bool {
			return strings.HasPrefix(w.Pointer, v.Pointer+"/") && w.Rule == "additionalProperties"
		}) {
			continue // an operator object with a bad operator: its own violation says which
		}
		if v.Rule == "additionalProperties" && inFilter(v.Pointer) {
			v.Message = "is not an operator; operators are " + operators
			if strings.HasSuffix(v.Pointer[:strings.LastIndex(v.Pointer, "/")], "/degree") {
				v.Message = "is not a key of a degree filter: edge, direction, eq, ne, lt, lte, gt, gte"
			}
		}
		if v.Rule == "additionalProperties" && strings.HasPrefix(v.Pointer, "/groupBy/") && strings.Count(v.Pointer, "/") == 2 {
			v.Message = "is not a key of groupBy: field, degree, buckets, order, desc"
		}
		out = append(out, v)
	}
	return out
}

// inFilter reports whether ptr points below a field of a filter (a where
// or an edgeWhere), at an operator or deeper.
func inFilter(ptr string) bool {
	i := max(strings.LastIndex(ptr, "/where/"), strings.LastIndex(ptr, "/edgeWhere/"))
	return i >= 0 && strings.Count(ptr[i+1:], "/") >= 2
}

func edgeIndex(n, j int) string {
	if n == 1 {
		return ""
	}
	return "/" + strconv.Itoa(j)
}

// reachable returns the node types a step can reach from scope.
func reachable(m *schema.Model, scope []string, st *Step) []string {
	labels := st.Edge
	if len(labels) == 0 {
		labels = m.EdgeLabels()
	}
	var out []string
	for _, l := range labels {
		et, ok := m.Edge(l)
		if !ok {
			continue
		}
		if st.Direction != In {
			out = append(out, et.To...)
		}
		if st.Direction != Out {
			out = append(out, et.From...)
		}
	}
	if st.Hops.Min == 0 {
		out = append(out, scope...)
		if scope == nil {
			return nil
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type checker struct {
	m        *schema.Model
	problems []schema.Violation
}

func (v *checker) add(ptr, msg string) {
	if len(v.problems) < MaxProblems {
		v.problems = append(v.problems, schema.Violation{Pointer: ptr, Message: msg})
	}
}

func (v *checker) nodeType(ptr, t string) bool {
	if _, ok := v.m.Node(t); !ok {
		v.add(ptr, fmt.Sprintf("unknown node type %q; the model has %s", t, list(v.m.NodeTypeNames())))
		return false
	}
	return true
}

// metaFields are the fields every node has besides its properties.
var metaFields = []string{"id", "type", "createdAt", "updatedAt", "revision"}

// field checks that f names a field of some type in scope.
func (v *checker) field(ptr, f string, scope []string, allowProperties bool) {
	if slices.Contains(metaFields, f) || allowProperties && f == "properties" || v.m == nil {
		return // v.m nil: no model to check against (a migration's filter)
	}
	types := scope
	if types == nil {
		types = v.m.NodeTypeNames()
	}
	var known []string
	for _, t := range types {
		nt, _ := v.m.Node(t)
		if nt == nil {
			continue
		}
		if slices.Contains(nt.Properties, f) {
			return
		}
		known = append(known, nt.Properties...)
	}
	slices.Sort(known)
	known = slices.Compact(known)
	v.add(ptr, fmt.Sprintf("unknown field %q for %s; fields are %s, %s", f, list(types), strings.Join(metaFields, ", "), strings.Join(known, ", ")))
}

// degree checks a degree's labels against the model and sets its default
// direction.
func (v *checker) degree(ptr string, d *Degree) {
	for j, l := range d.Edge {
		if _, ok := v.m.Edge(l); !ok {
			v.add(ptr+"/edge"+edgeIndex(len(d.Edge), j), fmt.Sprintf("unknown edge label %q; the model has %s", l, list(v.m.EdgeLabels())))
		}
	}
	d.Direction = cmpDir(d.Direction)
	if _, err := ParseDirection(string(d.Direction)); err != nil {
		v.add(ptr+"/direction", fmt.Sprintf("direction %q; write out, in or both", d.Direction))
	}
}

// degreeOps are the operators a degree filter takes.
var degreeOps = []string{"eq", "ne", "lt", "lte", "gt", "gte"}

// degreeCond compiles a degree filter, {"edge": …, "direction": …, op:
// n, …}, into one condition per operator.
func (v *checker) degreeCond(ptr string, raw json.RawMessage) []cond {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		v.add(ptr, `a degree filter is an object: {"edge": label or labels, "direction": "out", "in" or "both", and one or more of eq, ne, lt, lte, gt, gte: n}`)
		return nil
	}
	d := &Degree{}
	if e, ok := obj["edge"]; ok && json.Unmarshal(e, &d.Edge) != nil {
		v.add(ptr+"/edge", "an edge label or an array of them")
	}
	if e, ok := obj["direction"]; ok && json.Unmarshal(e, &d.Direction) != nil {
		v.add(ptr+"/direction", "out, in or both")
	}
	v.degree(ptr, d)
	var out []cond
	for _, op := range degreeOps {
		e, ok := obj[op]
		if !ok {
			continue
		}
		var n json.Number
		if json.Unmarshal(e, &n) != nil {
			v.add(ptr+"/"+op, "compare a degree with a number")
			continue
		}
		out = append(out, cond{field: d.Key(), op: op, val: n, deg: d})
	}
	if len(out) == 0 {
		v.add(ptr, "a degree filter needs an operator: eq, ne, lt, lte, gt or gte")
	}
	return out
}

// fields is what a filter's fields name: the fields of nodes of the types
// in nodes (nil: any type), or, for an edge filter, the properties of
// edges with the labels in edges.
type fields struct {
	nodes []string
	edge  bool
	edges []string
}

// edgeField checks that f names a property of an edge with one of labels.
func (v *checker) edgeField(ptr, f string, labels []string) {
	var known []string
	for _, l := range labels {
		et, ok := v.m.Edge(l)
		if !ok {
			continue // reported at the step's edge
		}
		if slices.Contains(et.Properties, f) {
			return
		}
		known = append(known, et.Properties...)
	}
	slices.Sort(known)
	known = slices.Compact(known)
	has := "its properties are " + strings.Join(known, ", ")
	switch {
	case len(labels) == 0:
		has = "the model has no edge labels"
	case len(known) == 0 && len(labels) == 1:
		has = labels[0] + " has no properties"
	case len(known) == 0:
		has = "they have no properties"
	case len(labels) > 1:
		has = "their properties are " + strings.Join(known, ", ")
	}
	v.add(ptr, fmt.Sprintf("unknown edge property %q for %s (an edgeWhere filters edges by their properties); %s", f, list(labels), has))
}

// filter compiles a filter, checking its fields against fs.
func (v *checker) filter(ptr string, raw json.RawMessage, fs fields) *filter {
	if len(raw) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&obj); err != nil {
		v.add(ptr, "a filter is an object of conditions")
		return nil
	}
	f := &filter{}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		val := obj[k]
		kptr := ptr + "/" + escapePointer(k)
		switch k {
		case "and", "or":
			var subs []json.RawMessage
			json.Unmarshal(val, &subs)
			for i, sub := range subs {
				c := v.filter(fmt.Sprintf("%s/%d", kptr, i), sub, fs)
				if k == "and" {
					f.and = append(f.and, c)
				} else {
					f.or = append(f.or, c)
				}
			}
		case "not":
			f.not = v.filter(kptr, val, fs)
		case "degree":
			if fs.edge {
				v.add(kptr, "an edgeWhere filters edges by their properties; filter nodes by degree in a where")
				continue
			}
			f.conds = append(f.conds, v.degreeCond(kptr, val)...)
		default:
			if fs.edge {
				v.edgeField(kptr, k, fs.edges)
				f.conds = append(f.conds, v.condition(kptr, k, val, false)...)
				continue
			}
			v.field(kptr, k, fs.nodes, false)
			f.conds = append(f.conds, v.condition(kptr, k, val, true)...)
		}
	}
	return f
}

// condition compiles the conditions on one field; meta says that field
// names a node's field, so createdAt and updatedAt are its times.
func (v *checker) condition(ptr, field string, raw json.RawMessage, meta bool) []cond {
	var val any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	d.Decode(&val)
	ops, isOps := val.(map[string]any)
	if !isOps {
		return []cond{{field: field, op: "eq", val: val}}
	}
	var out []cond
	names := make([]string, 0, len(ops))
	for op := range ops {
		names = append(names, op)
	}
	slices.Sort(names)
	for _, op := range names {
		c := cond{field: field, op: op, val: ops[op]}
		if op == "in" {
			c.vals, _ = ops[op].([]any)
		}
		if meta && slices.Contains([]string{"createdAt", "updatedAt"}, field) && slices.Contains([]string{"lt", "lte", "gt", "gte", "eq", "ne"}, op) {
			if s, ok := c.val.(string); !ok || parseTime(s).IsZero() {
				v.add(ptr+"/"+op, "compare "+field+" with an RFC 3339 time, such as 2026-01-31T12:00:00Z")
			}
		}
		out = append(out, c)
	}
	return out
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
