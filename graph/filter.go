package graph

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A filter is a compiled query filter: every condition and every "and"
// filter must hold, at least one "or" filter, and not "not".
type filter struct {
	conds []cond
	and   []*filter
	or    []*filter
	not   *filter
}

type cond struct {
	field string
	op    string
	val   any
	vals  []any   // for "in"
	deg   *Degree // set: the condition is on this degree (field is its key)
}

// A record is what a filter reads its fields from: a node (see
// fieldValue), or an edge, of which a step's edgeWhere reads the
// properties alone (edgeRecord).
type record interface {
	field(name string) (any, bool)
}

func (n *Node) field(name string) (any, bool) { return fieldValue(n, name) }

// A degreeRecord is a record that has degrees: a node the executor reads
// them for (nodeRecord). A record without them has none, so a degree
// condition fails on it.
type degreeRecord interface {
	degree(d *Degree) (any, bool)
}

// degrees returns the degrees f's conditions read, each once (by key).
// props adds to names the properties f reads, each once.
func (f *filter) props(names []string) []string {
	if f == nil {
		return names
	}
	for _, c := range f.conds {
		if c.deg == nil && !metaField(c.field) && !slices.Contains(names, c.field) {
			names = append(names, c.field)
		}
	}
	for _, g := range f.and {
		names = g.props(names)
	}
	for _, g := range f.or {
		names = g.props(names)
	}
	return f.not.props(names)
}

// metaField reports whether a node's field is one of its own (fieldValue)
// rather than a property.
func metaField(name string) bool {
	switch name {
	case "id", "type", "createdAt", "updatedAt", "revision":
		return true
	}
	return false
}

func (f *filter) degrees() []*Degree {
	if f == nil {
		return nil
	}
	var out []*Degree
	add := func(d *Degree) {
		for _, e := range out {
			if e.Key() == d.Key() {
				return
			}
		}
		out = append(out, d)
	}
	for _, c := range f.conds {
		if c.deg != nil {
			add(c.deg)
		}
	}
	for _, g := range append(append(slices.Clone(f.and), f.or...), f.not) {
		for _, d := range g.degrees() {
			add(d)
		}
	}
	return out
}

// An edgeRecord is an edge as an edge filter reads it: its fields are its
// properties.
type edgeRecord struct{ e *Edge }

func (r edgeRecord) field(name string) (any, bool) {
	v, ok := r.e.Properties[name]
	return v, ok && v != nil
}

// match reports whether n passes f (a nil filter passes everything).
func (f *filter) match(n record) bool {
	if f == nil {
		return true
	}
	for _, c := range f.conds {
		if !c.match(n) {
			return false
		}
	}
	for _, g := range f.and {
		if !g.match(n) {
			return false
		}
	}
	if len(f.or) > 0 {
		any := false
		for _, g := range f.or {
			if g.match(n) {
				any = true
				break
			}
		}
		if !any {
			return false
		}
	}
	return f.not == nil || !f.not.match(n)
}

// fieldValue returns a node's field and whether it is present.
func fieldValue(n *Node, field string) (any, bool) {
	switch field {
	case "id":
		return string(n.ID), true
	case "type":
		return n.Type, true
	case "createdAt":
		return n.CreatedAt, true
	case "updatedAt":
		return n.UpdatedAt, true
	case "revision":
		return json.Number(formatInt(n.Revision)), true
	}
	v, ok := n.Properties[field]
	return v, ok && v != nil
}

func (c cond) match(n record) bool {
	var v any
	var present bool
	if c.deg == nil {
		v, present = n.field(c.field)
	} else if dr, ok := n.(degreeRecord); ok {
		v, present = dr.degree(c.deg)
	}
	switch c.op {
	case "exists":
		want, _ := c.val.(bool)
		return present == want
	case "ne": // the negation of eq, which on an array looks for an element
		return !present || !(cond{field: c.field, op: "eq", val: c.val, deg: c.deg}).match(n)
	}
	if !present {
		return false
	}
	switch c.op {
	case "eq":
		if arr, ok := v.([]any); ok { // an array field equals a value it holds
			for _, e := range arr {
				if equalValues(e, c.val) {
					return true
				}
			}
			return false
		}
		return equalValues(v, c.val)
	case "in":
		for _, want := range c.vals {
			if (cond{field: c.field, op: "eq", val: want, deg: c.deg}).match(n) {
				return true
			}
		}
		return false
	case "lt", "lte", "gt", "gte":
		cmp, ok := compareValues(v, c.val)
		if !ok {
			return false
		}
		switch c.op {
		case "lt":
			return cmp < 0
		case "lte":
			return cmp <= 0
		case "gt":
			return cmp > 0
		}
		return cmp >= 0
	case "contains":
		if arr, ok := v.([]any); ok {
			for _, e := range arr {
				if equalValues(e, c.val) {
					return true
				}
			}
			return false
		}
		s, ok1 := v.(string)
		sub, ok2 := c.val.(string)
		return ok1 && ok2 && strings.Contains(strings.ToLower(s), strings.ToLower(sub))
	case "prefix":
		s, ok1 := v.(string)
		p, ok2 := c.val.(string)
		return ok1 && ok2 && strings.HasPrefix(strings.ToLower(s), strings.ToLower(p))
	}
	return false
}

// equalValues compares JSON values; numbers compare numerically, times as instants.
func equalValues(a, b any) bool {
	if t, ok := a.(time.Time); ok {
		s, ok := b.(string)
		return ok && t.Equal(parseTime(s))
	}
	fa, aNum := toFloat(a)
	fb, bNum := toFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	switch x := a.(type) {
	case string, bool, nil:
		return a == b
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValues(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !equalValues(v, y[k]) {
				return false
			}
		}
		return true
	}
	return false
}

// compareValues orders two numbers, two strings or a time and an RFC 3339
// string; ok is false for values of different kinds.
func compareValues(a, b any) (int, bool) {
	if t, ok := a.(time.Time); ok {
		s, ok := b.(string)
		bt := parseTime(s)
		if !ok || bt.IsZero() {
			return 0, false
		}
		return t.Compare(bt), true
	}
	if fa, ok := toFloat(a); ok {
		fb, ok := toFloat(b)
		if !ok || math.IsNaN(fa) || math.IsNaN(fb) {
			return 0, false
		}
		switch {
		case fa < fb:
			return -1, true
		case fa > fb:
			return 1, true
		}
		return 0, true
	}
	sa, ok1 := a.(string)
	sb, ok2 := b.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(sa, sb), true
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

func formatInt(n int64) string { return strconv.FormatInt(n, 10) }
