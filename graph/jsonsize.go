package graph

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// jsonSize returns the length of v as encoding/json encodes it, plus one
// (a separator): the measure of a response against limits.maxBytes. It
// counts the values a result is made of (maps, slices, strings, numbers
// as properties decode them, booleans, null) itself, escaping strings as
// json.Marshal does, and marshals anything else. Marshalling each result
// to learn its size was a tenth of a page of 50 small results.
func jsonSize(v any) int { return jsonLen(v) + 1 }

func jsonLen(v any) int {
	switch v := v.(type) {
	case nil:
		return 4
	case bool:
		if v {
			return 4
		}
		return 5
	case string:
		return jsonStringLen(v)
	case json.Number:
		if v == "" {
			return 1 // json.Marshal writes an empty Number as 0
		}
		if !json.Valid([]byte(v)) {
			break // not a number: Marshal's error, measured by Marshal
		}
		return len(v)
	case map[string]any:
		if v == nil {
			return 4
		}
		n := 2 + max(len(v)-1, 0)
		for k, e := range v {
			n += jsonStringLen(k) + 1 + jsonLen(e)
		}
		return n
	case []any:
		if v == nil {
			return 4
		}
		n := 2 + max(len(v)-1, 0)
		for _, e := range v {
			n += jsonLen(e)
		}
		return n
	case map[string]int64: // degrees
		if v == nil {
			return 4
		}
		n := 2 + max(len(v)-1, 0)
		for k, e := range v {
			n += jsonStringLen(k) + 1 + len(strconv.FormatInt(e, 10))
		}
		return n
	case []string:
		if v == nil {
			return 4
		}
		n := 2 + max(len(v)-1, 0)
		for _, e := range v {
			n += jsonStringLen(e)
		}
		return n
	}
	data, _ := json.Marshal(v)
	return len(data)
}

// jsonStringLen is the length of s quoted as json.Marshal quotes it: with
// HTML's <, > and & escaped, control characters as \n or \u00XX, invalid
// UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func jsonStringLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
