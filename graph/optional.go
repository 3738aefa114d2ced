package graph

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/lore-dev/lore/schema"
)

// Optional operations. A backend implements Store; it may also implement
// any of the interfaces below, which Lore's code finds by a type
// assertion and does without when a store lacks them. Each says what
// happens then.

// ErrNoStore is wrapped by the error of a read-only open of a location
// that holds no store.
var ErrNoStore = errors.New("no store")

// A Checker can verify its own consistency and repair what it derives
// from its records. Without it, lore check reports that the store has no
// check.
type Checker interface {
	// Check verifies the store and reports every problem found (the
	// first few hundred). It may block writers while it runs.
	Check(ctx context.Context) (*CheckReport, error)
	// Repair rebuilds what the store derives from its records (indexes,
	// counts, summaries), then checks it again.
	Repair(ctx context.Context) (*CheckReport, error)
}

// A ModelSwitcher can put another model in use while it is open and
// serving. UseModel checks that m has every node type and edge label the
// store holds, rebuilds what m changes in the derived indexes, and commits
// m with its change-log entry (OpModel), whose sequence number it returns
// (0, and nothing written, if m is the model in use); writes after it are
// validated with m, and a write under way finishes first. It does not
// check that the stored properties fit m; CheckModel does, and at is the
// last change-log entry (Stats.LastSeq) the caller had seen when it
// checked: if the log has gone on since, UseModel changes nothing and
// returns an error wrapping ErrConflict, and the caller checks what was
// written since (CheckModelSince), then tries again. Without it, a model
// is put in use by opening the store with it, which needs the store to
// itself.
type ModelSwitcher interface {
	UseModel(ctx context.Context, m *schema.Model, at uint64) (seq uint64, err error)
}

// A Syncer can flush committed writes to durable storage on demand (a
// store opened to skip the flush of each commit). Without it, every
// commit is taken to be durable when Apply returns.
type Syncer interface {
	Sync() error
}

// A Pather keeps its data in a local directory, which it names. Lore uses
// the directory for what lives beside the store (a Unix socket, a lock
// owner's note). Without it, nothing lives beside the store.
type Pather interface {
	Path() string
}

// A LogReader reads stored change-log entries without decoding them, which
// lets ReadLog and ReadLogNewest page through large entries without
// decoding whole ones. Without it they read one entry at a time through
// Store.Since.
type LogReader interface {
	// ReadRawLog returns entries in order: the first after seq and those
	// following it, or (newest) the last at or before seq and those
	// preceding it, newest first. It stops once the entries' stored sizes
	// reach limit bytes, but returns at least one entry when there is
	// one. Each entry's data is what EncodeChange made of it
	// (NewLogEntry).
	ReadRawLog(ctx context.Context, seq uint64, newest bool, limit int) ([]LogEntry, error)
}

// A Pipeliner applies a stream of batches faster than one Apply after
// another, for example by planning each batch while the one before it
// commits. Import uses it for the batches it commits (never for a dry
// run). Without it, Import calls Apply for each batch.
type Pipeliner interface {
	// ApplyStream applies the batches received from in, in order, each as
	// Apply would (validated whole, committed atomically with one
	// change-log entry, an invalid one changing nothing), and calls
	// handle with each one's outcome, in the order received, before it
	// commits any batch received after the one handle is called with
	// fails. It returns when in is closed and every batch is handled,
	// when handle returns false, or when ctx is done; it never commits a
	// batch after handle returned false. A StreamBatch with a nil Batch
	// is handled with a nil result and a nil error, in its turn.
	ApplyStream(ctx context.Context, in <-chan *StreamBatch, handle func(*StreamBatch, *Result, error) bool)
}

// A StreamBatch is one batch of a stream a Pipeliner applies.
type StreamBatch struct {
	// Batch is the batch to apply; nil means none (the stream reports
	// something in its place, such as an unreadable input line).
	Batch *Batch
	// Last marks the stream's last batch: none follows it.
	Last bool

	ib *importBatch // the import's own record of the batch
}

