package graph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Index values are encoded so that byte order is value order: a tag, then
// the value. null < false < true < numbers < strings. Numbers compare as
// float64; strings by their UTF-8 bytes.
const (
	tagNull   = 0x01
	tagFalse  = 0x02
	tagTrue   = 0x03
	tagNumber = 0x04
	tagString = 0x05
)

// EncodeIndexValue encodes one scalar JSON value so that byte order is the
// order Store.Lookup lists values in (see above); ok is false for arrays,
// objects and values that are not JSON. A backend may keep the encodings
// as its index keys.
func EncodeIndexValue(v any) (b []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return []byte{tagNull}, true
	case bool:
		if x {
			return []byte{tagTrue}, true
		}
		return []byte{tagFalse}, true
	case string:
		b = make([]byte, 0, len(x)+3)
		b = append(b, tagString)
		for i := 0; i < len(x); i++ {
			b = append(b, x[i])
			if x[i] == 0 {
				b = append(b, 0xff) // escape NUL so the terminator stays unique
			}
		}
		return append(b, 0, 1), true
	}
	f, ok := toFloat(v)
	if !ok {
		return nil, false
	}
	if f == 0 {
		f = 0 // fold -0 into 0
	}
	bits := math.Float64bits(f)
	if f >= 0 {
		bits ^= 1 << 63
	} else {
		bits = ^bits
	}
	b = make([]byte, 9)
	b[0] = tagNumber
	binary.BigEndian.PutUint64(b[1:], bits)
	return b, true
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	}
	return 0, false
}

// IndexValueLen returns the length of the value EncodeIndexValue encoded
// at the start of b.
func IndexValueLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case tagNumber:
		return 9
	case tagString:
		for i := 1; i+1 < len(b); i++ {
			if b[i] == 0 {
				if b[i+1] == 1 {
					return i + 2
				}
				i++ // escaped NUL
			}
		}
		return len(b)
	}
	return 1
}

// indexEntries returns the encoded values of one property: one for a
// scalar, one per distinct scalar element of an array, none for objects.
func IndexEntries(v any) [][]byte {
	if arr, ok := v.([]any); ok {
		var out [][]byte
		for _, e := range arr {
			if b, ok := EncodeIndexValue(e); ok {
				out = append(out, b)
			}
		}
		slices.SortFunc(out, bytes.Compare)
		return slices.CompactFunc(out, bytes.Equal)
	}
	if b, ok := EncodeIndexValue(v); ok {
		return [][]byte{b}
	}
	return nil
}

// CheckIndexValue encodes a lookup bound (see Store.Lookup), named name
// for the error, which wraps ErrInvalid, when it is not a JSON scalar.
func CheckIndexValue(name string, v any) ([]byte, error) {
	b, ok := EncodeIndexValue(v)
	if !ok {
		return nil, fmt.Errorf("%s: %v (%T) is not a JSON scalar: %w", name, v, v, ErrInvalid)
	}
	return b, nil
}

// PrefixEnd returns the least byte string greater than every string that
// starts with p, or nil if there is none (p is empty or all 0xff).
func PrefixEnd(p []byte) []byte {
	s := bytes.Clone(p)
	for len(s) > 0 && s[len(s)-1] == 0xff {
		s = s[:len(s)-1]
	}
	if len(s) == 0 {
		return nil
	}
	s[len(s)-1]++
	return s
}
