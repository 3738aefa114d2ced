package graph

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"time"
)

// A PostingQuery reads the search index: the nodes indexed under tokens
// that start with Prefix (or equal it, with Exact), of one Type if set.
type PostingQuery struct {
	Prefix string
	Exact  bool
	Type   string
	// ByWeight (with Exact) orders the postings by Weight, highest first,
	// then by ID.
	ByWeight bool
	// Nodes (with Exact), if set, restricts the postings to these nodes.
	Nodes []TypedID
	Page
	// MaxScan bounds the index entries examined, matching or not; 0 means
	// the page size.
	MaxScan int
}

// A TypedID names a node with its type.
type TypedID struct {
	Type string
	ID   ID
}

// A Posting is one entry of the search index.
type Posting struct {
	Token  string
	Type   string
	ID     ID
	Weight int
}

// A PostingPage is one page of postings, in token, type, ID order (by
// weight with PostingQuery.ByWeight; in the order asked with Nodes).
// Scanned counts the entries examined; Next is "" at the end.
type PostingPage struct {
	Postings []Posting
	Scanned  int
	Next     string
}

// A TermQuery asks for the distinct tokens of the search index that start
// with Prefix (or equal it, with Exact), of nodes of one Type if set.
type TermQuery struct {
	Prefix string
	Exact  bool
	Type   string
	Limit  int
}

// A Term is one token of the search index and its number of postings.
type Term struct {
	Token string
	Count int
}

// MaxTermScan bounds the index entries a Terms call examines.
const MaxTermScan = 256

// A SearchQuery is a ranked text search: nodes whose searchable text
// holds every term of Text (see parseQuery for phrases and fields), the
// last word also as a prefix.
type SearchQuery struct {
	Text   string `json:"query"`
	Type   string `json:"type,omitempty"`
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	Limits Limits `json:"limits,omitzero"`
}

// A SearchHit is one ranked result.
type SearchHit struct {
	Node  *Node   `json:"node"`
	Score float64 `json:"score"`
}

// A SearchResult is a page of ranked hits.
type SearchResult struct {
	Hits []SearchHit `json:"hits"`
	// Total is the number of nodes that match, exact unless
	// TotalEstimated: an estimate from the terms' posting counts when the
	// search stopped before it saw every match.
	Total          int  `json:"total"`
	TotalEstimated bool `json:"totalEstimated,omitempty"`
	// More is true when Cursor continues the hits.
	More      bool      `json:"more"`
	Truncated bool      `json:"truncated"`
	Reason    string    `json:"reason,omitempty"`
	Cursor    string    `json:"cursor,omitempty"`
	Limits    Limits    `json:"limits"`
	Capped    []string  `json:"capped,omitempty"`
	Stats     ReadStats `json:"stats"`
}

// ReadStats reports the work a read did.
type ReadStats struct {
	Visited   int     `json:"visited"`
	ElapsedMs float64 `json:"elapsedMs"`
	// Index names the property index a query read its start nodes or its
	// order from ("Service.tier"); empty when it read none.
	Index string `json:"index,omitempty"`
}

type searchCursor struct {
	Q     string  `json:"q"` // the query text and type it belongs to
	Score float64 `json:"s"`
	Len   int     `json:"l"` // unused since TokenizerVersion 2; kept so older cursors decode
	ID    ID      `json:"i"`
}

// maxExpansions is how many tokens the last word of a query matches as a
// prefix besides its own (the most frequent of the first MaxTermScan), as
// Elasticsearch's match_phrase_prefix bounds its max_expansions; a prefix
// match counts half an exact one.
const (
	maxExpansions = 8
	prefixFactor  = 0.5
)

