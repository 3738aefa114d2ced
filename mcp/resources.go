package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
)

// Resource URIs.
const (
	ChangesURI   = "lore://changes"
	nodePrefix   = "lore://node/"
	typePrefix   = "lore://type/"
	nodeTemplate = "lore://node/{+id}" // {+id}: IDs contain "/", which {id} would not match
	edgePrefix   = "lore://edge/"
	edgeTemplate = "lore://edge/{+id}"
	typeTemplate = "lore://type/{type}"
)

// NodeURI returns the resource URI of a node.
func NodeURI(id graph.ID) string { return nodePrefix + string(id) }

// EdgeURI returns the resource URI of an edge, by its ID.
func EdgeURI(id string) string { return edgePrefix + id }

// TypeURI returns the resource URI of a node type's member list.
func TypeURI(t string) string { return typePrefix + t }

const jsonMIME = "application/json"

// A ResourceSpec describes a resource or a resource template.
type ResourceSpec struct {
	// URI is the resource's URI, or Template its URI template.
	URI, Template            string
	Name, Title, Description string
	MIMEType                 string
	read                     func(c *Catalog, ctx context.Context, uri string) (string, error)
}

// Resources lists the catalog's fixed resources and templates, for every
// surface. Each is subscribable.
func Resources() []ResourceSpec {
	return []ResourceSpec{
		{URI: ModelURI, Name: "model", Title: "The model", MIMEType: "application/schema+json",
			Description: "The JSON Schema 2020-12 document that defines every node type and edge label.",
			read:        (*Catalog).readModel},
		{URI: ChangesURI, Name: "changes", Title: "Recent changes", MIMEType: jsonMIME,
			Description: "The newest entries of the change log (up to 20, as many as fit; truncated if fewer). Subscribe to hear of every commit; read changes_since for the rest.",
			read:        (*Catalog).readChanges},
		{Template: nodeTemplate, Name: "node", Title: "A node", MIMEType: jsonMIME,
			Description: "One node with its properties and edge counts, as get_node returns it.", read: (*Catalog).readNode},
		{Template: edgeTemplate, Name: "edge", Title: "An edge", MIMEType: jsonMIME,
			Description: "One edge (label(from,to) or label(from,to,key)) with its properties, as get_edge returns it.", read: (*Catalog).readEdge},
		{Template: typeTemplate, Name: "type", Title: "Nodes of a type", MIMEType: jsonMIME,
			Description: "The IDs and names of a node type's nodes (the first 1,000, as many as fit; more if there are others).", read: (*Catalog).readType},
	}
}

// A Resource is what reading a resource returns.
type Resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
}

// ReadResource reads a resource by URI. A URI that names nothing is
// graph.ErrNotFound. Every resource honours the byte cap (the catalog's
// Ceilings().MaxBytes) on its text: a list is shortened and says so, and
// a resource that cannot be shortened is an *Error saying how to read it
// instead. A panic while reading is logged with its stack and returned as
// an internal *Error.
func (c *Catalog) ReadResource(ctx context.Context, uri string) (res *Resource, err error) {
	defer func() {
		if v := recover(); v != nil {
			logPanic(ctx, c.log, "resource read panicked", v, "uri", uri)
			res, err = nil, internalError()
		}
	}()
	r, ok := MatchResource(uri)
	if !ok {
		return nil, fmt.Errorf("resource %q: %w", uri, graph.ErrNotFound)
	}
	text, err := r.read(c, ctx, uri)
	if err != nil {
		return nil, err
	}
	if len(text) > c.ceilings.MaxBytes { // each reader keeps to the cap; this is the backstop
		return nil, tooLarge(uri, len(text), c.ceilings.MaxBytes, "")
	}
	return &Resource{URI: uri, MIMEType: r.MIMEType, Text: text}, nil
}

// tooLarge is the error for a resource over the byte cap.
func tooLarge(uri string, size, max int, instead string) error {
	msg := fmt.Sprintf("%s is %d bytes, over the server's cap of %d bytes", uri, size, max)
	if instead != "" {
		msg += "; " + instead
	}
	return &Error{Code: CodeInvalid, Message: msg}
}

