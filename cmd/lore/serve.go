package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/schema"
	"github.com/lore-dev/lore/web"
)

// DefaultAddr is where lore serve listens unless --addr says otherwise.
const DefaultAddr = "127.0.0.1:8931"

// surfaceFlags are the flags shared by serve and mcp.
type surfaceFlags struct {
	sf        storeFlags
	readStore string // a hot standby's postgres:// URL: where reads go
	cf        ceilingFlags
	readOnly  bool
	noExample bool
	maxDepth  int
	maxSubs   int
}

func (f *surfaceFlags) register(fs *flag.FlagSet, e *env) {
	f.sf.register(fs, e)
	fs.StringVar(&f.readStore, "read-store", e.getenv("LORE_READ_STORE"),
		"a hot standby's postgres:// `URL` to read from, with --store postgres://… the primary (env LORE_READ_STORE)")
	f.cf.register(fs)
	fs.BoolVar(&f.readOnly, "read-only", false, "serve no write tools; the store must exist, and a --model is not kept in it")
	fs.BoolVar(&f.noExample, "no-example", false, "do not load the example dataset into a new store")
	fs.IntVar(&f.maxDepth, "max-depth", schema.DefaultMaxDepth, "deepest nesting of JSON input (messages, arguments, bodies, query parameters, WebSocket messages)")
	fs.IntVar(&f.maxSubs, "max-subscriptions", mcp.DefaultMaxSubscriptions, "resource subscriptions one MCP session may hold")
}

// sessionConfig is the MCP session the flags ask for.
func (f *surfaceFlags) sessionConfig(o storeOptions) sessionConfig {
	return sessionConfig{ReadOnly: f.readOnly, Ceilings: f.cf.limits(), MaxDepth: f.maxDepth, MaxSubscriptions: f.maxSubs,
		Model: modelHash(o.model), ModelFile: o.modelFile}
}

// key is the configuration that identifies a holder's MCP server.
func (c sessionConfig) key(heldReadOnly bool) sessionConfig {
	c.Model, c.ModelFile = "", ""
	c.ReadOnly = c.ReadOnly || heldReadOnly
	return c
}

// cmdMCP serves MCP on stdin and stdout, through the store's holder: the
// process that holds the store, or a background holder it starts (lore
// hold). With --direct it serves the session itself, holding the store.
// Logs go to stderr.
func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mcp", "mcp [--read-only] [--direct] [--idle D] [store and ceiling flags]   (MCP over stdio)")
	var f surfaceFlags
	f.register(fs, e)
	direct := fs.Bool("direct", false, "serve the session in this process, which then holds the store (and shares it with other Lore processes until it exits), "+
		"instead of through the store's shared holder")
	idle := fs.Duration("idle", defaultIdle, "how long a background holder this starts waits without clients before it exits")
	relay := fs.Bool("relay", false, "relay the session's messages through this process instead of handing stdin and stdout to the store's holder: "+
		"each call then costs a hop more (about 0.1–0.2 ms), and a holder killed mid-session is replaced without the client noticing "+
		"(handed over, the session ends with the holder's death)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	if f.maxDepth <= 0 || f.maxSubs <= 0 {
		return usageErr(fs, "--max-depth and --max-subscriptions must be positive")
	}
	if *idle <= 0 {
		return usageErr(fs, "--idle must be positive")
	}
	if f.readStore != "" && !isRemote(f.sf.store) {
		return usageErr(fs, "--read-store needs --store postgres://… (the standby's primary)")
	}
	if *direct || !sharing || isRemote(f.sf.store) {
		return serveStdioDirect(ctx, e, &f) // a database needs no holder
	}
	o, err := f.sf.options(e, f.readOnly)
	if err != nil {
		return err
	}
	if strings.Contains(o.path, "://") || f.readOnly && !storeExists(o.path) {
		// Refused by the store, with its message, before any holder starts.
		s, err := openEmbedded(ctx, o)
		if err == nil {
			s.Close()
		}
		return storeError(err)
	}
	if e.exe == "" {
		return errors.New("cannot find this program to start a background holder; run lore mcp --direct")
	}
	b := newBridge(e, bridgeOptions{store: o.path, config: f.sessionConfig(o), exe: e.exe, hold: holdArgs(&f, o, *idle),
		wait: max(f.sf.lockTimeout, 10*time.Second) + 20*time.Second, maxLine: defaultMaxLine, relay: *relay})
	return b.run(ctx)
}

// serveStdioDirect serves one MCP session on stdin and stdout from this
// process, which holds the store (and shares it while it runs).
func serveStdioDirect(ctx context.Context, e *env, f *surfaceFlags) error {
	s, o, err := holdStore(ctx, e, f, false)
	if err != nil {
		return heldBy(err, "lore mcp --direct")
	}
	h, err := startHolder(holderOptions{kind: kindMCP, store: s, path: o.path, readOnly: f.readOnly, log: e.log, getenv: e.getenv})
	if err != nil {
		s.Close()
		return err
	}
	cfg := f.sessionConfig(o).key(f.readOnly)
	srv := newMCPServer(s, cfg, e.log)
	h.addServer(cfg, srv)
	logStoreOpen(ctx, e, s, o, f)
	err = srv.ServeStdio(ctx, e.stdin, e.stdout)
	h.stop(statusStopping, "lore mcp --direct ended")
	h.shutdown()
	return err
}

