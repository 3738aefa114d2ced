package graph

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A SyncScope is a part of the store that a sync import answers for: its
// nodes that the input lacks are deleted (with their edges), and so are
// the edges starting at its nodes that the input lacks. An edge is in a
// scope when its from node is.
type SyncScope struct {
	// Type: the nodes of this type ("type:TYPE").
	Type string `json:"type,omitempty"`
	// Prefix: the nodes whose ID starts with it ("prefix:PREFIX").
	Prefix string `json:"prefix,omitempty"`
	// File: the nodes the input holds ("file"); only their edges can be
	// missing from it.
	File bool `json:"file,omitempty"`
}

// ParseSyncScope parses type:TYPE, prefix:PREFIX or file.
func ParseSyncScope(s string) (SyncScope, error) {
	kind, arg, _ := strings.Cut(s, ":")
	switch {
	case kind == "type" && arg != "":
		return SyncScope{Type: arg}, nil
	case kind == "prefix" && arg != "":
		return SyncScope{Prefix: arg}, nil
	case s == "file":
		return SyncScope{File: true}, nil
	}
	return SyncScope{}, fmt.Errorf("scope %q: %w (use type:TYPE, prefix:PREFIX or file)", s, ErrInvalid)
}

func (sc SyncScope) String() string {
	switch {
	case sc.Type != "":
		return "type:" + sc.Type
	case sc.Prefix != "":
		return "prefix:" + sc.Prefix
	}
	return "file"
}

// A SyncReport says what a sync import deleted or, in a dry run, would
// delete: counts, the nodes per type, and the first few by ID.
type SyncReport struct {
	DryRun bool `json:"dryRun,omitempty"`
	// DeletedNodes and DeletedEdges count the deletions; the edges include
	// those of deleted nodes.
	DeletedNodes int64            `json:"deletedNodes"`
	DeletedEdges int64            `json:"deletedEdges"`
	NodeTypes    map[string]int64 `json:"nodeTypes,omitempty"`
	FirstNodes   []ID             `json:"firstNodes,omitempty"`
	FirstEdges   []string         `json:"firstEdges,omitempty"`
	// Batches counts the batches the deletions were committed in (one
	// change-log entry each); Seqs are their sequence numbers.
	Batches int64    `json:"batches"`
	Seqs    []uint64 `json:"seqs,omitempty"`
}

