package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// A GroupBy groups a query's results by one key and counts each group:
// a field (type, or a property), or a degree, exact or in buckets. A
// node whose field holds an array counts once in the group of each
// distinct element; a node with no value (missing, null, an empty array)
// counts in the group whose key is null.
//
// Groups come in pages of the query's limit, by count (most first) or by
// key (values in index order: false, true, numbers, strings, then
// objects; null last), ties by key; the result's count is the number of
// groups. Grouping needs every result, so a bound that stops the work
// returns no group, as an orderBy does.
type GroupBy struct {
	Field  string  `json:"field,omitempty"`
	Degree *Degree `json:"degree,omitempty"`
	// Buckets, with Degree, are ascending lower bounds: a node's group is
	// the largest bound at or below its degree (0 below the first).
	Buckets []int64 `json:"buckets,omitempty"`
	// Order is count (the default) or key.
	Order string `json:"order,omitempty"`
	// Desc reverses the order; its default is true for count, false for
	// key. Null keys stay last.
	Desc *bool `json:"desc,omitempty"`
}

// A Group is one group of a grouped query: its key and how many results
// it holds.
type Group struct {
	Key   any   `json:"key"`
	Count int64 `json:"count"`
}

// desc reports whether the groups are ordered from the largest down.
func (g *GroupBy) desc() bool {
	if g.Desc != nil {
		return *g.Desc
	}
	return g.Order != "key"
}

// checkGroupBy checks a query's groupBy against the model and the rest of
// the query.
func (v *checker) checkGroupBy(q *Query, scope []string) {
	g := q.GroupBy
	switch {
	case (g.Field == "") == (g.Degree == nil):
		v.add("/groupBy", "give exactly one of: field (type or a property), degree")
	case g.Degree != nil:
		v.degree("/groupBy/degree", g.Degree)
	default:
		v.field("/groupBy/field", g.Field, scope, false)
	}
	if len(g.Buckets) > 0 && g.Degree == nil {
		v.add("/groupBy/buckets", "buckets group degrees: set degree, or drop buckets")
	}
	for i := 1; i < len(g.Buckets); i++ {
		if g.Buckets[i] <= g.Buckets[i-1] {
			v.add(fmt.Sprintf("/groupBy/buckets/%d", i), fmt.Sprintf("bounds must increase: %d is not above %d", g.Buckets[i], g.Buckets[i-1]))
		}
	}
	if g.Order != "" && g.Order != "count" && g.Order != "key" {
		v.add("/groupBy/order", fmt.Sprintf("order %q; write count or key", g.Order))
	}
	if len(q.OrderBy) > 0 {
		v.add("/orderBy", "groupBy orders the groups (groupBy.order: count or key): drop orderBy")
	}
	if !q.Return.isZero() {
		v.add("/return", "groupBy returns groups ({key, count}) and their number, not nodes: drop return")
	}
}

func (r Return) isZero() bool {
	return len(r.Fields) == 0 && len(r.Degrees) == 0 && !r.Paths && !r.Count && !r.EdgeProperties
}

// groupCursor continues a grouped query after the group with encoded key
// K (base64) and count N.
type groupCursor struct {
	K string `json:"k"`
	N int64  `json:"n"`
}

// A group key is encoded so that byte order is key order: a scalar as
// EncodeIndexValue encodes it, an object or array as tagJSON and its
// JSON; "" is the null key, which the order puts last.
const tagJSON = 0x06

// encodeKey encodes one group key value.
func encodeKey(v any) string {
	if t, ok := v.(time.Time); ok {
		v = t.UTC().Format(time.RFC3339Nano)
	}
	if v == nil {
		return ""
	}
	if b, ok := EncodeIndexValue(v); ok {
		return string(b)
	}
	data, _ := json.Marshal(v)
	return string(append([]byte{tagJSON}, data...))
}

// decodeKey returns the value a key encodes, as a group reports it.
func decodeKey(k string) any {
	if k == "" {
		return nil
	}
	switch k[0] {
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagNumber:
		bits := binary.BigEndian.Uint64([]byte(k[1:9]))
		if bits&(1<<63) != 0 {
			bits ^= 1 << 63
		} else {
			bits = ^bits
		}
		f := math.Float64frombits(bits)
		if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
	case tagString:
		s := []byte(k[1 : len(k)-2])
		return string(bytes.ReplaceAll(s, []byte{0, 0xff}, []byte{0}))
	}
	return json.RawMessage(k[1:])
}

