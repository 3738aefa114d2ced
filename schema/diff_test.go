package schema

import (
	"encoding/json"
	"slices"
	"testing"
)

// edit returns the default model changed by f.
func edit(t *testing.T, f func(defs map[string]map[string]any)) *Model {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(Default().JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	defs := map[string]map[string]any{}
	for k, v := range doc["$defs"].(map[string]any) {
		defs[k] = v.(map[string]any)
	}
	f(defs)
	doc["$defs"] = defs
	data, _ := json.Marshal(doc)
	m, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDiff(t *testing.T) {
	props := func(d map[string]any) map[string]any { return d["properties"].(map[string]any) }
	meta := func(d map[string]any, kw string) map[string]any { return d[kw].(map[string]any) }
	b := edit(t, func(defs map[string]map[string]any) {
		props(defs["Person"])["pager"] = map[string]any{"type": "string"}                // added property
		delete(props(defs["Topic"]), "description")                                      // removed property
		props(defs["Service"])["tier"] = map[string]any{"type": "integer"}               // changed property
		defs["Person"]["required"] = []any{"name", "pager"}                              // added required
		meta(defs["Person"], "x-lore-node")["indexed"] = []any{"email", "role", "pager"} // added index
		meta(defs["Topic"], "x-lore-node")["search"] = []any{"name"}                     // removed search
		meta(defs["Team"], "x-lore-node")["display"] = "mission"                         // display
		meta(defs["leads"], "x-lore-edge")["to"] = []any{"Team", "Service"}              // endpoints
		meta(defs["supersedes"], "x-lore-edge")["keyed"] = true                          // keyed
		delete(defs, "Entity")                                                           // removed type
		delete(defs, "relation")                                                         // removed label
		defs["Bot"] = map[string]any{"type": "object", "x-lore-node": map[string]any{}}  // added type
		defs["Document"]["minProperties"] = 1                                            // other keywords
	})
	got := Diff(Default(), b)
	var lines []string
	for _, c := range got {
		lines = append(lines, c.String())
	}
	want := []string{
		"+ node type Bot",
		"~ schema Document: other keywords than properties and required differ",
		"- node type Entity",
		`+ property Person.pager: {"type":"string"}`,
		"+ required Person.pager",
		"+ indexed Person.pager",
		`~ property Service.tier: {"description":"0 is the most critical.","maximum":3,"minimum":0,"type":"integer"} -> {"type":"integer"}`,
		"~ display Team: name -> mission",
		"- property Topic.description",
		"- search Topic.description",
		"~ endpoints leads: Person -> Team|Service was Person -> Team",
		"- edge label relation",
		"~ keyed supersedes: false -> true",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", join(lines), join(want))
	}
	if d := Diff(Default(), Default()); len(d) != 0 {
		t.Errorf("a model differs from itself: %v", d)
	}
}

func join(lines []string) string {
	s := ""
	for _, l := range lines {
		s += "  " + l + "\n"
	}
	return s
}
