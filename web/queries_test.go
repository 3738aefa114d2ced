package web

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// TestBundledQueriesMatchTheSchema: every GraphQL document the console and
// the explorer carry (the console's examples, the explorer's operations) is
// valid against the generated schema, so a change of a tool's output type
// cannot leave the browser sending queries the server refuses (the explorer
// once asked for neighbors' edges without selecting their fields: 422).
func TestBundledQueriesMatchTheSchema(t *testing.T) {
	sdl, err := os.ReadFile("../gen/gql/schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	schema, gerr := gqlparser.LoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(sdl)})
	if gerr != nil {
		t.Fatal(gerr)
	}
	constant := regexp.MustCompile("(?s)const (\\w+) = `(.*?)`;")
	checked := 0
	for _, file := range []string{"console/src/console/examples.js", "console/src/explore/main.js"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		consts := map[string]string{}
		var order []string
		for _, m := range constant.FindAllStringSubmatch(string(src), -1) {
			consts[m[1]] = m[2]
			order = append(order, m[1])
		}
		for _, name := range order {
			doc := consts[name]
			for k, v := range consts {
				doc = strings.ReplaceAll(doc, "${"+k+"}", v)
			}
			if strings.Contains(doc, "${") || !regexp.MustCompile(`(?m)^\s*(#.*\n\s*)*(query|mutation|subscription|\{)`).MatchString(doc) {
				continue // not a whole operation (a fragment on its own, or text)
			}
			checked++
			// nil: the default validation rules.
			if _, errs := gqlparser.LoadQueryWithRules(schema, doc, nil); errs != nil {
				t.Errorf("%s: %s is not valid against the schema: %v\n%s", file, name, errs, doc)
			}
		}
	}
	t.Logf("%d documents checked", checked)
	if checked < 12 {
		t.Fatalf("checked %d documents; the console's examples and the explorer's operations are more than that", checked)
	}
}
