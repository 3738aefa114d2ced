package graph

import (
	"testing"

	"github.com/lore-dev/lore/schema"
)

// FuzzSearchQuery parses any search text (the syntax of searchquery.go) and
// checks its fields against the default model and its phrases and fields
// against a node: none of it may panic, and parsing is deterministic.
func FuzzSearchQuery(f *testing.F) {
	for _, s := range []string{`billing`, `"a phrase" name:word`, `name:"two words" tag:`, `http://x.y/z`, `"unclosed`, `:::""::`, `Straße ﬁle ÉCOLE`, `a*`, "\xff\xfe name:\"\xc3\""} {
		f.Add(s)
	}
	m := schema.Default()
	typ := m.NodeTypeNames()[0]
	nt, _ := m.Node(typ)
	f.Fuzz(func(t *testing.T, text string) {
		pq := parseQuery(text)
		if again := parseQuery(text); again.String() != pq.String() {
			t.Fatalf("%q parses as %q, then as %q", text, pq, again)
		}
		_ = pq.checkFields(m, "")
		_ = pq.checkFields(m, typ)
		props := Props{}
		for _, p := range nt.Search {
			props[p] = text
		}
		_ = pq.matches(nt, props)
		_ = pq.verify()
	})
}
