package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lore-dev/lore/graph"
)

// cmdDelete deletes nodes (with their edges) and edges, chosen by ID or by
// a query. It shows what will go — counts, the first IDs, and the edges
// that go with their nodes, from a dry run of the very batch — and asks
// on a terminal (--yes for scripts; without it, a stdin that is not a
// terminal is refused). The delete is one atomic batch recorded in the
// change log, each node held to the revision the preview read (a node
// changed meanwhile fails the batch, deleting nothing); a selection over
// graph.MaxBatch elements is refused unless --batch splits it into
// several batches, each atomic. The report has the shape of the
// delete_nodes and delete_edges tools' results.
func cmdDelete(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "delete", "delete [--file FILE] [--query FILE|-] [--yes] [--dry-run] [--batch N] [--json | -o table|json] [ceiling flags] [ID ...]   (node IDs, or edge IDs such as memberOf(person/ada,team/core))")
	var sf storeFlags
	var cf ceilingFlags
	var of outputFlags
	sf.register(fs, e)
	cf.register(fs)
	of.register(fs)
	file := fs.String("file", "", "a `file` of IDs to delete, one per line (- for stdin; blank lines and # comments are skipped)")
	query := fs.String("query", "", "delete every node a JSON query from this `file` (- for stdin) matches, all pages (see lore query)")
	yes := fs.Bool("yes", false, "delete without asking (for scripts; required when stdin is not a terminal)")
	dry := fs.Bool("dry-run", false, "show what would be deleted, and delete nothing")
	batch := fs.Int("batch", 0, fmt.Sprintf("split a selection over %d elements into batches of at most `N`, each atomic (by default such a selection is refused)", graph.MaxBatch))
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 && *file == "" && *query == "" {
		return usageErr(fs, "delete takes IDs, --file or --query")
	}
	if *file == "-" && *query == "-" {
		return usageErr(fs, "--file - and --query - both read stdin: give one of them a file")
	}
	if *batch < 0 || *batch > graph.MaxBatch {
		return usageErr(fs, "--batch is at most %d", graph.MaxBatch)
	}
	human, err := of.table(e)
	if err != nil {
		return usageErr(fs, "%v", err)
	}
	s, release, err := sf.openStore(ctx, e, *dry)
	if err != nil {
		return err
	}
	defer release()

	var sel selection
	for _, a := range pos {
		if err := sel.add(a); err != nil {
			return err
		}
	}
	if *file != "" {
		if err := sel.readFile(e, *file); err != nil {
			return err
		}
	}
	if *query != "" {
		if err := sel.runQuery(ctx, e, s, *query, cf.limits()); err != nil {
			return err
		}
	}
	if sel.len() == 0 {
		fmt.Fprintln(e.stderr, "nothing to delete: the selection is empty")
		return nil
	}
	if sel.len() > graph.MaxBatch && *batch == 0 {
		return &exitError{1, fmt.Errorf("%d elements to delete, and one batch holds at most %d (graph.MaxBatch): nothing was deleted; "+
			"narrow the selection, or pass --batch N to delete in batches of N, each atomic (a reader may then see some batches done and not others)", sel.len(), graph.MaxBatch)}
	}
	if err := sel.expectRevisions(ctx, s); err != nil {
		return err
	}
	batches := sel.batches(cmp.Or(*batch, graph.MaxBatch))

	// The preview: a dry run of each batch, which lists the cascade.
	var preview deleteOut
	for _, b := range batches {
		b.DryRun = true
		r, err := s.Apply(ctx, b)
		b.DryRun = false
		if err != nil {
			return fmt.Errorf("nothing was deleted: %w", err)
		}
		preview.add(r)
	}
	preview.dedupe()
	preview.describe(e.stderr, "will delete")
	if *dry {
		fmt.Fprintln(e.stderr, "dry run: nothing was deleted")
		return nil
	}
	if !*yes {
		if !e.stdinTTY {
			return &exitError{1, errors.New("nothing was deleted: confirming needs a terminal, and stdin is not one; pass --yes to delete without asking")}
		}
		ok, err := confirm(e, "delete them? [y/N] ")
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintln(e.stderr, "nothing was deleted")
			return nil
		}
	}
	var out deleteOut
	for i, b := range batches {
		r, err := s.Apply(ctx, b)
		if err != nil {
			if i > 0 {
				out.describe(e.stderr, "deleted before the failure")
				return fmt.Errorf("batch %d of %d failed, and the %d before it were committed (changes %v): %w", i+1, len(batches), i, out.Seqs, err)
			}
			return fmt.Errorf("nothing was deleted: %w", err)
		}
		out.add(r)
	}
	if human {
		out.describe(e.stdout, "deleted")
		return nil
	}
	if len(out.Seqs) < 2 {
		out.Seqs = nil
	}
	return printJSON(e, &out)
}

