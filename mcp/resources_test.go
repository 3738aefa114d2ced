package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// TestResources reads every resource and template in both eras; node IDs
// hold "/", which the {+id} template matches.
func TestResources(t *testing.T) {
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			f := newFixture(t, nil)
			cs := f.connect(t, era, nil)
			read := func(uri string) (string, error) {
				res, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri})
				if err != nil {
					return "", err
				}
				if len(res.Contents) != 1 || res.Contents[0].URI != uri {
					t.Fatalf("%s: contents %v", uri, res.Contents)
				}
				return res.Contents[0].Text, nil
			}
			for uri, want := range map[string]string{
				mcp.ModelURI:                   `"$defs"`,
				mcp.NodeURI("service/billing"): `"id":"service/billing"`,
				mcp.NodeURI("adr/0001-record-architecture-decisions"): `"type":"Decision"`,
				mcp.TypeURI("Service"):                                `"id":"service/api-gateway"`,
				mcp.ChangesURI:                                        `"lastSeq":1`,
			} {
				got, err := read(uri)
				if err != nil || !strings.Contains(got, want) {
					t.Errorf("%s: %v, want %s in %.300s", uri, err, want, got)
				}
			}
			// The node resource is get_node's output and validates against its schema.
			got, _ := read(mcp.NodeURI("service/billing"))
			if err := f.cat.ValidateOutput("get_node", json.RawMessage(got)); err != nil {
				t.Errorf("node resource: %v", err)
			}
			for _, uri := range []string{mcp.NodeURI("service/nope"), mcp.NodeURI("bad id"), mcp.TypeURI("Spaceship"), "lore://nothing"} {
				if _, err := read(uri); err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("%s: want resource not found, got %v", uri, err)
				}
			}
			tmpl, err := cs.ListResourceTemplates(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var templates []string
			for _, rt := range tmpl.ResourceTemplates {
				templates = append(templates, rt.URITemplate)
			}
			if !slices.Equal(templates, []string{"lore://edge/{+id}", "lore://node/{+id}", "lore://type/{type}"}) {
				t.Errorf("templates: %v", templates)
			}
		})
	}
}

// TestCompletions completes template and prompt arguments; anything
// unknown gets an empty list.
func TestCompletions(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	for _, tc := range []struct {
		name          string
		ref           *mcpsdk.CompleteReference
		arg, value    string
		want, notWant string
		wantNone      bool
	}{
		{name: "node id", ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "lore://node/{+id}"}, arg: "id", value: "service/b", want: "service/billing"},
		{name: "exact id", ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "lore://node/{+id}"}, arg: "id", value: "team/data", want: "team/data"},
		{name: "type", ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "lore://type/{type}"}, arg: "type", value: "Se", want: "Service", notWant: "Person"},
		{name: "prompt id by type", ref: &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "service_impact"}, arg: "id", value: "", want: "service/ledger", notWant: "team/"},
		{name: "decision ids", ref: &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "decision_history"}, arg: "id", value: "adr/000", want: "adr/0002-use-mysql-for-transactional-data"},
		{name: "unknown prompt", ref: &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, arg: "arg1", value: "x", wantNone: true},
		{name: "no match", ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "lore://node/{+id}"}, arg: "id", value: "zzz", wantNone: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.Complete(t.Context(), &mcpsdk.CompleteParams{Ref: tc.ref, Argument: mcpsdk.CompleteParamsArgument{Name: tc.arg, Value: tc.value}})
			if err != nil {
				t.Fatal(err)
			}
			vals := strings.Join(res.Completion.Values, " ")
			if tc.wantNone != (len(res.Completion.Values) == 0) || !strings.Contains(vals, tc.want) || tc.notWant != "" && strings.Contains(vals, tc.notWant) {
				t.Errorf("values %v", res.Completion.Values)
			}
		})
	}
}

// TestPrompts gets each prompt and checks argument errors.
func TestPrompts(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	list, err := cs.ListPrompts(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Prompts) != 3 {
		t.Fatalf("prompts: %v", list.Prompts)
	}
	for _, tc := range []struct{ prompt, id, want string }{
		{"explain_node", "team/payments", `service/billing`},
		{"service_impact", "service/postgres-cluster", `service/payments`},
		{"decision_history", "adr/0007-adopt-postgresql-for-transactional-services", `adr/0002-use-mysql-for-transactional-data`},
	} {
		res, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: tc.prompt, Arguments: map[string]string{"id": tc.id}})
		if err != nil {
			t.Fatalf("%s: %v", tc.prompt, err)
		}
		data, _ := json.Marshal(res.Messages)
		if len(res.Messages) < 3 || !strings.Contains(string(data), tc.want) || !strings.Contains(string(data), `"uri":"lore://node/`+tc.id) {
			t.Errorf("%s: want %s in %.500s", tc.prompt, tc.want, data)
		}
	}
	for _, args := range []map[string]string{{}, {"id": "service/nope"}, {"id": "team/payments"}} {
		if _, err := cs.GetPrompt(t.Context(), &mcpsdk.GetPromptParams{Name: "service_impact", Arguments: args}); err == nil {
			t.Errorf("service_impact %v: want an error", args)
		}
	}
}

// TestCaching sets ttlMs deliberately: long for what cannot change while the
// server runs, short for the data-dependent list, none for graph data.
func TestCaching(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	tools, _ := cs.ListTools(t.Context(), nil)
	resources, _ := cs.ListResources(t.Context(), nil)
	model, _ := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: mcp.ModelURI})
	node, _ := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: mcp.NodeURI("service/billing")})
	if tools.TTLMs != 3600000 || resources.TTLMs != 30000 || model.TTLMs != 3600000 || node.TTLMs != 0 || node.CacheScope != "public" {
		t.Errorf("ttl: tools %d, resources %d, model %d, node %d %q", tools.TTLMs, resources.TTLMs, model.TTLMs, node.TTLMs, node.CacheScope)
	}
}

