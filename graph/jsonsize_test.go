package graph

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

// jsonSize counts what json.Marshal writes, byte for byte, for random
// values of every kind a result holds (and some it falls back on
// Marshal for), with strings of any bytes: HTML characters, control
// characters, quotes, invalid UTF-8, U+2028 and U+2029.
func TestJSONSizeIsMarshalsLength(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	pieces := []string{"a", "é", "<", ">", "&", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "\xff", "\xe2\x80", "\u2028", "\u2029", "😀", " ", "\b", "\f", "\r"}
	str := func() string {
		var b []byte
		for range rng.IntN(8) {
			b = append(b, pieces[rng.IntN(len(pieces))]...)
		}
		return string(b)
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(12); {
		case k == 0:
			return nil
		case k == 1:
			return rng.IntN(2) == 0
		case k <= 3:
			return str()
		case k == 4:
			return json.Number([]string{"0", "-1", "12.5e3", "1e400", "", "x", "01"}[rng.IntN(7)])
		case k == 5:
			return rng.Float64() * 1e6
		case k == 6:
			return map[string]int64{str(): rng.Int64N(1 << 40), "b": -3}
		case k == 7 && depth < 3:
			var s []string
			for range rng.IntN(3) {
				s = append(s, str())
			}
			return s
		case k == 8 && depth < 3:
			var s []any
			for range rng.IntN(3) {
				s = append(s, value(depth+1))
			}
			return s
		case depth < 3:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[str()] = value(depth + 1)
			}
			return m
		}
		return str()
	}
	for i := range 20000 {
		v := value(0)
		data, err := json.Marshal(v)
		if err != nil {
			continue // Marshal refuses it (a Number that is not one): no size to match
		}
		if got := jsonSize(v); got != len(data)+1 {
			t.Fatalf("seed %d, value %d: jsonSize(%#v) = %d, json.Marshal writes %d bytes (%s)", seed, i, v, got, len(data), data)
		}
	}
}
