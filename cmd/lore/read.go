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

// readStore parses a read command's flags, checks its arguments (want of
// them; -1: at least one), opens the store and prints what read returns.
func readStore(ctx context.Context, e *env, fs *flag.FlagSet, sf *storeFlags, args []string, want int, usage string,
	read func(s graph.Store, pos []string) (any, error)) error {
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if want >= 0 && len(pos) != want || want < 0 && len(pos) == 0 {
		return usageErr(fs, "%s", usage)
	}
	s, release, err := sf.openRead(ctx, e)
	if err != nil {
		return err
	}
	defer release()
	v, err := read(s, pos)
	if err != nil {
		return err
	}
	return printJSON(e, v)
}

func cmdQuery(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "query", "query [ceiling flags] FILE|-   (a JSON query; see the README)")
	var sf storeFlags
	var cf ceilingFlags
	sf.register(fs, e)
	cf.register(fs)
	return readStore(ctx, e, fs, &sf, args, 1, "query takes one file (- for stdin)", func(s graph.Store, pos []string) (any, error) {
		in, closeIn, err := openInput(e, pos[0])
		if err != nil {
			return nil, err
		}
		defer closeIn()
		data, err := io.ReadAll(io.LimitReader(in, graph.MaxQueryBytes+1))
		if err != nil {
			return nil, err
		}
		q, err := graph.ParseQuery(s.Model(), data)
		if err != nil {
			return nil, err
		}
		return graph.Run(ctx, s, q, cf.limits())
	})
}

func cmdSearch(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "search", "search [--type T] [--limit N] [--cursor C] TEXT")
	var sf storeFlags
	var cf ceilingFlags
	sf.register(fs, e)
	cf.register(fs)
	typ := fs.String("type", "", "only nodes of this `type`")
	limit := fs.Int("limit", 10, "hits per page")
	cursor := fs.String("cursor", "", "the cursor of the previous page")
	return readStore(ctx, e, fs, &sf, args, -1, "search takes the text to look for", func(s graph.Store, pos []string) (any, error) {
		return graph.Search(ctx, s, graph.SearchQuery{Text: strings.Join(pos, " "), Type: *typ, Limit: *limit, Cursor: *cursor}, cf.limits())
	})
}

func cmdNeighbors(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "neighbors", "neighbors [--edge L1,L2] [--direction out|in|both] [--depth N] ID")
	var sf storeFlags
	var cf ceilingFlags
	sf.register(fs, e)
	cf.register(fs)
	edges := fs.String("edge", "", "comma-separated edge `labels` to follow (default: all)")
	dir := fs.String("direction", "both", "out, in or both")
	depth := fs.Int("depth", 1, "hops from the node")
	return readStore(ctx, e, fs, &sf, args, 1, "neighbors takes one node ID", func(s graph.Store, pos []string) (any, error) {
		return graph.Neighbors(ctx, s, graph.NeighborsQuery{ID: graph.ID(pos[0]), Labels: splitList(*edges), Direction: graph.Direction(*dir), Depth: *depth}, cf.limits())
	})
}

func cmdPaths(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "paths", "paths [--edge L1,L2] [--direction out|in|both] [--hops N] [--k N] FROM TO")
	var sf storeFlags
	var cf ceilingFlags
	sf.register(fs, e)
	cf.register(fs)
	edges := fs.String("edge", "", "comma-separated edge `labels` to follow (default: all)")
	dir := fs.String("direction", "both", "out follows edges from FROM towards TO; in against them; both either way")
	maxHops := fs.Int("hops", 0, "longest path to look for (default: the hop ceiling)")
	k := fs.Int("k", 1, "how many of the shortest simple paths (no node twice), shortest first")
	return readStore(ctx, e, fs, &sf, args, 2, "paths takes two node IDs", func(s graph.Store, pos []string) (any, error) {
		return graph.Paths(ctx, s, graph.PathsQuery{From: graph.ID(pos[0]), To: graph.ID(pos[1]), Labels: splitList(*edges),
			Direction: graph.Direction(*dir), MaxHops: *maxHops, K: *k}, cf.limits())
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
