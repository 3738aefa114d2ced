package graph

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
)

// An ImportMode says how an import writes what it reads.
type ImportMode string

// Import modes.
const (
	// ModeUpsert creates each element or replaces its properties (the
	// default). A line with "merge": true is a merge patch all the same.
	ModeUpsert ImportMode = "upsert"
	// ModeMerge applies each element's properties to the stored ones as an
	// RFC 7396 merge patch (see NodeInput.Merge).
	ModeMerge ImportMode = "merge"
	// ModeSync upserts as ModeUpsert does, then deletes the elements of
	// ImportOptions.Scopes that the input does not hold (see Import).
	ModeSync ImportMode = "sync"
)

// ParseImportMode parses a mode name; "" is ModeUpsert.
func ParseImportMode(s string) (ImportMode, error) {
	switch m := ImportMode(strings.ToLower(s)); m {
	case "":
		return ModeUpsert, nil
	case ModeUpsert, ModeMerge, ModeSync:
		return m, nil
	}
	return "", fmt.Errorf("import mode %q: %w (use upsert, merge or sync)", s, ErrInvalid)
}

// Dangling says what an import does with an edge whose endpoint neither
// the store nor the input holds.
type Dangling string

// Ways with dangling edges.
const (
	// DanglingError rejects the edge (the default): the import fails, or a
	// partial one stops, naming its line.
	DanglingError Dangling = "error"
	// DanglingSkip leaves the edge out, counting it (ImportStats.Skipped)
	// and listing the first by line.
	DanglingSkip Dangling = "skip"
	// DanglingStub creates the missing endpoint as a stub (see StubProperty).
	DanglingStub Dangling = "stub"
)

// ParseDangling parses a way with dangling edges; "" is DanglingError.
func ParseDangling(s string) (Dangling, error) {
	switch d := Dangling(strings.ToLower(s)); d {
	case "":
		return DanglingError, nil
	case DanglingError, DanglingSkip, DanglingStub:
		return d, nil
	}
	return "", fmt.Errorf("--dangling %q: %w (use error, skip or stub)", s, ErrInvalid)
}

// StubProperty marks a stub: a node an import with DanglingStub created
// for an edge's missing endpoint. A stub has the type the edge's label
// declares at that end (ImportOptions.StubType chooses when the label
// allows several) and the properties {"stub": true}, so the model must
// accept them: declare "stub": {"type": "boolean"} in the type's
// properties and require nothing else, or the import is rejected at the
// edge's line, naming the rule. The mark is data, not metadata: every
// surface shows it, a query finds the stubs ({"where": {"stub": true}}),
// and the node's real line, imported later, replaces it (an upsert
// replaces the properties; a merge patch keeps the mark unless it says
// "stub": null).
//
// Endpoints are looked for in the store and in the lines read before the
// edge's batch: an input should list nodes before the edges that reach
// them, as lore export writes it. A stub's type cannot change later, so
// the real node must be of the stub's type.
const StubProperty = "stub"

// A Duplicate is an element given twice in one input: Line repeats First.
// The later line wins (or, for merge patches, applies after the first).
type Duplicate struct {
	Line    int64  `json:"line"`
	First   int64  `json:"first"`
	Element string `json:"element"`
}

// maxListed is how many duplicates, skipped edges, stubs and deletions an
// import's report lists by name.
const maxListed = 20

// A tracker remembers what an import pass has read: every element's key
// (hashed, with its line, to report duplicates and to know which nodes the
// input holds), and for a sync import the exact node IDs and edge keys.
// It lives on the goroutine that reads the input.
type tracker struct {
	mu    sync.Mutex // the reader writes; the import reads the counts at its end
	seed  maphash.Seed
	seen  lineTable        // hash of an element's key -> its first line
	last  map[uint64]int64 // hash of a key read more than once -> its last line
	exact bool             // keep nodes and edges (sync)
	nodes map[ID]string    // ID -> type, with exact
	edges map[EdgeKey]bool // with exact

	dups    int64
	dupList []Duplicate
	skipped []string // the first maxListed edges left out
	nSkip   int64
	stubs   []ID // the first maxListed stubs made
	nStub   int64
}

func newTracker(exact bool) *tracker {
	t := &tracker{seed: maphash.MakeSeed(), last: map[uint64]int64{}, exact: exact}
	if exact {
		t.nodes, t.edges = map[ID]string{}, map[EdgeKey]bool{}
	}
	return t
}

// nodeHash and elemHash hash an element's key: "n\x00" and a node's ID,
// or "e\x00" and an edge's key as EdgeKey.Bytes writes it, written piece
// by piece rather than joined (the hash is the same, the string is not
// made).
func (t *tracker) nodeHash(id ID) uint64 {
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString("n\x00")
	h.WriteString(string(id))
	return h.Sum64()
}

func (t *tracker) elemHash(el element) uint64 {
	if el.node != nil {
		return t.nodeHash(el.node.ID)
	}
	var h maphash.Hash
	h.SetSeed(t.seed)
	h.WriteString("e\x00")
	el.edge.EdgeKey.Hash(&h)
	return h.Sum64()
}

