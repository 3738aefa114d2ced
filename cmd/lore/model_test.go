package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/bolt"
	"github.com/lore-dev/lore/schema"
)

// TestModelDiffAndApply: on a store of 100,000 nodes, lore model diff
// lists what a new model changes and counts exactly the stored nodes and
// edges it would reject, listing the first by ID; lore model apply
// refuses that model and changes nothing, then puts a compatible one in
// use (rebuilding the index it adds).
func TestModelDiffAndApply(t *testing.T) {
	const n = 100_000
	dir := t.TempDir()
	data := filepath.Join(dir, "data.ndjson")
	var b strings.Builder
	wantNodes, wantEdges := 0, 0
	for i := range n {
		obs := `,"observations":["seen"]`
		if i%7 == 3 {
			obs = ""
			wantNodes++
		}
		fmt.Fprintf(&b, `{"kind":"node","id":"entity/e%06d","type":"Entity","properties":{"name":"E%d","entityType":"thing"%s}}`+"\n", i, i, obs)
	}
	// 1,000 people in 10 teams, each a member of one; every fifth
	// membership has no role.
	const people = 1000
	for i := range 10 {
		fmt.Fprintf(&b, `{"kind":"node","id":"team/t%d","type":"Team","properties":{"name":"T%d"}}`+"\n", i, i)
	}
	for i := range people {
		props := `{"role":"engineer"}`
		if i%5 == 2 {
			props = `{}`
			wantEdges++
		}
		fmt.Fprintf(&b, `{"kind":"node","id":"person/p%04d","type":"Person","properties":{"name":"P%d"}}`+"\n", i, i)
		fmt.Fprintf(&b, `{"kind":"edge","from":"person/p%04d","label":"memberOf","to":"team/t%d","properties":%s}`+"\n", i, i%10, props)
	}
	os.WriteFile(data, []byte(b.String()), 0o644)
	store := filepath.Join(dir, "store")
	if out, errOut, code := lore(t, "import", "--store", store, data); code != 0 {
		t.Fatalf("import: %s%s", out, errOut)
	}

	// The new model: an Entity requires observations, a membership a role.
	var doc map[string]any
	json.Unmarshal(schema.Default().JSON(), &doc)
	defs := doc["$defs"].(map[string]any)
	defs["Entity"].(map[string]any)["required"] = []any{"entityType", "name", "observations"}
	defs["memberOf"].(map[string]any)["required"] = []any{"role"}
	strict := filepath.Join(dir, "strict.json")
	raw, _ := json.Marshal(doc)
	os.WriteFile(strict, raw, 0o644)

	out, errOut, code := lore(t, "model", "diff", "--store", store, "--json", "--first", "3", strict)
	if code != 0 {
		t.Fatalf("model diff: exit %d %s%s", code, out, errOut)
	}
	var r modelReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err, out)
	}
	f := r.Fit
	if f.Nodes != n+people+10 || f.Edges != people || f.RejectedNodes != int64(wantNodes) || f.RejectedEdges != int64(wantEdges) {
		t.Errorf("fit %d nodes, %d edges, rejected %d and %d; want %d, %d, %d, %d", f.Nodes, f.Edges, f.RejectedNodes, f.RejectedEdges,
			n+people+10, people, wantNodes, wantEdges)
	}
	var first []string
	for _, x := range f.First {
		first = append(first, x.Kind+" "+x.ID+" "+x.Violations[0].Rule)
	}
	if got, want := strings.Join(first, "; "), "node entity/e000003 required; node entity/e000010 required; node entity/e000017 required"; got != want {
		t.Errorf("first rejected: %s\nwant %s", got, want)
	}
	var changes []string
	for _, c := range r.Changes {
		changes = append(changes, c.String())
	}
	if got, want := strings.Join(changes, "; "), `+ required Entity.observations; + required memberOf.role`; got != want {
		t.Errorf("changes: %s\nwant %s", got, want)
	}

	// apply refuses it, and the store keeps its model.
	out, errOut, code = lore(t, "model", "apply", "--store", store, strict)
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("was not applied: it rejects %d nodes and %d edges", wantNodes, wantEdges)) {
		t.Errorf("model apply of a model the data breaks: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := lore(t, "model", "diff", "--store", store, strict); !strings.Contains(out, "changes the store's model in 2 places") {
		t.Errorf("after a refused apply the store's model changed:\n%s", out)
	}

	// A compatible change: index Entity.name.
	doc = nil
	json.Unmarshal(schema.Default().JSON(), &doc)
	defs = doc["$defs"].(map[string]any)
	defs["Entity"].(map[string]any)["x-lore-node"].(map[string]any)["indexed"] = []any{"entityType", "name"}
	indexed := filepath.Join(dir, "indexed.json")
	raw, _ = json.Marshal(doc)
	os.WriteFile(indexed, raw, 0o644)
	out, errOut, code = lore(t, "model", "apply", "--store", store, indexed)
	if code != 0 || !strings.Contains(out, "+ indexed Entity.name") || !strings.Contains(out, "applied: the store now uses") {
		t.Fatalf("model apply: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, _ := lore(t, "model", "diff", "--store", store, indexed); !strings.Contains(out, "changes nothing in the store's model") {
		t.Errorf("after apply:\n%s", out)
	}
	// The new index answers.
	q := filepath.Join(dir, "q.json")
	os.WriteFile(q, []byte(`{"from":{"type":"Entity","where":{"name":"E99999"}}}`), 0o644)
	if out, errOut, code := lore(t, "query", "--store", store, "--json", q); code != 0 || !strings.Contains(out, "entity/e099999") {
		t.Errorf("query on the new index: exit %d %s%s", code, out, errOut)
	}
}

// TestModelApplyRetype: a model that adds Concept and lets documents be
// about concepts, not topics, rejects the stored about edge; with a
// migration that re-types the topics (and then gives concepts a
// description: a step on a type the store's model lacks yet) it fits,
// apply re-types them (the edge kept), and lore check passes. The same
// with Topic dropped from the model (a rename of the type: the migration
// runs with Topic still in the model, which then goes), by the process
// itself and through a holder that has the store.
func TestModelApplyRetype(t *testing.T) {
	for _, tc := range []struct {
		name       string
		drop, held bool
	}{{"Topic kept", false, false}, {"Topic dropped", true, false}, {"Topic dropped, through a holder", true, true}} {
		t.Run(tc.name, func(t *testing.T) { testModelApplyRetype(t, tc.drop, tc.held) })
	}
}

func testModelApplyRetype(t *testing.T, drop, held bool) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.ndjson")
	os.WriteFile(data, []byte(`{"kind":"node","id":"document/d","type":"Document","properties":{"title":"Notes"}}
{"kind":"node","id":"topic/x","type":"Topic","properties":{"name":"Graphs"}}
{"kind":"edge","from":"document/d","label":"about","to":"topic/x"}
`), 0o644)
	store := filepath.Join(dir, "store")
	if out, errOut, code := lore(t, "import", "--store", store, data); code != 0 {
		t.Fatalf("import: %s%s", out, errOut)
	}
	var doc map[string]any
	json.Unmarshal(schema.Default().JSON(), &doc)
	defs := doc["$defs"].(map[string]any)
	var concept map[string]any
	raw, _ := json.Marshal(defs["Topic"])
	json.Unmarshal(raw, &concept)
	concept["title"] = "Concept"
	defs["Concept"] = concept
	defs["about"].(map[string]any)["x-lore-edge"].(map[string]any)["to"] = []any{"Concept", "Service", "Team"}
	rejected := "the new model rejects 0 node(s) and 1 edge(s)"
	if drop {
		delete(defs, "Topic")
		for _, d := range defs {
			if meta, ok := d.(map[string]any)["x-lore-edge"].(map[string]any); ok {
				for _, side := range []string{"from", "to"} {
					ends, _ := meta[side].([]any)
					meta[side] = slices.DeleteFunc(slices.Clone(ends), func(v any) bool { return v == "Topic" })
				}
			}
		}
		rejected = "the new model rejects 1 node(s) and 1 edge(s)"
	}
	if held {
		r := startRaw(t, store)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		r.next(`"id":1,"result"`)
	}
	model := filepath.Join(dir, "concepts.json")
	raw, _ = json.Marshal(doc)
	os.WriteFile(model, raw, 0o644)
	mig := filepath.Join(dir, "migration.json")
	os.WriteFile(mig, []byte(`{"steps": [{"retypeNodes": {"from": "Topic", "to": "Concept"}},
	  {"setDefault": {"type": "Concept", "property": "description", "value": "was a topic"}}]}`), 0o644)

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"model", "diff", "--store", store, model}, 0, rejected},
		{[]string{"model", "diff", "--store", store, "--migrate", mig, model}, 0, "the new model rejects 0 node(s) and 0 edge(s) as migrated"},
		{[]string{"model", "apply", "--store", store, "--migrate", mig, model}, 0, "the migration changed (in 1 batch) 1 of the 1 nodes"},
		{[]string{"check", "--store", store}, 0, "ok"},
	} {
		out, errOut, code := lore(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Fatalf("lore %s: exit %d, want %d and %q:\n%s%s", strings.Join(tc.args, " "), code, tc.code, tc.want, out, errOut)
		}
	}
	q := filepath.Join(dir, "q.json")
	os.WriteFile(q, []byte(`{"from": {"type": "Concept"}, "traverse": [{"edge": "about", "direction": "in"}]}`), 0o644)
	if out, errOut, code := lore(t, "query", "--store", store, "--json", q); code != 0 || !strings.Contains(out, "document/d") {
		t.Errorf("the document about the re-typed concept: exit %d %s%s", code, out, errOut)
	}
	if out, errOut, code := lore(t, "get", "--store", store, "topic/x"); code != 0 || !strings.Contains(out, `"type": "Concept"`) || !strings.Contains(out, "was a topic") {
		t.Errorf("lore get topic/x: exit %d %s%s", code, out, errOut)
	}
}

