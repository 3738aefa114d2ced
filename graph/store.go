package graph

import (
	"context"
	"fmt"
	"slices"

	"github.com/lore-dev/lore/schema"
)

// A Store is a property graph: the primitives every surface and the query
// engine are written against. The embedded store (graph/bolt) implements it
// over Cayley and bbolt; another backend implements the same contract, and
// graphtest.Run checks it. A backend may also implement the optional
// interfaces of optional.go.
//
// # Writes
//
// Apply is the only write. A backend plans a batch with PlanBatch over a
// Snapshot of its committed state and commits the Plan, so validation,
// revisions, timestamps and the Result are the same on every backend. It
// holds one writer lock across planning and committing, so concurrent
// Apply calls are serialised and none loses another's write: each batch is
// planned against the state every batch committed before it left.
//
//   - Atomicity: a batch commits whole, with its change-log entry, or not
//     at all. A rejected batch (a *BatchError), a failed commit or a
//     cancelled ctx changes nothing and takes no sequence number. A crash
//     leaves every batch Apply acknowledged, and none in part.
//   - Revisions: an element is created at revision 1 (or the revision a
//     Restore batch gives), and each change that alters its properties adds
//     one; an upsert with equal properties is Unchanged and keeps its
//     revision, timestamps and record. ExpectedRevision 0 means "must not
//     exist"; any other value must equal the current revision, or the batch
//     is rejected with ErrConflict. Revisions stop at MaxRevision.
//   - Cascade: deleting a node deletes every edge that starts or ends at
//     it, listed in Result.DeletedEdges and in the change-log entry.
//   - Idempotency: a batch with an IdempotencyKey that was applied before
//     (with a byte-identical batch, across restarts) returns the first
//     Result with Replayed set and writes nothing; the same key with a
//     different batch is ErrConflict. A keyed batch that changes nothing
//     still records its key. Keys are at most MaxIdempotencyKey bytes.
//   - DryRun validates and returns the Result the batch would have, and
//     writes nothing (no sequence number, no key).
//
// # The change log
//
// Every batch that changes something commits one Change with the next
// sequence number: 1 for a new store's first, then one more for each, with
// no gap and no reuse, across restarts, for as long as the store exists
// (an undone load, see AtomicLoader, uses up its numbers). Result.Seq is
// that number (0 for a batch that changed nothing). Putting another model
// in use in place of the store's commits one too, with Op OpModel and no
// element, so readers of the log learn of it in order with the writes.
// Since(seq, limit)
// returns the entries after seq, oldest first, up to limit (a limit of 0
// or below, or above MaxPageSize, means DefaultPageSize); a seq at or past
// the last entry returns none (it never wraps around to the first). Stats
// reports LastSeq, the newest entry's number. Changed returns a channel
// that is closed once a commit after the call is visible to every read
// (and by Close): a commit through this Store closes it before its Apply
// returns; a batch that commits no entry (rejected, unchanged, dry run)
// does not. A reader waits on it, then calls Since. Closing is the only
// signal: several commits may close one channel.
//
// # Reads
//
// Each read method sees one committed state (none of a batch, or all of
// it), and later calls see what earlier commits wrote. Listings come in
// pages (Page): at most Page.Size() items, and Next, a cursor, when more
// follow; Next is "" exactly when the listing ended. A page lists the
// items after its cursor in the listing's order as they are when it is
// read: an item written in between shows up if it sorts after the cursor,
// and none is listed twice. A cursor is a backend's own, valid for the same
// query on the same store only; one the store cannot read is ErrInvalid
// (Edges always tells). Comparing IDs, labels, types and tokens means
// comparing their bytes.
//
// Every method is safe for concurrent use. Calls after Close return
// ErrClosed (Close itself returns nil again).
type Store interface {
	// Model returns the model the store validates against. It may change
	// while the store is open: a backend shared by several processes
	// follows a model another one put in use (see OpModel), and its next
	// write is validated with it.
	Model() *schema.Model

	// Apply validates a batch whole and, if it is valid, commits it in one
	// transaction with one change-log entry (see Writes). A rejected batch
	// changes nothing; its error is a *BatchError listing its problems
	// (the first MaxProblems, and the count of the others).
	Apply(ctx context.Context, b *Batch) (*Result, error)

	// Node returns one node with Edges, its edge counts: one entry per
	// label and direction with at least one edge, by label, then Out
	// before In; a self-loop counts once in each direction. A missing
	// node is ErrNotFound; a malformed ID, ErrInvalid.
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
	// for the same Nodes, Labels and Direction only. A label the model
	// lacks is ErrInvalid; a node that does not exist has no edges.
	Edges(ctx context.Context, q EdgeQuery) (*EdgePage, error)
	// NodesByType returns a page of the nodes of one type, ordered by ID.
	// Its cursor is the last ID listed. A type the model lacks is ErrInvalid.
	NodesByType(ctx context.Context, typ string, p Page) (*NodePage, error)
	// Lookup returns a page of the IDs of nodes of q.Type whose indexed
	// property q.Property equals q.Eq, or lies within [q.Min, q.Max] (see
	// IndexQuery), ordered by value (as EncodeIndexValue orders them),
	// then by ID. A node whose property is an array is listed once per
	// distinct scalar element that matches. A type the model lacks, a
	// property it does not index, or a bound that is not a JSON scalar is
	// ErrInvalid.
	Lookup(ctx context.Context, q IndexQuery) (*IDPage, error)
	// Postings returns a page of the text-search index: the postings
	// whose token starts with q.Prefix (equals it, if q.Exact), of nodes
	// of q.Type if given, ordered by token, type, then ID. Weight is what
	// NodeTokens gave the token. It examines at most q.MaxScan entries,
	// matching or not (Scanned counts them), and returns a cursor to go on
	// when it stops early, even with no posting on the page. An empty
	// prefix is ErrInvalid.
	//
	// With q.ByWeight (and q.Exact) the postings of the token come by
	// Weight, highest first, then by ID: Search reads them so, and stops
	// once no unread posting can reach its top results. With q.Nodes (and
	// q.Exact) only the postings of the token for those nodes come, in the
	// order of q.Nodes (a random access; q.ByWeight is ignored).
	Postings(ctx context.Context, q PostingQuery) (*PostingPage, error)
	// Terms returns the distinct tokens of the text-search index that start
	// with q.Prefix (or equal it, with q.Exact), in token order, at most
	// q.Limit (0: DefaultPageSize), each with its number of postings (of
	// nodes of q.Type if given; a token with none of that type is left
	// out). It examines at most MaxTermScan tokens. An empty prefix is
	// ErrInvalid.
	Terms(ctx context.Context, q TermQuery) ([]Term, error)
	// ScanNodes returns a page of every node, ordered by ID (no edge counts).
	ScanNodes(ctx context.Context, p Page) (*NodePage, error)
	// ScanEdges returns a page of every edge, ordered by from, label, to
	// and key ("" first), comparing bytewise.
	ScanEdges(ctx context.Context, p Page) (*EdgePage, error)
	// Stats counts nodes per type and edges per label (types and labels
	// with none are left out), their totals, and LastSeq; Quads is the
	// backend's count of stored quads, where it keeps them (0 otherwise).
	Stats(ctx context.Context) (*Stats, error)

	// Since returns up to limit change-log entries with a sequence number
	// greater than seq, in order, with no gaps. A seq at or past the last
	// entry returns none (it never wraps); surfaces that take a client's
	// cursor refuse one past the end themselves.
	Since(ctx context.Context, seq uint64, limit int) ([]Change, error)
	// Changed returns a channel that is closed when the next entry is
	// committed (see The change log), or the store is closed.
	Changed() <-chan struct{}

	// Close waits for the write under way, releases the store and wakes
	// Changed's waiters. Calls after Close return ErrClosed.
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

// Size returns the page size p asks for: Limit, or DefaultPageSize if it
// is 0 or below, and at most MaxPageSize.
func (p Page) Size() int {
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

// KnownType returns the node type typ of m, or an error wrapping
// ErrInvalid that lists m's node types: the check every backend makes of a
// type it is asked to read.
func KnownType(m *schema.Model, typ string) (*schema.NodeType, error) {
	nt, ok := m.Node(typ)
	if !ok {
		return nil, fmt.Errorf("unknown node type %q; the model has %s: %w", typ, list(m.NodeTypeNames()), ErrInvalid)
	}
	return nt, nil
}

// KnownLabels returns the edge labels asked for, sorted and without
// repeats, or every label of m if none is asked for (both without a copy
// when there is nothing to sort), or an error wrapping ErrInvalid for a
// label m lacks: the check every backend makes of the labels of a read.
func KnownLabels(m *schema.Model, asked []string) ([]string, error) {
	if len(asked) == 0 {
		return m.EdgeLabels(), nil
	}
	for _, l := range asked {
		if _, ok := m.Edge(l); !ok {
			return nil, fmt.Errorf("unknown edge label %q; the model has %s: %w", l, list(m.EdgeLabels()), ErrInvalid)
		}
	}
	if len(asked) == 1 {
		return asked, nil
	}
	labels := slices.Clone(asked)
	slices.Sort(labels)
	return slices.Compact(labels), nil
}

// IndexedType is KnownType for a read of the index of typ's property prop,
// which must be indexed.
func IndexedType(m *schema.Model, typ, prop string) (*schema.NodeType, error) {
	nt, err := KnownType(m, typ)
	if err != nil {
		return nil, err
	}
	if !nt.IsIndexed(prop) {
		return nil, fmt.Errorf("property %s.%s is not indexed; indexed properties are %s: %w", typ, prop, list(nt.Indexed), ErrInvalid)
	}
	return nt, nil
}
