package graph_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"

	"github.com/lore-dev/lore/schema"
)

// The cursor fuzz targets run on the real bolt store with the example
// data. Each cursor is either accepted (it authenticates and is well
// formed) or refused with ErrInvalid; nothing panics.

func cursorStore(f *testing.F) graph.Store {
	s := graphtest.New(f)
	if _, err := graph.Import(f.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{}); err != nil {
		f.Fatal(err)
	}
	return s
}

// cursorQueries are the queries whose cursors are fuzzed: a page of an
// ordered type scan, a traversal with paths, a ranked search, a type scan
// cut by the work limit (its cursor resumes the scan), an indexed range,
// a traversal from IDs cut by the work limit, a page of groups, an
// ordered page of an index walk, and a page of one hop from IDs (read
// from their edge listings, adjpage.go) cut by the work limit.
var cursorQueries = []string{
	`{"from":{"type":"Service"},"orderBy":[{"field":"name"}],"limit":2}`,
	`{"from":{"type":"Service","where":{"tier":{"lte":1}}},"traverse":[{"edge":"dependsOn","direction":"both","hops":[1,2]}],"return":{"paths":true},"limit":3}`,
	`{"from":{"search":"postgres"},"limit":1}`,
	`{"from":{"type":"Person"},"limit":2,"limits":{"maxVisited":3}}`,
	`{"from":{"type":"Service","where":{"tier":{"gte":0}}},"limit":2,"limits":{"maxVisited":4}}`,
	`{"from":{"ids":["service/checkout","service/payments","team/payments"]},"traverse":[{"hops":[1,3]}],"limit":2,"limits":{"maxVisited":20}}`,
	`{"from":{"type":"Person"},"groupBy":{"field":"role"},"limit":2}`,
	`{"from":{"type":"Service","where":{"name":{"contains":"a"}}},"orderBy":[{"field":"tier","desc":true}],"limit":2,"limits":{"maxVisited":4}}`,
	`{"from":{"type":"Decision","where":{"date":{"gte":"2024"}}},"orderBy":[{"field":"date"}],"limit":2}`,
	`{"from":{"ids":["service/checkout","service/payments"]},"traverse":[{"edge":"dependsOn","direction":"both"}],"limit":1,"limits":{"maxVisited":2}}`,
}

var cursorLimits = graph.Limits{MaxResults: 50, MaxHops: 4, MaxVisited: 5000, TimeoutMs: 500, MaxBytes: 64 << 10}

func parseCursorQueries(f *testing.F, s graph.Store) []*graph.Query {
	var qs []*graph.Query
	for _, text := range cursorQueries {
		q, err := graph.ParseQuery(s.Model(), []byte(text))
		if err != nil {
			f.Fatalf("%s: %v", text, err)
		}
		qs = append(qs, q)
	}
	return qs
}

// queryCursors pages through each query and returns up to three cursors of each.
func queryCursors(f *testing.F, s graph.Store, qs []*graph.Query) (byQuery [][]string) {
	for _, q := range qs {
		var cs []string
		c := *q
		for range 3 {
			res, err := graph.Run(f.Context(), s, &c, cursorLimits)
			if err != nil {
				f.Fatal(err)
			}
			if res.Cursor == "" {
				break
			}
			cs = append(cs, res.Cursor)
			c.Cursor = res.Cursor
		}
		byQuery = append(byQuery, cs)
	}
	return byQuery
}

func kindOf[T any]() string { return reflect.TypeFor[T]().String() }

// runWithCursor runs query qi with a cursor and checks the outcome.
func runWithCursor(t *testing.T, s graph.Store, qs []*graph.Query, qi uint8, cursor string) {
	q := *qs[int(qi)%len(qs)]
	q.Cursor = cursor
	res, err := graph.Run(t.Context(), s, &q, cursorLimits)
	if err != nil {
		if !errors.Is(err, graph.ErrInvalid) {
			t.Fatalf("cursor %q: %v is not ErrInvalid", cursor, err)
		}
		return
	}
	if len(res.Nodes) > cursorLimits.MaxResults || res.Stats.Visited > cursorLimits.MaxVisited {
		t.Fatalf("cursor %q: %d nodes, %d visited, over the limits", cursor, len(res.Nodes), res.Stats.Visited)
	}
}

