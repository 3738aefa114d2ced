package graph

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeSomePropsOracle checks DecodeSomeProps against DecodeProps
// (whose result, cut down to the names asked for, is the answer) on random
// property objects, written compactly and with spaces, and random names.
func TestDecodeSomePropsOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	keys := []string{"a", "b", "name", "size", "tags", "é\"q", `back\slash`, "nested", "x y"}
	var value func(depth int) any
	value = func(depth int) any {
		switch r.IntN(8) {
		case 0:
			return nil
		case 1:
			return r.IntN(2) == 0
		case 2:
			return json.Number(fmt.Sprint(r.IntN(2000) - 1000))
		case 3:
			return json.Number("1.5e3")
		case 4:
			return strings.Repeat(`a"\}]{[,`, r.IntN(3)) + "é"
		case 5:
			if depth < 3 {
				var a []any
				for range r.IntN(4) {
					a = append(a, value(depth+1))
				}
				return a
			}
			return "leaf"
		case 6:
			if depth < 3 {
				m := map[string]any{}
				for range r.IntN(4) {
					m[keys[r.IntN(len(keys))]] = value(depth + 1)
				}
				return m
			}
			return ""
		}
		return fmt.Sprint("s", r.IntN(100))
	}
	for i := range 3000 {
		props := map[string]any{}
		for range r.IntN(6) {
			props[keys[r.IntN(len(keys))]] = value(0)
		}
		raw, err := json.Marshal(props)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 == 1 {
			raw, _ = json.MarshalIndent(props, " ", "\t")
		}
		var names []string
		for _, k := range keys {
			if r.IntN(3) == 0 {
				names = append(names, k)
			}
		}
		checkSomeProps(t, raw, names)
	}
}

func checkSomeProps(t *testing.T, raw []byte, names []string) {
	t.Helper()
	all, errAll := DecodeProps(raw)
	some, err := DecodeSomeProps(raw, names)
	if errAll != nil || all == nil {
		return // DecodeSomeProps may take it or not; it must not panic
	}
	if err != nil {
		t.Fatalf("%s names %q: DecodeProps takes it, DecodeSomeProps says %v", raw, names, err)
	}
	want := Props{}
	for _, n := range names {
		if v, ok := all[n]; ok {
			want[n] = v
		}
	}
	if !reflect.DeepEqual(some, want) {
		t.Fatalf("%s names %q: got %#v, want %#v", raw, names, some, want)
	}
}

func FuzzDecodeSomeProps(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[1,{"c":"}"}]}`, ` { "a" : "x\"y" , "b":null } `, `{"a\u0041":true}`, `{"a":1,"a":2}`, `{"a":`, `[1]`, `{"a":1}x`} {
		f.Add([]byte(s), "a,b,aA")
	}
	f.Fuzz(func(t *testing.T, raw []byte, names string) {
		checkSomeProps(t, raw, strings.Split(names, ","))
	})
}