// Search runs a ranked text search over the store's index under the
// ceilings. Each node that holds every term scores BM25: the sum over the
// terms of idf times the token's impact (see NodeTokens). Hits come by
// score, highest first, then by ID.
//
// It reads the terms' postings in impact order and looks each node it
// meets up in the other terms' postings (the Threshold Algorithm of Fagin,
// Lotem and Naor, over impact-ordered postings as Anh and Moffat keep
// them), and stops as soon as no node it has not met can rank among the
// hits of the page: a page costs about the same whatever the terms' posting
// counts, when the best-scoring nodes hold every term.
func Search(ctx context.Context, s Store, q SearchQuery, ceilings Limits) (*SearchResult, error) {
	start := time.Now()
	lim, capped := ceilings.Clamp(q.Limits)
	res := &SearchResult{Hits: []SearchHit{}, Limits: lim, Capped: capped}
	m := s.Model()
	if q.Type != "" {
		if _, ok := m.Node(q.Type); !ok {
			return nil, fmt.Errorf("unknown node type %q; the model has %s: %w", q.Type, list(m.NodeTypeNames()), ErrInvalid)
		}
	}
	pq := parseQuery(q.Text)
	if len(pq.clauses) == 0 {
		return nil, fmt.Errorf("search query %q has no words to look for: %w", q.Text, ErrInvalid)
	}
	if err := pq.checkFields(m, q.Type); err != nil {
		return nil, err
	}
	fingerprint := q.Type + "\x00" + pq.String()
	var after *searchCursor
	if q.Cursor != "" {
		c, err := decodeCursor[searchCursor](s, q.Cursor)
		if err != nil {
			return nil, err
		}
		if c.Q != fingerprint {
			return nil, fmt.Errorf("cursor does not belong to this search; pass the same query and type: %w", ErrInvalid)
		}
		after = &c
	}
	limit := pageLimit(q.Limit, lim.MaxResults)
	b := newBudget(ctx, lim)
	defer b.cancel()

	ta, err := newThreshold(b, s, pq, q.Type)
	if err != nil {
		return res.finish(b, start), ignoreDeadline(err)
	}
	if ta == nil { // a term no node holds
		return res.finish(b, start), nil
	}
	ta.after = after
	ta.k = limit + 1 // one more tells whether a page follows
	hits, err := ta.run()
	if err != nil {
		return res.finish(b, start), ignoreDeadline(err)
	}
	res.Total, res.TotalEstimated = ta.total()

	ids := make([]ID, 0, min(len(hits), limit))
	for _, h := range hits[:min(len(hits), limit)] {
		ids = append(ids, h.ref.ID)
	}
	nodes, err := ta.load(ids)
	if err != nil {
		return res.finish(b, start), ignoreDeadline(err)
	}
	cursorAfterLast := func() {
		last := res.Hits[len(res.Hits)-1]
		res.Cursor = encodeCursor(s, searchCursor{Q: fingerprint, Score: last.Score, ID: last.Node.ID})
	}
	room, used := lim.MaxBytes-2048, 0 // room for the envelope
	for i, n := range nodes {
		if n == nil {
			continue // deleted since its postings were read
		}
		hit := SearchHit{Node: n, Score: hits[i].score}
		if used += jsonSize(hit); used > room && len(res.Hits) > 0 {
			b.stop(ReasonBytes) // the rest on the next page
			cursorAfterLast()
			break
		}
		res.Hits = append(res.Hits, hit)
	}
	if res.Cursor == "" && len(hits) > limit && len(res.Hits) > 0 {
		cursorAfterLast()
		if limit == lim.MaxResults && after == nil {
			b.stop(ReasonResults)
		}
	}
	return res.finish(b, start), nil
}

func (r *SearchResult) finish(b *budget, start time.Time) *SearchResult {
	r.More = r.Cursor != ""
	if b.reason != "" && b.reason != ReasonResults {
		r.Truncated, r.Reason = true, b.reason
	}
	if r.Total < len(r.Hits) {
		r.Total = len(r.Hits)
	}
	r.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return r
}

// idf is BM25's inverse document frequency of a token held by df of n nodes.
func idf(df, n int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

func pageLimit(want, ceiling int) int {
	if want <= 0 {
		want = DefaultPageSize
	}
	return min(want, ceiling)
}

func ignoreDeadline(err error) error {
	if strings.Contains(err.Error(), "context deadline exceeded") {
		return nil
	}
	return err
}

// rankCmp orders hits: by score, highest first, then by ID.
func rankCmp(as float64, aid ID, bs float64, bid ID) int {
	if c := cmp.Compare(bs, as); c != 0 {
		return c
	}
	return strings.Compare(string(aid), string(bid))
}