// A BulkLoader can commit faster while it is empty, by skipping the flush
// of each commit (and deferring derived indexes). Without it, a partial
// import commits each batch durably.
type BulkLoader interface {
	// BeginBulk starts a bulk load if the store holds, and held, nothing,
	// and reports whether it did. end flushes what the load deferred and
	// restores durable commits; it must be called once the load is done.
	BeginBulk() (end func() error, ok bool)
}

// An AtomicLoader can undo a load into a store that holds, and held,
// nothing, which lets an all-or-nothing import commit as it reads instead
// of checking its whole input first. Without it, such an import reads its
// input twice: once to check it, once to write it.
type AtomicLoader interface {
	// BeginLoad starts a load if the store holds, and held, nothing, and
	// reports whether it did; other writers wait (or fail with
	// ErrConflict) until it ends. done(true) ends the load, keeping what
	// it committed; done(false) empties the store again, as does the next
	// open if the process dies first (the change log's sequence numbers
	// keep growing). fast makes the load a bulk load (see BulkLoader).
	// It reports ok false and no error if the store takes no load now
	// (it holds or held data, or another load is under way), and an error
	// if it failed to begin one: then the store holds what it held, or a
	// mark that the next writer or open undoes.
	BeginLoad(fast bool) (done func(ok bool) error, ok bool, err error)
}

// loadKey marks the context of the batches a load that BeginLoad started
// commits (see InLoad).
type loadKey struct{}

// WithinLoad returns ctx marked as the context of the load that
// BeginLoad started: the one writer an AtomicLoader lets write while its
// load is under way. Import marks the stream of its load; no one else
// should.
func WithinLoad(ctx context.Context) context.Context {
	return context.WithValue(ctx, loadKey{}, true)
}

// InLoad reports whether ctx is marked by WithinLoad.
func InLoad(ctx context.Context) bool {
	v, _ := ctx.Value(loadKey{}).(bool)
	return v
}

// A CheckReport is the outcome of Checker.Check.
type CheckReport struct {
	Nodes    int64    `json:"nodes"`
	Edges    int64    `json:"edges"`
	Quads    int64    `json:"quads"`
	Changes  uint64   `json:"changes"`
	Problems []string `json:"problems"`
	// Repaired lists what Repair rebuilt.
	Repaired []string `json:"repaired,omitempty"`
}

// OK reports whether the check found no problem.
func (r *CheckReport) OK() bool { return len(r.Problems) == 0 }

// maxCheckProblems is how many problems a CheckReport lists.
const maxCheckProblems = 200

// Addf adds a problem to the report, formatted as fmt.Sprintf does; past
// the first 200 it notes only that there are more.
func (r *CheckReport) Addf(format string, args ...any) {
	if len(r.Problems) < maxCheckProblems {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	} else if len(r.Problems) == maxCheckProblems {
		r.Problems = append(r.Problems, "… more problems not shown")
	}
}

// A Backuper can write a consistent copy of itself while it serves. Without
// it, lore backup refuses the store (an export is then the way to keep a
// copy).
type Backuper interface {
	// Backup writes to w a copy of the store as of one committed state,
	// read in one read transaction: every batch committed before it, and
	// nothing of any batch after. Writers go on meanwhile (a backend may
	// hold back a writer that must grow its file until the copy ends).
	// The copy, saved as BackupInfo.File in an empty directory, is a store
	// of the same backend. A store in the middle of a load whose indexes
	// are not written yet is ErrConflict: back it up once the load ends.
	Backup(ctx context.Context, w io.Writer) (*BackupInfo, error)
	// ReadBackup reads what the copy in the file path holds, without
	// changing the file (which opening it as a store may do).
	ReadBackup(path string) (*BackupInfo, error)
}

// A BackupInfo says what a copy Backuper wrote holds: its file name in a
// store directory, the last change-log entry it includes, its counts (as
// Stats reports them) and its size.
type BackupInfo struct {
	File       string           `json:"file"`
	Seq        uint64           `json:"seq"`
	Nodes      int64            `json:"nodes"`
	Edges      int64            `json:"edges"`
	NodeTypes  map[string]int64 `json:"nodeTypes"`
	EdgeLabels map[string]int64 `json:"edgeLabels"`
	Bytes      int64            `json:"bytes"`
}

