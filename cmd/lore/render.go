package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// The human view of the read commands: on a terminal, results print as
// aligned tables and trees — a node as a line of its type, ID and display
// name, an edge as an arrow, truncation and the next page's cursor as one
// footer line. Scripts get JSON: with --json or -o json, and by default
// when stdout is not a terminal.

// outputFlags choose between the human view and JSON.
type outputFlags struct {
	json   bool
	format string
}

func (o *outputFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.json, "json", false, "print JSON (the same as -o json)")
	usage := "output `format`: table (aligned, for people) or json (for scripts); default: table when stdout is a terminal, else json"
	fs.StringVar(&o.format, "o", "", usage)
	fs.StringVar(&o.format, "output", "", "the same as -o")
}

// table reports whether to print the human view.
func (o *outputFlags) table(e *env) (bool, error) {
	switch o.format {
	case "":
		return !o.json && e.stdoutTTY, nil
	case "json":
		return false, nil
	case "table":
		if o.json {
			return false, errors.New("--json and -o table ask for different outputs: pick one")
		}
		return true, nil
	}
	return false, fmt.Errorf("-o %q: want table or json", o.format)
}

// maxName is the most runes of a display name a table shows.
const maxName = 60

// displayName returns the display name of a node of type typ with props,
// "" if its type has none.
func displayName(m *schema.Model, typ string, props graph.Props) string {
	nt, ok := m.Node(typ)
	if !ok || nt.Display == "" {
		return ""
	}
	s, _ := props[nt.Display].(string)
	return clip(s, maxName)
}

// nodeCells are a node's line: its type, ID and display name.
func nodeCells(m *schema.Model, n *graph.Node) []string {
	return []string{n.Type, string(n.ID), displayName(m, n.Type, n.Properties)}
}

// arrow draws an edge seen from the node at its from end (out) or at its
// to end: -label-> or <-label-; a keyed edge shows its key.
func arrow(k graph.EdgeKey, out bool) string {
	l := k.Label
	if k.Key != "" {
		l += "[" + k.Key + "]"
	}
	if out {
		return "-" + l + "->"
	}
	return "<-" + l + "-"
}

