package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
)

// Resource URIs.
const (
	ChangesURI   = "lore://changes"
	nodePrefix   = "lore://node/"
	typePrefix   = "lore://type/"
	nodeTemplate = "lore://node/{+id}" // {+id}: IDs contain "/", which {id} would not match
	typeTemplate = "lore://type/{type}"
)

// NodeURI returns the resource URI of a node.
func NodeURI(id graph.ID) string { return nodePrefix + string(id) }

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
			read:        func(c *Catalog, _ context.Context, _ string) (string, error) { return string(c.model.JSON()), nil }},
		{URI: ChangesURI, Name: "changes", Title: "Recent changes", MIMEType: jsonMIME,
			Description: "The newest entries of the change log. Subscribe to hear of every commit; read changes_since for the rest.",
			read:        (*Catalog).readChanges},
		{Template: nodeTemplate, Name: "node", Title: "A node", MIMEType: jsonMIME,
			Description: "One node with its properties and edge counts, as get_node returns it.", read: (*Catalog).readNode},
		{Template: typeTemplate, Name: "type", Title: "Nodes of a type", MIMEType: jsonMIME,
			Description: "The IDs and names of a node type's nodes (the first 1,000).", read: (*Catalog).readType},
	}
}

// A Resource is what reading a resource returns.
type Resource struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType"`
	Text     string `json:"text"`
}

// ReadResource reads a resource by URI. A URI that names nothing is
// graph.ErrNotFound. A panic while reading is logged with its stack and
// returned as an internal *Error.
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
	return &Resource{URI: uri, MIMEType: r.MIMEType, Text: text}, nil
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
	if errors.Is(err, graph.ErrNotFound) || errors.Is(err, graph.ErrInvalid) {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	} else if errors.As(err, &te) && te.Code == CodeInternal {
		return nil, internalRPCError()
	} else if err != nil {
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: r.MIMEType, Text: r.Text}}}, nil
}

// syncTypes lists lore://type/T for each node type with nodes.
func (s *Server) syncTypes(st *graph.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []string
	for _, t := range s.cat.model.NodeTypeNames() {
		has := st.NodeTypes[t] > 0
		switch {
		case has && !s.types[t]:
			s.types[t] = true
			nt, _ := s.cat.model.Node(t)
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

func (c *Catalog) readNode(ctx context.Context, uri string) (string, error) {
	id := graph.ID(strings.TrimPrefix(uri, nodePrefix))
	if err := id.Check(); err != nil {
		return "", fmt.Errorf("resource %q: %w", uri, graph.ErrNotFound)
	}
	n, err := c.store.Node(ctx, id)
	if err != nil {
		return "", err
	}
	return contents(&nodeOut{Node: n})
}

type typeMembers struct {
	Type  string       `json:"type"`
	Count int64        `json:"count"`
	Nodes []typeMember `json:"nodes"`
	More  bool         `json:"more"`
}

type typeMember struct {
	ID   graph.ID `json:"id"`
	Name string   `json:"name,omitempty"`
}

func (c *Catalog) readType(ctx context.Context, uri string) (string, error) {
	t := strings.TrimPrefix(uri, typePrefix)
	nt, ok := c.model.Node(t)
	if !ok {
		return "", fmt.Errorf("resource %q: no node type %q: %w", uri, t, graph.ErrNotFound)
	}
	page, err := c.store.NodesByType(ctx, t, graph.Page{Limit: 1000})
	if err != nil {
		return "", err
	}
	st, err := c.store.Stats(ctx)
	if err != nil {
		return "", err
	}
	out := typeMembers{Type: t, Count: st.NodeTypes[t], Nodes: []typeMember{}, More: page.Next != ""}
	for _, n := range page.Nodes {
		name, _ := n.Properties[nt.Display].(string)
		out.Nodes = append(out.Nodes, typeMember{ID: n.ID, Name: name})
	}
	return contents(out)
}

type recentChanges struct {
	LastSeq uint64         `json:"lastSeq"`
	Changes []graph.Change `json:"changes"`
}

const recentChangeCount = 20

func (c *Catalog) readChanges(ctx context.Context, _ string) (string, error) {
	st, err := c.store.Stats(ctx)
	if err != nil {
		return "", err
	}
	from := uint64(0)
	if st.LastSeq > recentChangeCount {
		from = st.LastSeq - recentChangeCount
	}
	chs, err := c.store.Since(ctx, from, recentChangeCount)
	if err != nil {
		return "", err
	}
	slices.Reverse(chs) // newest first
	if chs == nil {
		chs = []graph.Change{}
	}
	return contents(recentChanges{LastSeq: st.LastSeq, Changes: chs})
}
