package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/lore-dev/lore/graph"
)

func cmdGet(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "get", "get ID   (a node ID such as service/billing, or an edge ID such as memberOf(person/ada,team/core))")
	var sf storeFlags
	sf.register(fs, e)
	return readStore(ctx, e, fs, &sf, args, 1, "get takes one ID", func(s *graph.Bolt, pos []string) (any, error) {
		if strings.Contains(pos[0], "(") {
			k, err := graph.ParseEdgeKey(pos[0])
			if err != nil {
				return nil, err
			}
			return s.Edge(ctx, k)
		}
		return s.Node(ctx, graph.ID(pos[0]))
	})
}

func printJSON(e *env, v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func cmdStats(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "stats", "stats [--json]")
	var sf storeFlags
	sf.register(fs, e)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	s, err := sf.openRead(ctx, e)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Stats(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(e, st)
	}
	fmt.Fprintf(e.stdout, "store    %s\nnodes    %d\nedges    %d\nquads    %d\nchanges  %d\n", s.Path(), st.Nodes, st.Edges, st.Quads, st.LastSeq)
	for _, t := range slices.Sorted(maps.Keys(st.NodeTypes)) {
		fmt.Fprintf(e.stdout, "  node %-20s %d\n", t, st.NodeTypes[t])
	}
	for _, l := range slices.Sorted(maps.Keys(st.EdgeLabels)) {
		fmt.Fprintf(e.stdout, "  edge %-20s %d\n", l, st.EdgeLabels[l])
	}
	return nil
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
	// Repairing writes (and keeps a --model, rebuilding what it changes);
	// checking only reads.
	s, err := sf.openStore(ctx, e, !*repair)
	if err != nil {
		return err
	}
	defer s.Close()
	check := s.Check
	if *repair {
		check = s.Repair
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
	cfg, err := sf.config(e, true) // the store must exist; the new file keeps its model
	if err != nil {
		return err
	}
	st, err := graph.Compact(ctx, cfg)
	if err != nil {
		return storeError(err)
	}
	fmt.Fprintf(e.stdout, "compacted %s: %d quads, %d -> %d bytes\n", cfg.Path, st.Quads, st.BytesBefore, st.BytesAfter)
	return nil
}
