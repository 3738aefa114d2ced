package graph

// Internals the external tests (package graph_test, which reach a store
// through graphtest) use.

type (
	QueryCursor  = queryCursor
	SearchCursor = searchCursor
	StartPos     = startPos
	PageCursor   = pageCursor
)

var (
	EncodeCursor = encodeCursor
	OpenCursor   = openCursor
	SealCursor   = sealCursor
	QueryTerms   = queryTerms
)

const (
	MaxChunk      = maxChunk
	MaxUnit       = maxUnit
	CursorKeySize = cursorKeySize
	KeptStarts    = keptStarts
)

// Fingerprint returns the fingerprint a query's cursors carry.
func Fingerprint(q *Query) string { return q.fingerprint() }

// ParsedQuery returns the canonical form of a search query's text.
func ParsedQuery(text string) string { return parseQuery(text).String() }

// Tokens returns the tokens of a text as the search index holds them.
func Tokens(text string) []string {
	var out []string
	tokenize(text, func(tok string) { out = append(out, tok) })
	return out
}

// WithPathsCache returns q with room for n edges (none if n is 0) in the
// cache its spur searches replay.
func WithPathsCache(q PathsQuery, n int) PathsQuery {
	q.cacheEdges = n
	if n == 0 {
		q.cacheEdges = -1
	}
	return q
}

// Absent returns, for each node and edge of b, whether the import that
// made it knew the store to hold no record of it (NodeInput.absent).
func Absent(b *Batch) (nodes, edges []bool) {
	for _, n := range b.Nodes {
		nodes = append(nodes, n.absent)
	}
	for _, e := range b.Edges {
		edges = append(edges, e.absent)
	}
	return nodes, edges
}