// groupKeys returns the encoded keys of a node's field: one per distinct
// element of an array, the null key for no value.
func groupKeys(n *Node, field string) []string {
	v, ok := fieldValue(n, field)
	if !ok {
		return []string{""}
	}
	arr, isArr := v.([]any)
	if !isArr {
		return []string{encodeKey(v)}
	}
	var keys []string
	for _, e := range arr {
		if k := encodeKey(e); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return []string{""}
	}
	return keys
}

// bucket returns the key of degree d: d itself, or its bucket's bound.
func (g *GroupBy) bucket(d int64) int64 {
	if len(g.Buckets) == 0 {
		return d
	}
	i, found := slices.BinarySearch(g.Buckets, d)
	switch {
	case found:
		return g.Buckets[i]
	case i == 0:
		return 0
	}
	return g.Buckets[i-1]
}

// compareGroups orders groups as g says, ties by key; the null key is
// last whatever the direction.
func (g *GroupBy) compareGroups(ka string, na int64, kb string, nb int64) int {
	if g.Order != "key" {
		c := cmp.Compare(na, nb)
		if g.desc() {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	switch {
	case ka == kb:
		return 0
	case ka == "":
		return 1
	case kb == "":
		return -1
	}
	c := cmp.Compare(ka, kb)
	if g.Order == "key" && g.desc() {
		c = -c
	}
	return c
}

// group answers a grouped query: it collects every result, reads each
// one's key (its degree from the edge summaries, its type through a
// NodeTyper, a property from the node), counts the groups and returns a
// page of them.
func (ex *executor) group(res *QueryResult, src *source, steps []Step, cur queryCursor, fp string) error {
	q, g := ex.q, ex.q.GroupBy
	var after *groupCursor
	if q.Cursor != "" {
		if cur.G == nil || cur.At != (startPos{}) || cur.N != 0 || cur.Rest || cur.ID != "" || len(cur.After) > 0 || cur.Chunk != 0 {
			return errBadCursor("not a cursor of groups")
		}
		if _, err := base64.RawURLEncoding.DecodeString(cur.G.K); err != nil {
			return errBadCursor("group key is not base64")
		}
		after = cur.G
	}
	counts, ok, err := ex.groupCounts(src, steps)
	if err != nil {
		return err
	}
	if !ok {
		ex.truncated(res)
		res.note(fmt.Sprintf("groupBy needs every result, and the %s limit stopped the work before they were all found, so no group is returned: a partial count is not the count. Raise limits.maxVisited or limits.timeoutMs, or narrow the query.", res.Reason))
		if q.Cursor != "" {
			res.Cursor = q.Cursor
			res.note("Call again with the same cursor to retry.")
		}
		return nil
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return g.compareGroups(a, counts[a], b, counts[b]) })
	total := len(keys)
	res.Count = &total
	if after != nil {
		k, _ := base64.RawURLEncoding.DecodeString(after.K)
		i, _ := slices.BinarySearchFunc(keys, string(k), func(e, t string) int { return g.compareGroups(e, counts[e], t, after.N) })
		for i < len(keys) && keys[i] == string(k) {
			i++
		}
		keys = keys[i:]
	}
	limit := ex.pageLimit(res)
	budget := res.Limits.MaxBytes - 2048 // room for the envelope
	used := 0
	for i, k := range keys {
		gr := Group{Key: decodeKey(k), Count: counts[k]}
		size := jsonSize(gr)
		if i == limit || used+size > budget {
			if i == 0 {
				return fmt.Errorf("a group alone takes %d bytes, above the %d that limits.maxBytes leaves for results: %w", size, budget, ErrInvalid)
			}
			if i < limit {
				res.Truncated, res.Reason = true, ReasonBytes
				res.note("The page reached limits.maxBytes; continue with the cursor.")
			}
			last := keys[i-1]
			res.Cursor = encodeCursor(ex.s, queryCursor{F: fp, G: &groupCursor{K: base64.RawURLEncoding.EncodeToString([]byte(last)), N: counts[last]}})
			break
		}
		used += size
		res.Groups = append(res.Groups, gr)
	}
	if res.Groups == nil {
		res.Groups = []Group{}
	}
	return nil
}

// groupCounts counts the results per group key; ok is false when a bound
// stopped the work first.
func (ex *executor) groupCounts(src *source, steps []Step) (map[string]int64, bool, error) {
	g := ex.q.GroupBy
	if n, ok, err := ex.groupByTypeStats(steps); err != nil || ok {
		return n, ok, err
	}
	if n, done, ok, err := ex.groupByIndex(steps); err != nil || done {
		return n, ok, err
	}
	if n, done, ok, err := ex.groupByDegreeIndex(steps); err != nil || done {
		return n, ok, err
	}
	c, err := ex.collect(src, queryCursor{}, steps)
	if err != nil {
		return nil, false, err
	}
	if !c.complete {
		return nil, false, nil
	}
	counts := map[string]int64{}
	for i := 0; i < len(c.ids); i += degreesChunk {
		chunk := c.ids[i:min(i+degreesChunk, len(c.ids))]
		switch {
		case g.Degree != nil:
			if err := ex.readDegrees(chunk, []*Degree{g.Degree}); err != nil {
				return nil, false, err
			}
			for _, id := range chunk {
				counts[encodeKey(g.bucket(ex.degs[degreeKey{id, g.Degree.Key()}]))]++
			}
			continue
		case g.Field == "type":
			if nt, isTyper := ex.s.(NodeTyper); isTyper {
				if err := ex.readTypes(nt, c, chunk); err != nil {
					return nil, false, err
				}
			}
		}
		var unread []ID
		for _, id := range chunk {
			if c.gkeys[id] == nil {
				unread = append(unread, id)
			}
		}
		nodes, err := ex.fetchWith(unread, ex.q.readProps(), func(*Node) bool { return true }, -1)
		if err != nil {
			return nil, false, err
		}
		if ex.cut {
			return nil, false, nil
		}
		for _, n := range nodes {
			c.gkeys[n.ID] = groupKeys(n, g.Field)
		}
		for _, id := range chunk {
			for _, k := range c.gkeys[id] { // none for a node deleted since it was found
				counts[k]++
			}
		}
	}
	return counts, true, nil
}

// readTypes reads the types of the nodes of chunk whose key is not known
// yet, without their properties.
func (ex *executor) readTypes(nt NodeTyper, c *collection, chunk []ID) error {
	var unread []ID
	for _, id := range chunk {
		if c.gkeys[id] == nil {
			unread = append(unread, id)
		}
	}
	if len(unread) == 0 {
		return nil
	}
	// Like fetchWith, it reads for nodes already paid for.
	types, err := nt.NodeTypes(context.WithoutCancel(ex.b.ctx), unread)
	if err != nil {
		return err
	}
	for i, id := range unread {
		if types[i] != "" {
			c.gkeys[id] = []string{encodeKey(types[i])}
		} else {
			c.gkeys[id] = []string{} // deleted since it was found
		}
	}
	return nil
}

// groupByTypeStats answers a grouping by type of a whole type from the
// store's counts: one group.
func (ex *executor) groupByTypeStats(steps []Step) (map[string]int64, bool, error) {
	q := ex.q
	if q.GroupBy.Field != "type" || len(steps) > 0 || q.where != nil || q.From.Type == "" || q.From.Search != "" || q.From.where != nil {
		return nil, false, nil
	}
	st, err := ex.storeStats()
	if err != nil {
		return nil, false, err
	}
	ex.b.spend(1)
	counts := map[string]int64{}
	if n := st.NodeTypes[q.From.Type]; n > 0 {
		counts[encodeKey(q.From.Type)] = n
	}
	return counts, true, nil
}

// countIndexed answers the count of a type's nodes from the store's
// counts (Stats), and the count of those whose indexed property equals a
// value, or one of several, from the index (Lookup), reading no node. It
// reports false when the query is not of that shape; complete is false
// when the work bound stopped it (n is then a lower bound).
func (ex *executor) countIndexed(steps []Step) (n int, ok, complete bool, err error) {
	q, b := ex.q, ex.b
	if !q.Return.Count || q.GroupBy != nil || len(steps) > 0 || q.where != nil || q.From.Type == "" || q.From.Search != "" {
		return 0, false, false, nil
	}
	f := q.From.where
	if f == nil {
		st, err := ex.storeStats()
		if err != nil {
			return 0, false, false, ignoreDeadline(err)
		}
		b.spend(1)
		return int(st.NodeTypes[q.From.Type]), true, true, nil
	}
	if len(f.conds) != 1 || len(f.and) > 0 || len(f.or) > 0 || f.not != nil {
		return 0, false, false, nil
	}
	c := f.conds[0]
	vals := []any{c.val}
	if c.op == "in" {
		vals = c.vals
	}
	if c.deg != nil || c.op != "eq" && c.op != "in" || len(vals) == 0 || !ex.typeIndexed()(c.field) {
		return 0, false, false, nil
	}
	for _, v := range vals {
		if _, enc := EncodeIndexValue(v); !enc || v == nil {
			return 0, false, false, nil // the index and the filter may differ: count the nodes
		}
	}
	var seen map[ID]bool // a node is listed once per value it holds
	if len(vals) > 1 {
		seen = map[ID]bool{}
	}
	for _, v := range vals {
		iq := IndexQuery{Type: q.From.Type, Property: c.field, Eq: v, Page: Page{Limit: MaxPageSize}}
		for {
			page, err := ex.s.Lookup(b.ctx, iq)
			if err != nil {
				if ignoreDeadline(err) == nil {
					b.stop(ReasonDeadline)
					return n, true, false, nil
				}
				return 0, false, false, err
			}
			if !b.spend(len(page.IDs)) {
				return n, true, false, nil
			}
			for _, id := range page.IDs {
				if seen == nil || !seen[id] {
					n++
					if seen != nil {
						seen[id] = true
					}
				}
			}
			if page.Next == "" {
				break
			}
			iq.After = page.Next
		}
	}
	return n, true, true, nil
}

// groupByIndex answers a grouping of a whole type by an indexed property
// from the index's entries (IndexScanner), reading no node: each entry
// counts in its value's group, and the type's nodes with no entry in the
// null group. It applies only where the model says the property holds
// scalars or arrays of them: objects have no index entries. done is false
// when it does not apply; ok is false when a bound stopped it.
func (ex *executor) groupByIndex(steps []Step) (counts map[string]int64, done, ok bool, err error) {
	q, b := ex.q, ex.b
	field := q.GroupBy.Field
	sc, isScanner := ex.s.(IndexScanner)
	if !isScanner || field == "" || slices.Contains(metaFields, field) || len(steps) > 0 || q.where != nil ||
		q.From.Type == "" || q.From.Search != "" || q.From.where != nil || !ex.typeIndexed()(field) {
		return nil, false, false, nil
	}
	nt, _ := ex.s.Model().Node(q.From.Type)
	scalar, arrays := propertyKind(nt.Schema, field)
	if !scalar {
		return nil, false, false, nil
	}
	st, err := ex.storeStats()
	if err != nil {
		return nil, false, false, ignoreDeadline(err)
	}
	b.spend(1)
	counts = map[string]int64{}
	var ids map[ID]struct{} // nodes with an entry, when a node may have several
	if arrays {
		ids = map[ID]struct{}{}
	}
	entries, cut := int64(0), false
	err = sc.ScanIndex(b.ctx, q.From.Type, field, func(v []byte, id ID) bool {
		if !b.spend(1) {
			cut = true
			return false
		}
		k := string(v)
		if v[0] == tagNull {
			k = ""
		}
		counts[k]++
		entries++
		if ids != nil {
			ids[id] = struct{}{}
		}
		return true
	})
	switch {
	case err != nil && ignoreDeadline(err) == nil:
		b.stop(ReasonDeadline)
		return nil, true, false, nil
	case err != nil:
		return nil, true, false, err
	case cut:
		return nil, true, false, nil
	}
	if ids != nil {
		entries = int64(len(ids))
	}
	if none := st.NodeTypes[q.From.Type] - entries; none > 0 {
		counts[""] += none
	}
	return counts, true, true, nil
}

// propertyKind reads a node type's schema: scalar is true when property
// holds scalars (by its type, or its enum or const) or arrays of them,
// arrays when it may hold arrays.
func propertyKind(typeSchema json.RawMessage, property string) (scalar, arrays bool) {
	var s struct {
		Properties map[string]*kindSchema `json:"properties"`
	}
	if json.Unmarshal(typeSchema, &s) != nil || s.Properties[property] == nil {
		return false, false
	}
	p := s.Properties[property]
	scalar, arrays = p.kind()
	if arrays {
		if p.Items == nil {
			return false, false
		}
		if itemScalar, nested := p.Items.kind(); !itemScalar || nested {
			return false, false
		}
	}
	return scalar, arrays
}

// A kindSchema is what propertyKind reads of a property's schema.
type kindSchema struct {
	Type  any         `json:"type"`
	Enum  []any       `json:"enum"`
	Const *any        `json:"const"`
	Items *kindSchema `json:"items"`
}

// kind reports whether the schema admits only scalars and arrays, and
// whether arrays.
func (k *kindSchema) kind() (scalar, arrays bool) {
	var ts []string
	switch x := k.Type.(type) {
	case string:
		ts = []string{x}
	case []any:
		for _, e := range x {
			s, _ := e.(string)
			ts = append(ts, s)
		}
	case nil: // no type: an enum or a const of scalars says it
		vals := k.Enum
		if k.Const != nil {
			vals = append(vals, *k.Const)
		}
		for _, v := range vals {
			switch v.(type) {
			case map[string]any, []any:
				return false, false
			}
		}
		return len(vals) > 0, false
	}
	for _, t := range ts {
		switch t {
		case "string", "number", "integer", "boolean", "null":
		case "array":
			arrays = true
		default:
			return false, false
		}
	}
	return len(ts) > 0, arrays
}
