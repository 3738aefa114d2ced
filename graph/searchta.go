package graph

import (
	"cmp"
	"slices"
	"strings"
)

// A taList is one token's postings, read in impact order: a clause has one
// for its term and one for each prefix expansion.
type taList struct {
	clause int
	token  string
	factor float64 // 1, or prefixFactor for an expansion
	idf    float64
	df     int
	next   string
	done   bool
	read   bool // a posting was read: lastW and lastID are set
	lastW  int
	lastID ID
}

func (l *taList) weight(w int) float64 {
	return l.idf * l.factor * float64(w) / maxImpact * (bm25K1 + 1)
}

// bound is the most an unread posting of l can add.
func (l *taList) bound() float64 {
	switch {
	case l.done:
		return 0
	case !l.read:
		return l.weight(maxImpact)
	}
	return l.weight(l.lastW)
}

type scored struct {
	ref   TypedID
	score float64
}

// A threshold runs one search page (see Search).
type threshold struct {
	b       *budget
	s       Store
	pq      parsedQuery
	typ     string
	lists   []*taList
	nodes   int // the nodes a search of typ looks at
	seen    map[ID]bool
	top     []scored // the best matches after the cursor, at most k
	matched int      // matches met, before the cursor too
	after   *searchCursor
	k       int
	// complete: every match was met (a clause's postings were read to
	// their end).
	complete bool
}

// newThreshold looks the clauses' tokens up; it returns nil if some clause
// matches no token.
func newThreshold(b *budget, s Store, pq parsedQuery, typ string) (*threshold, error) {
	st, err := s.Stats(b.ctx)
	if err != nil {
		return nil, err
	}
	t := &threshold{b: b, s: s, pq: pq, typ: typ, seen: map[ID]bool{}}
	if typ != "" {
		t.nodes = int(st.NodeTypes[typ])
	} else {
		t.nodes = int(st.Nodes)
	}
	for i, c := range pq.clauses {
		n := len(t.lists)
		terms, err := s.Terms(b.ctx, TermQuery{Prefix: c.term, Exact: true, Type: typ, Limit: 1})
		if err != nil {
			return nil, err
		}
		for _, tm := range terms {
			t.lists = append(t.lists, &taList{clause: i, token: tm.Token, factor: 1, df: tm.Count})
		}
		if c.prefix != "" {
			more, err := s.Terms(b.ctx, TermQuery{Prefix: c.prefix, Type: typ, Limit: MaxTermScan})
			if err != nil {
				return nil, err
			}
			more = slices.DeleteFunc(more, func(tm Term) bool { return tm.Token == c.term })
			slices.SortStableFunc(more, func(a, b Term) int { return cmp.Compare(b.Count, a.Count) })
			for _, tm := range more[:min(len(more), maxExpansions)] {
				t.lists = append(t.lists, &taList{clause: i, token: tm.Token, factor: prefixFactor, df: tm.Count})
			}
		}
		if len(t.lists) == n {
			return nil, nil
		}
	}
	for _, l := range t.lists {
		l.idf = idf(l.df, max(t.nodes, l.df))
	}
	return t, nil
}

// run returns the best matches after the cursor, at most k, in rank order.
func (t *threshold) run() ([]scored, error) {
	block := 32
	verify := t.pq.verify()
	for t.b.ok() {
		var met []TypedID
		known := map[TypedID][]int{} // weights by list, -1 unknown
		for li, l := range t.lists {
			if l.done {
				continue
			}
			if t.b.remaining() <= 0 {
				t.b.stop(ReasonWork)
				return t.top, nil
			}
			page, err := t.s.Postings(t.b.ctx, PostingQuery{Prefix: l.token, Exact: true, Type: t.typ, ByWeight: true,
				Page: Page{After: l.next, Limit: block}, MaxScan: min(t.b.remaining(), 4*block)})
			if err != nil {
				return nil, err
			}
			t.b.spend(page.Scanned)
			l.next, l.done = page.Next, page.Next == ""
			for _, p := range page.Postings {
				l.read, l.lastW, l.lastID = true, p.Weight, p.ID
				ref := TypedID{Type: p.Type, ID: p.ID}
				ws, ok := known[ref]
				if !ok {
					if t.seen[p.ID] {
						continue
					}
					t.seen[p.ID] = true
					met = append(met, ref)
					ws = make([]int, len(t.lists))
					for i := range ws {
						ws[i] = -1
					}
					known[ref] = ws
				}
				ws[li] = p.Weight
			}
		}
		if err := t.resolve(met, known, verify); err != nil {
			return nil, err
		}
		if len(t.seen) >= searchCandidate {
			t.b.stop(ReasonWork)
			break
		}
		if t.stop() {
			break
		}
		block = min(2*block, 1024)
	}
	return t.top, nil
}

