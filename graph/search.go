package graph

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lore-dev/lore/schema"
)

// A PostingQuery reads the search index: the nodes indexed under tokens
// that start with Prefix (or equal it, with Exact), of one Type if set.
type PostingQuery struct {
	Prefix string
	Exact  bool
	Type   string
	Page
	// MaxScan bounds the index entries examined, matching or not; 0 means
	// the page size.
	MaxScan int
}

// A Posting is one entry of the search index.
type Posting struct {
	Token  string
	Type   string
	ID     ID
	Weight int
}

// A PostingPage is one page of postings, in token, type, ID order.
// Scanned counts the entries examined; Next is "" at the end.
type PostingPage struct {
	Postings []Posting
	Scanned  int
	Next     string
}

// A SearchQuery is a ranked text search: nodes whose searchable text
// holds every term of Text, the last term (and any term) also as a prefix.
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
	Len   int     `json:"l"`
	ID    ID      `json:"i"`
}

type ranked struct {
	node  *Node
	score float64
	len   int // display-name length: shorter ranks first among equals
}

// Search runs a ranked text search over the store's index under the
// ceilings. It never scans every node: it counts each term's postings (up
// to a cap), starts from the rarest term, and verifies and scores only the
// nodes indexed under it.
func Search(ctx context.Context, s Store, q SearchQuery, ceilings Limits) (*SearchResult, error) {
	start := time.Now()
	lim, capped := ceilings.Clamp(q.Limits)
	res := &SearchResult{Hits: []SearchHit{}, Limits: lim, Capped: capped}
	m := s.Model()
	nt, typed := m.Node(q.Type)
	if q.Type != "" && !typed {
		return nil, fmt.Errorf("unknown node type %q; the model has %s: %w", q.Type, list(m.NodeTypeNames()), ErrInvalid)
	}
	terms := queryTerms(q.Text)
	if len(terms) == 0 {
		return nil, fmt.Errorf("search query %q has no words to look for: %w", q.Text, ErrInvalid)
	}
	fingerprint := q.Type + "\x00" + strings.Join(terms, " ")
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

	// Start from the term with the fewest postings; when several reach the
	// counting cap, from the one with the fewest exact matches.
	best, bestCount, bestExact := "", -1, -1
	count := func(term string, exact bool) (int, error) {
		page, err := s.Postings(b.ctx, PostingQuery{Prefix: term, Exact: exact, Type: q.Type, Page: Page{Limit: searchCountCap + 1}, MaxScan: min(b.remaining(), 4*searchCountCap)})
		if err != nil {
			return 0, err
		}
		b.spend(page.Scanned)
		if len(page.Postings) == 0 && page.Next != "" {
			// The scan limit stopped the count before the first match: that
			// is not "no match".
			b.stop(ReasonWork)
		}
		return len(page.Postings), nil
	}
	counts := make([]int, len(terms))
	for i, term := range terms {
		n, err := count(term, false)
		if err != nil {
			return res.finish(b, start), ignoreDeadline(err)
		}
		counts[i] = n
		if bestCount < 0 || n < bestCount {
			best, bestCount = term, n
		}
		if !b.ok() || n == 0 {
			break
		}
	}
	if bestCount > searchCountCap && b.ok() {
		for _, term := range terms { // every term is common: compare exact matches
			e, err := count(term, true)
			if err != nil {
				return res.finish(b, start), ignoreDeadline(err)
			}
			if bestExact < 0 || e < bestExact {
				best, bestExact = term, e
			}
		}
	}
	if bestCount == 0 || !b.ok() {
		return res.finish(b, start), nil
	}

	// Collect the candidates indexed under it: exact matches first, as they
	// score highest, then prefix matches, up to the candidate cap.
	seen := map[ID]bool{}
	var cands []ID
	for _, exact := range []bool{true, false} {
		pq := PostingQuery{Prefix: best, Exact: exact, Type: q.Type, Page: Page{Limit: 1000}}
		for b.ok() && len(cands) < searchCandidate {
			if b.remaining() <= 0 {
				b.stop(ReasonWork)
				break
			}
			pq.MaxScan = min(b.remaining(), 4000)
			page, err := s.Postings(b.ctx, pq)
			if err != nil {
				return res.finish(b, start), ignoreDeadline(err)
			}
			b.spend(page.Scanned)
			for _, p := range page.Postings {
				if !seen[p.ID] {
					seen[p.ID] = true
					cands = append(cands, p.ID)
				}
			}
			if page.Next == "" {
				break
			}
			pq.After = page.Next
		}
	}
	if len(cands) >= searchCandidate {
		b.stop(ReasonWork)
	}

	// Verify and score them.
	var hits []ranked
	for i := 0; i < len(cands) && b.ok(); i += 256 {
		chunk := cands[i:min(i+256, len(cands))]
		if !b.spend(len(chunk)) {
			break
		}
		nodes, err := s.Nodes(b.ctx, chunk)
		if err != nil {
			return res.finish(b, start), ignoreDeadline(err)
		}
		for _, n := range nodes {
			if n == nil || typed && n.Type != nt.Name {
				continue
			}
			if ntOf, ok := m.Node(n.Type); ok {
				if r, ok := score(ntOf, n, terms, q.Text); ok {
					hits = append(hits, r)
				}
			}
		}
	}
	slices.SortFunc(hits, func(a, b ranked) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.len, b.len); c != 0 {
			return c
		}
		return strings.Compare(string(a.node.ID), string(b.node.ID))
	})
	if after != nil {
		i, _ := slices.BinarySearchFunc(hits, *after, func(h ranked, c searchCursor) int {
			if x := cmp.Compare(c.Score, h.score); x != 0 {
				return x
			}
			if x := cmp.Compare(h.len, c.Len); x != 0 {
				return x
			}
			return strings.Compare(string(h.node.ID), string(c.ID))
		})
		for i < len(hits) && hits[i].node.ID == after.ID {
			i++
		}
		hits = hits[i:]
	}
	cursorAfterLast := func() {
		last := res.Hits[len(res.Hits)-1]
		lt, _ := m.Node(last.Node.Type)
		res.Cursor = encodeCursor(s, searchCursor{Q: fingerprint, Score: last.Score, Len: len(displayOf(lt, last.Node.Properties)), ID: last.Node.ID})
	}
	room, used := lim.MaxBytes-2048, 0 // room for the envelope
	for _, h := range hits {
		if len(res.Hits) == limit {
			cursorAfterLast()
			if limit == lim.MaxResults && after == nil {
				b.stop(ReasonResults)
			}
			break
		}
		hit := SearchHit{Node: h.node, Score: h.score}
		if used += jsonSize(hit); used > room && len(res.Hits) > 0 {
			b.stop(ReasonBytes) // the rest on the next page
			cursorAfterLast()
			break
		}
		res.Hits = append(res.Hits, hit)
	}
	return res.finish(b, start), nil
}