// FuzzCursorQuery hands query_graph cursors, as a client could, to a few
// valid queries: a cursor the store did not issue is refused.
func FuzzCursorQuery(f *testing.F) {
	s := cursorStore(f)
	qs := parseCursorQueries(f, s)
	for i, cs := range queryCursors(f, s, qs) {
		for _, c := range cs {
			f.Add(uint8(i), c)
			f.Add(uint8(i+1), c) // another query's cursor
			f.Add(uint8(i), c[:len(c)-1])
		}
	}
	f.Add(uint8(0), "")
	f.Add(uint8(0), "eyJmIjoieCIsInQiOi0xfQ") // {"f":"x","t":-1}
	f.Fuzz(func(t *testing.T, qi uint8, cursor string) {
		runWithCursor(t, s, qs, qi, cursor)
	})
}

// FuzzCursorQueryPayload seals contents as query cursors under the
// store's key, as if the server had issued them, and likewise the token
// nested in them: the executor must validate what it decodes. The
// contents are raw JSON (raw, when set) or a cursor built from fuzzed
// fields, so that odd values (negative positions, foreign IDs, sort keys
// of any type) come up at once.
func FuzzCursorQueryPayload(f *testing.F) {
	s := cursorStore(f)
	qs := parseCursorQueries(f, s)
	for i, cs := range queryCursors(f, s, qs) {
		for _, c := range cs {
			payload, err := graph.OpenCursor(s, kindOf[graph.QueryCursor](), c)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), payload, []byte(nil), 0, 0, 0, 0, 0, false, "", "")
			var qc graph.QueryCursor
			if err := json.Unmarshal(payload, &qc); err != nil {
				f.Fatal(err)
			}
			after, _ := json.Marshal(qc.After)
			pos := []byte(qc.At.A)
			if qs[i].From.Search != "" && qc.At.A != "" {
				if pos, err = graph.OpenCursor(s, kindOf[graph.SearchCursor](), qc.At.A); err != nil {
					f.Fatal(err)
				}
			}
			f.Add(uint8(i), []byte(nil), pos, qc.At.Plan, qc.At.Q, qc.At.K, qc.N, qc.Chunk, qc.Rest, string(qc.ID), string(after))
		}
	}
	f.Fuzz(func(t *testing.T, qi uint8, raw, pos []byte, plan, qn, k, n, chunk int, rest bool, id, after string) {
		q := qs[int(qi)%len(qs)]
		payload := raw
		if len(raw) == 0 {
			c := graph.QueryCursor{F: graph.Fingerprint(q), At: graph.StartPos{Plan: plan, Q: qn, K: k, A: string(pos)}, N: n, Rest: rest, Chunk: chunk, ID: graph.ID(id)}
			_ = json.Unmarshal([]byte(after), &c.After)
			if q.From.Search != "" && len(pos) > 0 {
				c.At.A = graph.SealCursor(s, kindOf[graph.SearchCursor](), pos) // a search position is itself a sealed cursor
			}
			payload, _ = json.Marshal(c)
		}
		runWithCursor(t, s, qs, qi, graph.SealCursor(s, kindOf[graph.QueryCursor](), payload))
	})
}