// syncDeletes deletes the elements of the scopes that the input, as tr
// recorded it, lacks (see Import), or with dry, reports what it would
// delete. It reads the scopes from the store as it is once the input is
// written, and deletes in batches of at most MaxImportBatch elements.
func syncDeletes(ctx context.Context, s Store, scopes []SyncScope, tr *tracker, dry bool) (*SyncReport, error) {
	rep := &SyncReport{DryRun: dry, NodeTypes: map[string]int64{}}
	visited := map[ID]bool{}
	typeOf := map[ID]string{}
	var delNodes []NodeRef
	var keep []ID
	visit := func(id ID, typ string) {
		if visited[id] {
			return
		}
		visited[id] = true
		if _, ok := tr.nodes[id]; ok {
			keep = append(keep, id)
			return
		}
		typeOf[id] = typ
		delNodes = append(delNodes, NodeRef{ID: id})
	}
	for _, sc := range scopes {
		switch {
		case sc.Type != "":
			err := eachPage(func(after string) (string, error) {
				page, err := s.NodesByType(ctx, sc.Type, Page{After: after, Limit: MaxPageSize})
				if err != nil {
					return "", err
				}
				for _, n := range page.Nodes {
					visit(n.ID, n.Type)
				}
				return page.Next, nil
			})
			if err != nil {
				return rep, err
			}
		case sc.Prefix != "":
			// IDs are listed in byte order: the prefix's nodes come
			// together, and the listing stops past them.
			err := eachPage(func(after string) (string, error) {
				page, err := s.ScanNodes(ctx, Page{After: after, Limit: MaxPageSize})
				if err != nil {
					return "", err
				}
				for _, n := range page.Nodes {
					switch {
					case strings.HasPrefix(string(n.ID), sc.Prefix):
						visit(n.ID, n.Type)
					case string(n.ID) > sc.Prefix:
						return "", nil
					}
				}
				return page.Next, nil
			})
			if err != nil {
				return rep, err
			}
		default:
			for id, typ := range tr.nodes {
				visit(id, typ)
			}
		}
	}
	// The edges from the nodes the input keeps that it lacks.
	slices.Sort(keep)
	var delEdges []EdgeRef
	const chunk = 256
	for i := 0; i < len(keep); i += chunk {
		q := EdgeQuery{Nodes: keep[i:min(i+chunk, len(keep))], Direction: Out, KeysOnly: true, Page: Page{Limit: MaxPageSize}}
		err := eachPage(func(after string) (string, error) {
			q.After = after
			page, err := s.Edges(ctx, q)
			if err != nil {
				return "", err
			}
			for _, e := range page.Edges {
				if !tr.edges[e.EdgeKey] {
					delEdges = append(delEdges, EdgeRef{EdgeKey: e.EdgeKey})
				}
			}
			return page.Next, nil
		})
		if err != nil {
			return rep, err
		}
	}
	slices.SortFunc(delNodes, func(a, b NodeRef) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(delEdges, func(a, b EdgeRef) int { return bytes.Compare(a.Bytes(), b.Bytes()) })
	// Node deletes first: their edges go with them, and an edge the
	// input lacks at a deleted node need not be named.
	for len(delNodes)+len(delEdges) > 0 {
		b := &Batch{Op: "import-sync", DryRun: dry, max: MaxImportBatch}
		n := min(len(delNodes), MaxImportBatch)
		b.DeleteNodes, delNodes = delNodes[:n], delNodes[n:]
		m := min(len(delEdges), MaxImportBatch-n)
		b.DeleteEdges, delEdges = delEdges[:m], delEdges[m:]
		res, err := applyDeletes(ctx, s, b)
		if err != nil {
			return rep, err
		}
		if res == nil {
			continue
		}
		for _, id := range res.DeletedNodes {
			rep.NodeTypes[typeOf[id]]++
			if len(rep.FirstNodes) < maxListed {
				rep.FirstNodes = append(rep.FirstNodes, id)
			}
		}
		for _, k := range res.DeletedEdges {
			if len(rep.FirstEdges) < maxListed {
				rep.FirstEdges = append(rep.FirstEdges, k)
			}
		}
		rep.DeletedNodes += int64(len(res.DeletedNodes))
		rep.DeletedEdges += int64(len(res.DeletedEdges))
		if res.Seq != 0 {
			rep.Batches++
			rep.Seqs = append(rep.Seqs, res.Seq)
		}
	}
	return rep, nil
}

// applyDeletes applies a batch of deletes. An element another writer
// deleted meanwhile is left out, and the rest applied again (up to a few
// times); nil means nothing was left to delete.
func applyDeletes(ctx context.Context, s Store, b *Batch) (*Result, error) {
	for attempt := 1; ; attempt++ {
		if b.Len() == 0 {
			return nil, nil
		}
		res, err := s.Apply(ctx, b)
		var be *BatchError
		if !errors.As(err, &be) || be.More > 0 || attempt == 5 {
			return res, err
		}
		gone := map[string]bool{}
		for _, p := range be.Problems {
			if p.Rule != "not-found" {
				return nil, err
			}
			gone[strings.TrimSuffix(p.Pointer, "/id")] = true
		}
		nodes := b.DeleteNodes[:0:0]
		for i, d := range b.DeleteNodes {
			if !gone["/deleteNodes/"+strconv.Itoa(i)] {
				nodes = append(nodes, d)
			}
		}
		edges := b.DeleteEdges[:0:0]
		for i, d := range b.DeleteEdges {
			if !gone["/deleteEdges/"+strconv.Itoa(i)] {
				edges = append(edges, d)
			}
		}
		b.DeleteNodes, b.DeleteEdges = nodes, edges
	}
}

// eachPage calls page with "" and then with each cursor it returns, until
// it returns "".
func eachPage(page func(after string) (string, error)) error {
	after := ""
	for {
		next, err := page(after)
		if err != nil || next == "" {
			return err
		}
		after = next
	}
}
