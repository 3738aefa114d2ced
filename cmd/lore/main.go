// Command lore runs and manages a Lore knowledge graph.
//
// Flags and environment variables are read here and nowhere else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// version is set by the linker for releases.
var version = "dev"

const usage = `lore: a graph-backed knowledge server, MCP-native.

Usage:
  lore COMMAND [flags] [args]

Commands:
  serve      serve MCP, REST and GraphQL over HTTP on 127.0.0.1:8931 (loading the
             example data into a new store); --addr, --tokens, --allow-origin,
             --allow-host, --read-only, and limits (see lore serve --help)
  mcp        serve MCP over stdio (for .mcp.json); logs go to stderr
  import     load a file into the store, all or nothing (--partial keeps batches):
             lore import [--format ndjson|nquads|memory] [--dry-run|--partial] FILE|-
  export     write the store to a file:    lore export [--format ndjson|nquads|memory] FILE|-
  validate   check a model file, and optionally a data file against it, without a store
  get        print a node or an edge:       lore get ID   (an edge ID reads label(from,to))
  query      run a JSON query from a file or stdin (read-only, bounded)
  search     ranked text search:            lore search [--type T] TEXT
  neighbors  the nodes around one:          lore neighbors [--edge L] [--direction D] [--depth N] ID
  paths      the k shortest paths:          lore paths [--edge L] [--direction D] [--k N] FROM TO
  stats      count nodes per type and edges per label
  check      verify the store's integrity (--repair rebuilds Lore's indexes)
  compact    rewrite the store into a fresh file, dropping Cayley's tombstones
  version    print the version

Every command that opens a store takes:
  --store PATH   the store directory (env LORE_STORE; default $XDG_DATA_HOME/lore,
                 or ~/.local/share/lore); commands that only read need an existing store
  --model FILE   the model to validate against (env LORE_MODEL; default: the model
                 the store was created with, else the built-in default model). A command
                 that writes keeps it, rebuilding indexes it changes; one that reads uses
                 it without keeping it, and refuses one that changes indexes
  --lock-timeout DURATION
                 how long to wait for another process holding the store (default 1s)

Run 'lore COMMAND --help' for a command's flags.
`

// exitError carries an exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		code := 1
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "lore:", err)
		} else {
			code = 0
		}
		os.Exit(code)
	}
}

// env is the process environment the CLI reads, so tests can give their own.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	log            *slog.Logger
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(os.Getenv("LORE_LOG_LEVEL"))}))
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{2, errors.New("no command given")}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "--version":
		fmt.Fprintln(stdout, "lore", version)
		return nil
	}
	f, ok := commands[cmd]
	if !ok {
		fmt.Fprint(stderr, usage)
		return &exitError{2, fmt.Errorf("unknown command %q", cmd)}
	}
	return f(ctx, e, rest)
}

var commands = map[string]func(context.Context, *env, []string) error{
	"serve":     cmdServe,
	"mcp":       cmdMCP,
	"import":    cmdImport,
	"export":    cmdExport,
	"validate":  cmdValidate,
	"get":       cmdGet,
	"stats":     cmdStats,
	"check":     cmdCheck,
	"compact":   cmdCompact,
	"query":     cmdQuery,
	"search":    cmdSearch,
	"neighbors": cmdNeighbors,
	"paths":     cmdPaths,
}

func logLevel(s string) slog.Level {
	var l slog.Level
	if l.UnmarshalText([]byte(s)) != nil {
		return slog.LevelInfo
	}
	return l
}

// storeFlags are the flags of every command that opens a store.
type storeFlags struct {
	store, model string
	lockTimeout  time.Duration
}

func (sf *storeFlags) register(fs *flag.FlagSet, e *env) {
	fs.StringVar(&sf.store, "store", e.getenv("LORE_STORE"), "store `directory` (env LORE_STORE)")
	fs.StringVar(&sf.model, "model", e.getenv("LORE_MODEL"), "model `file` (env LORE_MODEL)")
	fs.DurationVar(&sf.lockTimeout, "lock-timeout", time.Second, "how long to wait for another process holding the store")
}

// defaultStore returns $XDG_DATA_HOME/lore, or ~/.local/share/lore.
func defaultStore(e *env) (string, error) {
	if d := e.getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "lore"), nil
	}
	home := e.getenv("HOME")
	if home == "" {
		return "", errors.New("no store: pass --store, or set LORE_STORE, XDG_DATA_HOME or HOME")
	}
	return filepath.Join(home, ".local", "share", "lore"), nil
}

// config turns the flags into a store configuration; read opens the
// store for reading only (see graph.Config.ReadOnly).
func (sf *storeFlags) config(e *env, read bool) (graph.Config, error) {
	cfg := graph.Config{Path: sf.store, LockTimeout: sf.lockTimeout, ReadOnly: read, Progress: rebuildProgress(e)}
	if cfg.Path == "" {
		p, err := defaultStore(e)
		if err != nil {
			return cfg, err
		}
		cfg.Path = p
	}
	if sf.model != "" {
		m, err := loadModel(sf.model)
		if err != nil {
			return cfg, err
		}
		cfg.Model = m
	}
	return cfg, nil
}

func loadModel(path string) (*schema.Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := schema.Load(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// openRead opens the store the flags name, which must exist, to read.
func (sf *storeFlags) openRead(ctx context.Context, e *env) (*graph.Bolt, error) {
	return sf.openStore(ctx, e, true)
}

// openStore opens the store the flags name, to read only or to write.
func (sf *storeFlags) openStore(ctx context.Context, e *env, read bool) (*graph.Bolt, error) {
	cfg, err := sf.config(e, read)
	if err != nil {
		return nil, err
	}
	s, err := graph.Open(ctx, cfg)
	return s, storeError(err)
}

// storeError adds to a missing store's error how to name or make one.
func storeError(err error) error {
	if errors.Is(err, graph.ErrNoStore) {
		return fmt.Errorf("%w (check --store or LORE_STORE; lore import or lore serve create a store)", err)
	}
	return err
}

// rebuildProgress reports on stderr the rebuilding of indexes that opening
// a store may do (after a model change, or an interrupted load).
func rebuildProgress(e *env) func(graph.RebuildProgress) {
	return func(p graph.RebuildProgress) {
		switch {
		case p.Writing:
			fmt.Fprintf(e.stderr, "rebuilding indexes (%s): %d records read, writing the indexes\n", p.Reason, p.Done)
		case p.Done == 0:
			fmt.Fprintf(e.stderr, "rebuilding indexes (%s): reading %d records\n", p.Reason, p.Total)
		default:
			fmt.Fprintf(e.stderr, "rebuilding indexes (%s): %d of %d records read\n", p.Reason, p.Done, p.Total)
		}
	}
}

// parse parses flags interspersed with positional arguments, so that
// "lore import data.ndjson --format nquads" works as well.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &exitError{2, err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

func newFlagSet(e *env, name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: lore %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func usageErr(fs *flag.FlagSet, format string, args ...any) error {
	fs.Usage()
	return &exitError{2, fmt.Errorf(format, args...)}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	if strings.HasSuffix(word, "y") {
		return fmt.Sprintf("%d %sies", n, word[:len(word)-1])
	}
	return fmt.Sprintf("%d %ss", n, word)
}
