// Command lore runs and manages a Lore knowledge graph.
//
// Flags and environment variables are read here and nowhere else.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// version is what every surface reports: lore version, the MCP server's
// serverInfo, the landing page. A release may set it with the linker
// (-ldflags "-X main.version=v1.2.3"); otherwise it comes from the build
// info (see buildVersion).
var version string

func init() {
	info, ok := debug.ReadBuildInfo()
	version = cmp.Or(version, buildVersion(info, ok))
}

// buildVersion returns the version the build info records: the main
// module's version (go install …@v1.2.3, or the pseudo-version go build
// stamps in a checkout: v0.0.0-DATE-REVISION, +dirty with uncommitted
// changes), else the VCS revision, else "dev" (go run and go test stamp
// neither).
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "dev"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return "dev"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		rev += "+dirty"
	}
	return "dev-" + rev
}

const usage = `lore: a graph-backed knowledge server, MCP-native.

Usage:
  lore COMMAND [flags] [args]

Commands:
  serve      serve MCP, REST and GraphQL over HTTP on 127.0.0.1:8931 (loading the
             example data into a new store); --addr (env LORE_ADDR), --tokens,
             --allow-origin, --allow-host, --read-only, and limits (see lore serve --help)
  mcp        serve MCP over stdio (for .mcp.json) through the process that holds the
             store, starting a background one if none does (--direct: serve it in
             this process); logs go to stderr
  import     load a file into the store, all or nothing (--partial keeps batches):
             lore import [--format ndjson|nquads|memory] [--dry-run|--partial] FILE|-
             --mode upsert|merge|sync (--scope type:T|prefix:P|file), --dangling error|skip|stub
  delete     delete nodes or edges by ID (or --file) or by --query, showing what goes
             and asking first (--yes for scripts); one atomic batch
  export     write the store to a file:    lore export [--format ndjson|nquads|memory] FILE|-
  validate   check a model file, and optionally a data file against it, without a store
  model      what a new model changes and which stored elements it rejects, and put it in use:
             lore model diff NEW.json;  lore model apply NEW.json
  get        print a node or an edge:       lore get ID   (an edge ID reads label(from,to))
  query      run a JSON query from a file or stdin (read-only, bounded)
  search     ranked text search:            lore search [--type T] TEXT
  neighbors  the nodes around one:          lore neighbors [--edge L] [--direction D] [--depth N] ID
  paths      the k shortest paths:          lore paths [--edge L] [--direction D] [--k N] FROM TO
  stats      count nodes per type and edges per label
  check      verify the store's integrity (--repair rebuilds Lore's indexes)
  compact    rewrite the store into a fresh file, dropping Cayley's tombstones
  backup     copy the store, even while it serves, into a new directory: lore backup DEST
  restore    check a backup and install it as the store of a new directory:
             lore restore SRC DIR
  migrate    copy a store into an empty one, embedded or PostgreSQL, and verify it:
             lore migrate --from DIR|URL --to URL|DIR
  version    print the version (the module version or VCS revision of the build)

get, query, search, neighbors, paths and stats print tables on a terminal and
JSON otherwise; --json (or -o json) and -o table choose.

Every command that opens a store takes:
  --store PATH   the store directory, or a postgres:// URL (env LORE_STORE; default $XDG_DATA_HOME/lore,
                 or ~/.local/share/lore); commands that only read need an existing store
  --model FILE   the model to validate against (env LORE_MODEL; default: the model
                 the store was created with, else the built-in default model). A command
                 that writes keeps it, rebuilding indexes it changes; one that reads uses
                 it without keeping it, and refuses one that changes indexes
  --lock-timeout DURATION
                 how long to wait for another process holding the store (default 1s)

A store is open in one process at a time, its holder (lore serve, lore mcp
--direct, or the background holder lore mcp starts); the other commands run
through it. compact and check --repair need the store to themselves.

Run 'lore COMMAND --help' for a command's flags.
`

