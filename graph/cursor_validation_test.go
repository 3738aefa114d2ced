package graph_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

// cursorStore holds nodes of three types, some indexed values and edges,
// for the cursor tests.
func validationStore(t testing.TB) graph.Store {
	t.Helper()
	s := graphtest.New(t)
	var b graph.Batch
	for i := range 40 {
		b.Nodes = append(b.Nodes, graph.NodeInput{ID: graph.ID(fmt.Sprintf("service/s%02d", i)), Type: "Service",
			Properties: graph.Props{"name": fmt.Sprintf("alpha %d", i), "tier": i % 4}})
	}
	for i := range 40 {
		b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(fmt.Sprintf("service/s%02d", i)), Label: "dependsOn", To: graph.ID(fmt.Sprintf("service/s%02d", (i*7+1)%40))}})
	}
	mustApply(t, s, &b)
	return s
}

// The queries the cursor tests page through: one per start source and mode.
var validationQueries = []string{
	`{"from":{"type":"Service"},"limit":3}`,
	`{"from":{"type":"Service","where":{"tier":{"in":[1,2]}}},"traverse":[{"edge":"dependsOn","hops":[1,2]}],"limit":3}`,
	`{"from":{"type":"Service","where":{"tier":1}},"orderBy":[{"field":"name","desc":true},{"field":"tier"}],"limit":3}`,
	`{"from":{"ids":["service/s01","service/s02","service/s03"]},"traverse":[{"edge":"dependsOn","direction":"both","hops":[0,3]}],"limit":2}`,
	`{"from":{"search":"alpha"},"limit":4}`,
	`{"from":{"search":"alpha"},"traverse":[{"edge":"dependsOn"}],"limit":4}`,
	`{"from":{"type":"Service"},"return":{"count":true}}`,
}

// runCursor runs query q with cursor c under limits, never panicking.
func runCursorLimits(t testing.TB, s graph.Store, q, c string, lim graph.Limits) (*graph.QueryResult, error) {
	t.Helper()
	pq, err := graph.ParseQuery(s.Model(), []byte(q))
	if err != nil {
		t.Fatalf("ParseQuery(%s): %v", q, err)
	}
	pq.Cursor = c
	return graph.Run(t.Context(), s, pq, lim)
}

// Issue 16 item 1: a forged cursor never panics: every field of a decoded
// cursor is checked, and a bad one is an ErrInvalid that says what to do.
func TestQueryCursorValidation(t *testing.T) {
	s := validationStore(t)
	for _, q := range validationQueries {
		pq, _ := graph.ParseQuery(s.Model(), []byte(q))
		fp := graph.Fingerprint(pq)
		raw := func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }
		key := json.RawMessage(`"alpha 1"`)
		for _, tt := range []struct {
			name   string
			cursor string
		}{
			{"not base64", "%%%"},
			{"not JSON", raw("{")},
			{"another query", graph.EncodeCursor(s, graph.QueryCursor{F: "other"})},
			{"unknown field t", raw(fmt.Sprintf(`{"f":%q,"t":-1}`, fp))},
			{"unknown field p", raw(fmt.Sprintf(`{"f":%q,"p":-3}`, fp))},
			{"negative position", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{K: -1}})},
			{"negative query", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 2, Q: -3}})},
			{"negative plan", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: -1}})},
			{"unknown plan", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 99}})},
			{"position past the end", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 1, K: 1 << 30}})},
			{"query past the end", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 2, Q: 7}})},
			{"bad scan cursor", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 2, A: "!!"}})},
			{"position not an ID", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{Plan: 1, A: "a b"}})},
			{"position without a plan", graph.EncodeCursor(s, graph.QueryCursor{F: fp, At: graph.StartPos{A: "service/s01"}, N: 0})},
			{"negative unit", graph.EncodeCursor(s, graph.QueryCursor{F: fp, N: -2, ID: "service/s01"})},
			{"huge unit", graph.EncodeCursor(s, graph.QueryCursor{F: fp, N: graph.MaxUnit + 1, ID: "service/s01"})},
			{"negative chunk", graph.EncodeCursor(s, graph.QueryCursor{F: fp, Chunk: -5})},
			{"huge chunk", graph.EncodeCursor(s, graph.QueryCursor{F: fp, Chunk: graph.MaxChunk + 1})},
			{"unit and rest", graph.EncodeCursor(s, graph.QueryCursor{F: fp, N: 3, Rest: true, ID: "service/s01"})},
			{"unit without a last result", graph.EncodeCursor(s, graph.QueryCursor{F: fp, N: 3})},
			{"last result without a unit", graph.EncodeCursor(s, graph.QueryCursor{F: fp, ID: "service/s01"})},
			{"last result not an ID", graph.EncodeCursor(s, graph.QueryCursor{F: fp, Rest: true, ID: "a b"})},
			{"sort key of the wrong length", graph.EncodeCursor(s, graph.QueryCursor{F: fp, Rest: true, ID: "service/s01", After: []json.RawMessage{key, key, key}})},
			{"sort key without a last result", graph.EncodeCursor(s, graph.QueryCursor{F: fp, After: []json.RawMessage{key}})},
			{"sort key of another shape", raw(fmt.Sprintf(`{"f":%q,"r":true,"i":"service/s01","a":"x"}`, fp))},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := runCursorLimits(t, s, q, tt.cursor, graph.Limits{})
				if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), "cursor") {
					t.Errorf("%s with cursor %s: %v, want an ErrInvalid about the cursor", q, tt.cursor, err)
				}
			})
		}
	}
}

// FuzzQueryCursor: whatever cursor comes with a valid query (forged JSON
// in the cursor encoding, or any string), Run does not panic, and an
// error is an ErrInvalid.
func FuzzQueryCursor(f *testing.F) {
	s := validationStore(f)
	for qi, q := range validationQueries {
		// Real cursors of each query, from its first pages, under limits
		// small enough to cut the work.
		for _, lim := range []graph.Limits{{}, {MaxVisited: 20}} {
			c := ""
			for range 3 {
				res, err := runCursorLimits(f, s, q, c, lim)
				if err != nil || res.Cursor == "" {
					break
				}
				c = res.Cursor
				data, _ := base64.RawURLEncoding.DecodeString(c)
				f.Add(uint8(qi), data, "")
				f.Add(uint8(qi), []byte(nil), c)
			}
		}
	}
	f.Add(uint8(1), []byte(`{"f":"x","t":-1}`), "")
	f.Add(uint8(1), []byte(`{"f":"x","s":{"p":2,"q":0,"k":-3}}`), "")
	f.Add(uint8(0), []byte(nil), "eyJmIjoieCJ9")
	f.Fuzz(func(t *testing.T, qi uint8, payload []byte, cursor string) {
		q := validationQueries[int(qi)%len(validationQueries)]
		pq, _ := graph.ParseQuery(s.Model(), []byte(q))
		if len(payload) > 0 {
			var v map[string]any
			if json.Unmarshal(payload, &v) != nil {
				return
			}
			// Forged fields under the real fingerprint reach the checks
			// behind it.
			v["f"] = graph.Fingerprint(pq)
			cursor = graph.EncodeCursor(s, v)
		}
		if cursor == "" {
			return
		}
		for _, lim := range []graph.Limits{{MaxVisited: 50}, {}} {
			if _, err := runCursorLimits(t, s, q, cursor, lim); err != nil && !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("%s with cursor %s: %v, want nil or ErrInvalid", q, cursor, err)
			}
		}
	})
}
