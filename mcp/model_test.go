package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// TestModelSubscription: a client of a server on one PostgreSQL replica,
// subscribed to lore://model, is told when another process puts a new
// model in use on the database (as lore model apply does), and then reads
// the new model and its version from lore://model and describe_model;
// subscribed to a node only, it hears nothing of it.
func TestModelSubscription(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	v1, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t", "$defs": {
	  "Topic": {"x-lore-node": {"display": "name"}, "type": "object", "properties": {"name": {"type": "string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := schema.Load([]byte(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://lore.dev/models/t.json", "title": "t2", "$defs": {
	  "Topic": {"x-lore-node": {"display": "name", "indexed": ["name"]}, "type": "object", "properties": {"name": {"type": "string"}, "area": {"type": "string"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	open := func(m *schema.Model) *postgres.Store {
		s, err := postgres.Open(ctx, postgres.Config{URL: url, Model: m, PollMin: 10 * time.Millisecond, PollMax: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	replica := open(v1)
	if _, err := replica.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}}}); err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(mcp.NewCatalog(replica, nil), nil)
	wctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Watch(wctx) }()
	t.Cleanup(func() { cancel(); <-done })
	f := &fixture{store: replica, srv: srv}

	opts, next := receiver(t)
	cs := f.connect(t, legacy, opts)
	if err := cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: mcp.ModelURI}); err != nil {
		t.Fatal(err)
	}
	other := f.connect(t, legacy, &mcpsdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcpsdk.ResourceUpdatedNotificationRequest) {
		t.Errorf("a session subscribed to a node only was told of %s", req.Params.URI)
	}})
	if err := other.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: mcp.NodeURI("topic/a")}); err != nil {
		t.Fatal(err)
	}
	if v := modelVersion(t, cs); v != v1.Version() {
		t.Fatalf("lore://model has version %s before the change, want v1 %s", v, v1.Version())
	}

	open(v2) // another process puts v2 in use
	if got := next(); got != mcp.ModelURI {
		t.Fatalf("notification for %s, want %s", got, mcp.ModelURI)
	}
	if v := modelVersion(t, cs); v != v2.Version() {
		t.Fatalf("lore://model has version %s after the notification, want v2 %s", v, v2.Version())
	}
	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "describe_model", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("describe_model: %v %v", res, err)
	}
	out, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(out), `"version":"`+v2.Version()+`"`) || !strings.Contains(string(out), `"title":"t2"`) {
		t.Fatalf("describe_model after the change: %s", out)
	}
	// The replica's writes follow v2 (area is a property now), and are
	// the next notification: the model change was told once.
	if err := cs.Subscribe(ctx, &mcpsdk.SubscribeParams{URI: mcp.NodeURI("topic/b")}); err != nil {
		t.Fatal(err)
	}
	res2, err := replica.Apply(ctx, &graph.Batch{Nodes: []graph.NodeInput{{ID: "topic/b", Type: "Topic", Properties: graph.Props{"name": "b", "area": "x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(); got != mcp.NodeURI("topic/b") {
		t.Fatalf("notification for %s, want %s", got, mcp.NodeURI("topic/b"))
	}
	if err := srv.WaitDelivered(ctx, res2.Seq); err != nil { // the session subscribed to topic/a heard nothing meanwhile
		t.Fatal(err)
	}
}

// modelVersion reads lore://model and returns its x-lore-version.
func modelVersion(t *testing.T, cs *mcpsdk.ClientSession) string {
	t.Helper()
	r, err := cs.ReadResource(t.Context(), &mcpsdk.ReadResourceParams{URI: mcp.ModelURI})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version string `json:"x-lore-version"`
	}
	if err := json.Unmarshal([]byte(r.Contents[0].Text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Version
}

// TestModelSubscriptionEmbedded: on the embedded store, a model put in use
// while the server runs (graph.ModelSwitcher, as lore model apply does in
// the holder) notifies a session subscribed to lore://model, once, and
// lore://model then has the new version.
func TestModelSubscriptionEmbedded(t *testing.T) {
	f := newFixture(t, nil)
	opts, next := receiver(t)
	cs := f.connect(t, legacy, opts)
	for _, u := range []string{mcp.ModelURI, mcp.NodeURI(sentinel)} {
		if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: u}); err != nil {
			t.Fatal(err)
		}
	}
	var doc map[string]any
	if err := json.Unmarshal(schema.DefaultJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["title"] = "v2"
	data, _ := json.Marshal(doc)
	v2, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	sw, ok := f.store.(graph.ModelSwitcher)
	if !ok {
		t.Fatalf("%T cannot put a model in use while it serves", f.store)
	}
	st, err := f.store.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sw.UseModel(t.Context(), v2, st.LastSeq); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != mcp.ModelURI {
		t.Fatalf("notification for %s, want %s", got, mcp.ModelURI)
	}
	if v := modelVersion(t, cs); v != v2.Version() {
		t.Fatalf("lore://model has version %s after the notification, want %s", v, v2.Version())
	}
	f.touch(t, sentinel) // the next notification is the write's: the model's came once
	if got := next(); got != mcp.NodeURI(sentinel) {
		t.Fatalf("notification for %s, want %s", got, mcp.NodeURI(sentinel))
	}
}