// TestModelApplyChecksLateWrites: lore model apply in place (in a holder,
// or on PostgreSQL) checks the writes that came between its check of the
// data and the switch: one the new model rejects stops it, saying which,
// with the old model left in use; ones that fit are checked and the model
// is put in use.
func TestModelApplyChecksLateWrites(t *testing.T) {
	ctx := t.Context()
	s, err := bolt.Open(ctx, bolt.Config{Path: t.TempDir(), NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	topic := func(id, name string) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": name}}
	}
	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/ok", "ok")}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := st.LastSeq // the data is checked here
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	doc["$defs"].(map[string]any)["Topic"].(map[string]any)["properties"].(map[string]any)["name"].(map[string]any)["maxLength"] = 5
	data, _ := json.Marshal(doc)
	v2, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	v1 := s.Model().Version()

	if _, err := s.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/long", "much too long")}}); err != nil {
		t.Fatal(err)
	}
	_, err = useModel(ctx, nil, storeOptions{}, s, true, v2, "v2.json", "", s, at, 10)
	if err == nil || !strings.Contains(err.Error(), "1 node and 0 edges written while it was checked break it") || !strings.Contains(err.Error(), "node topic/long") {
		t.Fatalf("a write v2 rejects, between the check and the switch: %v", err)
	}
	if got := s.Model().Version(); got != v1 {
		t.Fatalf("the model in use is %s after the refusal, want %s", got, v1)
	}
	if _, err := s.Apply(ctx, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "topic/long"}}, Nodes: []graph.NodeInput{topic("topic/short", "short")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := useModel(ctx, nil, storeOptions{}, s, true, v2, "v2.json", "", s, at, 10); err != nil {
		t.Fatalf("writes that fit v2, between the check and the switch: %v", err)
	}
	if got := s.Model().Version(); got != v2.Version() {
		t.Fatalf("the model in use is %s, want v2 %s", got, v2.Version())
	}
}