// An Adjacency lists the edges of a set of nodes without building an
// Edge for each, which makes a traversal's inner loop cheaper. expandLevel
// uses it when the store has it; without it, expandLevel pages through
// Store.Edges with KeysOnly.
type Adjacency interface {
	// Adjacent calls f, while f returns true, for every edge of q.Nodes
	// that Store.Edges would list for q, in the same order, with the index
	// in q.Nodes of the node it is listed for: after q.After's place when
	// it is set (an Edges cursor, or an EdgePlace's), as Edges would go on
	// from it; q.Limit and q.KeysOnly are ignored (there is no page). It
	// reads one committed state. A label the model lacks, or a cursor
	// that is not one of this listing's, is ErrInvalid.
	Adjacent(ctx context.Context, q EdgeQuery, f func(i int, k EdgeKey) bool) error
}

// A DegreeCounter tells how many edges nodes have without reading them
// (from the edge summaries a store keeps, for example). Paths uses it to
// grow the side of its search that reads fewer edges; without it, Degrees
// reads the counts of Store.Node.
type DegreeCounter interface {
	// Degrees returns, for each of ids, the number of its edges with one
	// of labels (every label when there are none) in direction dir (Both:
	// out-edges plus in-edges, a self-loop twice); 0 for a missing node.
	Degrees(ctx context.Context, ids []ID, labels []string, dir Direction) ([]int64, error)
}

// An AdjacentCounter counts the nodes adjacent to a node without listing
// its edges, reading what the count needs and no more. Run uses it for the
// count of a one-hop step from one node; without it, the count expands
// the step as any query does.
type AdjacentCounter interface {
	// CountAdjacent returns the number of distinct nodes other than id
	// joined to id by an edge with one of labels (every label when there
	// are none) in direction dir, and the work it took (edges or index
	// entries read, at least 1). It stops, incomplete, once the work would
	// pass maxWork; a missing node has none.
	CountAdjacent(ctx context.Context, id ID, labels []string, dir Direction, maxWork int) (n, work int, complete bool, err error)
}

// An IndexScanner reads a property index's entries without reading the
// nodes. Run uses it to group a whole type by an indexed property;
// without it, the grouping reads every node of the type.
type IndexScanner interface {
	// ScanIndex calls f for each entry of the index of typ's property
	// (the entries Lookup lists), in Lookup's order, with the entry's
	// value as EncodeIndexValue encodes it (valid only during the call)
	// and its node's ID, until f returns false or the entries end. It
	// reads one committed state. A type the model lacks or a property it
	// does not index is ErrInvalid.
	ScanIndex(ctx context.Context, typ, property string, f func(value []byte, id ID) bool) error
}

// A TypeIDLister lists the IDs of a type's nodes without reading the
// nodes. A query whose start set is a whole type (no from.where) and that
// needs the start nodes as IDs only (it traverses from them, counts or
// groups them) lists them through it; without it, it reads them with
// Store.NodesByType.
type TypeIDLister interface {
	// NodeIDsByType returns a page of the IDs of the nodes of one type,
	// ordered by ID; its cursor is the last ID listed, as NodesByType's.
	// A type the model lacks is ErrInvalid.
	NodeIDsByType(ctx context.Context, typ string, p Page) (*IDPage, error)
}

// A PropsReader reads nodes with some of their properties only. A query
// reads the properties its filters, sort keys and groups name from every
// node it tests, and the nodes it returns whole; without it, it reads
// them whole with Store.Nodes.
type PropsReader interface {
	// NodesProps is Store.Nodes with each node's Properties holding only
	// those of props it has.
	NodesProps(ctx context.Context, ids []ID, props []string) ([]*Node, error)
}

// A NodeTyper reads the types of nodes without their properties. A
// traversal step that filters by type alone uses it; without it, the step
// reads the nodes whole.
type NodeTyper interface {
	// NodeTypes returns the type of each of ids, "" for a missing node.
	NodeTypes(ctx context.Context, ids []ID) ([]string, error)
}