// exitError carries an exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// An exitStatus ends the process with its code and no message: the
// message, if any, was written already (by the holder that ran the
// command, see remote.go).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if code := exitCode(err, os.Stderr); code != 0 || err != nil {
		os.Exit(code)
	}
}

// exitCode reports err on stderr as main does, and returns the process's
// exit code for it.
func exitCode(err error, stderr io.Writer) int {
	var st exitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &st):
		return int(st)
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	fmt.Fprintln(stderr, "lore:", err)
	return code
}

// env is the process environment the CLI reads, so tests can give their own,
// and a holder can run a command for another process (see remote.go).
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	log            *slog.Logger
	// dir is the directory relative paths are resolved against; "" means
	// this process's working directory.
	dir string
	// tty reports whether stderr is a terminal (progress is drawn there).
	tty bool
	// stdoutTTY reports whether stdout is a terminal: the read commands
	// then print their human view rather than JSON.
	stdoutTTY bool
	// stdinTTY reports whether stdin is a terminal, which a command may
	// ask a question on (lore delete).
	stdinTTY bool
	// held is the store of the holder this command runs in, for a command
	// that another process sent to it; nil otherwise.
	held *heldStore
	// exe is this program, which lore mcp starts as a background holder.
	exe string
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, tty: isTerminal(stderr), stdoutTTY: isTerminal(stdout)}
	if f, ok := stdin.(*os.File); ok {
		e.stdinTTY = isTerminalFile(f)
	}
	e.log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel(os.Getenv("LORE_LOG_LEVEL"))}))
	if exe, err := os.Executable(); err == nil {
		e.exe = exe
	}
	return e.run(ctx, args)
}

// run runs the command args[0]. A command that finds its store held by a
// holder process runs there instead (see remote.go).
func (e *env) run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usage)
		return &exitError{2, errors.New("no command given")}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(e.stdout, usage)
		return nil
	case "--version":
		fmt.Fprintln(e.stdout, "lore", version)
		return nil
	case "version":
		fs := newFlagSet(e, "version", "version   (print the version: the module version or VCS revision this binary was built from)")
		if pos, err := parse(fs, rest); err != nil {
			return err
		} else if len(pos) != 0 {
			return usageErr(fs, "version takes no arguments")
		}
		fmt.Fprintln(e.stdout, "lore", version)
		return nil
	}
	f, ok := commands[cmd]
	if !ok {
		fmt.Fprint(e.stderr, usage)
		return &exitError{2, fmt.Errorf("unknown command %q", cmd)}
	}
	for attempt := 1; ; attempt++ {
		err := f(ctx, e, rest)
		var he *heldError
		if e.held != nil || !remoteCommands[cmd] || !errors.As(err, &he) {
			return err
		}
		// The store is held: the holder runs the command. If it went
		// away before it started, the command runs again from the top,
		// on the store or on a new holder.
		if err = runRemote(ctx, e, he.holder, args); !errors.Is(err, errHolderGone) || attempt == 3 {
			return err
		}
	}
}

// commands are the commands by name (set in init: the holder's commands
// run through env.run, which looks them up here).
var commands map[string]func(context.Context, *env, []string) error