// FuzzCursorSearch hands search cursors to a few searches: as a client
// could (cursor), sealed under the store's key (payload, when set), or
// built from fuzzed fields for the search they belong to (sealed).
func FuzzCursorSearch(f *testing.F) {
	s := cursorStore(f)
	texts := []string{"service", "postgres", "pay", "a"}
	for i, text := range texts {
		q := graph.SearchQuery{Text: text, Limit: 2}
		for range 3 {
			res, err := graph.Search(f.Context(), s, q, cursorLimits)
			if err != nil {
				f.Fatal(err)
			}
			if res.Cursor == "" {
				break
			}
			payload, err := graph.OpenCursor(s, kindOf[graph.SearchCursor](), res.Cursor)
			if err != nil {
				f.Fatal(err)
			}
			var sc graph.SearchCursor
			if err := json.Unmarshal(payload, &sc); err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), res.Cursor, []byte(nil), false, 0.0, 0, "")
			f.Add(uint8(i), "", payload, false, 0.0, 0, "")
			f.Add(uint8(i), "", []byte(nil), true, sc.Score, sc.Len, string(sc.ID))
			q.Cursor = res.Cursor
		}
	}
	f.Fuzz(func(t *testing.T, ti uint8, cursor string, payload []byte, sealed bool, score float64, length int, id string) {
		text := texts[int(ti)%len(texts)]
		switch {
		case len(payload) > 0:
			cursor = graph.SealCursor(s, kindOf[graph.SearchCursor](), payload)
		case sealed:
			cursor = graph.EncodeCursor(s, graph.SearchCursor{Q: "\x00" + strings.Join(graph.QueryTerms(text), " "), Score: score, Len: length, ID: graph.ID(id)})
		}
		res, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: text, Limit: 2, Cursor: cursor}, cursorLimits)
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("cursor %q: %v is not ErrInvalid", cursor, err)
			}
			return
		}
		if len(res.Hits) > 2 {
			t.Fatalf("cursor %q: %d hits on a page of 2", cursor, len(res.Hits))
		}
	})
}

// storePages are the store listings whose page cursors are fuzzed: each
// reads the page after a cursor and returns its size and next cursor.
var storePages = []func(t testing.TB, s graph.Store, after string) (int, string, error){
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/checkout", "service/payments", "team/payments"}, Direction: graph.Both, Page: graph.Page{After: after, Limit: 2}})
		if err != nil {
			return 0, "", err
		}
		return len(p.Edges), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/postgres-cluster"}, Labels: []string{"dependsOn"}, Direction: graph.In, KeysOnly: true, Page: graph.Page{After: after, Limit: 2}})
		if err != nil {
			return 0, "", err
		}
		return len(p.Edges), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.NodesByType(t.Context(), "Service", graph.Page{After: after, Limit: 2})
		if err != nil {
			return 0, "", err
		}
		return len(p.Nodes), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.Lookup(t.Context(), graph.IndexQuery{Type: "Service", Property: "tier", Min: 0, Max: 2, Page: graph.Page{After: after, Limit: 2}})
		if err != nil {
			return 0, "", err
		}
		return len(p.IDs), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.ScanNodes(t.Context(), graph.Page{After: after, Limit: 2})
		if err != nil {
			return 0, "", err
		}
		return len(p.Nodes), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.ScanEdges(t.Context(), graph.Page{After: after, Limit: 2})
		if err != nil {
			return 0, "", err
		}
		return len(p.Edges), p.Next, nil
	},
	func(t testing.TB, s graph.Store, after string) (int, string, error) {
		p, err := s.Postings(t.Context(), graph.PostingQuery{Prefix: "s", Page: graph.Page{After: after, Limit: 2}})
		if err != nil {
			return 0, "", err
		}
		return len(p.Postings), p.Next, nil
	},
}

// FuzzCursorStorePage passes arbitrary page cursors to the store's
// listings (Edges, NodesByType, Lookup, ScanNodes, ScanEdges, Postings).
// They are store API, but they travel inside query and search cursors.
func FuzzCursorStorePage(f *testing.F) {
	s := cursorStore(f)
	for i, page := range storePages {
		after := ""
		for range 3 {
			_, next, err := page(f, s, after)
			if err != nil {
				f.Fatal(err)
			}
			if next == "" {
				break
			}
			f.Add(uint8(i), next)
			f.Add(uint8(i+1), next) // another listing's cursor
			after = next
		}
	}
	f.Fuzz(func(t *testing.T, pi uint8, after string) {
		n, _, err := storePages[int(pi)%len(storePages)](t, s, after)
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("listing %d after %q: %v is not ErrInvalid", pi, after, err)
			}
			return
		}
		if n > 2 {
			t.Fatalf("listing %d after %q: %d items on a page of 2", pi, after, n)
		}
	})
}

