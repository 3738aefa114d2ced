package graph

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// The MCP memory server's JSONL file holds two kinds of line:
//
//	{"type":"entity","name":"Ada","entityType":"person","observations":["…"]}
//	{"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}
//
// Lore maps an entity to an Entity node with ID "entity/" + the escaped name
// (EscapeSegment), and a relation to a relation edge between two entities,
// keyed by its relation type, so one pair may be related in several ways.

// Memory-model names in the default model.
const (
	EntityType    = "Entity"
	RelationLabel = "relation"
	entityPrefix  = "entity/"
)

// EntityID returns the ID of the entity with the given name.
func EntityID(name string) ID { return ID(entityPrefix + EscapeSegment(name)) }

type memoryLine struct {
	Type         string   `json:"type"`
	Name         string   `json:"name,omitempty"`
	EntityType   string   `json:"entityType,omitempty"`
	Observations []string `json:"observations,omitempty"`
	From         string   `json:"from,omitempty"`
	To           string   `json:"to,omitempty"`
	RelationType string   `json:"relationType,omitempty"`
}

// memoryEntity and memoryRelation fix the field order the memory server writes.
type memoryEntity struct {
	Type         string   `json:"type"`
	Name         string   `json:"name"`
	EntityType   string   `json:"entityType"`
	Observations []string `json:"observations"`
}

type memoryRelation struct {
	Type         string `json:"type"`
	From         string `json:"from"`
	To           string `json:"to"`
	RelationType string `json:"relationType"`
}

type memoryDecoder struct {
	lr       *lineReader
	maxDepth int // of a line's JSON; 0 means schema.DefaultMaxDepth
}

func (d *memoryDecoder) lines() int64 { return d.lr.n }

func (d *memoryDecoder) next() (element, error) {
	line, n, err := d.lr.next()
	el := element{line: n}
	if err != nil {
		return el, err
	}
	var l memoryLine
	if err := strictJSON(line, &l, d.maxDepth, "type, name, entityType, observations, from, to and relationType"); err != nil {
		return el, err
	}
	switch l.Type {
	case "entity":
		if l.Name == "" {
			return el, fmt.Errorf("entity without a name")
		}
		obs := make([]any, len(l.Observations))
		for i, o := range l.Observations {
			obs[i] = o
		}
		el.node = &NodeInput{ID: EntityID(l.Name), Type: EntityType,
			Properties: Props{"name": l.Name, "entityType": l.EntityType, "observations": obs}}
	case "relation":
		if l.From == "" || l.To == "" || l.RelationType == "" {
			return el, fmt.Errorf("a relation needs from, to and relationType")
		}
		el.edge = &EdgeInput{EdgeKey: EdgeKey{From: EntityID(l.From), Label: RelationLabel, To: EntityID(l.To), Key: l.RelationType}}
	default:
		return el, fmt.Errorf(`"type" is %q; want "entity" or "relation"`, l.Type)
	}
	return el, nil
}

// exportMemory writes the Entity nodes and the relation edges between them
// as the memory server's JSONL; other nodes and edges are not part of it.
func exportMemory(ctx context.Context, s Store, w io.Writer, st *ExportStats) error {
	lw := newLineWriter(w)
	p := Page{Limit: 1000}
	names := map[ID]string{} // only for entities whose ID is not derived from their name
	for {
		page, err := s.NodesByType(ctx, EntityType, p)
		if err != nil {
			return err
		}
		for _, n := range page.Nodes {
			e := entityOf(n)
			if EntityID(e.Name) != n.ID {
				names[n.ID] = e.Name
			}
			st.Nodes++
			if err := lw.write(e); err != nil {
				return err
			}
		}
		if page.Next == "" {
			break
		}
		p.After = page.Next
	}
	name := func(id ID) (string, bool) {
		if n, ok := names[id]; ok {
			return n, true
		}
		rest, ok := strings.CutPrefix(string(id), entityPrefix)
		if !ok || strings.Contains(rest, "/") {
			return "", false
		}
		n, err := UnescapeSegment(rest)
		return n, err == nil
	}
	return eachEdge(ctx, s, func(e *Edge) error {
		if e.Label != RelationLabel {
			return nil
		}
		from, ok1 := name(e.From)
		to, ok2 := name(e.To)
		if !ok1 || !ok2 {
			return nil
		}
		st.Edges++
		return lw.write(memoryRelation{Type: "relation", From: from, To: to, RelationType: e.Key})
	})
}

func entityOf(n *Node) memoryEntity {
	e := memoryEntity{Type: "entity", Observations: []string{}}
	e.Name, _ = n.Properties["name"].(string)
	e.EntityType, _ = n.Properties["entityType"].(string)
	if obs, ok := n.Properties["observations"].([]any); ok {
		for _, o := range obs {
			if s, ok := o.(string); ok {
				e.Observations = append(e.Observations, s)
			}
		}
	}
	return e
}