// A selection is what a delete names: nodes and edges, each once, in the
// order given.
type selection struct {
	nodes []graph.NodeRef
	edges []graph.EdgeRef
	seenN map[graph.ID]bool
	seenE map[graph.EdgeKey]bool
}

func (s *selection) len() int { return len(s.nodes) + len(s.edges) }

// add adds a node ID or an edge ID (label(from,to) or label(from,to,key)).
func (s *selection) add(id string) error {
	if s.seenN == nil {
		s.seenN, s.seenE = map[graph.ID]bool{}, map[graph.EdgeKey]bool{}
	}
	if strings.Contains(id, "(") {
		k, err := graph.ParseEdgeKey(id)
		if err != nil {
			return err
		}
		if !s.seenE[k] {
			s.seenE[k] = true
			s.edges = append(s.edges, graph.EdgeRef{EdgeKey: k})
		}
		return nil
	}
	n := graph.ID(id)
	if err := n.Check(); err != nil {
		return err
	}
	if !s.seenN[n] {
		s.seenN[n] = true
		s.nodes = append(s.nodes, graph.NodeRef{ID: n})
	}
	return nil
}

func (s *selection) readFile(e *env, name string) error {
	in, closeIn, err := openInput(e, name)
	if err != nil {
		return err
	}
	defer closeIn()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := s.add(line); err != nil {
			return fmt.Errorf("%s, line %d: %w", name, n, err)
		}
	}
	return sc.Err()
}

// runQuery adds every node the query matches: it pages through all its
// results, and refuses a query a bound cut (its results would be
// incomplete).
func (s *selection) runQuery(ctx context.Context, e *env, st graph.Store, name string, ceilings graph.Limits) error {
	in, closeIn, err := openInput(e, name)
	if err != nil {
		return err
	}
	defer closeIn()
	data, err := io.ReadAll(io.LimitReader(in, graph.MaxQueryBytes+1))
	if err != nil {
		return err
	}
	q, err := graph.ParseQuery(st.Model(), data)
	if err != nil {
		return err
	}
	if q.Return.Count || q.Return.Paths {
		return fmt.Errorf("a delete query returns the nodes to delete: leave out return.count and return.paths: %w", graph.ErrInvalid)
	}
	q.Return.Fields = []string{"id"}
	if q.Limit == 0 {
		q.Limit = cmp.Or(ceilings.MaxResults, graph.DefaultCeilings.MaxResults) // pages as large as allowed
	}
	for {
		r, err := graph.Run(ctx, st, q, ceilings)
		if err != nil {
			return err
		}
		if r.Truncated {
			return &exitError{1, fmt.Errorf("nothing was deleted: a bound cut the query (%s), so its results are incomplete: %s; narrow the query or raise the ceiling flags", r.Reason, r.Note)}
		}
		for _, n := range r.Nodes {
			id, _ := n["id"].(string)
			if err := s.add(id); err != nil {
				return err
			}
		}
		if !r.More {
			return nil
		}
		q.Cursor = r.Cursor
	}
}

// expectRevisions holds each node to delete to its current revision, so
// that a node changed after the preview fails the delete; a node that
// does not exist is an error, as it is for delete_nodes.
func (s *selection) expectRevisions(ctx context.Context, st graph.Store) error {
	var missing []string
	for i := 0; i < len(s.nodes); i += graph.MaxPageSize {
		chunk := s.nodes[i:min(i+graph.MaxPageSize, len(s.nodes))]
		ids := make([]graph.ID, len(chunk))
		for j, r := range chunk {
			ids[j] = r.ID
		}
		nodes, err := st.Nodes(ctx, ids)
		if err != nil {
			return err
		}
		for j, n := range nodes {
			if n == nil {
				missing = append(missing, string(ids[j]))
				continue
			}
			rev := n.Revision
			chunk[j].ExpectedRevision = &rev
		}
	}
	if len(missing) > 0 {
		return &exitError{1, fmt.Errorf("nothing was deleted: %s not found: %s", plural(int64(len(missing)), "node"), firstOf(missing, 10))}
	}
	return nil
}

