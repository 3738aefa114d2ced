package graph

import (
	"encoding/json"
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/lore-dev/lore/schema"
)

// DecodeSomeProps decodes the properties named in names out of raw, a JSON
// object (as DecodeProps takes it), and steps over the others without
// decoding them: a filter or a sort key reads a few properties of many
// nodes, and decoding whole records cost a third of such a read. Where a
// key is given twice, the last one counts, as in DecodeProps. Input that
// DecodeProps refuses may be refused or not, but it never panics.
func DecodeSomeProps(raw []byte, names []string) (Props, error) {
	p := make(Props, len(names))
	if len(names) == 0 {
		return p, nil // a page of IDs: nothing to look for
	}
	i := skipSpace(raw, 0)
	if i == len(raw) {
		return p, nil // as DecodeProps: no record is no properties
	}
	if raw[i] != '{' {
		return nil, errNotObject
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return p, nil
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return nil, errNotObject
		}
		ks := i
		i = skipString(raw, i)
		if i < 0 {
			return nil, errNotObject
		}
		key := raw[ks+1 : i-1]
		if slices.Contains(key, '\\') {
			var k string
			if err := schema.Decode(raw[ks:i], &k); err != nil {
				return nil, err
			}
			key = []byte(k)
		}
		if i = skipSpace(raw, i); i >= len(raw) || raw[i] != ':' {
			return nil, errNotObject
		}
		vs := skipSpace(raw, i+1)
		if i = skipValue(raw, vs); i < 0 {
			return nil, errNotObject
		}
		if w := wanted(names, key); w >= 0 {
			v, err := decodeValue(raw[vs:i])
			if err != nil {
				return nil, err
			}
			p[names[w]] = v
		}
		if i = skipSpace(raw, i); i >= len(raw) {
			return nil, errNotObject
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			if skipSpace(raw, i+1) != len(raw) {
				return nil, errNotObject
			}
			return p, nil
		default:
			return nil, errNotObject
		}
	}
}

var errNotObject = errors.New("properties are not a JSON object")

// decodeValue decodes one JSON value as DecodeProps does (numbers as
// json.Number). Plain strings, numbers and literals are decoded here,
// which costs a tenth of a call to the decoder; the rest go to it.
func decodeValue(b []byte) (any, error) {
	switch {
	case string(b) == "true":
		return true, nil
	case string(b) == "false":
		return false, nil
	case string(b) == "null":
		return nil, nil
	case len(b) >= 2 && b[0] == '"' && plainString(b[1:len(b)-1]):
		return string(b[1 : len(b)-1]), nil
	case isNumber(b):
		return json.Number(b), nil
	}
	var v any
	err := schema.Decode(b, &v)
	return v, err
}

// plainString reports whether b, the inside of a JSON string, needs no
// decoding: valid UTF-8 without escapes or control characters.
func plainString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
	}
	return utf8.Valid(b)
}

// isNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumber(b []byte) bool {
	i := 0
	digits := func() int {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch n := digits(); {
	case n == 0, n > 1 && b[i-n] == '0':
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// wanted returns the index of key in names, or -1.
func wanted(names []string, key []byte) int {
	for i, n := range names {
		if n == string(key) {
			return i
		}
	}
	return -1
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i] (a
// quote), or -1 if it does not end.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value that starts at b[i],
// or -1 if it does not end. It checks only that brackets and strings
// close: the value is decoded (and checked) only if it is wanted.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				if i = skipString(b, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	}
	start := i
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	if i == start {
		return -1
	}
	return i
}