func (r *SearchResult) finish(b *budget, start time.Time) *SearchResult {
	r.More = r.Cursor != ""
	if b.reason != "" && b.reason != ReasonResults {
		r.Truncated, r.Reason = true, b.reason
	}
	r.Stats = ReadStats{Visited: b.visited, ElapsedMs: float64(time.Since(start).Microseconds()) / 1000}
	return r
}

// score matches a node's searchable text against every term. Exact words
// score twice a prefix; words of the display property weigh more; a display
// name equal to the query ranks first.
func score(nt *schema.NodeType, n *Node, terms []string, query string) (ranked, bool) {
	toks := NodeTokens(nt, n.Properties)
	total := 0.0
	for _, term := range terms {
		best := 0
		for tok, w := range toks {
			switch {
			case tok == term:
				best = max(best, 2*int(w))
			case strings.HasPrefix(tok, term):
				best = max(best, int(w))
			}
		}
		if best == 0 {
			return ranked{}, false
		}
		total += float64(best)
	}
	display := displayOf(nt, n.Properties)
	if display != "" && strings.EqualFold(strings.TrimSpace(display), strings.TrimSpace(query)) {
		total += 10
	}
	return ranked{node: n, score: total, len: len(display)}, true
}

// displayOf returns a node's display name ("" if its type has none).
func displayOf(nt *schema.NodeType, props Props) string {
	if nt == nil || nt.Display == "" {
		return ""
	}
	s, _ := props[nt.Display].(string)
	return s
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
