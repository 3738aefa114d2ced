package graph

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// The one-pass decoding of a usual NDJSON line (ndjsonDecoder.fast)
// agrees with the checked decoding it stands in for (strictJSON): a line
// it decodes, strictJSON decodes to the same ndjsonLine, at any depth
// limit. A line it refuses goes to strictJSON, which says what is wrong.
func FuzzNDJSONFastDecode(f *testing.F) {
	for _, s := range []string{
		`{"kind":"node","id":"package/p19346","type":"Package","properties":{"name":"p19346","version":"0.0.6","size":25673,"description":"p19346, a package in python"}}`,
		`{"kind":"edge","from":"package/p23326","label":"dependsOn","to":"package/p70754"}`,
		`{"kind":"edge","from":"a/b","label":"l","to":"c/d","key":"k\u00e9\n","properties":{}}`,
		`{"kind":"node","id":"a\/b","type":"T","properties":{"a":[1,2.5e3,-0,{"b":null,"c":[true,false]}],"d":"\ud83d\ude00","":{}}}`,
		`{"kind":"node","id":"a/b","type":"T","properties":{"a":1,"a":2}}`,
		`{"kind":"node","id":"a/b","type":"T","properties":{"a":{"b":{"c":{"d":1}}}}}`,
		`{"kind":"node","id":"a/b","type":"T","properties":null}`,
		`{"kind":"node","id":"a/b","type":"T","revision":3,"createdAt":"2024-01-02T03:04:05Z"}`,
		`{"Kind":"node","ID":"a/b","type":"T"}`,
		"{\"kind\":\"node\",\"id\":\"\xff\"}",
		`{"kind":"node","id":"a/b"} {}`,
		`{"kind":"node","id":"a/b",}`,
		`{"kind":7}`,
		` {"kind":"edge"} `,
	} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, depth uint8) {
		d := &ndjsonDecoder{maxDepth: int(depth % 8)}
		var fast ndjsonLine
		if !d.fast(data, &fast) {
			return
		}
		var slow ndjsonLine
		if bytes.Contains(data, []byte(`"properties"`)) {
			slow.Properties = make(Props, 8)
		}
		if err := strictJSON(data, &slow, d.maxDepth, ndjsonFields); err != nil {
			t.Fatalf("fast decoded %q as %+v; strictJSON refuses it: %v", data, fast, err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\nfast decodes %#v\nstrictJSON   %#v", data, fast, slow)
		}
		// Again, with the names the first decoding kept.
		var again ndjsonLine
		if !d.fast(data, &again) || !reflect.DeepEqual(again, slow) {
			t.Fatalf("%q decoded again:\nfast decodes %#v\nstrictJSON   %#v", data, again, slow)
		}
	})
}

// names keeps each short string once, and no more than maxNames of them.
func TestNamesBounded(t *testing.T) {
	nm := names{}
	long := strings.Repeat("x", maxNameLen+1)
	for i := range 2 * maxNames {
		b := []byte("label" + strings.Repeat("y", i%7) + string(rune('a'+i%26)) + strconv.Itoa(i))
		if got := nm.get(b); got != string(b) {
			t.Fatalf("get(%q) = %q", b, got)
		}
		if got := nm.get([]byte(long)); got != long {
			t.Fatalf("get(a long name) = %q", got)
		}
	}
	if len(nm) != maxNames {
		t.Errorf("%d names kept, want %d", len(nm), maxNames)
	}
	if _, ok := nm[long]; ok {
		t.Errorf("a name longer than %d bytes kept", maxNameLen)
	}
	a, b := nm.get([]byte("labela0")), nm.get([]byte("labela0"))
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Errorf("a kept name was copied again")
	}
}

// The lines an export writes, and those of the benchmark graph, take the
// one-pass way; those it leaves to strictJSON still import (and are
// refused with strictJSON's words).
func TestNDJSONFastDecodeTakesUsualLines(t *testing.T) {
	d := &ndjsonDecoder{}
	for _, s := range []string{
		`{"kind":"node","id":"package/p1","type":"Package","properties":{"name":"p1","size":3}}`,
		`{"kind":"edge","from":"package/p1","label":"dependsOn","to":"package/p2"}`,
	} {
		var l ndjsonLine
		if !d.fast([]byte(s), &l) {
			t.Errorf("fast refuses %s", s)
		}
	}
	in := `{"kind":"node","id":"a/b","type":"T","revision":3}` + "\n" + `{"kind":"node","id":"a/c","type":"T","properties":{"x":1,"x":2}}` + "\n"
	dec, err := newDecoder(NDJSON, strings.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if el, err := dec.next(); err != nil || el.node == nil || el.node.Revision != 3 {
		t.Fatalf("a line with a revision: %+v, %v", el, err)
	}
	if _, err := dec.next(); err == nil || !strings.Contains(err.Error(), "the same key appears twice") {
		t.Fatalf("a key given twice: %v", err)
	}
}
