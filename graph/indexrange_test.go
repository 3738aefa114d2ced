package graph

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// Every rune is in the preimage of its lower case: a prefix condition's
// index ranges miss no way of writing a letter.
func TestLowerPreimage(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if l := unicode.ToLower(r); !slices.Contains(lowerPreimage(l), r) {
			t.Fatalf("ToLower(%U) = %U, but the preimage of %U is %U", r, l, l, lowerPreimage(l))
		}
	}
}

// A prefix condition holds on a string exactly when the string's encoding
// lies in one of the condition's ranges (when they cover the whole prefix;
// a superset when they cover a part of it).
func TestPrefixRanges(t *testing.T) {
	alphabet := []rune{'a', 'A', 'k', 'K', '\u212a', 's', 'S', '\u017f', 'i', 'I', '\u0130', '\u0131', 'ß', '\u1e9e', 'σ', 'Σ', 'ς', '\x00', 'é', 'É', '\uffff'}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		p, s := word(rng.IntN(4)), word(rng.IntN(6))
		if rng.IntN(2) == 0 && len(p) > 0 {
			s = p + s // the same letters, to hit matches
		}
		rs, _ := condRanges(cond{op: "prefix", val: p})
		enc, _ := EncodeIndexValue(s)
		in := slices.ContainsFunc(rs, func(r valueRange) bool { return r.contains(enc) })
		holds := cond{field: "f", op: "prefix", val: p}.match(&Node{Properties: Props{"f": s}})
		whole := utf8.RuneCountInString(foldPrefixes(p, maxPrefixRanges)[0]) == utf8.RuneCountInString(p)
		if holds && !in || whole && in && !holds {
			t.Fatalf("prefix %q on %q: holds %v, in the ranges %v (%q)", p, s, holds, in, rs)
		}
	}
}

// Comparison ranges hold exactly the values the comparison holds on.
func TestCondRanges(t *testing.T) {
	vals := []any{nil, false, true, json0(-1), json0(0), json0(1.5), json0(2), "", "a", "a\x00", "b", "y", []any{"a"}}
	for _, op := range []string{"eq", "lt", "lte", "gt", "gte", "in", "prefix"} {
		for _, x := range vals {
			c := cond{field: "f", op: op, val: x}
			if op == "in" {
				c.vals = []any{x, "b"}
			}
			rs, ok := condRanges(c)
			if !ok {
				t.Fatalf("%s %v: does not narrow", op, x)
			}
			for _, v := range vals {
				enc, scalar := EncodeIndexValue(v)
				if !scalar || v == nil {
					continue
				}
				in := slices.ContainsFunc(rs, func(r valueRange) bool { return r.contains(enc) })
				if holds := c.match(&Node{Properties: Props{"f": v}}); holds != in {
					t.Errorf("%s %#v on %#v: holds %v, in the ranges %v", op, x, v, holds, in)
				}
			}
			for i := 1; i < len(rs); i++ {
				if bytes.Compare(rs[i-1].hi, rs[i].lo) > 0 {
					t.Errorf("%s %v: ranges overlap or are out of order: %q", op, x, rs)
				}
			}
		}
	}
}

func json0(f float64) json.Number { return json.Number(strconv.FormatFloat(f, 'g', -1, 64)) }