// see records an element read at its line, and reports whether the input
// held its key before (again), and whether it did at line since or after
// (held: the reader passes the first line of the batch it fills). A 64-bit
// hash stands for its key: two distinct keys collide with a probability
// near n²/2⁶⁵ (below one in a million for three million elements), and a
// collision only reports a duplicate that is not one, ends a batch early,
// makes the import read a record that the store cannot hold, or (with
// --dangling skip|stub) takes an endpoint for present, which the batch's
// check then rejects. A key it has met is never taken for a new one.
func (t *tracker) see(el element, since int64) (again, held bool) {
	h := t.elemHash(el)
	t.mu.Lock()
	defer t.mu.Unlock()
	first, again := t.seen.see(h, el.line)
	if again {
		prev, ok := t.last[h]
		if !ok {
			prev = first
		}
		t.last[h] = el.line
		held = prev >= since
		t.dups++
		if len(t.dupList) < maxListed {
			name := ""
			if el.node != nil {
				name = nodeElem(el.node.ID)
			} else {
				name = edgeElem(el.edge.EdgeKey)
			}
			t.dupList = append(t.dupList, Duplicate{Line: el.line, First: first, Element: name})
		}
	}
	if t.exact {
		if el.node != nil {
			t.nodes[el.node.ID] = el.node.Type
		} else {
			t.edges[el.edge.EdgeKey] = true
		}
	}
	return again, held
}

// hasNode reports whether the input held node id before.
func (t *tracker) hasNode(id ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exact {
		_, ok := t.nodes[id]
		return ok
	}
	return t.seen.has(t.nodeHash(id))
}

// addNode records a node the import made (a stub).
func (t *tracker) addNode(id ID, typ string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seen.set(t.nodeHash(id), 0)
	if t.exact {
		t.nodes[id] = typ
	}
}

func (t *tracker) stats(st *ImportStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st.Duplicates, st.DuplicateLines = t.dups, t.dupList
	st.Skipped, st.SkippedEdges = t.nSkip, t.skipped
	st.Stubs, st.StubNodes = t.nStub, t.stubs
}

// skip records an edge left out for a missing endpoint.
func (t *tracker) skip(k EdgeKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nSkip++
	if len(t.skipped) < maxListed {
		t.skipped = append(t.skipped, k.String())
	}
}

// stub records a stub made.
func (t *tracker) stub(id ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.nStub++
	if len(t.stubs) < maxListed {
		t.stubs = append(t.stubs, id)
	}
}

// readConfig is what the reader of an import's input needs beyond the
// input: how to write (mode), what to do with dangling edges, and where
// to record what it read.
type readConfig struct {
	s        Store
	mode     ImportMode
	dangling Dangling
	stubType string
	tr       *tracker
	// empty says that the store held nothing when the import began and
	// that nothing else writes it until the import ends (an
	// all-or-nothing load): an element whose key the input did not hold
	// before has no record in it.
	empty bool
}

// resolveDangling handles the edges of ib whose endpoints neither the
// batch, the lines read before it, nor the store hold, as rc.dangling
// says: it leaves them out, or adds stubs for their endpoints to the batch.
func resolveDangling(ctx context.Context, rc *readConfig, ib *importBatch) error {
	b := ib.b
	here := make(map[ID]bool, len(b.Nodes))
	for _, n := range b.Nodes {
		here[n.ID] = true
	}
	var ask []ID
	asked := map[ID]bool{}
	for _, e := range b.Edges {
		for _, id := range []ID{e.From, e.To} {
			if !here[id] && !asked[id] && id.Check() == nil && !rc.tr.hasNode(id) { // a bad ID is the batch's to report
				asked[id] = true
				ask = append(ask, id)
			}
		}
	}
	if len(ask) == 0 {
		return nil
	}
	missing := map[ID]bool{}
	for i := 0; i < len(ask); i += MaxPageSize {
		chunk := ask[i:min(i+MaxPageSize, len(ask))]
		found, err := rc.s.Nodes(ctx, chunk)
		if err != nil {
			return err
		}
		for j, n := range found {
			if n == nil {
				missing[chunk[j]] = true
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	m := rc.s.Model()
	edges, lines := b.Edges[:0], ib.edgeLines[:0]
	for i, e := range b.Edges {
		line := ib.edgeLines[i]
		if !missing[e.From] && !missing[e.To] {
			edges, lines = append(edges, e), append(lines, line)
			continue
		}
		if rc.dangling == DanglingSkip {
			rc.tr.skip(e.EdgeKey)
			continue
		}
		et, ok := m.Edge(e.Label)
		if !ok { // the batch's check names the unknown label
			edges, lines = append(edges, e), append(lines, line)
			continue
		}
		bad := false
		for _, end := range []struct {
			id    ID
			types []string
			name  string
		}{{e.From, et.From, "from"}, {e.To, et.To, "to"}} {
			if !missing[end.id] {
				continue
			}
			typ := ""
			switch {
			case len(end.types) == 1:
				typ = end.types[0]
			case slices.Contains(end.types, rc.stubType):
				typ = rc.stubType
			default:
				ib.parseErrs = append(ib.parseErrs, &LineError{Line: line, Err: fmt.Errorf(
					"%s: %s node %q does not exist, and %s edges may %s at %s: --stub-type names the type of its stub",
					edgeElem(e.EdgeKey), end.name, end.id, e.Label, map[string]string{"from": "start", "to": "end"}[end.name], list(end.types))})
				bad = true
				continue
			}
			delete(missing, end.id) // one stub per node
			b.Nodes = append(b.Nodes, NodeInput{ID: end.id, Type: typ, Properties: Props{StubProperty: true}})
			ib.nodeLines = append(ib.nodeLines, line)
			rc.tr.addNode(end.id, typ)
			rc.tr.stub(end.id)
		}
		if bad {
			ib.fatal = ib.fatal || !b.DryRun
			continue
		}
		edges, lines = append(edges, e), append(lines, line)
	}
	b.Edges, ib.edgeLines = edges, lines
	return nil
}
