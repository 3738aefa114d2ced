package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// defaultIdle is how long a background holder stays without clients.
const defaultIdle = 5 * time.Minute

// holderLog is the background holder's log in the store directory; it is
// rotated once it passes maxHolderLog.
const (
	holderLog    = "holder.log"
	maxHolderLog = 4 << 20
)

func holderLogPath(store string) string { return filepath.Join(store, holderLog) }

// openHolderLog opens the holder log for appending, rotating a large one;
// nil if it cannot (the holder then logs nowhere).
func openHolderLog(store string) *os.File {
	p := holderLogPath(store)
	if fi, err := os.Stat(p); err == nil && fi.Size() > maxHolderLog {
		os.Rename(p, p+".1")
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil
	}
	return f
}

// cmdHold is the background holder that lore mcp starts when no process
// holds its store: it holds the store for the lore mcp sessions and CLI
// commands of its user, and exits after --idle without any. It is not
// listed in the usage.
func cmdHold(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "hold", "hold [--idle D] [--read-only] [--no-example] [store flags]   (the background holder lore mcp starts)")
	var f surfaceFlags
	f.register(fs, e)
	idle := fs.Duration("idle", defaultIdle, "stop after this long without a client")
	readyFD := fs.Int("ready-fd", 0, "a file descriptor to report readiness on, then close (lore mcp passes one)")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	report := func(string) {}
	if *readyFD > 0 {
		ready := os.NewFile(uintptr(*readyFD), "ready")
		report = func(msg string) {
			fmt.Fprintln(ready, msg)
			ready.Close()
		}
	}
	if *idle <= 0 {
		report("error: --idle must be positive")
		return usageErr(fs, "--idle must be positive")
	}
	s, o, err := holdStore(ctx, e, &f, false)
	var he *heldError
	if errors.As(err, &he) {
		e.log.Info("another process holds the store already", "holder", he.holder.info.describe())
		report("held by " + he.holder.info.describe())
		return nil
	}
	if err != nil {
		report("error: " + err.Error())
		return err
	}
	h, err := startHolder(holderOptions{kind: kindHold, store: s, path: o.path, readOnly: f.readOnly, idle: *idle, log: e.log, getenv: e.getenv})
	if err != nil {
		s.Close()
		report("error: " + err.Error())
		return err
	}
	report("ready")
	select {
	case <-ctx.Done():
		h.stop(statusStopping, "the background holder was stopped")
	case <-h.Done():
		h.stop(statusStopping, "the background holder stopped")
	}
	h.shutdown()
	e.log.Info("stopped")
	return nil
}

// holdStore opens the store for a process that will hold it (lore serve,
// lore mcp --direct, lore hold), loading the example dataset into a new
// store. If a holder answers, the error is a *heldError, unless takeOver
// and it is a background holder: then it is asked to hand the store over
// (lore serve does).
func holdStore(ctx context.Context, e *env, f *surfaceFlags, takeOver bool) (graph.Store, storeOptions, error) {
	o, err := f.sf.options(e, f.readOnly)
	if err != nil {
		return nil, o, err
	}
	if f.readStore != "" {
		if !isRemote(o.path) || !isRemote(f.readStore) {
			return nil, o, errors.New("--read-store takes a postgres:// URL of a hot standby, and needs --store postgres://… (its primary)")
		}
		o.readStore = f.readStore
	}
	for attempt := 1; ; attempt++ {
		if h := findHolder(ctx, o.path); h != nil {
			if !takeOver || h.info.Kind != kindHold || attempt > 3 {
				return nil, o, &heldError{h}
			}
			if err := h.handover(ctx, e.log); err != nil {
				// Another process may have taken it first: look again.
				e.log.Warn("the background holder did not hand the store over", "error", err)
				continue
			}
		}
		s, err := openBackend(ctx, o)
		if errors.Is(err, graph.ErrLocked) && attempt <= 3 && findHolder(ctx, o.path) != nil {
			continue // a holder started meanwhile
		}
		if err != nil {
			return nil, o, storeError(err)
		}
		if err := f.loadExampleIfNew(ctx, e, s); err != nil {
			s.Close()
			return nil, o, err
		}
		return s, o, nil
	}
}

// heldBy turns a *heldError met by a process that must hold the store
// itself into a message saying what to do.
func heldBy(err error, what string) error {
	var he *heldError
	if !errors.As(err, &he) {
		return err
	}
	return &exitError{1, fmt.Errorf("%w: held by %s; %s cannot share it: stop that process first "+
		"(lore mcp without --direct and the CLI commands do share it)", graph.ErrLocked, he.holder.info.describe(), what)}
}

// loadExampleIfNew loads the example dataset into a new, empty store on
// the default model, unless --no-example says otherwise. A new store on
// another model starts empty, and the log says why: the example data fits
// only the default model.
func (f *surfaceFlags) loadExampleIfNew(ctx context.Context, e *env, s graph.Store) error {
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	if st.LastSeq != 0 || st.Nodes != 0 || f.readOnly {
		return nil
	}
	switch {
	case f.noExample:
		e.log.Info("new store: starting empty (--no-example)")
		return nil
	case !bytes.Equal(s.Model().JSON(), schema.DefaultJSON()):
		e.log.Info("new store: starting empty, without the example data, which fits only the default model; "+
			"this store's model is another (lore import loads data)", "model", f.sf.model)
		return nil
	}
	is, err := loadExample(ctx, s)
	if err != nil {
		return fmt.Errorf("loading the example data: %w", err)
	}
	e.log.Info("loaded the example dataset", "nodes", is.Nodes, "edges", is.Edges)
	return nil
}

// holdArgs are the flags lore mcp starts lore hold with.
func holdArgs(f *surfaceFlags, o storeOptions, idle time.Duration) []string {
	args := []string{"--store", o.path, "--idle", idle.String(), "--lock-timeout", max(f.sf.lockTimeout, 10*time.Second).String()}
	if o.model != nil {
		args = append(args, "--model", o.modelPath)
		if f.readOnly { // a read-only session's model is not kept in the store
			args = append(args, "--read-only")
		}
	}
	if f.noExample {
		args = append(args, "--no-example")
	}
	return args
}
