// Package graph is Lore's core: the property graph (nodes, edges, IDs,
// revisions, batches), the Store interface of primitives and its written
// contract, the write planner every backend commits through (PlanBatch over a
// Snapshot), subscriptions and the change log's encoding, the bounded query
// engine (query, search, traversal, paths, limits, cursors), written once
// over the Store primitives, and import and export.
//
// The package knows nothing of MCP, HTTP or GraphQL, and nothing of a
// storage engine: backends live in packages of their own (graph/bolt, the
// embedded store on Cayley and bbolt) and implement Store, plus whichever
// optional interfaces they can (Checker, Syncer, Pather, CursorKeyer,
// LogReader, Pipeliner, BulkLoader, AtomicLoader, Backuper). graph/graphtest holds
// the conformance suite every backend passes. The package never logs: it
// returns errors in the categories below.
//
// # The logical quad mapping
//
// Export writes the full logical graph as N-Quads, and import reads it back:
//
//	node   <n:ID>   <pg:type>  <t:TYPE>
//	edge   <n:FROM> <e:LABEL>  <n:TO>            (unkeyed edge)
//	edge   <n:FROM> <e:LABEL>  <n:TO>  <k:KEY>   (keyed edge: the key is the quad label)
//	<n:ID> <p:NAME> "JSON value"^^<lore:json> .   (properties, and pg:createdAt, pg:updatedAt, pg:revision)
package graph

import (
	"errors"
	"fmt"
	"time"
)

// Error categories. Every error the package returns wraps one of them (or is
// an I/O failure), so surfaces can map them once, from a table.
var (
	ErrNotFound = errors.New("not found")        // the node or edge does not exist
	ErrInvalid  = errors.New("invalid argument") // the input is malformed or breaks a model rule
	ErrConflict = errors.New("conflict")         // the write clashes with existing data (a stale revision, a reused idempotency key)
	ErrLocked   = errors.New("store locked")     // another process holds the store
	ErrClosed   = errors.New("store closed")     // the store was closed
)

// Props holds an element's properties as JSON values, as encoding/json
// decodes them with UseNumber: string, json.Number, bool, nil, []any and
// map[string]any.
type Props = map[string]any

// A Node is a typed vertex of the graph.
type Node struct {
	ID         ID        `json:"id"`
	Type       string    `json:"type"`
	Properties Props     `json:"properties"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	// Revision starts at 1 and grows by one with every change to the node.
	Revision int64 `json:"revision"`
	// Edges counts the node's edges per label and direction. Only reads of a
	// single node fill it in.
	Edges []EdgeCount `json:"edges,omitempty"`
}

// An EdgeCount is the number of a node's edges with one label in one direction.
type EdgeCount struct {
	Label     string    `json:"label"`
	Direction Direction `json:"direction"`
	Count     int64     `json:"count"`
}

// An Edge is a labelled, directed link between two nodes.
type Edge struct {
	// ID is the edge's key in its string form, "memberOf(person/ada,team/core)".
	ID string `json:"id"`
	EdgeKey
	Properties Props     `json:"properties"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
	Revision   int64     `json:"revision"`
}

// Direction selects edges by their orientation relative to a node.
type Direction string

// Directions.
const (
	Out  Direction = "out"  // edges starting at the node
	In   Direction = "in"   // edges ending at the node
	Both Direction = "both" // either
)

// ParseDirection parses "out", "in" or "both"; "" means Out.
func ParseDirection(s string) (Direction, error) {
	switch Direction(s) {
	case "":
		return Out, nil
	case Out, In, Both:
		return Direction(s), nil
	}
	return "", fmt.Errorf("direction %q: %w (use out, in or both)", s, ErrInvalid)
}

// Stats summarises a store.
type Stats struct {
	Nodes      int64            `json:"nodes"`
	Edges      int64            `json:"edges"`
	NodeTypes  map[string]int64 `json:"nodeTypes"`
	EdgeLabels map[string]int64 `json:"edgeLabels"`
	// Quads is the number of live quads in Cayley.
	Quads int64 `json:"quads"`
	// LastSeq is the sequence number of the newest change-log entry.
	LastSeq uint64 `json:"lastSeq"`
}

// NormalizeTime returns t in UTC truncated to the microsecond.
func NormalizeTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
