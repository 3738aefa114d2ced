package graph

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxBatch is the most elements (upserts and deletes together) one batch may hold.
const MaxBatch = 10000

// MaxIdempotencyKey is the longest idempotency key, in bytes.
const MaxIdempotencyKey = 256

// MaxRevision is the highest revision an element may reach: 2^53-1, the
// largest integer every JSON client (JavaScript's numbers among them)
// keeps exactly. A revision or expected revision outside 0 to MaxRevision
// is refused, and so is a change to an element already at MaxRevision.
const MaxRevision int64 = 1<<53 - 1

// A Batch is a set of writes applied atomically: all of it or none of it.
// Each node and edge may appear at most once. Edges may join nodes that
// exist or that the batch creates; deleting a node deletes its edges.
type Batch struct {
	Nodes       []NodeInput `json:"nodes,omitempty"`
	Edges       []EdgeInput `json:"edges,omitempty"`
	DeleteNodes []NodeRef   `json:"deleteNodes,omitempty"`
	DeleteEdges []EdgeRef   `json:"deleteEdges,omitempty"`
	// IdempotencyKey makes a retry safe: a batch with a key already applied
	// returns the first result and writes nothing. Reusing a key for a
	// different batch is a conflict.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// Op names the operation in the change log ("write" if empty).
	Op string `json:"-"`
	// Restore makes created elements keep the CreatedAt, UpdatedAt and
	// Revision their inputs carry (import uses it to round-trip exactly).
	Restore bool `json:"-"`
	// DryRun validates the batch and reports what it would do, writing nothing.
	DryRun bool `json:"-"`
	// Assume treats these nodes (ID to type) as existing, for a dry run of
	// an import whose earlier batches were not written.
	Assume map[ID]string `json:"-"`
	// Retype lets the batch change the type of existing nodes, keeping
	// their IDs, creation times and edges: each re-typed node must fit its
	// new type, and every edge it has must still join types its label
	// allows. Only a migration sets it (see Migrate); false refuses a
	// type change.
	Retype bool `json:"-"`

	max int // the size limit if not MaxBatch (imports: MaxImportBatch)
	// counted says that the caller counts the result's elements by status
	// and reads nothing else of them (an import): the results of its edges
	// then leave their IDs empty, which took a string per edge.
	counted bool
	// distinct says that no edge key appears twice in the batch, so that
	// planning need not look for one: an import's reader ends a batch
	// before an element it holds already (see tracker.see), and looking
	// again was a map of four-string keys per batch (0.9 s of a 1M-node
	// load's CPU).
	distinct bool
	// rank, if set, orders the batch's problems (an import's: by input
	// line); the MaxProblems a BatchError lists are then the first in
	// that order instead of the first found.
	rank func(ptr string) int64
}

func (b *Batch) limit() int {
	if b.max > 0 {
		return b.max
	}
	return MaxBatch
}

