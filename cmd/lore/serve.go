package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
	"github.com/lore-dev/lore/web"
)

// DefaultAddr is where lore serve listens unless --addr says otherwise.
const DefaultAddr = "127.0.0.1:8931"

// surfaceFlags are the flags shared by serve and mcp.
type surfaceFlags struct {
	sf        storeFlags
	cf        ceilingFlags
	readOnly  bool
	noExample bool
}

func (f *surfaceFlags) register(fs *flag.FlagSet, e *env) {
	f.sf.register(fs, e)
	f.cf.register(fs)
	fs.BoolVar(&f.readOnly, "read-only", false, "serve no write tools; the store must exist, and a --model is not kept in it")
	fs.BoolVar(&f.noExample, "no-example", false, "do not load the example dataset into a new store")
}

// open opens the store, loading the example dataset into a new store with
// the default model, and builds the MCP server over it. A read-only server
// needs an existing store, and keeps no --model in it.
func (f *surfaceFlags) open(ctx context.Context, e *env) (*graph.Bolt, *mcp.Server, error) {
	s, err := f.sf.openStore(ctx, e, f.readOnly)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.Stats(ctx)
	if err == nil && st.LastSeq == 0 && st.Nodes == 0 && f.sf.model == "" && !f.noExample && !f.readOnly {
		var is *graph.ImportStats
		if is, err = loadExample(ctx, s); err == nil {
			e.log.Info("loaded the example dataset", "nodes", is.Nodes, "edges", is.Edges)
			st, err = s.Stats(ctx)
		} else {
			err = fmt.Errorf("loading the example data: %w", err)
		}
	}
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	e.log.Info("store open", "path", s.Path(), "nodes", st.Nodes, "edges", st.Edges, "changes", st.LastSeq, "ceilings", f.cf.limits())
	cat := mcp.NewCatalog(s, &mcp.Options{ReadOnly: f.readOnly, Ceilings: f.cf.limits(), Logger: e.log})
	return s, mcp.NewServer(cat, &mcp.ServerOptions{Version: version, Logger: e.log}), nil
}

// cmdMCP serves MCP on stdin and stdout. Logs go to stderr.
func cmdMCP(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "mcp", "mcp [--read-only] [store and ceiling flags]   (MCP over stdio)")
	var f surfaceFlags
	f.register(fs, e)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	s, srv, err := f.open(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		if err := srv.Watch(ctx); err != nil {
			e.log.Error("change feed stopped", "error", err)
		}
	}()
	return srv.ServeStdio(ctx, e.stdin, e.stdout)
}

// cmdServe serves MCP over Streamable HTTP until interrupted.
func cmdServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", "serve [--addr HOST:PORT] [--tokens FILE] [--allow-origin URL] [--read-only] [store and ceiling flags]")
	var f surfaceFlags
	f.register(fs, e)
	addr := fs.String("addr", DefaultAddr, "listen `address` (host:port); a non-loopback host needs --tokens")
	tokensFile := fs.String("tokens", "", "bearer tokens `file`: one 'NAME SCOPE TOKEN' per line, SCOPE read or write")
	var origins listFlag
	fs.Var(&origins, "allow-origin", "a browser `origin` allowed besides loopback ones (repeatable)")
	rateLimit := fs.Float64("rate", 50, "requests per second per token (or client address); 0 disables")
	maxBody := fs.Int64("max-body", 1<<20, "largest request body in bytes")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return usageErr(fs, "--addr %q: want HOST:PORT, such as %s", *addr, DefaultAddr)
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
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	s, srv, err := f.open(ctx, e)
	if err != nil {
		ln.Close()
		return err
	}
	defer s.Close()
	rate := *rateLimit
	if rate == 0 {
		rate = -1
	}
	h := web.NewHandler(srv, &web.Options{Logger: e.log, Version: version, StorePath: s.Path(), HTTP: mcp.HTTPOptions{Logger: e.log,
		AllowedOrigins: origins, Tokens: tokens, ResourceURL: "http://" + ln.Addr().String() + "/mcp", MaxBodyBytes: *maxBody, RateLimit: rate}})
	return serveHTTP(ctx, e, ln, h, srv)
}

// serveHTTP serves h on ln until ctx is done, then shuts down without
// hanging on open streams: request contexts are cancelled first.
func serveHTTP(ctx context.Context, e *env, ln net.Listener, h http.Handler, srv *mcp.Server) error {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	hs := &http.Server{Handler: h, BaseContext: func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		if err := srv.Watch(watchCtx); err != nil {
			e.log.Error("change feed stopped", "error", err)
		}
	}()
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	e.log.Info("serving MCP", "url", "http://"+ln.Addr().String()+"/mcp")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	e.log.Info("shutting down")
	cancelBase() // ends open SSE streams so Shutdown does not wait for them
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// readTokens reads a tokens file: lines of NAME SCOPE TOKEN; blank lines
// and lines starting with # are skipped.
func readTokens(path string) ([]mcp.Token, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mcp.Token
	names := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want NAME SCOPE TOKEN, got %d field(s)", path, n, len(fields))
		}
		t := mcp.Token{Name: fields[0], Scope: fields[1], Secret: fields[2]}
		if t.Scope != mcp.ScopeRead && t.Scope != mcp.ScopeWrite {
			return nil, fmt.Errorf("%s:%d: scope %q: want read or write", path, n, t.Scope)
		}
		if len(t.Secret) < 16 {
			return nil, fmt.Errorf("%s:%d: token of %s is shorter than 16 characters; use a long random one (openssl rand -hex 32)", path, n, t.Name)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("%s:%d: name %s is used twice; names identify callers", path, n, t.Name)
		}
		names[t.Name] = true
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
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