// MatchResource returns the resource or template a URI belongs to. A
// match says nothing of whether the node or type it names exists.
func MatchResource(uri string) (ResourceSpec, bool) {
	for _, r := range Resources() {
		if r.URI == uri || r.Template != "" && strings.HasPrefix(uri, r.Template[:strings.Index(r.Template, "{")]) {
			return r, true
		}
	}
	return ResourceSpec{}, false
}

func (s *Server) addResources() {
	for _, r := range Resources() {
		h := s.resourceHandler
		if r.URI != "" {
			s.sdk.AddResource(&mcpsdk.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType}, h)
		} else {
			s.sdk.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: r.Template, Name: r.Name, Title: r.Title,
				Description: r.Description, MIMEType: r.MIMEType}, h)
		}
	}
}

func (s *Server) resourceHandler(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	r, err := s.cat.ReadResource(ctx, uri)
	var te *Error
	switch {
	case errors.As(err, &te) && te.Code == CodeInternal:
		return nil, internalRPCError()
	case errors.As(err, &te):
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: te.Message}
	case errors.Is(err, graph.ErrNotFound) || errors.Is(err, graph.ErrInvalid):
		return nil, mcpsdk.ResourceNotFoundError(uri)
	case err != nil:
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: r.MIMEType, Text: r.Text}}}, nil
}