// logStoreOpen logs what lore serve and lore mcp --direct opened.
func logStoreOpen(ctx context.Context, e *env, s graph.Store, o storeOptions, f *surfaceFlags) {
	if st, err := s.Stats(ctx); err == nil {
		args := []any{"path", displayStore(o.path), "nodes", st.Nodes, "edges", st.Edges, "changes", st.LastSeq, "ceilings", f.cf.limits()}
		if o.readStore != "" {
			args = append(args, "read_store", displayStore(o.readStore))
		}
		e.log.Info("store open", args...)
	}
}

// cmdServe serves MCP over Streamable HTTP until interrupted.
func cmdServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", "serve [--addr HOST:PORT] [--tokens FILE] [--allow-origin URL] [--allow-host NAME] [--read-only] "+
		"[--read-store URL] [limit flags] [store and ceiling flags]")
	var f surfaceFlags
	f.register(fs, e)
	addr := fs.String("addr", cmp.Or(e.getenv("LORE_ADDR"), DefaultAddr),
		"listen `address` (host:port; env LORE_ADDR, which the flag overrides); a non-loopback host needs --tokens")
	tokensFile := fs.String("tokens", "", "bearer tokens `file`: one 'NAME SCOPE TOKEN' per line, SCOPE read or write; readable by its owner only")
	var origins, hosts listFlag
	fs.Var(&origins, "allow-origin", "a browser `origin` allowed besides loopback ones (repeatable)")
	fs.Var(&hosts, "allow-host", "a `name` (or name:port) the Host header may carry besides loopback ones and the --addr host (repeatable)")
	rateLimit := fs.Float64("rate", mcp.DefaultRateLimit, "requests per second per token (or client address), and per address on public pages; 0 disables")
	maxBody := fs.Int64("max-body", mcp.DefaultMaxBodyBytes, "largest request body in bytes")
	authFailures := fs.Int("auth-failures", mcp.DefaultAuthFailures, "wrong bearer tokens a client address may send per minute before 429; 0 disables")
	maxSessions := fs.Int("max-sessions", mcp.DefaultMaxSessions, "open legacy MCP sessions per token (or client address); 0 disables")
	maxConns := fs.Int("max-conns", web.DefaultMaxConns, "open connections; past it idle ones are closed, else 503")
	readTimeout := fs.Duration("read-timeout", web.DefaultReadTimeout, "time to read a whole request, body included")
	writeTimeout := fs.Duration("write-timeout", web.DefaultWriteTimeout, "time to write a response (each write, for event streams)")
	idleTimeout := fs.Duration("idle-timeout", web.DefaultIdleTimeout, "time a kept-alive connection may wait for its next request")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	addrFrom := "--addr"
	if !isSet(fs, "addr") && e.getenv("LORE_ADDR") != "" {
		addrFrom = "LORE_ADDR"
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageErr(fs, "%s %q: want HOST:PORT, such as %s", addrFrom, *addr, DefaultAddr)
	}
	for name, d := range map[string]time.Duration{"--read-timeout": *readTimeout, "--write-timeout": *writeTimeout} {
		if d <= f.cf.timeout {
			return usageErr(fs, "%s %s must be longer than --timeout %s, the longest a read may run", name, d, f.cf.timeout)
		}
	}
	if *idleTimeout <= 0 || *maxConns <= 0 || f.maxDepth <= 0 || f.maxSubs <= 0 || *maxBody <= 0 {
		return usageErr(fs, "--idle-timeout, --max-conns, --max-depth, --max-subscriptions and --max-body must be positive")
	}
	var tokens []mcp.Token
	if *tokensFile != "" {
		if tokens, err = readTokens(*tokensFile); err != nil {
			return err
		}
	}
	if !mcp.IsLoopback(host) && len(tokens) == 0 {
		return &exitError{2, fmt.Errorf("refusing to listen on %s without authentication: a non-loopback address is reachable from other machines. "+
			"Pass --tokens FILE (lines of 'NAME SCOPE TOKEN'), or listen on 127.0.0.1", *addr)}
	}
	// A specific address the server listens on is a name it answers to.
	if ip := net.ParseIP(host); host != "" && !mcp.IsLoopback(host) && (ip == nil || !ip.IsUnspecified()) {
		hosts = append(hosts, host)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return listenError(*addr, addrFrom, err)
	}
	s, o, err := holdStore(ctx, e, &f, true)
	if err != nil {
		ln.Close()
		return heldBy(err, "lore serve")
	}
	h, err := startHolder(holderOptions{kind: kindServe, store: s, path: o.path, readOnly: f.readOnly, log: e.log, getenv: e.getenv})
	if err != nil {
		ln.Close()
		s.Close()
		return err
	}
	defer h.shutdown()
	defer h.stop(statusStopping, "lore serve stopped")
	cfg := f.sessionConfig(o).key(f.readOnly)
	metrics := web.NewMetrics()
	srv := newMeteredServer(s, cfg, e.log, metrics)
	metrics.WatchFeed(s, srv)
	h.addServer(cfg, srv)
	logStoreOpen(ctx, e, s, o, &f)
	off := func(n int) int { // the flags' 0 is the options' "no limit"
		if n == 0 {
			return -1
		}
		return n
	}
	rate := *rateLimit
	if rate == 0 {
		rate = -1
	}
	wh := web.NewHandler(srv, &web.Options{Logger: e.log, Version: version, StorePath: displayStore(o.path), Command: installedExe(e.exe),
		Metrics: metrics, Ready: readyChecks(s, srv), HTTP: mcp.HTTPOptions{Logger: e.log,
			AllowedOrigins: origins, AllowedHosts: hosts, Tokens: tokens, ResourceURL: "http://" + ln.Addr().String() + "/mcp",
			MaxBodyBytes: *maxBody, MaxJSONDepth: f.maxDepth, RateLimit: rate, AuthFailures: off(*authFailures), MaxSessions: off(*maxSessions)}})
	hs := web.NewServer(wh, &web.ServerOptions{ReadTimeout: *readTimeout, WriteTimeout: *writeTimeout, IdleTimeout: *idleTimeout,
		MaxConns: *maxConns, Logger: e.log})
	return serveHTTP(ctx, e, ln, hs, len(tokens) > 0)
}

