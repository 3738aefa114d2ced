package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/mcp"
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
			if !slices.Equal(templates, []string{"lore://node/{+id}", "lore://type/{type}"}) {
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