// clip shortens s to n runes, ending it with "…" when it was longer.
func clip(s string, n int) string {
	s = oneLine(s)
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// oneLine replaces control characters (tabs, newlines) with spaces, so a
// value cannot break a table's lines or columns.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// value formats a property value: a string as it is, anything else as
// compact JSON.
func value(v any) string {
	if s, ok := v.(string); ok {
		return oneLine(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return oneLine(string(b))
}

// table writes aligned rows.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table { return &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)} }

// row writes one line of cells; empty trailing cells are dropped.
func (t *table) row(cells ...string) {
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	for i := range cells {
		cells[i] = oneLine(cells[i])
	}
	fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

// line writes a line outside the columns (it ends the alignment block).
func (t *table) line(format string, args ...any) {
	fmt.Fprintf(t.tw, format+"\n", args...)
}

func (t *table) flush() error { return t.tw.Flush() }

// footer is the one line under a result: how many, what a bound cut, and
// how to get the next page.
type footer struct {
	count     string
	truncated bool
	reason    string
	note      string
	capped    []string
	partial   []graph.ID
	next      string
}

func (f footer) String() string {
	parts := []string{f.count}
	if f.truncated {
		p := "truncated (" + f.reason + ")"
		if f.note != "" {
			p += ": " + strings.TrimSpace(f.note)
		}
		parts = append(parts, p)
	}
	if len(f.capped) > 0 {
		parts = append(parts, "capped at the server's ceiling: "+strings.Join(f.capped, ", "))
	}
	if len(f.partial) > 0 {
		ids := make([]string, len(f.partial))
		for i, id := range f.partial {
			ids[i] = string(id)
		}
		parts = append(parts, "cut even alone: "+strings.Join(ids, ", "))
	}
	if f.next != "" {
		parts = append(parts, "more: "+f.next)
	}
	return oneLine(strings.Join(parts, "; "))
}

// count says n things: "1 hit", "3 hits".
func count(n int, word string) string { return plural(int64(n), word) }

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// viewNode prints a node: its line, its properties, its revision and its
// edges per label and direction.
func viewNode(w io.Writer, m *schema.Model, n *graph.Node) error {
	t := newTable(w)
	t.line("%s", strings.TrimSpace(strings.Join(nodeCells(m, n), "  ")))
	for _, k := range slices.Sorted(maps.Keys(n.Properties)) {
		t.row("  "+k, value(n.Properties[k]))
	}
	t.line("  revision %d, created %s, updated %s", n.Revision, timestamp(n.CreatedAt), timestamp(n.UpdatedAt))
	for _, c := range n.Edges {
		l := graph.EdgeKey{Label: c.Label}
		switch c.Direction {
		case graph.In:
			t.row("  "+arrow(l, false), strconv.FormatInt(c.Count, 10))
		default:
			t.row("  "+arrow(l, true), strconv.FormatInt(c.Count, 10))
		}
	}
	return t.flush()
}

// viewEdge prints an edge: the arrow between its ends, its properties and
// its revision.
func viewEdge(w io.Writer, ed *graph.Edge) error {
	t := newTable(w)
	t.line("%s %s %s", ed.From, arrow(ed.EdgeKey, true), ed.To)
	for _, k := range slices.Sorted(maps.Keys(ed.Properties)) {
		t.row("  "+k, value(ed.Properties[k]))
	}
	t.line("  revision %d, created %s, updated %s", ed.Revision, timestamp(ed.CreatedAt), timestamp(ed.UpdatedAt))
	return t.flush()
}

// viewSearch prints the hits as a table, best first.
func viewSearch(w io.Writer, m *schema.Model, r *graph.SearchResult) error {
	t := newTable(w)
	if len(r.Hits) > 0 {
		t.row("TYPE", "ID", "NAME", "SCORE")
	}
	for _, h := range r.Hits {
		t.row(append(nodeCells(m, h.Node), strconv.FormatFloat(h.Score, 'f', 2, 64))...)
	}
	of := fmt.Sprintf(" of %d", r.Total)
	if r.TotalEstimated {
		of = fmt.Sprintf(" of about %d", r.Total)
	}
	f := footer{count: count(len(r.Hits), "hit") + of, truncated: r.Truncated, reason: r.Reason, capped: r.Capped}
	if r.More {
		f.next = "--cursor " + r.Cursor
	}
	t.line("%s", f)
	return t.flush()
}

// viewNeighbors prints the neighbourhood as a tree from root: each node
// under the node it was first reached from, after the edge that led there.
func viewNeighbors(w io.Writer, m *schema.Model, root *graph.Node, r *graph.NeighborsResult) error {
	nodes := map[graph.ID]*graph.Node{root.ID: root}
	for _, nb := range r.Nodes {
		nodes[nb.Node.ID] = nb.Node
	}
	type child struct {
		id  graph.ID
		via string
	}
	children := map[graph.ID][]child{}
	seen := map[graph.ID]bool{root.ID: true}
	for i, k := range r.Edges {
		// Each edge reached one new node, from a node reached before.
		parent, id, out := k.From, k.To, true
		if seen[k.To] && !seen[k.From] || len(r.Nodes) == len(r.Edges) && r.Nodes[i].Node.ID == k.From {
			parent, id, out = k.To, k.From, false
		}
		if seen[id] {
			continue
		}
		if !seen[parent] {
			// A page after the first: the node it was reached from is on
			// an earlier page, shown (by ID) under the root.
			seen[parent] = true
			children[root.ID] = append(children[root.ID], child{parent, "…"})
		}
		seen[id] = true
		children[parent] = append(children[parent], child{id, arrow(k, out)})
	}
	t := newTable(w)
	line := func(prefix string, id graph.ID) {
		if n := nodes[id]; n != nil {
			t.row(append([]string{prefix}, nodeCells(m, n)...)...)
		} else {
			t.row(prefix, "", string(id))
		}
	}
	line("", root.ID)
	var walk func(id graph.ID, indent string)
	walk = func(id graph.ID, indent string) {
		cs := children[id]
		for i, c := range cs {
			branch, next := "├─ ", "│  "
			if i == len(cs)-1 {
				branch, next = "└─ ", "   "
			}
			line(indent+branch+c.via, c.id)
			walk(c.id, indent+next)
		}
	}
	walk(root.ID, "")
	f := footer{count: count(len(r.Nodes), "neighbor") + ", " + count(len(r.Edges), "edge"),
		truncated: r.Truncated, reason: r.Reason, capped: r.Capped}
	if r.More {
		f.next = "--cursor " + r.Cursor
	}
	t.line("%s", f)
	return t.flush()
}

// viewPaths prints each path as a column of node lines, each after the
// edge that leads to it.
func viewPaths(ctx context.Context, w io.Writer, s graph.Store, r *graph.PathsResult, from, to graph.ID) error {
	nodes, err := pathNodes(ctx, s, r.Paths)
	if err != nil {
		return err
	}
	m := s.Model()
	t := newTable(w)
	for i, p := range r.Paths {
		t.line("path %d: %s", i+1, count(len(p.Edges), "edge"))
		for j, id := range p.Nodes {
			via := ""
			if j > 0 {
				via = edgeArrow(p.Edges[j-1], p.Nodes[j-1])
			}
			if n := nodes[id]; n != nil {
				t.row(append([]string{"  " + via}, nodeCells(m, n)...)...)
			} else {
				t.row("  "+via, "", string(id))
			}
		}
	}
	f := footer{count: count(len(r.Paths), "path"), truncated: r.Truncated, reason: r.Reason, capped: r.Capped}
	switch {
	case len(r.Paths) == 0:
		f.count = fmt.Sprintf("no path from %s to %s", from, to)
	case len(r.Paths) > 1:
		f.count += fmt.Sprintf(", the shortest %s", count(r.Length, "edge"))
	}
	if r.More {
		f.next = "--cursor " + r.Cursor
	}
	t.line("%s", f)
	return t.flush()
}

// edgeArrow draws the edge with ID id as seen from the node prev.
func edgeArrow(id string, prev graph.ID) string {
	k, err := graph.ParseEdgeKey(id)
	if err != nil {
		return id
	}
	return arrow(k, k.From == prev)
}

// pathNodes reads the nodes on paths.
func pathNodes(ctx context.Context, s graph.Store, paths []graph.Path) (map[graph.ID]*graph.Node, error) {
	var ids []graph.ID
	seen := map[graph.ID]bool{}
	for _, p := range paths {
		for _, id := range p.Nodes {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	out := map[graph.ID]*graph.Node{}
	for i := 0; i < len(ids); i += 256 {
		ns, err := s.Nodes(ctx, ids[i:min(i+256, len(ids))])
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if n != nil {
				out[n.ID] = n
			}
		}
	}
	return out, nil
}

// viewQuery prints a query's results as a table: a node's type, ID and
// display name when they were returned, then the other fields returned,
// and with return.paths the path to each result.
func viewQuery(w io.Writer, m *schema.Model, r *graph.QueryResult) error {
	has := map[string]bool{}
	for _, n := range r.Nodes {
		for k := range n {
			has[k] = true
		}
	}
	var extra []string
	for _, k := range slices.Sorted(maps.Keys(has)) {
		if k != "id" && k != "type" && k != "properties" {
			extra = append(extra, k)
		}
	}
	names := make([]string, len(r.Nodes))
	hasName := false
	for i, n := range r.Nodes {
		typ, _ := n["type"].(string)
		props, _ := n["properties"].(map[string]any)
		names[i] = displayName(m, typ, props)
		hasName = hasName || names[i] != ""
	}
	var head []string
	for _, c := range []struct {
		name string
		ok   bool
	}{{"TYPE", has["type"]}, {"ID", has["id"]}, {"NAME", hasName}} {
		if c.ok {
			head = append(head, c.name)
		}
	}
	for _, k := range extra {
		head = append(head, strings.ToUpper(k))
	}
	if len(r.Paths) > 0 {
		head = append(head, "PATH")
	}
	t := newTable(w)
	if len(r.Nodes) > 0 {
		t.row(head...)
	}
	for i, n := range r.Nodes {
		var cells []string
		if has["type"] {
			typ, _ := n["type"].(string)
			cells = append(cells, typ)
		}
		if has["id"] {
			id, _ := n["id"].(string)
			cells = append(cells, id)
		}
		if hasName {
			cells = append(cells, names[i])
		}
		for _, k := range extra {
			v, ok := n[k]
			if !ok {
				cells = append(cells, "")
				continue
			}
			cells = append(cells, clip(value(v), maxName))
		}
		if i < len(r.Paths) {
			cells = append(cells, pathLine(r.Paths[i]))
		}
		t.row(cells...)
	}
	f := footer{count: count(len(r.Nodes), "result"), truncated: r.Truncated, reason: r.Reason, note: r.Note,
		capped: r.Capped, partial: r.Partial}
	if r.Count != nil {
		f.count = fmt.Sprintf("count %d", *r.Count)
		if r.Truncated {
			f.count += " (at least)"
		}
	}
	if r.More {
		f.next = fmt.Sprintf(`add "cursor": %q to the query`, r.Cursor)
	}
	t.line("%s", f)
	return t.flush()
}

// pathLine draws a path on one line: a -label-> b <-label- c.
func pathLine(p graph.Path) string {
	var b strings.Builder
	for i, id := range p.Nodes {
		if i > 0 {
			fmt.Fprintf(&b, " %s ", edgeArrow(p.Edges[i-1], p.Nodes[i-1]))
		}
		b.WriteString(string(id))
	}
	return b.String()
}

// viewStats prints the store's counts, then the nodes per type and the
// edges per label.
func viewStats(w io.Writer, path string, st *graph.Stats) error {
	t := newTable(w)
	t.row("store", path)
	t.row("nodes", strconv.FormatInt(st.Nodes, 10))
	t.row("edges", strconv.FormatInt(st.Edges, 10))
	t.row("quads", strconv.FormatInt(st.Quads, 10))
	t.row("changes", strconv.FormatUint(st.LastSeq, 10))
	if err := t.flush(); err != nil {
		return err
	}
	t = newTable(w)
	for _, typ := range slices.Sorted(maps.Keys(st.NodeTypes)) {
		t.row("  node", typ, strconv.FormatInt(st.NodeTypes[typ], 10))
	}
	for _, l := range slices.Sorted(maps.Keys(st.EdgeLabels)) {
		t.row("  edge", l, strconv.FormatInt(st.EdgeLabels[l], 10))
	}
	return t.flush()
}