// batches splits the selection into batches of at most n elements: edges
// first, then nodes.
func (s *selection) batches(n int) []*graph.Batch {
	var out []*graph.Batch
	edges, nodes := s.edges, s.nodes
	for len(edges)+len(nodes) > 0 {
		b := &graph.Batch{Op: "delete"}
		k := min(len(edges), n)
		b.DeleteEdges, edges = edges[:k], edges[k:]
		k = min(len(nodes), n-k)
		b.DeleteNodes, nodes = nodes[:k], nodes[k:]
		out = append(out, b)
	}
	return out
}

// A deleteOut is the report of a delete: the shape of the delete tools'
// results (seq, the lists, truncated, the counts), with, when --batch
// made several batches, their sequence numbers.
type deleteOut struct {
	Seq              uint64     `json:"seq"`
	DeletedNodes     []graph.ID `json:"deletedNodes,omitempty"`
	DeletedEdges     []string   `json:"deletedEdges,omitempty"`
	Truncated        bool       `json:"truncated"`
	DeletedNodeCount int        `json:"deletedNodeCount,omitempty"`
	DeletedEdgeCount int        `json:"deletedEdgeCount,omitempty"`
	Seqs             []uint64   `json:"seqs,omitempty"`
}

func (o *deleteOut) add(r *graph.Result) {
	if r.Seq != 0 {
		o.Seq = r.Seq
		o.Seqs = append(o.Seqs, r.Seq)
	}
	o.DeletedNodes = append(o.DeletedNodes, r.DeletedNodes...)
	o.DeletedEdges = append(o.DeletedEdges, r.DeletedEdges...)
	o.DeletedNodeCount, o.DeletedEdgeCount = len(o.DeletedNodes), len(o.DeletedEdges)
}

// dedupe drops the edges two batches' previews both list (an edge between
// nodes of two batches).
func (o *deleteOut) dedupe() {
	seen := map[string]bool{}
	o.DeletedEdges = slices.DeleteFunc(o.DeletedEdges, func(k string) bool {
		dup := seen[k]
		seen[k] = true
		return dup
	})
	o.DeletedEdgeCount = len(o.DeletedEdges)
}

// describe writes counts and the first IDs to w.
func (o *deleteOut) describe(w io.Writer, verb string) {
	fmt.Fprintf(w, "%s %s and %s (the nodes' edges included)", verb, plural(int64(o.DeletedNodeCount), "node"), plural(int64(o.DeletedEdgeCount), "edge"))
	if len(o.Seqs) == 1 {
		fmt.Fprintf(w, ", committed as change %d", o.Seq)
	} else if len(o.Seqs) > 1 {
		fmt.Fprintf(w, ", committed as changes %v", o.Seqs)
	}
	fmt.Fprintln(w)
	ids := make([]string, 0, maxShown)
	for _, id := range o.DeletedNodes[:min(len(o.DeletedNodes), maxShown)] {
		ids = append(ids, string(id))
	}
	if len(ids) > 0 {
		fmt.Fprintf(w, "  nodes: %s\n", firstOf(ids, maxShown))
	}
	if len(o.DeletedEdges) > 0 {
		fmt.Fprintf(w, "  edges: %s\n", firstOf(o.DeletedEdges, maxShown))
	}
}

// maxShown is how many IDs a delete's summary names.
const maxShown = 10

// firstOf lists the first n of items, and how many more there are.
func firstOf(items []string, n int) string {
	s := strings.Join(items[:min(n, len(items))], ", ")
	if len(items) > n {
		s += fmt.Sprintf(" … and %d more", len(items)-n)
	}
	return s
}

// confirm asks a yes/no question on the terminal: stderr, then a line of
// stdin.
func confirm(e *env, question string) (bool, error) {
	fmt.Fprint(e.stderr, question)
	var line []byte
	var b [1]byte
	for {
		n, err := e.stdin.Read(b[:])
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	a := strings.ToLower(strings.TrimSpace(string(line)))
	return a == "y" || a == "yes", nil
}