// pagedCalls are the neighbors and find_paths calls whose cursors are
// fuzzed: each returns its page's size, page limit and next cursor.
var pagedCalls = []func(t testing.TB, s graph.Store, cursor string) (n, limit int, next string, err error){
	func(t testing.TB, s graph.Store, cursor string) (int, int, string, error) {
		r, err := graph.Neighbors(t.Context(), s, graph.NeighborsQuery{ID: "service/payments", Direction: graph.Both, Depth: 2, Cursor: cursor, Limits: graph.Limits{MaxResults: 2}}, cursorLimits)
		if err != nil {
			return 0, 2, "", err
		}
		return len(r.Nodes), 2, r.Cursor, nil
	},
	func(t testing.TB, s graph.Store, cursor string) (int, int, string, error) {
		// Depth 1: its cursor holds the last neighbour (K), not an offset.
		r, err := graph.Neighbors(t.Context(), s, graph.NeighborsQuery{ID: "team/payments", Direction: graph.Both, Cursor: cursor, Limits: graph.Limits{MaxResults: 2}}, cursorLimits)
		if err != nil {
			return 0, 2, "", err
		}
		return len(r.Nodes), 2, r.Cursor, nil
	},
	func(t testing.TB, s graph.Store, cursor string) (int, int, string, error) {
		r, err := graph.Paths(t.Context(), s, graph.PathsQuery{From: "service/checkout", To: "service/postgres-cluster", K: 2, MaxHops: 4, Cursor: cursor}, cursorLimits)
		if err != nil {
			return 0, 2, "", err
		}
		return len(r.Paths), 2, r.Cursor, nil
	},
}

// FuzzCursorNeighborsPaths hands neighbors and find_paths cursors to
// their calls: as a client could (cursor), or sealed under the store's key
// from fuzzed contents (raw JSON, or a position n, or last item k, for the
// right call or another): a cursor the store did not issue, made for another call or
// out of range is refused with ErrInvalid; one that is accepted returns a
// page of at most the page size.
func FuzzCursorNeighborsPaths(f *testing.F) {
	s := cursorStore(f)
	for i, call := range pagedCalls {
		cursor := ""
		for range 3 {
			_, _, next, err := call(f, s, cursor)
			if err != nil {
				f.Fatal(err)
			}
			if next == "" {
				break
			}
			payload, err := graph.OpenCursor(s, kindOf[graph.PageCursor](), next)
			if err != nil {
				f.Fatal(err)
			}
			var pc graph.PageCursor
			if err := json.Unmarshal(payload, &pc); err != nil {
				f.Fatal(err)
			}
			f.Add(uint8(i), next, []byte(nil), pc.F, pc.N, string(pc.K))
			f.Add(uint8(i+1), next, []byte(nil), "", 0, "") // another call's cursor
			f.Add(uint8(i), next[:len(next)-1], []byte(nil), "", 0, "")
			f.Add(uint8(i), "", payload, "", 0, "")
			f.Add(uint8(i), "", []byte(nil), pc.F, -1, "")
			f.Add(uint8(i), "", []byte(nil), pc.F, min(1<<40, math.MaxInt), "")
			f.Add(uint8(i), "", []byte(nil), pc.F, 0, "zzz/\x00")
			f.Add(uint8(i), "", []byte(nil), pc.F, 3, string(pc.K))
			cursor = next
		}
	}
	f.Fuzz(func(t *testing.T, ci uint8, cursor string, raw []byte, fp string, n int, k string) {
		switch {
		case len(raw) > 0:
			cursor = graph.SealCursor(s, kindOf[graph.PageCursor](), raw)
		case fp != "":
			cursor = graph.EncodeCursor(s, graph.PageCursor{F: fp, N: n, K: graph.ID(k)})
		}
		got, limit, _, err := pagedCalls[int(ci)%len(pagedCalls)](t, s, cursor)
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("cursor %q: %v is not ErrInvalid", cursor, err)
			}
			return
		}
		if got > limit {
			t.Fatalf("cursor %q: %d items on a page of %d", cursor, got, limit)
		}
	})
}