// Degrees returns the degree of each of ids, as DegreeCounter.Degrees
// does: from the store's DegreeCounter if it has one, else from the edge
// counts of Store.Node.
func Degrees(ctx context.Context, s Store, ids []ID, labels []string, dir Direction) ([]int64, error) {
	if dc, ok := s.(DegreeCounter); ok {
		return dc.Degrees(ctx, ids, labels, dir)
	}
	out := make([]int64, len(ids))
	for i, id := range ids {
		n, err := s.Node(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[i] = countDegree(n.Edges, labels, dir)
	}
	return out, nil
}

// countDegree returns the degree Degrees gives from a node's edge counts.
func countDegree(counts []EdgeCount, labels []string, dir Direction) int64 {
	var n int64
	for _, c := range counts {
		if (len(labels) == 0 || slices.Contains(labels, c.Label)) && (dir == Both || c.Direction == dir) {
			n += c.Count
		}
	}
	return n
}

// An IndexWalker reads a property index's entries in either direction,
// from a position, without reading the nodes. Run uses it for a query
// ordered by an indexed property: it walks the index in the order asked
// and stops once the page is full; without it, such a query reads every
// result and sorts them.
type IndexWalker interface {
	// WalkIndex returns up to w.Size() entries of the index of w.Type's
	// property w.Property (the entries Lookup lists) whose encoded value
	// v lies within w.From <= v < w.To (a nil bound leaves its end open;
	// values compare bytewise), ordered by value, ascending or, with
	// w.Desc, descending, and within one value by ID, ascending in both
	// directions (so ties list as an orderBy lists them); with
	// w.AfterValue set, only the entries after (w.AfterValue, w.AfterID)
	// in that order. Fewer than w.Size() entries means the walk reached
	// its end. It reads one committed state. A type the model lacks or a
	// property it does not index is ErrInvalid.
	WalkIndex(ctx context.Context, w IndexWalk) ([]IndexEntry, error)
}

// An IndexWalk asks an IndexWalker for one stretch of an index.
type IndexWalk struct {
	Type, Property string
	// From and To bound the encoded values: From <= v < To; nil leaves
	// that end open.
	From, To []byte
	Desc     bool
	// AfterValue (an encoded value) and AfterID resume the walk after that
	// entry; nil AfterValue starts at the walk's beginning.
	AfterValue []byte
	AfterID    ID
	// Limit is the number of entries, as Page.Size reads it.
	Limit int
}

// Size returns how many entries w asks for, as Page.Size counts them.
func (w IndexWalk) Size() int { return Page{Limit: w.Limit}.Size() }

// An IndexEntry is one entry of a property index: its value, as
// EncodeIndexValue encodes it, and its node.
type IndexEntry struct {
	Value []byte
	ID    ID
}

// A DegreeRanker keeps an index of its nodes' degrees per node type, edge
// label and direction (the nonzero counts of the edge summaries), kept in
// the transaction that changes the summaries. A query that orders a type
// by one degree, or groups it by one, reads it instead of every node's
// summary; without it, such a query reads the summary of every node of
// the type.
type DegreeRanker interface {
	// RankByDegree returns up to q.Limit (at most MaxPageSize) nodes of
	// q.Type whose count of q.Label edges in q.Direction (Out or In) is
	// between q.Min and q.Max, ordered by that count (highest first when
	// q.Desc), then by ID, after q.After. Nodes with no such edge are not
	// listed. It reads one committed state. A type or label the model
	// lacks, or another direction, is ErrInvalid.
	RankByDegree(ctx context.Context, q DegreeQuery) ([]DegreeEntry, error)
}

// A DegreeQuery asks a DegreeRanker for a page of its degree index.
type DegreeQuery struct {
	Type      string
	Label     string
	Direction Direction // Out or In
	Desc      bool
	// Min and Max bound the degree, inclusive; a Min below 1 means 1, a
	// Max of 0 means no bound.
	Min, Max int64
	// After, if set, is the entry the page follows: the page starts at the
	// next entry in the order, whether or not After is in the index.
	After *DegreeEntry
	Limit int
}

// A DegreeEntry is a node and its degree.
type DegreeEntry struct {
	ID     ID
	Degree int64
}
