package mcp

import (
	"context"
	"encoding/json"
	"errors"
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

func (s *Server) addResources() {
	s.sdk.AddResource(&mcpsdk.Resource{URI: ModelURI, Name: "model", Title: "The model",
		Description: "The JSON Schema 2020-12 document that defines every node type and edge label.", MIMEType: "application/schema+json"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: ModelURI, MIMEType: "application/schema+json", Text: string(s.cat.model.JSON())}}}, nil
		})
	s.sdk.AddResource(&mcpsdk.Resource{URI: ChangesURI, Name: "changes", Title: "Recent changes",
		Description: "The newest entries of the change log. Subscribe to hear of every commit; read changes_since for the rest.", MIMEType: jsonMIME},
		s.readChanges)
	s.sdk.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: nodeTemplate, Name: "node", Title: "A node",
		Description: "One node with its properties and edge counts, as get_node returns it.", MIMEType: jsonMIME}, s.readNode)
	s.sdk.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: typeTemplate, Name: "type", Title: "Nodes of a type",
		Description: "The IDs and names of a node type's nodes (the first 1,000).", MIMEType: jsonMIME}, s.readType)
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
				Description: nt.Description, MIMEType: jsonMIME}, s.readType)
		case !has && s.types[t]:
			delete(s.types, t)
			gone = append(gone, TypeURI(t))
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveResources(gone...)
	}
}

func contents(uri string, v any) (*mcpsdk.ReadResourceResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: string(data)}}}, nil
}

func (s *Server) readNode(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id := graph.ID(strings.TrimPrefix(uri, nodePrefix))
	if !strings.HasPrefix(uri, nodePrefix) || id.Check() != nil {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	n, err := s.cat.store.Node(ctx, id)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	return contents(uri, &nodeOut{Node: n})
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

func (s *Server) readType(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	uri := req.Params.URI
	t := strings.TrimPrefix(uri, typePrefix)
	nt, ok := s.cat.model.Node(t)
	if !strings.HasPrefix(uri, typePrefix) || !ok {
		return nil, mcpsdk.ResourceNotFoundError(uri)
	}
	page, err := s.cat.store.NodesByType(ctx, t, graph.Page{Limit: 1000})
	if err != nil {
		return nil, resourceError(uri, err)
	}
	st, err := s.cat.store.Stats(ctx)
	if err != nil {
		return nil, resourceError(uri, err)
	}
	out := typeMembers{Type: t, Count: st.NodeTypes[t], Nodes: []typeMember{}, More: page.Next != ""}
	for _, n := range page.Nodes {
		name, _ := n.Properties[nt.Display].(string)
		out.Nodes = append(out.Nodes, typeMember{ID: n.ID, Name: name})
	}
	return contents(uri, out)
}

type recentChanges struct {
	LastSeq uint64         `json:"lastSeq"`
	Changes []graph.Change `json:"changes"`
}

const recentChangeCount = 20

func (s *Server) readChanges(ctx context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
	st, err := s.cat.store.Stats(ctx)
	if err != nil {
		return nil, resourceError(ChangesURI, err)
	}
	from := uint64(0)
	if st.LastSeq > recentChangeCount {
		from = st.LastSeq - recentChangeCount
	}
	chs, err := s.cat.store.Since(ctx, from, recentChangeCount)
	if err != nil {
		return nil, resourceError(ChangesURI, err)
	}
	slices.Reverse(chs) // newest first
	if chs == nil {
		chs = []graph.Change{}
	}
	return contents(ChangesURI, recentChanges{LastSeq: st.LastSeq, Changes: chs})
}

func resourceError(uri string, err error) error {
	if errors.Is(err, graph.ErrNotFound) || errors.Is(err, graph.ErrInvalid) {
		return mcpsdk.ResourceNotFoundError(uri)
	}
	return err
}