// installedExe returns exe, this program's path, for the snippets that
// start it, unless it is a binary go run built and deletes at exit.
func installedExe(exe string) string {
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return ""
	}
	return exe
}

// listenError says why lore serve cannot listen on addr (from names where
// the address came from: --addr or LORE_ADDR), and how to pick another.
func listenError(addr, from string, err error) error {
	const hint = "pass --addr HOST:PORT, or set LORE_ADDR (make run ADDR=HOST:PORT), for another address, such as 127.0.0.1:0 for any free port"
	if errors.Is(err, syscall.EADDRINUSE) {
		return &exitError{1, fmt.Errorf("cannot listen on %s (%s): the address is in use, perhaps by another lore serve; %s", addr, from, hint)}
	}
	return &exitError{1, fmt.Errorf("cannot listen on %s (%s): %v; %s", addr, from, err, hint)}
}

// isSet reports whether the flag called name was given.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// serveHTTP serves on ln until ctx is done. (The holder follows the
// store's change log for the MCP server's notifications meanwhile.)
// It first logs the URL of every surface and page, the sign-in page
// included when the server takes tokens.
func serveHTTP(ctx context.Context, e *env, ln net.Listener, hs *web.Server, signIn bool) error {
	base := "http://" + ln.Addr().String()
	if signIn {
		e.log.Info("sign-in page", "url", base+"/signin")
	}
	for _, ep := range web.Endpoints() {
		msg := ep.Name
		if ep.Path == "/mcp" {
			msg = "serving MCP" // what scripts and tests look for
		}
		e.log.Info(msg, "url", base+ep.Path)
	}
	err := hs.Serve(ctx, ln)
	if ctx.Err() != nil {
		e.log.Info("shut down")
	}
	return err
}

// readTokens reads a tokens file that only its owner may read: lines of
// NAME SCOPE TOKEN; blank lines and lines starting with # are skipped.
func readTokens(path string) ([]mcp.Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%s: the file holds secrets but its mode %04o lets others than its owner read or change it; run: chmod 600 %s",
			path, perm, path)
	}
	return parseTokens(f, path)
}

// parseTokens reads the lines of a tokens file; name is the file's, for
// messages.
func parseTokens(r io.Reader, name string) ([]mcp.Token, error) {
	var out []mcp.Token
	names := map[string]bool{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want NAME SCOPE TOKEN, got %d field(s)", name, n, len(fields))
		}
		t := mcp.Token{Name: fields[0], Scope: fields[1], Secret: fields[2]}
		if t.Scope != mcp.ScopeRead && t.Scope != mcp.ScopeWrite {
			return nil, fmt.Errorf("%s:%d: scope %q: want read or write", name, n, t.Scope)
		}
		if len(t.Secret) < 16 {
			return nil, fmt.Errorf("%s:%d: token of %s is shorter than 16 characters; use a long random one (openssl rand -hex 32)", name, n, t.Name)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("%s:%d: name %s is used twice; names identify callers", name, n, t.Name)
		}
		names[t.Name] = true
		out = append(out, t)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("%s: a line is longer than %d bytes; a token line is NAME SCOPE TOKEN", name, bufio.MaxScanTokenSize)
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", name)
	}
	return out, nil
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, strings.TrimSuffix(s, "/"))
	return nil
}