// syncTypes lists lore://type/T for each node type with nodes.
func (s *Server) syncTypes(st *graph.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for _, t := range s.cat.Model().NodeTypeNames() {
		has := st.NodeTypes[t] > 0
		switch {
		case has && !s.types[t]:
			s.types[t] = true
			nt, _ := s.cat.Model().Node(t)
			s.sdk.AddResource(&mcpsdk.Resource{URI: TypeURI(t), Name: "type/" + t, Title: "Nodes of type " + t,
				Description: nt.Description, MIMEType: jsonMIME}, s.resourceHandler)
		case !has && s.types[t]:
			delete(s.types, t)
			gone = append(gone, TypeURI(t))
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveResources(gone...)
	}
}

func contents(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}

// readModel returns the model document with its version as the keyword
// x-lore-version (which JSON Schema ignores), first among its keys.
func (c *Catalog) readModel(_ context.Context, uri string) (string, error) {
	rest := bytes.TrimLeft(bytes.TrimSpace(c.Model().JSON())[1:], " \t\r\n") // a model is a JSON object
	data := []byte(`{"x-lore-version":"` + c.Model().Version() + `"`)
	if rest[0] != '}' {
		data = append(data, ',')
	}
	data = append(data, rest...)
	if len(data) > c.ceilings.MaxBytes {
		return "", tooLarge(uri, len(data), c.ceilings.MaxBytes, "describe_model lists the types, and describe_model {type} gives one type's schema")
	}
	return string(data), nil
}

func (c *Catalog) readNode(ctx context.Context, uri string) (string, error) {
	id := graph.ID(strings.TrimPrefix(uri, nodePrefix))
	if err := id.Check(); err != nil {
		return "", fmt.Errorf("resource %q: %w", uri, graph.ErrNotFound)
	}
	n, err := c.store.Node(ctx, id)
	if err != nil {
		return "", err
	}
	text, err := contents(&nodeOut{Node: n})
	if err == nil && len(text) > c.ceilings.MaxBytes {
		q, _ := json.Marshal(map[string]any{"from": map[string]any{"ids": []graph.ID{id}}, "return": map[string]any{"fields": []string{"id", "type", "name"}}})
		return "", tooLarge(uri, len(text), c.ceilings.MaxBytes, "read some of its properties with query_graph "+string(q)+", naming the fields you need")
	}
	return text, err
}

func (c *Catalog) readEdge(ctx context.Context, uri string) (string, error) {
	k, err := graph.ParseEdgeKey(strings.TrimPrefix(uri, edgePrefix))
	if err != nil {
		return "", fmt.Errorf("resource %q: %w", uri, graph.ErrNotFound)
	}
	e, err := c.store.Edge(ctx, k)
	if err != nil {
		return "", err
	}
	return contents(&edgeOut{Edge: e})
}

type typeMembers struct {
	Type  string       `json:"type"`
	Count int64        `json:"count"`
	Nodes []typeMember `json:"nodes"`
	// More says that the type has nodes not listed: past the first
	// maxTypeMembers, or past what fits the byte cap.
	More bool `json:"more"`
}

type typeMember struct {
	ID   graph.ID `json:"id"`
	Name string   `json:"name,omitempty"`
}

// Type member lists: at most maxTypeMembers, read typePage at a time, with
// names cut to maxNameRunes.
const (
	maxTypeMembers = 1000
	typePage       = 100
	maxNameRunes   = 200
)

func (c *Catalog) readType(ctx context.Context, uri string) (string, error) {
	t := strings.TrimPrefix(uri, typePrefix)
	nt, ok := c.Model().Node(t)
	if !ok {
		return "", fmt.Errorf("resource %q: no node type %q: %w", uri, t, graph.ErrNotFound)
	}
	st, err := c.store.Stats(ctx)
	if err != nil {
		return "", err
	}
	out := typeMembers{Type: t, Count: st.NodeTypes[t], Nodes: []typeMember{}}
	empty, _ := json.Marshal(out)
	room := c.ceilings.MaxBytes - len(empty) - len(`true`) // more may turn true
	// Pages are read until the list is full, so a type of large nodes
	// costs a page of them in memory, not the whole list.
	after := ""
	for {
		page, err := c.store.NodesByType(ctx, t, graph.Page{After: after, Limit: min(typePage, maxTypeMembers-len(out.Nodes))})
		if err != nil {
			return "", err
		}
		for _, n := range page.Nodes {
			name, _ := n.Properties[nt.Display].(string)
			m := typeMember{ID: n.ID, Name: clipName(name)}
			data, _ := json.Marshal(m)
			if len(data)+1 > room {
				out.More = true
				return contents(out)
			}
			room -= len(data) + 1
			out.Nodes = append(out.Nodes, m)
		}
		if page.Next == "" {
			return contents(out)
		}
		if len(out.Nodes) == maxTypeMembers {
			out.More = true
			return contents(out)
		}
		after = page.Next
	}
}

// clipName cuts a display name to maxNameRunes, ending it with "…".
func clipName(s string) string {
	if len(s) <= maxNameRunes {
		return s
	}
	if r := []rune(s); len(r) > maxNameRunes {
		return string(r[:maxNameRunes-1]) + "…"
	}
	return s
}

type recentChanges struct {
	LastSeq uint64         `json:"lastSeq"`
	Changes []graph.Change `json:"changes"`
	// Truncated says that fewer than the newest recentChangeCount entries
	// are listed, to fit the byte cap.
	Truncated bool `json:"truncated,omitempty"`
}

const recentChangeCount = 20

// readChanges lists the newest entries, newest first, as changes_since
// pages the log: an entry is listed whole if it fits, the newest in part if
// it does not fit whole, and the list stops at the first older entry that
// does not fit. Entries are decoded one at a time, within the room left.
func (c *Catalog) readChanges(ctx context.Context, _ string) (string, error) {
	st, err := c.store.Stats(ctx)
	if err != nil {
		return "", err
	}
	out := recentChanges{LastSeq: st.LastSeq, Changes: []graph.Change{}}
	envelope, _ := json.Marshal(recentChanges{LastSeq: st.LastSeq, Changes: []graph.Change{}, Truncated: true})
	room := c.ceilings.MaxBytes - len(envelope)
	err = graph.ReadLogNewest(ctx, c.store, func(e *graph.LogEntry) (bool, error) {
		if e.Seq > st.LastSeq { // committed after Stats: the list ends at lastSeq
			return true, nil
		}
		first := len(out.Changes) == 0
		if !first {
			room--
		}
		ch, size, err := fitChange(e, 0, room, first)
		if err != nil || ch == nil {
			out.Truncated = ch == nil && err == nil
			return false, err
		}
		out.Changes = append(out.Changes, *ch)
		room -= size
		return len(out.Changes) < recentChangeCount, nil
	})
	if err != nil {
		return "", err
	}
	return contents(out)
}
