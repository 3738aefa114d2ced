package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

const draft = `"$schema":"https://json-schema.org/draft/2020-12/schema"`

// Limits of the read tools' arguments: each is the one constant the
// derived input schema (and so Invoke's validator) and the tool use.
const (
	MaxSearchText    = 500  // characters of a search query
	MaxSearchLimit   = 100  // hits per search page
	MaxNeighborDepth = 6    // hops of neighbors
	MaxNeighborLimit = 1000 // nodes of neighbors
	MaxPathHops      = 12   // edges of a path
	MaxPaths         = 20   // paths of find_paths
	MaxChanges       = 1000 // changes per changes_since page
)

// tools returns the catalog's tool definitions for a model, in the order
// surfaces present them.
func tools(m *schema.Model) []*Tool {
	return []*Tool{
		describeModel(), getNode(m), getEdge(), searchNodes(), neighbors(), findPaths(), queryGraph(), changesSince(),
		upsertNodes(), upsertEdges(), deleteNodes(), deleteEdges(),
	}
}

// Icons: tiny SVG data URIs, one for reads and one for writes.
const (
	iconRead  = "data:image/svg+xml,%3Csvg%20xmlns='http://www.w3.org/2000/svg'%3E%3Ccircle%20r='8'/%3E%3C/svg%3E"
	iconWrite = "data:image/svg+xml,%3Csvg%20xmlns='http://www.w3.org/2000/svg'%3E%3Crect%20width='8'%20height='8'/%3E%3C/svg%3E"
)

func readTool(name, title, desc string) Tool {
	return Tool{Name: name, Title: title, Description: desc, ReadOnly: true, Idempotent: true, Icon: iconRead}
}

// ---- describe_model

type describeIn struct {
	Type string `json:"type,omitempty"`
}

type typeSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Display     string   `json:"display,omitempty"`
	Properties  []string `json:"properties"`
	Required    []string `json:"required,omitempty"`
	Indexed     []string `json:"indexed,omitempty"`
	Count       int64    `json:"count"`
}

type labelSummary struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	From        []string `json:"from"`
	To          []string `json:"to"`
	Keyed       bool     `json:"keyed,omitempty"`
	Count       int64    `json:"count"`
}

