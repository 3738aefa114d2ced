//go:build interop

package main

// The official TypeScript MCP SDK's client (@modelcontextprotocol/sdk,
// pinned in testdata/interop/package-lock.json) on lore mcp. make interop
// installs it (npm ci) and runs these tests; they never skip.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestSharedStoreInterop: three lore mcp stdio clients (the TypeScript
// SDK's and two of the Go SDK's), lore serve (the Go SDK over HTTP) and CLI
// commands share one store at once (see testSharing).
func TestSharedStoreInterop(t *testing.T) {
	store := newStore(t)
	_, url := startServe(t, store, "--rate", "0")
	ts := startTS(t, store)
	if !ts.stderr.waitFor("session=attached", 30*time.Second) {
		t.Fatalf("the TypeScript client's lore mcp did not hand its session over:\n%s", ts.stderr.String())
	}
	a := stdioClient(t, "stdio-go-a", store)
	b := stdioClient(t, "stdio-go-b", store)
	h := httpClient(t, "http", url)
	testSharing(t, store, []writer{ts, a, h, &cliWriter{t, store}}, []subscriber{ts, a, b, h}, a)
}

// TestBridgeReconnectsInterop: the holder of the TypeScript client's
// relayed session is killed; the client's next write goes through a new
// holder, and its subscription with it.
func TestBridgeReconnectsInterop(t *testing.T) {
	store := newStore(t)
	ts := startTS(t, store, "--relay")
	if err := ts.subscribe(t.Context(), []string{"lore://node/topic/ts-after"}); err != nil {
		t.Fatal(err)
	}
	old := holderPID(t, store)
	if err := killPID(old); err != nil {
		t.Fatal(err)
	}
	// Once the bridge knows (a write before would fail, saying to retry):
	if !ts.stderr.waitFor("lost the store's holder", 30*time.Second) {
		t.Fatalf("the bridge did not notice:\n%s", ts.stderr.String())
	}
	if err := ts.write(t.Context(), []string{"topic/ts-after"}, 1); err != nil {
		t.Fatalf("write after the holder was killed: %v\n%s", err, ts.stderr.String())
	}
	if pid := holderPID(t, store); pid == old {
		t.Fatalf("the holder is still pid %d", pid)
	}
	// The bridge says the resource may have changed, then the write does.
	for i := range 2 {
		select {
		case u := <-ts.updates():
			if u.uri != "lore://node/topic/ts-after" {
				t.Errorf("update %d: %s", i, u.uri)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("update %d did not come\n%s", i, ts.stderr.String())
		}
	}
}

// tsClient drives testdata/interop/client.mjs.
type tsClient struct {
	in      io.WriteCloser
	stderr  *syncBuffer
	ups     chan update
	mu      sync.Mutex
	seq     int
	waiting map[int]chan error
}

func (c *tsClient) String() string { return "stdio-ts" }

func startTS(t testing.TB, store string, flags ...string) *tsClient {
	t.Helper()
	dir := filepath.Join("testdata", "interop")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed in %s: run make interop (npm ci there): %v", dir, err)
	}
	cmd := exec.Command("node", append([]string{"client.mjs", loreBin, store}, flags...)...)
	cmd.Dir, cmd.Env = dir, testEnv(t)
	c := &tsClient{stderr: &syncBuffer{}, ups: make(chan update, 100000), waiting: map[int]chan error{}}
	cmd.Stderr = c.stderr
	c.in, _ = cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.in.Close(); cmd.Wait() })
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				Ready bool   `json:"ready"`
				Event string `json:"event"`
				URI   string `json:"uri"`
				ID    int    `json:"id"`
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			switch {
			case m.Ready:
				close(ready)
			case m.Event == "updated":
				c.ups <- update{m.URI, time.Now()}
			case m.ID != 0:
				c.mu.Lock()
				ch := c.waiting[m.ID]
				delete(c.waiting, m.ID)
				c.mu.Unlock()
				if ch != nil {
					if m.OK {
						ch <- nil
					} else {
						ch <- errors.New(m.Error)
					}
				}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		t.Fatalf("the TypeScript client did not connect:\n%s", c.stderr.String())
	}
	return c
}

// do sends a command to the client and waits for its answer.
func (c *tsClient) do(ctx context.Context, cmd map[string]any) error {
	ch := make(chan error, 1)
	c.mu.Lock()
	c.seq++
	cmd["id"] = c.seq
	c.waiting[c.seq] = ch
	data, _ := json.Marshal(cmd)
	_, err := fmt.Fprintf(c.in, "%s\n", data)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *tsClient) write(ctx context.Context, ids []string, par int) error {
	return c.do(ctx, map[string]any{"op": "write", "ids": ids, "par": par})
}

func (c *tsClient) subscribe(ctx context.Context, uris []string) error {
	return c.do(ctx, map[string]any{"op": "subscribe", "uris": uris})
}

func (c *tsClient) updates() <-chan update { return c.ups }
