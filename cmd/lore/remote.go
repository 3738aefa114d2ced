package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"

	"github.com/coder/websocket"

	"github.com/lore-dev/lore/graph"
)

// A CLI command whose store is held runs in the holder, on its open store,
// with the same command code: the client sends its arguments, working
// directory and the environment the flags read, streams its stdin when the
// command reads it, and writes what the holder streams back to its stdout
// and stderr; it exits with the command's status.
//
// On the socket (GET /v1/run, a WebSocket):
//
//	client → holder  text: runRequest (first); binary: stdin bytes, an
//	                 empty binary message at its end
//	holder → client  text: {"stdin":true} when the command first reads
//	                 stdin, {"exit":N} at the end; binary: 1 or 2 (stdout,
//	                 stderr) followed by bytes

// remoteCommands are the commands a holder runs for other processes. The
// ones that need the store to themselves (compact, check --repair) say
// which process to stop instead.
var remoteCommands = map[string]bool{
	"get": true, "search": true, "query": true, "neighbors": true, "paths": true, "stats": true,
	"import": true, "export": true, "check": true, "model": true, "backup": true, "delete": true,
}

// remoteEnv are the environment variables the CLI's flags read, sent with a
// command.
var remoteEnv = []string{"LORE_STORE", "LORE_MODEL", "LORE_LOG_LEVEL", "XDG_DATA_HOME", "HOME"}

// runRequest is a command sent to a holder.
type runRequest struct {
	Args []string          `json:"args"`
	Dir  string            `json:"dir"` // relative paths are resolved against it
	Env  map[string]string `json:"env"`
	TTY  bool              `json:"tty"` // the client's stderr is a terminal
	// StdoutTTY: the client's stdout is a terminal (a holder from before
	// this field prints JSON, as to a pipe).
	StdoutTTY bool `json:"stdoutTTY,omitempty"`
	// StdinTTY: the client's stdin is a terminal (lore delete asks there;
	// a holder from before this field takes it for not one, and refuses
	// to ask).
	StdinTTY bool `json:"stdinTTY,omitempty"`
}

// runMessage is a text message from the holder to the client.
type runMessage struct {
	Stdin bool `json:"stdin,omitempty"`
	Exit  *int `json:"exit,omitempty"`
}

// Stream tags of the holder's binary messages.
const (
	tagStdout byte = 1
	tagStderr byte = 2
)

// A heldError is returned by a command that found its store held by a
// holder: the command runs there (see env.run).
type heldError struct{ holder *holderConn }

func (e *heldError) Error() string {
	return fmt.Sprintf("the store is held by %s", e.holder.info.describe())
}

// errHolderGone: the holder went away before it started the command.
var errHolderGone = errors.New("the holder went away")

// runRemote runs args in the holder h and returns the command's exit
// status as an error (nil for 0).
func runRemote(ctx context.Context, e *env, h *holderConn, args []string) error {
	dir := e.dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dir = wd
	}
	req := runRequest{Args: args, Dir: dir, Env: map[string]string{}, TTY: e.tty, StdoutTTY: e.stdoutTTY, StdinTTY: e.stdinTTY}
	for _, k := range remoteEnv {
		if v := e.getenv(k); v != "" {
			req.Env[k] = v
		}
	}
	c, resp, err := websocket.Dial(ctx, holderBase+"/v1/run", &websocket.DialOptions{HTTPClient: h.hc})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable || resp == nil {
			return fmt.Errorf("%w: %v", errHolderGone, err)
		}
		return fmt.Errorf("running the command in %s: %w", h.info.describe(), err)
	}
	defer c.CloseNow()
	c.SetReadLimit(-1)
	e.log.Debug("running the command in the holder", "pid", h.info.PID)
	if err := writeJSON(ctx, c, req); err != nil {
		return fmt.Errorf("%w: %v", errHolderGone, err)
	}
	var sendOnce sync.Once
	for {
		typ, r, err := c.Reader(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s stopped before the command finished (%v); what it did is unknown: check, then run the command again",
				h.info.describe(), err)
		}
		if typ == websocket.MessageBinary {
			var tag [1]byte
			if _, err := io.ReadFull(r, tag[:]); err != nil {
				continue
			}
			w := e.stdout
			if tag[0] == tagStderr {
				w = e.stderr
			}
			if _, err := io.Copy(w, r); err != nil {
				return err
			}
			continue
		}
		data, err := io.ReadAll(io.LimitReader(r, 4<<10))
		if err != nil {
			continue
		}
		var m runMessage
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		if m.Stdin {
			sendOnce.Do(func() { go sendStdin(ctx, c, e.stdin) })
		}
		if m.Exit != nil {
			c.Close(websocket.StatusNormalClosure, "")
			if *m.Exit == 0 {
				return nil
			}
			return exitStatus(*m.Exit)
		}
	}
}

