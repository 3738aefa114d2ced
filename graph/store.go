package graph

import (
	"context"

	"github.com/lore-dev/lore/schema"
)

// A Store is a property graph: the primitives every surface and the query
// engine are written against. The embedded store (Open) implements it over
// Cayley and bbolt; a SQL store implements the same contract.
//
// Reads never see a write half-applied. Every method is safe for concurrent
// use; writes are serialised.
type Store interface {
	// Model returns the model the store validates against.
	Model() *schema.Model

	// Apply validates a batch whole and, if it is valid, commits it in one
	// transaction with one change-log entry. A rejected batch changes nothing;
	// its error is a *BatchError listing its problems (the first
	// MaxProblems, and the count of the others). Revisions stay within
	// MaxRevision.
	Apply(ctx context.Context, b *Batch) (*Result, error)

	// Node returns one node with its per-label edge counts, or ErrNotFound.
	Node(ctx context.Context, id ID) (*Node, error)
	// Nodes returns the nodes with the given IDs, in order; missing ones are nil.
	// It does not fill in edge counts.
	Nodes(ctx context.Context, ids []ID) ([]*Node, error)
	// Edge returns one edge, or ErrNotFound.
	Edge(ctx context.Context, k EdgeKey) (*Edge, error)
	// Edges returns a page of the edges of a set of nodes, by label and
	// direction, in this order, the same on every store:
	//
	//   - node by node, in the order of q.Nodes (a node given twice is
	//     listed twice);
	//   - a node's edges by label, comparing labels bytewise;
	//   - then by direction: out-edges before in-edges (for Both);
	//   - then by the node at the other end (To of an out-edge, From of an
	//     in-edge), comparing IDs bytewise;
	//   - then by key, bytewise ("" first).
	//
	// For Both, a self-loop is listed once, as an out-edge. Next encodes
	// the place of the page's last edge in that order (the index of its
	// node in q.Nodes, its label, direction, other end and key) and
	// nothing particular to a backend, so the next page lists the edges
	// after it in that order as they are when it is read: an edge written
	// in between shows up if it sorts after that place. A cursor is valid
	// for the same Nodes, Labels and Direction only.
	Edges(ctx context.Context, q EdgeQuery) (*EdgePage, error)
	// NodesByType returns a page of the nodes of one type, ordered by ID.
	NodesByType(ctx context.Context, typ string, p Page) (*NodePage, error)
	// Lookup returns a page of the IDs of nodes whose indexed property matches.
	Lookup(ctx context.Context, q IndexQuery) (*IDPage, error)
	// Postings returns a page of the text-search index.
	Postings(ctx context.Context, q PostingQuery) (*PostingPage, error)
	// ScanNodes returns a page of every node, ordered by ID.
	ScanNodes(ctx context.Context, p Page) (*NodePage, error)
	// ScanEdges returns a page of every edge, ordered by from, label, to and key.
	ScanEdges(ctx context.Context, p Page) (*EdgePage, error)
	// Stats counts nodes per type, edges per label and quads.
	Stats(ctx context.Context) (*Stats, error)

	// Since returns up to limit change-log entries with a sequence number
	// greater than seq, in order, with no gaps. A seq at or past the last
	// entry returns none (it never wraps); surfaces that take a client's
	// cursor refuse one past the end themselves.
	Since(ctx context.Context, seq uint64, limit int) ([]Change, error)
	// Changed returns a channel that is closed when the next entry is committed.
	Changed() <-chan struct{}

	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// A Page asks for one page of an ordered listing.
type Page struct {
	// After is the cursor of the previous page ("" for the first page).
	After string
	// Limit is the page size; 0 means DefaultPageSize, and it is capped at MaxPageSize.
	Limit int
}

// Page sizes.
const (
	DefaultPageSize = 100
	MaxPageSize     = 10000
)

func (p Page) limit() int {
	switch {
	case p.Limit <= 0:
		return DefaultPageSize
	case p.Limit > MaxPageSize:
		return MaxPageSize
	}
	return p.Limit
}

// A NodePage is one page of nodes. Next is "" on the last page.
type NodePage struct {
	Nodes []*Node `json:"nodes"`
	Next  string  `json:"next,omitempty"`
}

// An IDPage is one page of node IDs. Next is "" on the last page.
type IDPage struct {
	IDs  []ID   `json:"ids"`
	Next string `json:"next,omitempty"`
}

// An EdgeQuery selects the edges of a set of nodes.
type EdgeQuery struct {
	Nodes []ID
	// Labels restricts the edges to these labels; empty means every label.
	Labels    []string
	Direction Direction // "" means Out
	Page
	// KeysOnly leaves Properties, timestamps and revisions out, which is
	// cheaper for traversals that need only the endpoints.
	KeysOnly bool
}

// An EdgePage is one page of edges. Next is "" on the last page.
type EdgePage struct {
	Edges []*Edge `json:"edges"`
	Next  string  `json:"next,omitempty"`
}

// An IndexQuery looks up nodes of one type by an indexed property: equal to
// Eq, or within the range [Min, Max] (either bound may be nil; the Exclusive
// flags make a bound strict). Values compare as JSON values: null < false <
// true < numbers < strings; arrays are indexed by their elements.
type IndexQuery struct {
	Type, Property string
	Eq             any
	Min, Max       any
	MinExclusive   bool
	MaxExclusive   bool
	Page
}
