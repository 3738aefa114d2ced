package graph_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// TestPostgresAnswersLikeEmbedded loads the same random graphs (the
// oracle's) into the embedded store and the PostgreSQL store and checks
// that the engine answers identically on both: queries (paged, with
// paths and counts), neighbours, paths, search, lookups, edge listings
// (their cursors included, which name no backend), node reads and stats.
// Cursors the engine authenticates differ (each store has its own key), so
// each store's pages are followed with its own.
func TestPostgresAnswersLikeEmbedded(t *testing.T) {
	m, err := schema.Load([]byte(oracleModel()))
	if err != nil {
		t.Fatal(err)
	}
	seed := *oracleSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d: rerun with go test -run TestPostgresAnswersLikeEmbedded ./graph -lore.oracle.seed %d", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x70677374))
	const graphs, queries = 3, 80
	for gi := range graphs {
		g := randomGraph(rng)
		emb := graphtest.Open(t, t.TempDir(), m)
		pg, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.NewDatabase(t), Model: m})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pg.Close() })
		b := g.restoreBatch()
		for _, s := range []graph.Store{emb, pg} {
			if _, err := s.Apply(t.Context(), b); err != nil {
				t.Fatal(err)
			}
		}
		c := &crossCheck{t: t, a: emb, b: pg, ctx: fmt.Sprintf("seed %d graph %d", seed, gi)}
		c.same("stats", func(s graph.Store) (any, error) {
			st, err := s.Stats(t.Context())
			if st != nil {
				st.Quads = 0 // the embedded store's own
			}
			return st, err
		})
		for _, id := range g.ids {
			c.same("node "+id, func(s graph.Store) (any, error) { return s.Node(t.Context(), graph.ID(id)) })
		}
		for _, typ := range oTypes { // groupings the stores answer from their indexes (IndexScanner)
			for _, field := range []string{"n", "s", "t"} {
				c.samePages(&oQuery{typ: typ, group: &graph.GroupBy{Field: field}}, 1+rng.IntN(3))
			}
		}
		for qi := range queries {
			q := randomQuery(rng, g)
			c.samePages(q, 1+rng.IntN(7))
			if qi%4 == 0 { // groupBy, which randomQuery draws rarely
				q.group = randomGroupBy(rng)
				q.count, q.paths, q.fields, q.degrees, q.order = false, false, nil, nil, nil
				c.samePages(q, 1+rng.IntN(7))
			}
			id := graph.ID(g.ids[rng.IntN(len(g.ids))])
			to := graph.ID(g.ids[rng.IntN(len(g.ids))])
			dir := []graph.Direction{graph.Out, graph.In, graph.Both}[qi%3]
			var labels []string
			if rng.IntN(2) == 0 {
				labels = []string{oLabels[rng.IntN(len(oLabels))]}
			}
			size := 1 + rng.IntN(3)
			c.samePaged(fmt.Sprintf("neighbours of %s %s %v", id, dir, labels), func(s graph.Store, cursor string) (any, string, error) {
				r, err := graph.Neighbors(t.Context(), s, graph.NeighborsQuery{ID: id, Labels: labels, Direction: dir, Depth: 1 + qi%3, Cursor: cursor, Limits: graph.Limits{MaxResults: size}}, graph.Limits{})
				if r == nil {
					return nil, "", err
				}
				next := r.Cursor
				r.Stats.ElapsedMs, r.Cursor = 0, ""
				return r, next, err
			})
			c.samePaged(fmt.Sprintf("paths %s to %s %s", id, to, dir), func(s graph.Store, cursor string) (any, string, error) {
				r, err := graph.Paths(t.Context(), s, graph.PathsQuery{From: id, To: to, Direction: dir, Labels: labels, K: 1 + qi%3, MaxHops: 4, Cursor: cursor}, graph.Limits{})
				if r == nil {
					return nil, "", err
				}
				next := r.Cursor
				r.Stats.ElapsedMs, r.Cursor = 0, ""
				return r, next, err
			})
			word := oWords[rng.IntN(len(oWords))]
			text := word[:1+rng.IntN(len(word))]
			c.same("search "+text, func(s graph.Store) (any, error) {
				r, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: text, Limit: 5}, graph.Limits{})
				if r != nil {
					r.Stats.ElapsedMs, r.Cursor = 0, ""
				}
				return r, err
			})
			nodes := []graph.ID{id, to, id}
			c.sameEdgePages(graph.EdgeQuery{Nodes: nodes, Labels: labels, Direction: dir, Page: graph.Page{Limit: 1 + rng.IntN(4)}, KeysOnly: qi%2 == 0})
			lo, hi := rng.IntN(10), rng.IntN(10)
			c.sameLookups(graph.IndexQuery{Type: "A", Property: "n", Min: min(lo, hi), Max: max(lo, hi), MinExclusive: qi%4 == 1, Page: graph.Page{Limit: 1 + rng.IntN(5)}})
			c.sameLookups(graph.IndexQuery{Type: "A", Property: "t", Eq: oStr[rng.IntN(len(oStr))], Page: graph.Page{Limit: 1 + rng.IntN(5)}})
			c.sameLookups(graph.IndexQuery{Type: "B", Property: "n", Min: lo, Page: graph.Page{Limit: 2}})
			if t.Failed() {
				return
			}
		}
	}
}

