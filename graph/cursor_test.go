package graph_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/schema"
)

// runCursor runs a query with a cursor and returns the error, turning a
// panic into an error so that a test reports it instead of dying.
func runCursor(s graph.Store, query, cursor string) (res *graph.QueryResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	q, err := graph.ParseQuery(s.Model(), []byte(query))
	if err != nil {
		return nil, err
	}
	q.Cursor = cursor
	return graph.Run(context.Background(), s, q, graph.Limits{})
}

// payloadOf returns the JSON inside a cursor, after its 16-byte MAC.
func payloadOf(t *testing.T, cursor string) map[string]any {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw[min(16, len(raw)):], &m); err != nil {
		t.Fatalf("cursor %s holds no JSON: %v", raw, err)
	}
	return m
}

const foreign = "not one this server issued for this store"

// TestCursorForged: cursors are authenticated under the store's key. A
// forged, altered or foreign cursor is refused with ErrInvalid and a
// message saying what to do; none reaches the executor (a forged one used
// to crash the process).
func TestCursorForged(t *testing.T) {
	s := example(t)
	const traverse = `{"from":{"type":"Service"},"traverse":[{"edge":"dependsOn","direction":"both"}],"limit":2}`
	const search = `{"from":{"search":"postgres"},"limit":1}`
	pageOf := func(query string) string {
		t.Helper()
		res, err := runCursor(s, query, "")
		if err != nil || res.Cursor == "" {
			t.Fatalf("%s: no cursor (%v)", query, err)
		}
		return res.Cursor
	}
	forge := func(real string, set map[string]any) string {
		m := payloadOf(t, real)
		for k, v := range set {
			m[k] = v
		}
		data, _ := json.Marshal(m)
		return base64.RawURLEncoding.EncodeToString(data)
	}
	tc, sc := pageOf(traverse), pageOf(search)
	altered := []byte(tc)
	altered[len(altered)/2] ^= 1
	other := example(t) // the same data in another store: another key
	otherRes, err := runCursor(other, traverse, "")
	if err != nil {
		t.Fatal(err)
	}
	hit, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "postgres", Limit: 1}, graph.Limits{})
	if err != nil || hit.Cursor == "" {
		t.Fatalf("search: %v", err)
	}
	for _, tt := range []struct{ name, query, cursor string }{
		{"start -1", traverse, forge(tc, map[string]any{"t": -1})},
		{"rank position -3", search, forge(sc, map[string]any{"p": -3})},
		{"chunk -5", traverse, forge(tc, map[string]any{"t": 1, "c": -5})},
		{"plain JSON", traverse, base64.RawURLEncoding.EncodeToString([]byte(`{"f":"x"}`))},
		{"one bit altered", traverse, string(altered)},
		{"another store's", traverse, otherRes.Cursor},
		{"a search cursor", search, hit.Cursor},
		{"not base64", traverse, "!!"},
		{"too short", traverse, "AAAA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := runCursor(s, tt.query, tt.cursor)
			if !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), foreign) {
				t.Errorf("got %v; want ErrInvalid saying the cursor is %s", err, foreign)
			}
		})
	}
	// A query cursor is no search cursor either.
	if _, err := graph.Search(t.Context(), s, graph.SearchQuery{Text: "postgres", Cursor: sc}, graph.Limits{}); !errors.Is(err, graph.ErrInvalid) || !strings.Contains(err.Error(), foreign) {
		t.Errorf("a query cursor given to search: %v", err)
	}
	// The real cursors still work.
	for _, c := range []struct{ query, cursor string }{{traverse, tc}, {search, sc}} {
		if _, err := runCursor(s, c.query, c.cursor); err != nil {
			t.Errorf("%s with its own cursor: %v", c.query, err)
		}
	}
}

// TestCursorKeyKept: the key lives in the store, so its cursors outlive
// the process; a store that keeps no key still authenticates its cursors,
// and theirs are not the embedded store's.
func TestCursorKeyKept(t *testing.T) {
	dir := t.TempDir()
	s := graphtest.Open(t, dir, nil)
	if _, err := graph.Import(t.Context(), s, bytes.NewReader(schema.ExampleData()), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	const query = `{"from":{"type":"Service"},"orderBy":[{"field":"name"}],"limit":3}`
	first, err := runCursor(s, query, "")
	if err != nil || first.Cursor == "" {
		t.Fatalf("no cursor: %v", err)
	}
	key := bytes.Clone(s.(graph.CursorKeyer).CursorKey())
	if len(key) != 32 {
		t.Fatalf("cursor key of %d bytes", len(key))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = graphtest.Open(t, dir, nil)
	if !bytes.Equal(s.(graph.CursorKeyer).CursorKey(), key) {
		t.Fatal("the cursor key changed when the store was reopened")
	}
	second, err := runCursor(s, query, first.Cursor)
	if err != nil || len(second.Nodes) != 3 || second.Nodes[0]["id"] == first.Nodes[0]["id"] {
		t.Fatalf("after reopening, the cursor gave %v, %v", second, err)
	}

	plain := struct{ graph.Store }{s} // no CursorKey method: the process's key
	p1, err := runCursor(plain, query, "")
	if err != nil || p1.Cursor == "" {
		t.Fatalf("no cursor: %v", err)
	}
	if _, err := runCursor(plain, query, p1.Cursor); err != nil {
		t.Errorf("a store without a key refused its own cursor: %v", err)
	}
	if _, err := runCursor(s, query, p1.Cursor); !errors.Is(err, graph.ErrInvalid) {
		t.Errorf("the embedded store took a cursor made under the process's key: %v", err)
	}
}

// TestEdgeCursorOverflow: a store's edge cursor whose node index does not
// fit an int is refused, not used as a negative index (which panicked).
func TestEdgeCursorOverflow(t *testing.T) {
	s := example(t)
	for _, raw := range []string{"e1.18446744073709551615.0.0.0.0", "e1.0.9223372036854775808.0.0.0", "e1.-1.0.0.0.0"} {
		after := base64.RawURLEncoding.EncodeToString([]byte(raw))
		_, err := func() (_ *graph.EdgePage, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
				}
			}()
			return s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/billing"}, Direction: graph.Both, Page: graph.Page{After: after}})
		}()
		if !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("Edges after %s: %v; want ErrInvalid", raw, err)
		}
	}
}