type describeOut struct {
	Title string `json:"title,omitempty"`
	// Version identifies the model in use (schema.Model.Version); it
	// changes with any edit of the model.
	Version    string          `json:"version"`
	NodeTypes  []typeSummary   `json:"nodeTypes,omitempty"`
	EdgeLabels []labelSummary  `json:"edgeLabels,omitempty"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	Nodes      int64           `json:"nodes"`
	Edges      int64           `json:"edges"`
}

func (o *describeOut) text() string {
	var b strings.Builder
	if o.Schema != nil {
		return fence(string(o.Schema))
	}
	fmt.Fprintf(&b, "%s (model version %s): %d nodes, %d edges\n", o.Title, o.Version, o.Nodes, o.Edges)
	for _, t := range o.NodeTypes {
		fmt.Fprintf(&b, "node %s (%d): %s [%s]\n", t.Name, t.Count, t.Description, strings.Join(t.Properties, ", "))
	}
	for _, l := range o.EdgeLabels {
		fmt.Fprintf(&b, "edge %s (%d): %s → %s. %s\n", l.Name, l.Count, strings.Join(l.From, "|"), strings.Join(l.To, "|"), l.Description)
	}
	return fence(b.String())
}

func describeModel() *Tool {
	return define(readTool("describe_model", "Describe model",
		"Node types (with properties), edge labels, counts. Call first; pass type for its JSON Schema."),
		func(ctx context.Context, c *Catalog, in *describeIn) (*describeOut, error) {
			st, err := c.store.Stats(ctx)
			if err != nil {
				return nil, err
			}
			m := c.Model() // the model in use now, which may have changed since the catalog was built
			out := &describeOut{Title: m.Title(), Version: m.Version(), Nodes: st.Nodes, Edges: st.Edges}
			if in.Type != "" {
				if t, ok := m.Node(in.Type); ok {
					out.Schema = t.Schema
				} else if e, ok := m.Edge(in.Type); ok {
					out.Schema = e.Schema
				} else {
					return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("%q is neither a node type nor an edge label; node types: %s; edge labels: %s",
						in.Type, strings.Join(m.NodeTypeNames(), ", "), strings.Join(m.EdgeLabels(), ", "))}
				}
				return out, nil
			}
			for _, t := range m.NodeTypes() {
				out.NodeTypes = append(out.NodeTypes, typeSummary{Name: t.Name, Description: t.Description, Display: t.Display,
					Properties: t.Properties, Required: t.Required, Indexed: t.Indexed, Count: st.NodeTypes[t.Name]})
			}
			for _, e := range m.EdgeTypes() {
				out.EdgeLabels = append(out.EdgeLabels, labelSummary{Name: e.Name, Description: e.Description, From: e.From, To: e.To,
					Keyed: e.Keyed, Count: st.EdgeLabels[e.Name]})
			}
			return out, nil
		})
}

// ---- get_node

type getNodeIn struct {
	ID graph.ID `json:"id"`
}

type nodeOut struct {
	Node *graph.Node `json:"node"`
}

func (o *nodeOut) text() string {
	// Cheap on purpose: get_node is the hottest call.
	n := o.Node
	b := make([]byte, 0, 512)
	b = append(b, n.Type...)
	b = append(b, ' ')
	b = append(b, n.ID...)
	b = append(b, " (revision "...)
	b = strconv.AppendInt(b, n.Revision, 10)
	b = append(b, ", updated "...)
	b = n.UpdatedAt.AppendFormat(b, "2006-01-02T15:04:05Z")
	b = append(b, ")\n"...)
	for _, k := range sortedKeys(n.Properties) {
		b = append(b, k...)
		b = append(b, ": "...)
		switch v := n.Properties[k].(type) {
		case string:
			b = append(b, clip(v, 300)...)
		case json.Number:
			b = append(b, v...)
		case bool:
			b = strconv.AppendBool(b, v)
		default:
			j, _ := json.Marshal(v)
			b = append(b, clip(string(j), 300)...)
		}
		b = append(b, '\n')
	}
	for _, e := range n.Edges {
		b = append(b, "edges "...)
		b = append(b, e.Direction...)
		b = append(b, ' ')
		b = append(b, e.Label...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, e.Count, 10)
		b = append(b, '\n')
	}
	return fence(string(b))
}

// withModelRefs returns a strict output schema whose node properties must
// also match one of the model's node type definitions, by $ref (only Lore
// resolves lore://model: the published schemas stay self-contained).
func withModelRefs(strict json.RawMessage, m *schema.Model) json.RawMessage {
	var doc map[string]any
	if err := json.Unmarshal(strict, &doc); err != nil {
		panic("mcp: " + err.Error())
	}
	var refs []any
	for _, t := range m.NodeTypeNames() {
		refs = append(refs, map[string]any{"$ref": ModelURI + "#/$defs/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")})
	}
	node := doc["properties"].(map[string]any)["node"].(map[string]any)
	node["properties"].(map[string]any)["properties"] = map[string]any{"type": "object", "anyOf": refs}
	out, _ := json.Marshal(doc)
	return out
}

func getNode(m *schema.Model) *Tool {
	t := define(readTool("get_node", "Get a node",
		"One node by ID, e.g. service/billing: type, properties, revision, edge counts per label."),
		func(ctx context.Context, c *Catalog, in *getNodeIn) (*nodeOut, error) {
			if err := edgeIDError(in.ID); err != nil {
				return nil, err
			}
			n, err := c.store.Node(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			return &nodeOut{Node: n}, nil
		})
	t.strictOutput = withModelRefs(t.strictOutput, m)
	return t
}

// capAt lowers *v to max when it asks for more, naming field in capped:
// every tool takes a size above its maximum and reports it, as query_graph
// reports a limit above the server's ceilings.
func capAt(v *int, max int, field string, capped *[]string) {
	if *v > max {
		*v = max
		*capped = append(*capped, field)
	}
}

// withCapped lists the tool's capped arguments, then the engine's, each once.
func withCapped(tool, engine []string) []string {
	for _, f := range engine {
		if !slices.Contains(tool, f) {
			tool = append(tool, f)
		}
	}
	return tool
}

// ---- search_nodes

type searchIn struct {
	Query  string `json:"query" schema:"minLength=1,maxLength=MaxSearchText"`
	Type   string `json:"type,omitempty"`
	Limit  int    `json:"limit,omitempty" schema:"min=1,default=10"` // capped at MaxSearchLimit
	Cursor string `json:"cursor,omitempty"`
}

type searchOut struct{ *graph.SearchResult }

func (o searchOut) items() int { return len(o.Hits) }
func (o searchOut) keep(n int) {
	// A backstop: Search keeps its page within the cap itself, with a cursor.
	o.Hits, o.Truncated, o.Reason, o.Cursor, o.More = o.Hits[:n], true, graph.ReasonBytes, "", false
}

func (o searchOut) text() string {
	var b strings.Builder
	about := ""
	if o.TotalEstimated {
		about = "about "
	}
	fmt.Fprintf(&b, "%d hits of %s%d", len(o.Hits), about, o.Total)
	if o.Truncated {
		fmt.Fprintf(&b, " (truncated: %s)", o.Reason)
	}
	b.WriteString("\n")
	var d strings.Builder
	for _, h := range o.Hits {
		fmt.Fprintf(&d, "%s %s: %s\n", h.Node.Type, h.Node.ID, clip(display(h.Node), 120))
	}
	b.WriteString(fence(d.String()))
	if o.Cursor != "" {
		b.WriteString("more: call again with cursor\n")
	}
	return b.String()
}

func display(n *graph.Node) string {
	for _, k := range []string{"name", "title"} {
		if s, ok := n.Properties[k].(string); ok {
			return s
		}
	}
	return ""
}

func searchNodes() *Tool {
	return define(readTool("search_nodes", "Search nodes",
		"Ranked search of node names and text: all words match, the last as a prefix; \"a phrase\", field:word. Finds IDs from words."),
		func(ctx context.Context, c *Catalog, in *searchIn) (*searchOut, error) {
			var capped []string
			capAt(&in.Limit, MaxSearchLimit, "limit", &capped)
			r, err := graph.Search(ctx, c.store, graph.SearchQuery{Text: in.Query, Type: in.Type, Limit: in.Limit, Cursor: in.Cursor}, c.ceilings)
			if err != nil {
				return nil, err
			}
			r.Capped = withCapped(capped, r.Capped)
			return &searchOut{r}, nil
		})
}

// ---- neighbors

type neighborsIn struct {
	ID        graph.ID     `json:"id" schema:"minLength=1"`
	Edge      graph.Labels `json:"edge,omitempty"`
	Direction string       `json:"direction,omitempty" schema:"enum=out|in|both,default=\"both\""`
	Depth     int          `json:"depth,omitempty" schema:"min=1,default=1"`   // capped at MaxNeighborDepth
	Limit     int          `json:"limit,omitempty" schema:"min=1,default=100"` // capped at MaxNeighborLimit
	// EdgeProperties adds each listed edge's properties.
	EdgeProperties bool   `json:"edgeProperties,omitempty"`
	Cursor         string `json:"cursor,omitempty"`
}

type neighborsOut struct {
	*graph.NeighborsResult
	// EdgeProperties holds, with edgeProperties: true, the properties of
	// each listed edge, by edge ID.
	EdgeProperties map[string]graph.Props `json:"edgeProperties,omitempty"`
}

func (o neighborsOut) items() int { return len(o.Nodes) }
func (o neighborsOut) keep(n int) {
	// Edges[i] is the edge that first reached Nodes[i]; the cursor goes on
	// after the nodes kept.
	o.Nodes, o.Edges, o.Truncated, o.Reason = o.Nodes[:n], o.Edges[:min(n, cap(o.Edges))], true, graph.ReasonBytes
	o.Cursor = o.CursorAfter(n)
	o.More = o.Cursor != ""
}

func (o neighborsOut) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %d edges", len(o.Nodes), len(o.Edges))
	if o.Truncated {
		fmt.Fprintf(&b, " (truncated: %s)", o.Reason)
	}
	b.WriteString("\n")
	var d strings.Builder
	for _, e := range o.Edges {
		fmt.Fprintf(&d, "%s\n", e)
	}
	b.WriteString(fence(d.String()))
	if o.Cursor != "" {
		b.WriteString("more: call again with cursor\n")
	}
	return b.String()
}

func neighbors() *Tool {
	return define(readTool("neighbors", "Neighbours",
		"Nodes within depth hops of a node, breadth first, with the edges reaching them."),
		func(ctx context.Context, c *Catalog, in *neighborsIn) (*neighborsOut, error) {
			var capped []string
			capAt(&in.Depth, MaxNeighborDepth, "depth", &capped)
			capAt(&in.Limit, MaxNeighborLimit, "limit", &capped)
			r, err := graph.Neighbors(ctx, c.store, graph.NeighborsQuery{ID: in.ID, Labels: in.Edge, Direction: graph.Direction(in.Direction),
				Depth: in.Depth, Limits: graph.Limits{MaxResults: in.Limit}, Cursor: in.Cursor}, c.ceilings)
			if err != nil {
				return nil, err
			}
			r.Capped = withCapped(capped, r.Capped)
			out := &neighborsOut{NeighborsResult: r}
			if in.EdgeProperties {
				ids := make([]string, len(r.Edges))
				for i, e := range r.Edges {
					ids[i] = e.String()
				}
				if out.EdgeProperties, err = c.edgeProperties(ctx, ids); err != nil {
					return nil, err
				}
			}
			return out, nil
		})
}

// ---- find_paths

type pathsIn struct {
	From      graph.ID     `json:"from"`
	To        graph.ID     `json:"to"`
	MaxHops   int          `json:"maxHops,omitempty" schema:"min=1"` // capped at MaxPathHops
	Edge      graph.Labels `json:"edge,omitempty"`
	Direction string       `json:"direction,omitempty" schema:"enum=out|in|both,default=\"both\""`
	K         int          `json:"k,omitempty" schema:"min=1,default=1"` // capped at MaxPaths
	// EdgeProperties adds the properties of the paths' edges.
	EdgeProperties bool   `json:"edgeProperties,omitempty"`
	Cursor         string `json:"cursor,omitempty"`
}

type pathsOut struct {
	*graph.PathsResult
	// EdgeProperties holds, with edgeProperties: true, the properties of
	// each edge on the paths, by edge ID.
	EdgeProperties map[string]graph.Props `json:"edgeProperties,omitempty"`
}

func (o pathsOut) items() int { return len(o.Paths) }
func (o pathsOut) keep(n int) {
	// The first paths of the answer stay, so the result is still a start of it.
	o.Paths, o.Truncated, o.Reason = o.Paths[:n], true, graph.ReasonBytes
	if n == 0 {
		o.Length = -1
	}
	o.Cursor = o.CursorAfter(n) // after the paths kept
	o.More = o.Cursor != ""
}

func (o pathsOut) text() string {
	var b strings.Builder
	if len(o.Paths) == 0 {
		b.WriteString("no path found")
		if o.Truncated {
			fmt.Fprintf(&b, " (search stopped: %s)", o.Reason)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%d path(s), shortest first", len(o.Paths))
	if o.Truncated {
		fmt.Fprintf(&b, " (truncated: %s)", o.Reason)
	}
	b.WriteString("\n")
	var d strings.Builder
	for _, p := range o.Paths {
		fmt.Fprintf(&d, "%d edge(s): %s\n", len(p.Edges), strings.Join(p.Edges, " · "))
	}
	b.WriteString(fence(d.String()))
	if o.Cursor != "" {
		b.WriteString("more: call again with cursor\n")
	}
	return b.String()
}

func findPaths() *Tool {
	return define(readTool("find_paths", "Find paths",
		"The k shortest simple paths between two nodes, shortest first."),
		func(ctx context.Context, c *Catalog, in *pathsIn) (*pathsOut, error) {
			var capped []string
			capAt(&in.MaxHops, MaxPathHops, "maxHops", &capped)
			capAt(&in.K, MaxPaths, "k", &capped)
			r, err := graph.Paths(ctx, c.store, graph.PathsQuery{From: in.From, To: in.To, Labels: in.Edge, Direction: graph.Direction(in.Direction),
				MaxHops: in.MaxHops, K: in.K, Cursor: in.Cursor}, c.ceilings)
			if err != nil {
				return nil, err
			}
			r.Capped = withCapped(capped, r.Capped)
			out := &pathsOut{PathsResult: r}
			if in.EdgeProperties {
				var ids []string
				for _, p := range r.Paths {
					ids = append(ids, p.Edges...)
				}
				if out.EdgeProperties, err = c.edgeProperties(ctx, ids); err != nil {
					return nil, err
				}
			}
			return out, nil
		})
}

// ---- query_graph

type queryOut struct {
	*graph.QueryResult
	// EdgeProperties holds, with return.edgeProperties, the properties
	// of each edge on the paths, by edge ID.
	EdgeProperties map[string]graph.Props `json:"edgeProperties,omitempty"`
}

func (o queryOut) text() string {
	var b strings.Builder
	switch {
	case o.Groups != nil:
		fmt.Fprintf(&b, "%d groups", *o.Count)
	case o.Count != nil:
		fmt.Fprintf(&b, "count: %d", *o.Count)
	default:
		fmt.Fprintf(&b, "%d results", len(o.Nodes))
	}
	if o.Truncated {
		fmt.Fprintf(&b, " (truncated: %s)", o.Reason)
	}
	if o.More {
		b.WriteString("; more: call again with the cursor")
	}
	b.WriteString("\n")
	if o.Note != "" {
		b.WriteString(o.Note + "\n")
	}
	var d strings.Builder
	for _, g := range o.Groups {
		k, _ := json.Marshal(g.Key)
		fmt.Fprintf(&d, "%s: %d\n", clip(string(k), 300), g.Count)
	}
	for _, n := range o.Nodes {
		// Fields the query did not return are left out, not shown as <nil>.
		var parts []string
		for _, f := range []string{"type", "id"} {
			if v, ok := n[f]; ok {
				parts = append(parts, fmt.Sprint(v))
			}
		}
		if len(parts) == 0 {
			j, _ := json.Marshal(n)
			parts = append(parts, clip(string(j), 300))
		}
		d.WriteString(strings.Join(parts, " ") + "\n")
	}
	b.WriteString(fence(d.String()))
	return b.String()
}

func queryGraph() *Tool {
	// The input schema is the query language's shape, derived from
	// graph.Query; graph.ParseQuery then checks the query against the
	// language's full schema (graph.QuerySchema) and the model, reporting
	// every problem by pointer.
	t := readTool("query_graph", "Query graph",
		"Bounded multi-hop query: start set, steps, filters, fields, order, or groupBy counts.")
	t.schemaIn = reflect.TypeFor[graph.Query]()
	return define(t,
		func(ctx context.Context, c *Catalog, in *json.RawMessage) (*queryOut, error) {
			q, err := graph.ParseQuery(c.Model(), *in)
			if err != nil {
				return nil, err
			}
			r, err := graph.Run(ctx, c.store, q, c.ceilings)
			if err != nil {
				return nil, err
			}
			out := &queryOut{QueryResult: r}
			if q.Return.EdgeProperties {
				var ids []string
				for _, p := range r.Paths {
					ids = append(ids, p.Edges...)
				}
				if out.EdgeProperties, err = c.edgeProperties(ctx, ids); err != nil {
					return nil, err
				}
			}
			return out, nil
		})
}

// ---- changes_since

type changesIn struct {
	Cursor uint64 `json:"cursor,omitempty" schema:"max=maxCursor,default=0"`
	Limit  int    `json:"limit,omitempty" schema:"min=1,default=100"` // capped at MaxChanges
	Offset int    `json:"offset,omitempty" schema:"min=0"`
}

type changesOut struct {
	Changes []graph.Change `json:"changes"`
	// Cursor is the sequence number to pass next time.
	Cursor uint64 `json:"cursor"`
	More   bool   `json:"more"`
	// Capped names the arguments that asked for more than the tool gives
	// (limit), which were lowered to its maximum.
	Capped []string `json:"capped,omitempty"`
}

func (o *changesOut) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d changes; next cursor %d", len(o.Changes), o.Cursor)
	if o.More {
		b.WriteString(" (more to read)")
	}
	b.WriteString("\n")
	var d strings.Builder
	for _, ch := range o.Changes {
		if p := ch.Part; p != nil {
			fmt.Fprintf(&d, "#%d %s %s: %d node(s), %d edge(s); listed: %d node(s), %d edge(s) from element %d", ch.Seq, ch.Time.Format("2006-01-02T15:04:05Z"), ch.Op,
				p.NodeCount, p.EdgeCount, len(ch.Nodes), len(ch.Edges), p.Offset)
			if ch.Truncated {
				fmt.Fprintf(&d, "; read on with cursor %d, offset %d", ch.Seq-1, p.Next)
			}
			d.WriteString("\n")
			continue
		}
		fmt.Fprintf(&d, "#%d %s %s: %d node(s), %d edge(s)\n", ch.Seq, ch.Time.Format("2006-01-02T15:04:05Z"), ch.Op, len(ch.Nodes), len(ch.Edges))
	}
	b.WriteString(fence(d.String()))
	return b.String()
}

// maxCursor is the largest cursor changes_since takes: 2^53-1, the largest
// integer every JSON client keeps exactly.
const maxCursor = 1<<53 - 1

func changesSince() *Tool {
	return define(readTool("changes_since", "Changes since",
		"Each write's changes after a cursor (0: the start); pass the returned cursor next. A truncated entry resumes at cursor seq-1, offset part.next."),
		func(ctx context.Context, c *Catalog, in *changesIn) (*changesOut, error) {
			var capped []string
			capAt(&in.Limit, MaxChanges, "limit", &capped)
			out, err := c.changes(ctx, in)
			if err != nil {
				return nil, err
			}
			out.Capped = capped
			return out, nil
		})
}

// changes reads a page of the change log that fits the byte cap. An entry
// is listed whole if it fits; one that does not fit the rest of a page
// waits for the next page, where it comes first; the first entry of a page
// that does not fit whole is listed in part (graph.LogEntry.Decode), so
// the cursor never passes an entry that was not delivered. With an offset,
// the page is entry cursor+1 alone, from that element.
func (c *Catalog) changes(ctx context.Context, in *changesIn) (*changesOut, error) {
	out := &changesOut{Changes: []graph.Change{}, Cursor: in.Cursor}
	if in.Cursor > 0 {
		st, err := c.store.Stats(ctx)
		if err != nil {
			return nil, err
		}
		if in.Cursor > st.LastSeq {
			return nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf(
				"cursor %d is past the last change, %d; pass a cursor this server returned, or 0 to read from the start", in.Cursor, st.LastSeq)}
		}
	}
	limit := in.Limit
	if in.Offset > 0 {
		limit = 1
	}
	// The page's envelope, with room for the largest cursor.
	room := c.ceilings.MaxBytes - len(`{"changes":[],"cursor":18446744073709551615,"more":false}`)
	err := graph.ReadLog(ctx, c.store, in.Cursor, func(e *graph.LogEntry) (bool, error) {
		if len(out.Changes) == limit {
			out.More = true
			return false, nil
		}
		first := len(out.Changes) == 0
		if first && in.Offset > 0 && e.Seq != in.Cursor+1 {
			return false, &Error{Code: CodeNotFound, Message: fmt.Sprintf("there is no change %d to read from offset %d; the log goes on at %d", in.Cursor+1, in.Offset, e.Seq)}
		}
		if !first {
			room-- // the comma
		}
		ch, size, err := fitChange(e, in.Offset, room, first)
		if err != nil || ch == nil {
			out.More = ch == nil && err == nil
			return false, err
		}
		if in.Offset > 0 && len(ch.Nodes)+len(ch.Edges) == 0 {
			return false, &Error{Code: CodeInvalid, Message: fmt.Sprintf(
				"element %d of change %d does not fit in the server's cap of %d bytes; the server's --max-bytes must be raised to read it", in.Offset, e.Seq, c.ceilings.MaxBytes)}
		}
		out.Changes = append(out.Changes, *ch)
		out.Cursor = ch.Seq
		room -= size
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	if in.Offset > 0 && len(out.Changes) == 0 {
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("there is no change %d to read from offset %d", in.Cursor+1, in.Offset)}
	}
	return out, nil
}

// changeReserve is room kept for a change's envelope (seq, time, op,
// truncated and part) beside its elements.
const changeReserve = 320

// fitChange decodes a log entry to take at most room bytes encoded. A
// first entry (of a page or a message) that does not fit whole is decoded
// in part, from offset; any other is decoded only if it fits whole (nil
// if not). size is the entry's encoded size. An entry that cannot fit even
// in part is an error saying so.
func fitChange(e *graph.LogEntry, offset, room int, first bool) (ch *graph.Change, size int, err error) {
	budget := room - changeReserve
	for range 3 {
		if first {
			ch, err = e.Decode(offset, max(budget, 0))
		} else {
			ch, err = e.DecodeWhole(max(budget, 0))
		}
		if err != nil || ch == nil {
			return nil, 0, err
		}
		size, err := jsonSize(ch)
		if err != nil {
			return nil, 0, err
		}
		if size <= room {
			return ch, size, nil
		}
		if !first || budget <= 0 {
			break
		}
		budget -= size - room // an envelope larger than the reserve
	}
	if !first {
		return nil, 0, nil
	}
	return nil, 0, &Error{Code: CodeInvalid, Message: fmt.Sprintf(
		"even a summary of change %d does not fit in %d bytes; the server's --max-bytes must be raised", e.Seq, room)}
}

// fitLive cuts a decoded change (from graph.Subscribe) as fitChange would
// decode it from the log, for the live feeds of other surfaces.
func fitLive(c *graph.Change, room int) *graph.Change {
	budget := room - changeReserve
	for range 3 {
		ch, err := c.Cut(0, max(budget, 0))
		if err != nil {
			break
		}
		size, _ := jsonSize(ch)
		if size <= room || budget <= 0 {
			return ch
		}
		budget -= size - room
	}
	ch, _ := c.Cut(0, 0)
	return ch
}

// jsonSize returns the length of v's JSON encoding, as json.Marshal makes
// it, without keeping a copy of it.
func jsonSize(v any) (int, error) {
	var n counter
	err := json.NewEncoder(&n).Encode(v) // HTML-escaped, as json.Marshal does
	return int(n) - 1, err               // less Encode's newline
}

// A counter is an io.Writer that counts what it is given.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}
