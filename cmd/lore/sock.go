package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The holder of a store (the process that has it open: lore serve, lore
// mcp --direct, or the background holder lore hold that lore mcp starts)
// listens on a Unix socket, and every other Lore process that finds the
// store held talks to it there: HTTP/1.1, with WebSockets for the long
// streams (holder.go, bridge.go, remote.go). This file names the socket,
// records it in the store's owner file, and finds a holder.

// sockName is the socket's name in a store directory.
const sockName = "lore.sock"

// ownerFile is the file in a store directory that names the process
// holding it (the store writes it; a holder adds its socket).
const ownerFile = "owner"

// maxSockPath is the longest socket path the system takes (sun_path, less
// its terminating NUL).
func maxSockPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103 // the BSDs and macOS
}

// socketPath returns where the holder of the store in dir listens: in dir
// when the path fits the socket address, else in an owner-only runtime
// directory ($XDG_RUNTIME_DIR/lore, or /tmp/lore-UID), under a name
// derived from dir.
func socketPath(dir string, getenv func(string) string) string {
	if p := filepath.Join(dir, sockName); len(p) <= maxSockPath() {
		return p
	}
	sum := sha256.Sum256([]byte(filepath.Clean(dir)))
	return filepath.Join(runtimeDir(getenv), hex.EncodeToString(sum[:12])+".sock")
}

// runtimeDir is the owner-only directory for sockets whose store paths are
// too long.
func runtimeDir(getenv func(string) string) string {
	if d := getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "lore")
	}
	return filepath.Join(os.TempDir(), "lore-"+strconv.Itoa(os.Getuid()))
}

// ensurePrivateDir creates dir with mode 0700 if needed, and refuses one
// that another user owns or others may enter: a socket there could be
// replaced by someone else's.
func ensurePrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symbolic link?); remove it so that Lore can make its socket directory there", dir)
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to this user (%d): Lore keeps its sockets in a directory only its user can enter; remove it, or set XDG_RUNTIME_DIR", dir, uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("%s: mode %04o lets others in, and it cannot be changed: %w", dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}

// owner is what a store's owner file says.
type owner struct {
	pid     int
	command string
	socket  string // "" if the process does not listen
}

var ownerRE = regexp.MustCompile(`^pid (\d+) \((.*)\)(?:, listening on (.+))?$`)

// readOwner reads the owner file of the store in dir.
func readOwner(dir string) (owner, bool) {
	data, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		return owner{}, false
	}
	m := ownerRE.FindStringSubmatch(strings.TrimSpace(string(data)))
	if m == nil {
		return owner{}, false
	}
	pid, _ := strconv.Atoi(m[1])
	return owner{pid: pid, command: m[2], socket: m[3]}, true
}

// writeOwner records this process as the holder of the store in dir,
// listening on sock. The line keeps the form the store writes (pid and
// command line), so its "store locked" message names the socket too.
func writeOwner(dir, sock string) error {
	line := fmt.Sprintf("pid %d (%s), listening on %s\n", os.Getpid(), strings.Join(os.Args, " "), sock)
	tmp := filepath.Join(dir, ownerFile+".tmp")
	if err := os.WriteFile(tmp, []byte(line), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, ownerFile))
}

// holderInfo is what a holder says about itself (GET /v1/hello).
type holderInfo struct {
	PID      int    `json:"pid"`
	Command  string `json:"command"`
	Kind     string `json:"kind"` // kindServe, kindHold or kindMCP
	Version  string `json:"version"`
	Store    string `json:"store"`
	Socket   string `json:"socket"`
	ReadOnly bool   `json:"readOnly"`
	Model    string `json:"model"`    // the SHA-256 of its model document, hex
	Sessions int    `json:"sessions"` // MCP sessions and commands it serves now
}

// The kinds of holder.
const (
	kindServe = "serve" // lore serve
	kindHold  = "hold"  // the background holder lore mcp starts
	kindMCP   = "mcp"   // lore mcp --direct
)

// describe names the holder for messages: pid, command line and socket.
func (i *holderInfo) describe() string {
	return fmt.Sprintf("pid %d (%s), listening on %s", i.PID, i.Command, i.Socket)
}

// stopHint adds to a message what stopping the holder entails.
func (i *holderInfo) stopHint() string {
	if i.Kind == kindHold {
		return fmt.Sprintf(" (it is the background holder that lore mcp starts, serving %d session(s) now; "+
			"their MCP clients start a new one when they next reconnect, so stop those clients first)", i.Sessions)
	}
	return ""
}

// A holderConn reaches a holder over its socket.
type holderConn struct {
	info holderInfo
	hc   *http.Client
}

// holderBase is the URL base of requests to a holder; the host is
// ignored, since the client dials the socket.
const holderBase = "http://lore"

// newHolderClient returns an HTTP client whose every connection dials sock.
func newHolderClient(sock string) *http.Client {
	var d net.Dialer
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", sock)
		},
		// A connection per request: hellos are few, and a WebSocket
		// keeps its own.
		DisableKeepAlives: true,
	}}
}

// helloTimeout bounds the wait for a holder's hello.
const helloTimeout = 2 * time.Second

// findHolder returns the holder of the store in dir, or nil if no process
// answers on its socket (none holds the store, or one that does not
// listen, such as an import in a process of its own).
func findHolder(ctx context.Context, dir string) *holderConn {
	h, _ := dialHolder(ctx, dir)
	return h
}

// dialHolder is findHolder with the reason there is none.
func dialHolder(ctx context.Context, dir string) (*holderConn, error) {
	if isRemote(dir) {
		return nil, errors.New("a database store has no holder")
	}
	socks := []string{}
	if o, ok := readOwner(dir); ok && o.socket != "" {
		socks = append(socks, o.socket)
	}
	if p := socketPath(dir, os.Getenv); len(socks) == 0 || socks[0] != p {
		socks = append(socks, p)
	}
	var err error
	for _, sock := range socks {
		var h *holderConn
		if h, err = hello(ctx, sock); err == nil && sameDir(h.info.Store, dir) {
			return h, nil
		}
	}
	return nil, err
}

// hello asks the process listening on sock who it is.
func hello(ctx context.Context, sock string) (*holderConn, error) {
	if _, err := os.Lstat(sock); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, helloTimeout)
	defer cancel()
	hc := newHolderClient(sock)
	req, _ := http.NewRequestWithContext(ctx, "GET", holderBase+"/v1/hello", nil)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the holder answered %s", resp.Status)
	}
	h := &holderConn{hc: hc}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h.info); err != nil {
		return nil, fmt.Errorf("the holder's hello: %w", err)
	}
	return h, nil
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// handover asks a background holder to give its store up (POST
// /v1/handover): it stops accepting, ends its sessions (their bridges wait
// for the next holder) and closes the store before it answers.
func (h *holderConn) handover(ctx context.Context, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	body := fmt.Sprintf(`{"pid":%d,"command":%q}`, os.Getpid(), strings.Join(os.Args, " "))
	req, _ := http.NewRequestWithContext(ctx, "POST", holderBase+"/v1/handover", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return fmt.Errorf("asking %s to hand the store over: %w", h.info.describe(), err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s did not hand the store over: %s", h.info.describe(), strings.TrimSpace(string(msg)))
	}
	log.Info("took the store over from the background holder", "pid", h.info.PID)
	return nil
}
