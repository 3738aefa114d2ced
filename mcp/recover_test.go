package mcp_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
)

// panicID is the node whose reading panics in a panicStore.
const panicID graph.ID = "topic/panic"

// panicStore is the real store with faults injected: reading the node
// panicID panics, and so does Stats while statsPanics is set. It lets the
// tests reach every handler's recovery through real code paths, without a
// real bug.
type panicStore struct {
	graph.Store
	statsPanics atomic.Bool
}

func (p *panicStore) Node(ctx context.Context, id graph.ID) (*graph.Node, error) {
	if id == panicID {
		panic("injected panic reading " + string(id))
	}
	return p.Store.Node(ctx, id)
}

func (p *panicStore) Stats(ctx context.Context) (*graph.Stats, error) {
	if p.statsPanics.Load() {
		panic("injected panic in Stats")
	}
	return p.Store.Stats(ctx)
}

// syncBuffer is a log sink the server's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newPanicFixture serves the example dataset through a panicStore, with
// the test-only panicking tool, logging into the returned buffer.
func newPanicFixture(t *testing.T) (*fixture, *panicStore, *syncBuffer) {
	t.Helper()
	s := graphtest.New(t)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	ps := &panicStore{Store: s}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	cat := mcp.NewCatalog(ps, &mcp.Options{Logger: log})
	mcp.AddPanicTool(cat)
	srv := mcp.NewServer(cat, &mcp.ServerOptions{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Watch(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &fixture{store: s, cat: cat, srv: srv}, ps, logs
}

const internalText = "internal error; the server log has the details"

// wantInternalRPC checks that err is a JSON-RPC internal error that says
// no more than internalText.
func wantInternalRPC(t *testing.T, what string, err error) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != jsonrpc.CodeInternalError || we.Message != internalText {
		t.Errorf("%s: want JSON-RPC error %d %q, got %v", what, jsonrpc.CodeInternalError, internalText, err)
	}
}

// TestPanicIsAnInternalError: a tool, resource, prompt or completion
// handler that panics answers an internal error, the panic is logged with
// its stack, and the server goes on answering, in memory, over stdio and
// over HTTP, in both eras.
func TestPanicIsAnInternalError(t *testing.T) {
	for _, transport := range []string{"memory", "stdio", "http"} {
		for _, era := range eras {
			t.Run(transport+"/"+era, func(t *testing.T) {
				f, _, logs := newPanicFixture(t)
				var cs *mcpsdk.ClientSession
				switch transport {
				case "memory":
					cs = f.connect(t, era, nil)
				case "stdio":
					cs = f.connectStdio(t, era, nil)
				case "http":
					cs = f.connectHTTP(t, era, nil)
				}
				ctx := t.Context()
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: mcp.PanicTool, Arguments: map[string]any{}})
				if err != nil || !res.IsError || text(res) != mcp.CodeInternal+": "+internalText {
					t.Errorf("panicking tool: want an isError result %q, got %v, %v", internalText, err, res)
				}
				_, err = cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: mcp.NodeURI(panicID)})
				wantInternalRPC(t, "resource", err)
				_, err = cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "explain_node", Arguments: map[string]string{"id": string(panicID)}})
				wantInternalRPC(t, "prompt", err)
				_, err = cs.Complete(ctx, &mcpsdk.CompleteParams{Ref: &mcpsdk.CompleteReference{Type: "ref/resource", URI: "lore://node/{+id}"},
					Argument: mcpsdk.CompleteParamsArgument{Name: "id", Value: string(panicID)}})
				wantInternalRPC(t, "completion", err)

				// The server is still there and answers the next calls.
				if res := f.call(t, cs, "get_node", `{"id":"service/billing"}`); res.IsError {
					t.Fatalf("after the panics: %s", text(res))
				}
				if _, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: mcp.NodeURI("service/billing")}); err != nil {
					t.Fatalf("after the panics: %v", err)
				}
				log := logs.String()
				for _, want := range []string{"tool call panicked", "tool=" + mcp.PanicTool, "resource read panicked",
					"MCP handler panicked", "method=prompts/get", "method=completion/complete", "injected panic", "goroutine ", "level=ERROR"} {
					if !strings.Contains(log, want) {
						t.Errorf("the log lacks %q:\n%s", want, log)
					}
				}
			})
		}
	}
}

// TestWatchSurvivesPanic: a panic while handling one commit's
// notifications is logged, and the next commit is still notified.
func TestWatchSurvivesPanic(t *testing.T) {
	f, ps, logs := newPanicFixture(t)
	opts, next := receiver(t)
	cs := f.connect(t, legacy, opts)
	if err := cs.Subscribe(t.Context(), &mcpsdk.SubscribeParams{URI: mcp.ChangesURI}); err != nil {
		t.Fatal(err)
	}
	ps.statsPanics.Store(true) // a node created makes notify read the stats
	for i, id := range []string{"topic/first", "topic/second"} {
		if _, err := f.store.Apply(t.Context(), &graph.Batch{Nodes: []graph.NodeInput{{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": id}}}}); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != mcp.ChangesURI {
			t.Fatalf("commit %d: got %s", i+1, got)
		}
	}
	if !strings.Contains(logs.String(), "resource notification panicked") {
		t.Errorf("the log lacks the panic:\n%s", logs.String())
	}
}
