package main

import (
	"context"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"
)

// ceilingFlags are the read ceilings: the most any request may ask for.
type ceilingFlags struct {
	maxResults, maxHops, maxVisited, maxBytes int
	timeout                                   time.Duration
}

func (c *ceilingFlags) register(fs *flag.FlagSet) {
	d := graph.DefaultCeilings
	fs.IntVar(&c.maxResults, "max-results", d.MaxResults, "ceiling: results per read")
	fs.IntVar(&c.maxHops, "max-hops", d.MaxHops, "ceiling: hops per read")
	fs.IntVar(&c.maxVisited, "max-visited", d.MaxVisited, "ceiling: nodes and edges visited per read")
	fs.IntVar(&c.maxBytes, "max-bytes", d.MaxBytes, "ceiling: bytes per response")
	fs.DurationVar(&c.timeout, "timeout", time.Duration(d.TimeoutMs)*time.Millisecond, "ceiling: time per read")
}

func (c *ceilingFlags) limits() graph.Limits {
	return graph.Limits{MaxResults: c.maxResults, MaxHops: c.maxHops, MaxVisited: c.maxVisited,
		MaxBytes: c.maxBytes, TimeoutMs: int(c.timeout / time.Millisecond)}
}

// A view prints a read's result for people (see render.go).
type view func(w io.Writer) error

// readStore parses a read command's flags, checks its arguments (want of
// them; -1: at least one), opens the store and prints what read returns:
// as JSON, or through the view read returns with it (see outputFlags).
func readStore(ctx context.Context, e *env, fs *flag.FlagSet, sf *storeFlags, of *outputFlags, args []string, want int, usage string,
	read func(s graph.Store, pos []string) (any, view, error)) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if want >= 0 && len(pos) != want || want < 0 && len(pos) == 0 {
		return usageErr(fs, "%s", usage)
	}
	human, err := of.table(e)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	s, release, err := sf.openRead(ctx, e)
	if err != nil {
		return err
	}
	defer release()
	v, show, err := read(s, pos)
	if err != nil {
		return err
	}
	if human {
		return show(e.stdout)
	}
	return printJSON(e, v)
}

func cmdQuery(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "query", "query [--json | -o table|json] [ceiling flags] FILE|-   (a JSON query; see the README)")
	var sf storeFlags
	var cf ceilingFlags
	var of outputFlags
	sf.register(fs, e)
	cf.register(fs)
	of.register(fs)
	return readStore(ctx, e, fs, &sf, &of, args, 1, "query takes one file (- for stdin)", func(s graph.Store, pos []string) (any, view, error) {
		in, closeIn, err := openInput(e, pos[0])
		if err != nil {
			return nil, nil, err
		}
		defer closeIn()
		data, err := io.ReadAll(io.LimitReader(in, graph.MaxQueryBytes+1))
		if err != nil {
			return nil, nil, err
		}
		q, err := graph.ParseQuery(s.Model(), data)
		if err != nil {
			return nil, nil, err
		}
		r, err := graph.Run(ctx, s, q, cf.limits())
		return r, func(w io.Writer) error { return viewQuery(w, s.Model(), r) }, err
	})
}

func cmdSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "search", "search [--type T] [--limit N] [--cursor C] [--json | -o table|json] TEXT")
	var sf storeFlags
	var cf ceilingFlags
	var of outputFlags
	sf.register(fs, e)
	cf.register(fs)
	of.register(fs)
	typ := fs.String("type", "", "only nodes of this `type`")
	limit := fs.Int("limit", 10, "hits per page")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	return readStore(ctx, e, fs, &sf, &of, args, -1, "search takes the text to look for", func(s graph.Store, pos []string) (any, view, error) {
		r, err := graph.Search(ctx, s, graph.SearchQuery{Text: strings.Join(pos, " "), Type: *typ, Limit: *limit, Cursor: *cursor}, cf.limits())
		return r, func(w io.Writer) error { return viewSearch(w, s.Model(), r) }, err
	})
}

func cmdNeighbors(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "neighbors", "neighbors [--edge L1,L2] [--direction out|in|both] [--depth N] [--limit N] [--cursor C] [--json | -o table|json] ID")
	var sf storeFlags
	var cf ceilingFlags
	var of outputFlags
	sf.register(fs, e)
	cf.register(fs)
	of.register(fs)
	edges := fs.String("edge", "", "comma-separated edge `labels` to follow (default: all)")
	dir := fs.String("direction", "both", "out, in or both")
	depth := fs.Int("depth", 1, "hops from the node")
	limit := fs.Int("limit", 0, "the most nodes to list (default and most: --max-results; more is lowered to it and reported in capped)")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	return readStore(ctx, e, fs, &sf, &of, args, 1, "neighbors takes one node ID", func(s graph.Store, pos []string) (any, view, error) {
		r, err := graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: graph.ID(pos[0]), Labels: splitList(*edges), Direction: graph.Direction(*dir), Depth: *depth,
			Limits: graph.Limits{MaxResults: max(*limit, 0)}, Cursor: *cursor}, cf.limits())
		return r, func(w io.Writer) error {
			root, err := s.Node(ctx, graph.ID(pos[0]))
			if err != nil {
				return err
			}
			return viewNeighbors(w, s.Model(), root, r)
		}, err
	})
}

func cmdPaths(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "paths", "paths [--edge L1,L2] [--direction out|in|both] [--hops N] [--k N] [--cursor C] [--json | -o table|json] FROM TO")
	var sf storeFlags
	var cf ceilingFlags
	var of outputFlags
	sf.register(fs, e)
	cf.register(fs)
	of.register(fs)
	edges := fs.String("edge", "", "comma-separated edge `labels` to follow (default: all)")
	dir := fs.String("direction", "both", "out follows edges from FROM towards TO; in against them; both either way")
	maxHops := fs.Int("hops", 0, "longest path to look for (default: the hop ceiling)")
	k := fs.Int("k", 1, "how many of the shortest simple paths (no node twice), shortest first: a page of them")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	return readStore(ctx, e, fs, &sf, &of, args, 2, "paths takes two node IDs", func(s graph.Store, pos []string) (any, view, error) {
		r, err := graph.Paths(ctx, s, graph.PathsQuery{From: graph.ID(pos[0]), To: graph.ID(pos[1]), Labels: splitList(*edges),
			Direction: graph.Direction(*dir), MaxHops: *maxHops, K: *k, Cursor: *cursor}, cf.limits())
		return r, func(w io.Writer) error { return viewPaths(ctx, w, s, r, graph.ID(pos[0]), graph.ID(pos[1])) }, err
	})
}

func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
