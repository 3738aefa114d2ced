// Package graph is Lore's core: the property graph (nodes, edges, IDs,
// revisions), the Store interface of primitives the query engine is written
// against, and its embedded implementation on Cayley's KV backend over bbolt,
// with the write path, the change log, secondary indexes and import/export.
//
// The package knows nothing of MCP, HTTP or GraphQL. It never logs: it
// returns errors in the categories below.
//
// # Storage
//
// A store is a directory holding one bbolt file, store.bolt, which Lore opens
// itself (with a lock timeout and an initial mmap size) and hands to Cayley's
// KV quad store. Cayley holds the graph's structure as quads:
//
//	node   <n:ID>   <pg:type>  <t:TYPE>
//	edge   <n:FROM> <e:LABEL>  <n:TO>            (unkeyed edge)
//	edge   <n:FROM> <e:LABEL>  <n:TO>  <k:KEY>   (keyed edge: the key is the quad label)
//
// A traversal (edges of a frontier, by label and direction) reads in-edges
// from Cayley's [O,P,S] index and out-edges from Lore's edge records, keyed
// from, label, to, key (see Store.Edges). Properties, timestamps and revisions are
// not quads: Cayley's KV never compacts a deleted quad, so every property
// update would leave a tombstone that later reads must skip (measured: 3,000
// updates of one property took a read from 94 µs to 4.5 ms), and a literal per
// property costs a value entry, a refcount and an index entry (measured here:
// a 5-property node costs 6 quads and loads at well under half the rate).
// They live instead in Lore's own buckets in the same bbolt file, written in
// the same transaction as the quads (see hookKV), together with the type and
// property indexes, the per-node edge summaries, the change log and the
// idempotency keys. A crash therefore never leaves them out of step.
//
// Export writes the full logical graph as N-Quads, properties included:
//
//	<n:ID> <p:NAME> "JSON value"^^<lore:json> .
//
// # Concurrency
//
// One writer at a time. Cayley's bbolt store deadlocks when a commit remaps
// the file while readers hold transactions, so readers take the read side of
// an RW lock for each primitive call and the writer takes the write side while
// Cayley commits. Every primitive is bounded (pages, frontier sizes), so a
// writer never waits long.
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

// now returns the current time normalised as Lore stores every timestamp:
// UTC, truncated to the microsecond (the precision PostgreSQL keeps too).
func now() time.Time { return NormalizeTime(time.Now()) }

// NormalizeTime returns t in UTC truncated to the microsecond.
func NormalizeTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// wrap adds context to a non-nil error: defer wrap(&err, "Apply").
func wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}