func init() {
	commands = map[string]func(context.Context, *env, []string) error{
		"serve":     cmdServe,
		"mcp":       cmdMCP,
		"import":    cmdImport,
		"export":    cmdExport,
		"validate":  cmdValidate,
		"model":     cmdModel,
		"get":       cmdGet,
		"stats":     cmdStats,
		"check":     cmdCheck,
		"compact":   cmdCompact,
		"query":     cmdQuery,
		"search":    cmdSearch,
		"neighbors": cmdNeighbors,
		"paths":     cmdPaths,
		"hold":      cmdHold,
		"backup":    cmdBackup,
		"restore":   cmdRestore,
		"delete":    cmdDelete,
		"migrate":   cmdMigrate,
	}
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
	fs.StringVar(&sf.store, "store", e.getenv("LORE_STORE"), "store `directory` or postgres:// URL (env LORE_STORE)")
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

// options turns the flags into store options; read opens the store for
// reading only. Relative paths are resolved against e's directory.
func (sf *storeFlags) options(e *env, read bool) (storeOptions, error) {
	o := storeOptions{path: sf.store, lockTimeout: sf.lockTimeout, readOnly: read, progress: rebuildProgressTo(e)}
	if o.path == "" {
		p, err := defaultStore(e)
		if err != nil {
			return o, err
		}
		o.path = p
	}
	if !strings.Contains(o.path, "://") { // a URL is refused by the store, with its own message
		p, err := e.abs(o.path)
		if err != nil {
			return o, err
		}
		o.path = p
	}
	if sf.model != "" {
		p, err := e.abs(sf.model)
		if err != nil {
			return o, err
		}
		m, err := loadModel(p)
		if err != nil {
			return o, err
		}
		for _, v := range m.Warnings() {
			e.log.Warn("the model may not say what you meant", "file", sf.model, "at", v.Pointer, "warning", v.Message)
		}
		o.model, o.modelFile, o.modelPath = m, sf.model, p
	}
	return o, nil
}

// abs returns name as an absolute path, resolved against e.dir.
func (e *env) abs(name string) (string, error) {
	if filepath.IsAbs(name) || e.dir == "" {
		return filepath.Abs(name)
	}
	return filepath.Join(e.dir, name), nil
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
func (sf *storeFlags) openRead(ctx context.Context, e *env) (graph.Store, func(), error) {
	return sf.openStore(ctx, e, true)
}

// openStore opens the store the flags name, to read only or to write. In
// a holder, it is the holder's store. If another process holds the store
// and listens as its holder, the error is a *heldError, and the command
// runs there (see env.run). The returned function releases the store.
func (sf *storeFlags) openStore(ctx context.Context, e *env, read bool) (graph.Store, func(), error) {
	o, err := sf.options(e, read)
	if err != nil {
		return nil, nil, err
	}
	return openWith(ctx, e, o)
}

// openWith opens the store o names, as openStore does.
func openWith(ctx context.Context, e *env, o storeOptions) (graph.Store, func(), error) {
	if e.held != nil {
		if err := e.held.use(o); err != nil {
			return nil, nil, err
		}
		return e.held.store, func() {}, nil
	}
	if h := findHolder(ctx, o.path); h != nil {
		return nil, nil, &heldError{h}
	}
	s, err := openBackend(ctx, o)
	if errors.Is(err, graph.ErrLocked) {
		if h := findHolder(ctx, o.path); h != nil { // it started meanwhile
			return nil, nil, &heldError{h}
		}
	}
	if err != nil {
		return nil, nil, storeError(err)
	}
	return s, func() { s.Close() }, nil
}

// openExclusive opens the store o names for a command that needs it to
// itself (cmd names the command): if a holder holds it, the error says
// which process to stop.
func openExclusive(ctx context.Context, e *env, o storeOptions, cmd string) (graph.Store, error) {
	if err := exclusive(ctx, e, o.path, cmd); err != nil {
		return nil, err
	}
	s, err := openBackend(ctx, o)
	if errors.Is(err, graph.ErrLocked) {
		if xerr := exclusive(ctx, e, o.path, cmd); xerr != nil {
			return nil, xerr
		}
	}
	return s, storeError(err)
}

// exclusive returns an error naming the process to stop if a holder holds
// the store at path, or if cmd runs in one.
func exclusive(ctx context.Context, e *env, path, cmd string) error {
	h := findHolder(ctx, path)
	if e.held != nil {
		h = &holderConn{info: e.held.info}
	}
	if h == nil {
		return nil
	}
	return &exitError{1, fmt.Errorf("lore %s needs the store to itself, and %s holds it: stop that process, then run lore %s again%s",
		cmd, h.info.describe(), cmd, h.info.stopHint())}
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
func rebuildProgressTo(e *env) func(rebuildProgress) {
	return func(p rebuildProgress) {
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