// resolve looks the nodes met up in the lists they were not met in, and
// keeps those that hold every clause.
func (t *threshold) resolve(met []TypedID, known map[TypedID][]int, verify bool) error {
	if len(met) == 0 {
		return nil
	}
	for li, l := range t.lists {
		var ask []TypedID
		for _, ref := range met {
			if known[ref][li] < 0 {
				ask = append(ask, ref)
			}
		}
		if len(ask) == 0 {
			continue
		}
		page, err := t.s.Postings(t.b.ctx, PostingQuery{Prefix: l.token, Exact: true, Type: t.typ, Nodes: ask, Page: Page{Limit: len(ask)}, MaxScan: len(ask)})
		if err != nil {
			return err
		}
		t.b.spend(len(ask))
		for _, p := range page.Postings {
			if ws, ok := known[TypedID{Type: p.Type, ID: p.ID}]; ok {
				ws[li] = p.Weight
			}
		}
	}
	var cands []scored
	for _, ref := range met {
		ws := known[ref]
		score, ok := 0.0, true
		for c := range t.pq.clauses {
			best := -1.0
			for li, l := range t.lists {
				if l.clause == c && ws[li] >= 0 {
					best = max(best, l.weight(ws[li]))
				}
			}
			if best < 0 {
				ok = false
				break
			}
			score += best
		}
		if ok {
			cands = append(cands, scored{ref: ref, score: score})
		}
	}
	if verify && len(cands) > 0 {
		ids := make([]ID, len(cands))
		for i, c := range cands {
			ids[i] = c.ref.ID
		}
		nodes, err := t.load(ids)
		if err != nil {
			return err
		}
		m := t.s.Model()
		cands = slices.DeleteFunc(cands, func(c scored) bool {
			i := slices.IndexFunc(ids, func(id ID) bool { return id == c.ref.ID })
			n := nodes[i]
			if n == nil {
				return true
			}
			nt, ok := m.Node(n.Type)
			return !ok || !t.pq.matches(nt, n.Properties)
		})
	}
	for _, c := range cands {
		t.matched++
		if t.after != nil && rankCmp(c.score, c.ref.ID, t.after.Score, t.after.ID) <= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(t.top, c, func(a, b scored) int { return rankCmp(a.score, a.ref.ID, b.score, b.ref.ID) })
		if i < t.k {
			t.top = slices.Insert(t.top, i, c)
			if len(t.top) > t.k {
				t.top = t.top[:t.k]
			}
		}
	}
	return nil
}

// stop says whether no node not met yet can rank among the top k.
func (t *threshold) stop() bool {
	ub := 0.0
	for c := range t.pq.clauses {
		best, open := 0.0, false
		for _, l := range t.lists {
			if l.clause == c && !l.done {
				best, open = max(best, l.bound()), true
			}
		}
		if !open {
			// Every node that holds this clause was met: so was every match.
			t.complete = true
			return true
		}
		ub += best
	}
	if len(t.top) < t.k {
		return false
	}
	kth := t.top[len(t.top)-1]
	if kth.score > ub {
		return true
	}
	if kth.score < ub {
		return false
	}
	// A node not met that scores ub has, in some list of each clause, the
	// weight last read there, so an ID after the one last read: it ranks
	// after kth if kth's ID comes before every list's last ID.
	for _, l := range t.lists {
		if !l.done && (!l.read || strings.Compare(string(kth.ref.ID), string(l.lastID)) > 0) {
			return false
		}
	}
	return true
}

// total returns the number of matches, and whether it is an estimate.
func (t *threshold) total() (int, bool) {
	if t.complete && t.b.reason == "" {
		return t.matched, false
	}
	if len(t.lists) == 1 && !t.pq.verify() {
		return t.lists[0].df, false
	}
	est := float64(t.nodes)
	for c := range t.pq.clauses {
		df := 0
		for _, l := range t.lists {
			if l.clause == c {
				df += l.df
			}
		}
		est *= min(1, float64(df)/float64(max(t.nodes, 1)))
	}
	return max(int(est+0.5), t.matched), true
}

// load reads the nodes of ids, in order (nil for one deleted meanwhile).
func (t *threshold) load(ids []ID) ([]*Node, error) {
	out := make([]*Node, 0, len(ids))
	for i := 0; i < len(ids); i += 256 {
		chunk := ids[i:min(i+256, len(ids))]
		t.b.spend(len(chunk))
		nodes, err := t.s.Nodes(t.b.ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n != nil && t.typ != "" && n.Type != t.typ {
				n = nil
			}
			out = append(out, n)
		}
	}
	return out, nil
}