// restoreBatch is the oracle graph as one batch that keeps fixed
// timestamps, so that two stores loaded from it hold equal records.
func (g *oGraph) restoreBatch() *graph.Batch {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b := &graph.Batch{Restore: true}
	for _, id := range g.ids {
		nd := g.nodes[id]
		props := graph.Props{}
		for k, v := range nd.props {
			if ss, ok := v.([]string); ok {
				arr := make([]any, len(ss))
				for i, x := range ss {
					arr[i] = x
				}
				v = arr
			}
			props[k] = v
		}
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(id), Type: nd.typ, Properties: props, CreatedAt: at, UpdatedAt: at})
	}
	for _, e := range g.edges {
		in := e.input()
		in.CreatedAt, in.UpdatedAt = at, at
		b.Edges = append(b.Edges, in)
	}
	return b
}

// A crossCheck compares the answers of two stores holding the same data.
type crossCheck struct {
	t    *testing.T
	a, b graph.Store
	ctx  string
}

// jsonOf renders an answer for comparison, without the time it took or
// the work it counted (stats.visited): the stores implement different
// optional interfaces (the embedded store lists adjacency without pages,
// graph.Adjacency; PostgreSQL does not), so the same answer may cost a
// different number of reads.
func jsonOf(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	data, _ := json.Marshal(v)
	var x any
	if json.Unmarshal(data, &x) == nil {
		dropElapsed(x)
		data, _ = json.Marshal(x)
	}
	return string(data)
}

func dropElapsed(x any) {
	switch v := x.(type) {
	case map[string]any:
		delete(v, "elapsedMs")
		delete(v, "visited")
		for _, e := range v {
			dropElapsed(e)
		}
	case []any:
		for _, e := range v {
			dropElapsed(e)
		}
	}
}

// same checks that f answers alike on both stores.
func (c *crossCheck) same(what string, f func(graph.Store) (any, error)) {
	c.t.Helper()
	ja, jb := jsonOf(f(c.a)), jsonOf(f(c.b))
	if ja != jb {
		c.t.Errorf("%s: %s:\nembedded   %s\npostgres   %s", c.ctx, what, ja, jb)
	}
}

// samePaged pages through a call on both stores, a few pages at most,
// and compares each page but its cursor, following each store's own.
func (c *crossCheck) samePaged(what string, f func(s graph.Store, cursor string) (any, string, error)) {
	c.t.Helper()
	var ca, cb string
	for page := 0; page < 4; page++ {
		ra, na, ea := f(c.a, ca)
		rb, nb, eb := f(c.b, cb)
		if ja, jb := jsonOf(ra, ea), jsonOf(rb, eb); ja != jb {
			c.t.Errorf("%s: %s, page %d:\nembedded   %s\npostgres   %s", c.ctx, what, page, ja, jb)
			return
		}
		if na == "" || nb == "" {
			if na != nb {
				c.t.Errorf("%s: %s, page %d: cursor %q on the embedded store, %q on postgres", c.ctx, what, page, na, nb)
			}
			return
		}
		ca, cb = na, nb
	}
}

// samePages pages through a query on both stores and compares each page
// (but its cursor, which each store authenticates with its own key).
func (c *crossCheck) samePages(q *oQuery, limit int) {
	c.t.Helper()
	cursors := [2]string{}
	for page := 0; page < 200; page++ {
		var got [2]string
		more := false
		for i, s := range []graph.Store{c.a, c.b} {
			doc := q.json(cursors[i], nil)
			pq, err := graph.ParseQuery(s.Model(), []byte(doc))
			if err != nil {
				c.t.Fatalf("ParseQuery(%s): %v", doc, err)
			}
			if pq.Limit == 0 || pq.Limit > limit {
				pq.Limit = limit
			}
			res, err := graph.Run(c.t.Context(), s, pq, graph.Limits{})
			if res != nil {
				cursors[i] = res.Cursor
				res.Cursor = ""
				more = res.More
			}
			got[i] = jsonOf(res, err)
		}
		if got[0] != got[1] {
			c.t.Errorf("%s: query %s page %d:\nembedded   %s\npostgres   %s", c.ctx, q.json("", nil), page, got[0], got[1])
			return
		}
		if !more {
			return
		}
	}
}

// sameEdgePages pages through an edge listing on both stores, each
// following its own cursor: the same edges on each page. (The cursors
// differ where a page ends at the last edge of a node: the embedded store
// then names the start of the next node, this store the edge.)
func (c *crossCheck) sameEdgePages(q graph.EdgeQuery) {
	c.t.Helper()
	after := [2]string{}
	for range 100 {
		var pages [2]*graph.EdgePage
		c.same(fmt.Sprintf("edges %+v", q), func(s graph.Store) (any, error) {
			i := 0
			if s == c.b {
				i = 1
			}
			q := q
			q.After = after[i]
			p, err := s.Edges(c.t.Context(), q)
			if err != nil {
				return nil, err
			}
			pages[i] = p
			return p.Edges, nil
		})
		if pages[0] == nil || pages[1] == nil || pages[0].Next == "" || pages[1].Next == "" {
			if pages[0] != nil && pages[1] != nil && (pages[0].Next == "") != (pages[1].Next == "") {
				c.t.Errorf("%s: edges %+v: one store ends the listing, the other does not", c.ctx, q)
			}
			return
		}
		after = [2]string{pages[0].Next, pages[1].Next}
	}
}

// sameLookups pages through a lookup on both stores.
func (c *crossCheck) sameLookups(q graph.IndexQuery) {
	c.t.Helper()
	for range 100 {
		var next string
		c.same(fmt.Sprintf("lookup %+v", q), func(s graph.Store) (any, error) {
			p, err := s.Lookup(c.t.Context(), q)
			if p != nil && s == c.a {
				next = p.Next
			}
			return p, err
		})
		if next == "" {
			return
		}
		q.After = next
	}
}
