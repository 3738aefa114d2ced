package graph

import (
	"bytes"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// Index ranges: which stretches of a property index (values as
// EncodeIndexValue orders them) can hold the scalar values that pass a
// filter's conditions on that property. A walk of the index reads only
// those stretches; the filter itself still decides each node.

// A valueRange is a stretch of encoded values: lo <= v < hi, a nil end
// open. Bounds are made so that no encoded value is a proper prefix of
// one (see successor), so comparing an index key with a bound compares
// its value.
type valueRange struct{ lo, hi []byte }

// The encoded values of each kind.
var (
	numberRange = valueRange{[]byte{tagNumber}, []byte{tagString}}
	stringRange = valueRange{[]byte{tagString}, []byte{tagString + 1}}
	// scalarRange holds every value an order walks: null is a missing
	// value to orderBy, which lists it last.
	scalarRange = valueRange{lo: []byte{tagFalse}}
)

// successor returns the least value bound above enc and below every
// encoded value above enc.
func successor(enc []byte) []byte { return PrefixEnd(enc) }

func point(enc []byte) valueRange { return valueRange{enc, successor(enc)} }

func (r valueRange) empty() bool { return r.lo != nil && r.hi != nil && bytes.Compare(r.lo, r.hi) >= 0 }

// contains reports whether the encoded value v lies in r.
func (r valueRange) contains(v []byte) bool {
	return (r.lo == nil || bytes.Compare(v, r.lo) >= 0) && (r.hi == nil || bytes.Compare(v, r.hi) < 0)
}

// intersect returns the stretches both a and b hold; each list is sorted
// and disjoint, and so is the result.
func intersect(a, b []valueRange) []valueRange {
	var out []valueRange
	for _, x := range a {
		for _, y := range b {
			r := x
			if y.lo != nil && (r.lo == nil || bytes.Compare(y.lo, r.lo) > 0) {
				r.lo = y.lo
			}
			if y.hi != nil && (r.hi == nil || bytes.Compare(y.hi, r.hi) < 0) {
				r.hi = y.hi
			}
			if !r.empty() {
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(x, y valueRange) int {
		if x.lo == nil || y.lo == nil {
			return boolCmp(x.lo != nil, y.lo != nil)
		}
		return bytes.Compare(x.lo, y.lo)
	})
	return out
}

func boolCmp(a, b bool) int { return btoi(a) - btoi(b) }

// condRanges returns the stretches that hold every scalar value (null
// aside) on which c holds, or ok false when c does not narrow them (ne,
// contains, exists). Each list is sorted and disjoint.
func condRanges(c cond) (rs []valueRange, ok bool) {
	enc := func(v any) []byte {
		if v == nil {
			return nil // eq null, or a comparison with null, holds on no value
		}
		b, _ := EncodeIndexValue(v)
		return b // nil: an array or an object, which no scalar equals
	}
	switch c.op {
	case "eq":
		if b := enc(c.val); b != nil {
			return []valueRange{point(b)}, true
		}
		return nil, true
	case "in":
		for _, v := range c.vals {
			if b := enc(v); b != nil {
				rs = append(rs, point(b))
			}
		}
		slices.SortFunc(rs, func(x, y valueRange) int { return bytes.Compare(x.lo, y.lo) })
		return slices.CompactFunc(rs, func(x, y valueRange) bool { return bytes.Equal(x.lo, y.lo) }), true
	case "lt", "lte", "gt", "gte":
		// Comparisons hold between two numbers or two strings only.
		b := enc(c.val)
		var kind valueRange
		switch {
		case b == nil:
			return nil, true
		case b[0] == tagNumber:
			kind = numberRange
		case b[0] == tagString:
			kind = stringRange
		default:
			return nil, true
		}
		switch c.op {
		case "lt":
			kind.hi = b
		case "lte":
			kind.hi = successor(b)
		case "gt":
			kind.lo = successor(b)
		default:
			kind.lo = b
		}
		return []valueRange{kind}, true
	case "prefix":
		p, isStr := c.val.(string)
		if !isStr {
			return nil, true
		}
		for _, v := range foldPrefixes(p, maxPrefixRanges) {
			b, _ := EncodeIndexValue(v)
			b = b[:len(b)-2] // the string's bytes without the terminator
			rs = append(rs, valueRange{b, PrefixEnd(b)})
		}
		slices.SortFunc(rs, func(x, y valueRange) int { return bytes.Compare(x.lo, y.lo) })
		return rs, true
	}
	return nil, false
}

// maxPrefixRanges caps the stretches a prefix condition reads: one per
// way of writing the prefix's first letters in upper and lower case.
const maxPrefixRanges = 16

// foldPrefixes returns strings that every string s for which the prefix
// condition holds (strings.HasPrefix(strings.ToLower(s),
// strings.ToLower(p))) starts with: each way to write the first runes of
// p that strings.ToLower maps to ToLower(p)'s, as many runes as keep
// them at most max (at least one rune's worth). With every rune of p
// covered, the strings are exactly the prefixes that match; with fewer,
// a superset, which the condition then narrows.
func foldPrefixes(p string, max int) []string {
	out := []string{""}
	for _, r := range strings.ToLower(p) {
		pre := lowerPreimage(r)
		if len(out)*len(pre) > max && out[0] != "" {
			break
		}
		next := make([]string, 0, len(out)*len(pre))
		for _, s := range out {
			for _, x := range pre {
				next = append(next, s+string(x))
			}
		}
		out = next
	}
	return out
}

// lowerPreimage returns the runes unicode.ToLower maps to r (r itself
// among them when r is lower case): those of r's case-folding orbit, and
// the few outside it (İ, U+0130, lowers to i but does not fold to it).
func lowerPreimage(r rune) []rune {
	var out []rune
	if unicode.ToLower(r) == r {
		out = append(out, r)
	}
	for x := unicode.SimpleFold(r); x != r; x = unicode.SimpleFold(x) {
		if unicode.ToLower(x) == r {
			out = append(out, x)
		}
	}
	out = append(out, lowerOutsideFold()[r]...)
	slices.Sort(out)
	return out
}

// lowerOutsideFold maps a lower-case rune to the runes outside its
// case-folding orbit that unicode.ToLower maps to it, read from the case
// table ToLower itself uses.
var lowerOutsideFold = sync.OnceValue(func() map[rune][]rune {
	m := map[rune][]rune{}
	for _, cr := range unicode.CaseRanges {
		for x := rune(cr.Lo); x <= rune(cr.Hi); x++ {
			l := unicode.ToLower(x)
			if l == x {
				continue
			}
			inOrbit := false
			for y := unicode.SimpleFold(l); y != l; y = unicode.SimpleFold(y) {
				inOrbit = inOrbit || y == x
			}
			if !inOrbit {
				m[l] = append(m[l], x)
			}
		}
	}
	return m
})