// TestLogging: a legacy session that set a level hears of each write.
func TestLogging(t *testing.T) {
	f := newFixture(t, nil)
	logs := make(chan string, 4)
	//lint:ignore SA1019 logging is tested on legacy sessions
	cs := f.connect(t, legacy, &mcpsdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, req *mcpsdk.LoggingMessageRequest) {
		logs <- req.Params.Data.(string)
	}})
	//lint:ignore SA1019 logging is tested on legacy sessions
	if err := cs.SetLoggingLevel(t.Context(), &mcpsdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	f.call(t, cs, "upsert_nodes", `{"nodes":[{"id":"topic/logs","type":"Topic","properties":{"name":"Logs"}}]}`)
	if got := <-logs; !strings.Contains(got, "created topic/logs") {
		t.Errorf("log: %q", got)
	}
}

// TestResourcesHonourTheCap: every resource read keeps to the byte cap. A
// node over the cap is an error saying how to read it instead (get_node
// refuses it too); the change list and a type's member list are shortened
// and say so; an entry too large for the cap is listed in part.
func TestResourcesHonourTheCap(t *testing.T) {
	const max = 8 << 10
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			f := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: max}})
			cs := f.connect(t, era, nil)
			if _, err := f.store.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: "adr/9999-huge", Type: "Decision",
				Properties: graph.Props{"title": "huge", "status": "accepted", "date": "2026-01-01", "context": strings.Repeat("x", 20000)}}}}); err != nil {
				t.Fatal(err)
			}
			docAbout(t, f.store, "doc/a", 150)
			docAbout(t, f.store, "doc/b", 150)

			_, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: mcp.NodeURI("adr/9999-huge")})
			if err == nil || !strings.Contains(err.Error(), "over the server's cap of 8192 bytes") || !strings.Contains(err.Error(), "query_graph") {
				t.Errorf("a node over the cap: %v", err)
			}
			if res := f.call(t, cs, "get_node", `{"id":"adr/9999-huge"}`); !res.IsError {
				t.Errorf("get_node served a node over the cap")
			}

			read := func(uri string) string {
				t.Helper()
				res, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: uri})
				if err != nil {
					t.Fatalf("%s: %v", uri, err)
				}
				if n := len(res.Contents[0].Text); n > max {
					t.Fatalf("%s: %d bytes, over the cap", uri, n)
				}
				return res.Contents[0].Text
			}
			var recent struct {
				LastSeq   uint64
				Changes   []graph.Change
				Truncated bool
			}
			if err := json.Unmarshal([]byte(read(mcp.ChangesURI)), &recent); err != nil {
				t.Fatal(err)
			}
			if !recent.Truncated || len(recent.Changes) != 1 || recent.Changes[0].Seq != recent.LastSeq || !recent.Changes[0].Truncated ||
				recent.Changes[0].Part.NodeCount != 151 || recent.Changes[0].Part.EdgeCount != 150 {
				t.Errorf("recent changes: %+v", recent)
			}
			var members struct {
				Count int
				Nodes []struct{ ID string }
				More  bool
			}
			if err := json.Unmarshal([]byte(read(mcp.TypeURI("Topic"))), &members); err != nil {
				t.Fatal(err)
			}
			if !members.More || members.Count < 300 || len(members.Nodes) == 0 || len(members.Nodes) >= members.Count {
				t.Errorf("type members: %d of %d listed, more %v", len(members.Nodes), members.Count, members.More)
			}
		})
	}
}

// TestChangesResourceMemory: reading lore://changes costs memory in
// proportion to the byte cap, not to the entries read: the entries are
// decoded within the room left, never whole.
func TestChangesResourceMemory(t *testing.T) {
	s := graphtest.New(t) // no server: nothing else decodes the log meanwhile
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: graph.Limits{MaxBytes: 8 << 10}})
	for i := range 6 {
		docAbout(t, s, fmt.Sprintf("doc/%d", i), 1500)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := cat.ReadResource(t.Context(), mcp.ChangesURI)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("lore://changes: %d bytes read with %d bytes allocated", len(res.Text), alloc)
	if alloc > 1<<20 {
		t.Errorf("reading lore://changes allocated %d bytes; the 6 entries of 3,001 elements should not be decoded whole", alloc)
	}
}

// TestModelVersion: describe_model and lore://model name the model's
// version, the same on both, and lore://model is still the model's JSON
// Schema document (the version is one more keyword, first).
func TestModelVersion(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)
	want := schema.Default().Version()
	if len(want) != 16 {
		t.Fatalf("version %q, want 16 hexadecimal digits", want)
	}
	var out struct {
		Version string `json:"version"`
	}
	res := f.call(t, cs, "describe_model", `{}`)
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil || out.Version != want {
		t.Errorf("describe_model version %q (%v), want %q", out.Version, err, want)
	}
	rr, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: mcp.ModelURI})
	if err != nil {
		t.Fatal(err)
	}
	text := rr.Contents[0].Text
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("lore://model is not JSON: %v", err)
	}
	if !strings.HasPrefix(text, `{"x-lore-version":"`+want+`",`) || string(doc["$defs"]) == "" {
		t.Errorf("lore://model: %.120s", text)
	}
	if _, err := schema.Load([]byte(text)); err != nil {
		t.Errorf("lore://model does not load as a model: %v", err)
	}
	if other, err := schema.Load(append(schema.DefaultJSON(), ' ')); err != nil || other.Version() == want {
		t.Errorf("an edited model keeps the version %q (%v)", want, err)
	}
}
