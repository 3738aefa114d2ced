package mcp

import (
	"context"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
)

// sessionFloors keeps a graph.SeqFloor per MCP session: the newest
// change-log entry the session wrote, which its later reads must see
// (read-your-writes on a store that reads from a lagging standby). A
// floor is forgotten when its session ends.
type sessionFloors struct {
	mu sync.Mutex
	m  map[*mcpsdk.ServerSession]*graph.SeqFloor
}

// of returns ss's floor, making it on first use.
func (f *sessionFloors) of(ss *mcpsdk.ServerSession) *graph.SeqFloor {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fl := f.m[ss]; fl != nil {
		return fl
	}
	if f.m == nil {
		f.m = map[*mcpsdk.ServerSession]*graph.SeqFloor{}
	}
	fl := new(graph.SeqFloor)
	f.m[ss] = fl
	go func() {
		_ = ss.Wait()
		f.mu.Lock()
		delete(f.m, ss)
		f.mu.Unlock()
	}()
	return fl
}

// floorMiddleware runs every request of a session with the session's
// floor in its context (raised first to any floor the context carries
// already): tool calls that write raise it, and every read (tools,
// resources, prompts) sees at least it.
func floorMiddleware(f *sessionFloors) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if ss, ok := req.GetSession().(*mcpsdk.ServerSession); ok && ss != nil {
				// The request's own floor, if it has one (an HTTP request's
				// Lore-Min-Seq, which a stateless 2026-07-28 request needs,
				// having no session to keep it), learns what the session's
				// reached, for the response's Lore-Seq.
				outer := graph.SeqFloorFrom(ctx)
				fl := f.of(ss)
				fl.Raise(graph.MinSeq(ctx))
				ctx = graph.WithSeqFloor(ctx, fl)
				if outer != nil {
					defer func() { outer.Raise(fl.Seq()) }()
				}
			}
			return next(ctx, method, req)
		}
	}
}
