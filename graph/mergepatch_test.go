package graph

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMergePatchRFC7396: the examples of RFC 7396, Appendix A.
func TestMergePatchRFC7396(t *testing.T) {
	for _, tt := range [][3]string{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	} {
		var target, patch, want any
		for i, p := range []*any{&target, &patch, &want} {
			if err := json.Unmarshal([]byte(tt[i]), p); err != nil {
				t.Fatal(err)
			}
		}
		if got := mergePatch(target, patch); !cmp.Equal(got, want) {
			t.Errorf("mergePatch(%s, %s) = %v, want %s", tt[0], tt[1], got, tt[2])
		}
	}
}
