package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lore-dev/lore/graph"
)

func cmdGet(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "get", "get [--json | -o table|json] ID   (a node ID such as service/billing, or an edge ID such as memberOf(person/ada,team/core))")
	var sf storeFlags
	var of outputFlags
	sf.register(fs, e)
	of.register(fs)
	return readStore(ctx, e, fs, &sf, &of, args, 1, "get takes one ID", func(s graph.Store, pos []string) (any, view, error) {
		if strings.Contains(pos[0], "(") {
			k, err := graph.ParseEdgeKey(pos[0])
			if err != nil {
				return nil, nil, err
			}
			ed, err := s.Edge(ctx, k)
			return ed, func(w io.Writer) error { return viewEdge(w, ed) }, err
		}
		n, err := s.Node(ctx, graph.ID(pos[0]))
		return n, func(w io.Writer) error { return viewNode(w, s.Model(), n) }, err
	})
}

func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func cmdStats(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "stats", "stats [--json | -o table|json]")
	var sf storeFlags
	var of outputFlags
	sf.register(fs, e)
	of.register(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	human, err := of.table(e)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	o, err := sf.options(e, true)
	if err != nil {
		return err
	}
	s, release, err := openWith(ctx, e, o)
	if err != nil {
		return err
	}
	defer release()
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	if !human {
		return printJSON(e, st)
	}
	return viewStats(e.stdout, displayStore(o.path), st)
}

func cmdCheck(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "check", "check [--repair] [--json]")
	var sf storeFlags
	sf.register(fs, e)
	repair := fs.Bool("repair", false, "rebuild Lore's indexes, counts and edge summaries from the records, then check again")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	// Repairing writes (and keeps a --model, rebuilding what it changes),
	// so it needs the store to itself; checking only reads.
	var s graph.Store
	var release func()
	if *repair {
		o, err := sf.options(e, false)
		if err != nil {
			return err
		}
		if s, err = openExclusive(ctx, e, o, "check --repair"); err != nil {
			return err
		}
		release = func() { s.Close() }
	} else {
		var err error
		if s, release, err = sf.openStore(ctx, e, true); err != nil {
			return err
		}
	}
	defer release()
	c, ok := s.(graph.Checker)
	if !ok {
		return errors.New("this store cannot be checked")
	}
	check := c.Check
	if *repair {
		check = c.Repair
	}
	r, err := check(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(e, r); err != nil {
			return err
		}
	} else {
		for _, what := range r.Repaired {
			fmt.Fprintf(e.stdout, "rebuilt %s\n", what)
		}
		for _, p := range r.Problems {
			fmt.Fprintf(e.stdout, "problem: %s\n", p)
		}
		verdict := "ok"
		if !r.OK() {
			verdict = fmt.Sprintf("%d problem(s); 'lore check --repair' rebuilds indexes, 'lore compact' rebuilds Cayley's quads", len(r.Problems))
		}
		fmt.Fprintf(e.stdout, "%s, %s, %s, %s: %s\n", plural(r.Nodes, "node"), plural(r.Edges, "edge"), plural(r.Quads, "quad"), plural(int64(r.Changes), "change"), verdict)
	}
	if !r.OK() {
		return &exitError{1, fmt.Errorf("the store has %d problem(s)", len(r.Problems))}
	}
	return nil
}

func cmdCompact(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "compact", "compact")
	var sf storeFlags
	sf.register(fs, e)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	o, err := sf.options(e, true) // the store must exist; the new file keeps its model
	if err != nil {
		return err
	}
	if isRemote(o.path) {
		return fmt.Errorf("lore compact rewrites the embedded store's file; a PostgreSQL store is compacted by PostgreSQL itself (autovacuum, or VACUUM FULL): %w", graph.ErrInvalid)
	}
	if err := exclusive(ctx, e, o.path, "compact"); err != nil {
		return err
	}
	st, err := compactEmbedded(ctx, o)
	if errors.Is(err, graph.ErrLocked) {
		if xerr := exclusive(ctx, e, o.path, "compact"); xerr != nil {
			return xerr
		}
	}
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(e.stdout, "compacted %s: %d quads, %d -> %d bytes\n", o.path, st.Quads, st.BytesBefore, st.BytesAfter)
	return nil
}