// A NodeInput creates or replaces a node.
type NodeInput struct {
	ID         ID     `json:"id"`
	Type       string `json:"type"`
	Properties Props  `json:"properties"`
	// Merge applies Properties to the existing ones as an RFC 7396 merge
	// patch instead of replacing them: objects merge member by member,
	// recursively, and a null removes a member. A node that does not exist
	// is created from the patch, its nulls removed.
	Merge bool `json:"merge,omitempty"`
	// ExpectedRevision, if set, must equal the node's revision; 0 means the
	// node must not exist yet. A mismatch is a conflict.
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
	// Restore fields, honoured only with Batch.Restore on creation.
	CreatedAt time.Time `json:"createdAt,omitzero"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	Revision  int64     `json:"revision,omitempty"`

	prep *prepared
	// absent says that the store holds no record of the node, so that
	// planning does not look for one: an import into a store that held
	// nothing when it began, and that nothing else writes, knows it of a
	// key it reads for the first time (see readBatches).
	absent bool
}

// An EdgeInput creates or replaces an edge.
type EdgeInput struct {
	EdgeKey
	Properties Props `json:"properties,omitempty"`
	// Merge applies Properties to the edge's as an RFC 7396 merge patch,
	// as NodeInput.Merge does.
	Merge            bool      `json:"merge,omitempty"`
	ExpectedRevision *int64    `json:"expectedRevision,omitempty"`
	CreatedAt        time.Time `json:"createdAt,omitzero"`
	UpdatedAt        time.Time `json:"updatedAt,omitzero"`
	Revision         int64     `json:"revision,omitempty"`

	prep   *prepared
	absent bool // the store holds no record of the edge (see NodeInput.absent)
}

// A NodeRef names a node to delete.
type NodeRef struct {
	ID               ID     `json:"id"`
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
}

// An EdgeRef names an edge to delete.
type EdgeRef struct {
	EdgeKey
	ExpectedRevision *int64 `json:"expectedRevision,omitempty"`
}

// Len returns the number of elements in the batch.
func (b *Batch) Len() int {
	return len(b.Nodes) + len(b.Edges) + len(b.DeleteNodes) + len(b.DeleteEdges)
}

// Status says what a write did to one element.
type Status string

// Statuses.
const (
	Created   Status = "created"
	Updated   Status = "updated"
	Unchanged Status = "unchanged"
	Deleted   Status = "deleted"
)

// A Result reports a committed (or replayed) batch.
type Result struct {
	// Seq is the change-log entry of the batch; 0 if the batch changed nothing.
	Seq uint64 `json:"seq"`
	// Nodes and Edges report the upserts, in input order.
	Nodes []ElementResult `json:"nodes,omitempty"`
	Edges []ElementResult `json:"edges,omitempty"`
	// DeletedNodes and DeletedEdges list what was deleted, the edges of
	// deleted nodes included.
	DeletedNodes []ID     `json:"deletedNodes,omitempty"`
	DeletedEdges []string `json:"deletedEdges,omitempty"`
	// Replayed is true when an idempotency key matched an earlier batch.
	Replayed bool `json:"replayed,omitempty"`
}

// An ElementResult reports one upserted element.
type ElementResult struct {
	ID       string `json:"id"`
	Status   Status `json:"status"`
	Revision int64  `json:"revision"`
}

// A Problem is one reason a batch was rejected.
type Problem struct {
	// Pointer locates the offending value in the batch, as a JSON pointer:
	// "/nodes/3/properties/age".
	Pointer string `json:"pointer"`
	// Element names the node or edge: `node "person/ada"`.
	Element string `json:"element"`
	// Rule names the broken rule: a JSON Schema keyword ("type", "required",
	// …) or one of Lore's: "id", "unknown-type", "unknown-label", "key",
	// "endpoint-type", "dangling", "type-change", "duplicate", "revision",
	// "not-found".
	Rule    string `json:"rule"`
	Message string `json:"message"`
	// Err is the category: ErrInvalid, ErrConflict or ErrNotFound.
	Err error `json:"-"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%s at %s: %s [%s]", p.Element, p.Pointer, p.Message, p.Rule)
}

// A BatchError lists the problems found in a rejected batch: every one,
// or the first MaxProblems and the number of the others (More). It wraps
// ErrInvalid if any problem is invalid input, else ErrConflict if any is
// a conflict, else ErrNotFound.
type BatchError struct {
	Problems []Problem
	// More counts the problems found beyond those listed.
	More int
}

// MaxProblems caps the problems one BatchError lists.
const MaxProblems = 100

func (e *BatchError) Error() string {
	var b strings.Builder
	if len(e.Problems) == 1 && e.More == 0 {
		b.WriteString("batch rejected: ")
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "batch rejected, %d problems (the first %d listed):", len(e.Problems)+e.More, len(e.Problems))
	} else {
		fmt.Fprintf(&b, "batch rejected, %d problems:", len(e.Problems))
	}
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}

// Unwrap returns the error's category.
func (e *BatchError) Unwrap() error {
	cat := ErrNotFound
	for _, p := range e.Problems {
		switch {
		case errors.Is(p.Err, ErrInvalid):
			return ErrInvalid
		case errors.Is(p.Err, ErrConflict):
			cat = ErrConflict
		}
	}
	return cat
}

// problems accumulates Problems: the first MaxProblems found (or, with
// rank, the first MaxProblems in rank order), and a count of the others.
type problems struct {
	list  []Problem
	more  int
	rank  func(ptr string) int64
	ranks []int64 // of list, with rank
}

func (ps *problems) add(err error, ptr, elem, rule, format string, args ...any) {
	if len(ps.list) >= MaxProblems {
		ps.more++
		if ps.rank == nil {
			return
		}
		// Keep the problem if it ranks before the last one kept.
		r, worst := ps.rank(ptr), 0
		for i, x := range ps.ranks {
			if x > ps.ranks[worst] {
				worst = i
			}
		}
		if r >= ps.ranks[worst] {
			return
		}
		ps.list[worst] = Problem{Pointer: ptr, Element: elem, Rule: rule, Message: fmt.Sprintf(format, args...), Err: err}
		ps.ranks[worst] = r
		return
	}
	ps.list = append(ps.list, Problem{Pointer: ptr, Element: elem, Rule: rule, Message: fmt.Sprintf(format, args...), Err: err})
	if ps.rank != nil {
		ps.ranks = append(ps.ranks, ps.rank(ptr))
	}
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &BatchError{Problems: ps.list, More: ps.more}
}

func nodeElem(id ID) string { return fmt.Sprintf("node %q", id) }

func edgeElem(k EdgeKey) string { return "edge " + k.String() }