// sendStdin streams r to the holder, then an empty message for its end.
func sendStdin(ctx context.Context, c *websocket.Conn, r io.Reader) {
	buf := make([]byte, 64<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if c.Write(ctx, websocket.MessageBinary, buf[:n]) != nil {
				return
			}
		}
		if err != nil {
			c.Write(ctx, websocket.MessageBinary, nil)
			return
		}
	}
}

// A heldStore is the store a holder runs commands on.
type heldStore struct {
	store graph.Store
	path  string
	info  holderInfo
}

// use checks that a command's store options fit the held store.
func (hs *heldStore) use(o storeOptions) error {
	if !sameDir(o.path, hs.path) {
		return fmt.Errorf("%s holds the store in %s, not %s", hs.info.describe(), hs.path, o.path)
	}
	if o.model != nil && !bytes.Equal(o.model.JSON(), hs.store.Model().JSON()) {
		return fmt.Errorf("--model %s differs from the model of the store, which %s holds and validates with; "+
			"leave --model out to use the store's, or stop that process to open the store with another model", o.modelFile, hs.info.describe())
	}
	return nil
}

func (h *holder) serveRun(w http.ResponseWriter, r *http.Request) {
	c, done := h.accept(w, r)
	if c == nil {
		return
	}
	defer done()
	bg := context.Background()
	var req runRequest
	if err := readJSON(bg, c, &req); err != nil || len(req.Args) == 0 || !filepath.IsAbs(req.Dir) {
		c.Close(websocket.StatusPolicyViolation, "want a command: args, an absolute dir, env")
		return
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	if !h.trackRun(c, cancel) {
		return
	}
	defer h.untrackRun(c)

	stdinR, stdinW := io.Pipe()
	go func() { // the client's messages: stdin, until it goes away
		defer cancel()
		for {
			typ, data, err := c.Read(bg)
			if err != nil {
				stdinW.CloseWithError(err)
				return
			}
			if typ != websocket.MessageBinary {
				continue
			}
			if len(data) == 0 {
				stdinW.Close()
				continue
			}
			if _, err := stdinW.Write(data); err != nil {
				continue // the command stopped reading
			}
		}
	}()
	stdout, stderr := &streamWriter{c: c, tag: tagStdout}, &streamWriter{c: c, tag: tagStderr}
	info := h.info()
	e := &env{
		stdin:  &remoteStdin{c: c, r: stdinR},
		stdout: stdout, stderr: stderr,
		getenv: func(k string) string { return req.Env[k] },
		dir:    req.Dir, tty: req.TTY, stdoutTTY: req.StdoutTTY, stdinTTY: req.StdinTTY,
		held: &heldStore{store: h.store, path: h.path, info: info},
	}
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(req.Env["LORE_LOG_LEVEL"])}))
	h.log.Debug("running a command for a client", "command", req.Args[0])
	code := h.runCommand(ctx, e, req.Args)
	h.mu.Lock()
	stopping := h.closeCode != 0
	h.mu.Unlock()
	if stopping && code != 0 {
		fmt.Fprintf(stderr, "lore: %s stopped while the command ran\n", info.describe())
	}
	stdinR.Close()
	writeJSON(bg, c, runMessage{Exit: &code})
	c.Close(websocket.StatusNormalClosure, "")
}

// runCommand runs one command for a client and returns its exit status.
// A panic ends the command, never the holder.
func (h *holder) runCommand(ctx context.Context, e *env, args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			h.log.Error("a command panicked", "command", args[0], "panic", p, "stack", string(debug.Stack()))
			fmt.Fprintf(e.stderr, "lore: internal error in the holder (pid %d), logged there: %v\n", os.Getpid(), p)
			code = 1
		}
	}()
	if !remoteCommands[args[0]] {
		fmt.Fprintf(e.stderr, "lore: %s does not run in a holder\n", args[0])
		return 2
	}
	return exitCode(e.run(ctx, args), e.stderr)
}

// trackRun records a command's socket and cancel for stop, unless stop
// began.
func (h *holder) trackRun(c *websocket.Conn, cancel context.CancelFunc) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closeCode != 0 {
		return false
	}
	h.runs[c] = cancel
	return true
}

func (h *holder) untrackRun(c *websocket.Conn) {
	h.mu.Lock()
	delete(h.runs, c)
	h.mu.Unlock()
}

// A streamWriter sends a command's stdout or stderr to the client.
type streamWriter struct {
	c   *websocket.Conn
	tag byte
}

func (w *streamWriter) Write(p []byte) (int, error) {
	msg := make([]byte, 1+len(p))
	msg[0] = w.tag
	copy(msg[1:], p)
	if err := w.c.Write(context.Background(), websocket.MessageBinary, msg); err != nil {
		return 0, err
	}
	return len(p), nil
}

// remoteStdin is a command's stdin: the client streams it from the first
// read on.
type remoteStdin struct {
	c    *websocket.Conn
	r    io.Reader
	once sync.Once
}

func (s *remoteStdin) Read(p []byte) (int, error) {
	s.once.Do(func() { writeJSON(context.Background(), s.c, runMessage{Stdin: true}) })
	return s.r.Read(p)
}
