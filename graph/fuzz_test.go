package graph_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// FuzzQuery feeds arbitrary documents to the query decoder and validator,
// and runs the ones they accept through the planner and executor on the
// example store under tight limits: nothing may panic, an invalid query is
// an ErrInvalid, and no result exceeds its limits.
func FuzzQuery(f *testing.F) {
	for _, seed := range []string{
		`{"from":{"ids":["service/billing"]}}`,
		`{"from":{"type":"Service","where":{"tier":{"lt":1},"language":"Go"}}}`,
		`{"from":{"type":"Decision","where":{"and":[{"status":"accepted"},{"date":{"lt":"2020-01-01"}}],"not":{"number":1}}}}`,
		`{"from":{"type":"Service","where":{"or":[{"language":{"in":["Rust","C"]}},{"name":{"prefix":"car"}}]}}}`,
		`{"from":{"ids":["service/billing"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[1,3]}]}`,
		`{"from":{"ids":["service/checkout"]},"traverse":[{"edge":["dependsOn","owns"],"direction":"both","hops":[0,2],"type":"Team","where":{"name":{"contains":"pay"}}}],"return":{"paths":true}}`,
		`{"from":{"search":"postgres","type":"Decision"},"orderBy":[{"field":"date","desc":true}],"limit":2}`,
		`{"from":{"type":"Person"},"return":{"count":true},"limits":{"maxVisited":5,"timeoutMs":1}}`,
		`{"from":{"type":"Topic"},"orderBy":[{"field":"name"}],"limit":3,"cursor":"eyJmIjoieCJ9"}`,
		`{"from":{"type":"Service","where":{"createdAt":{"gt":"2020-01-01T00:00:00Z"},"revision":{"gte":1}}}}`,
		`{"from":{"ids":["a/b"]},"traverse":[{"hops":[3,1]}]}`,
		`{"from":{"ids":["service/billing","service/checkout"]},"traverse":[{"edge":"dependsOn","direction":"in","hops":[2,3]},{"hops":[0,1]}],"return":{"paths":true},"limit":2}`,
		`{"from":{"type":"Service","where":{"tier":{"in":[0,1]}}},"traverse":[{"direction":"both","hops":[1,6]}],"orderBy":[{"field":"name"}],"limits":{"maxVisited":40}}`,
		`{"from":{"type":"Service"},"traverse":[{"edge":"dependsOn"}],"cursor":"eyJmIjoieCIsInQiOi0xfQ"}`,
		`{"from":{"type":"Service"},"cursor":"eyJmIjoieCIsInAiOi0zfQ"}`,
		`{"from":{"type":"Service"},"groupBy":{"field":"lifecycle","order":"key","desc":true},"limit":2}`,
		`{"from":{"ids":["team/payments"]},"traverse":[{"direction":"both"}],"groupBy":{"degree":{"edge":"dependsOn","direction":"in"},"buckets":[1,3]},"cursor":"eyJmIjoieCIsImciOnsiayI6IiIsIm4iOjF9fQ"}`,
		`{"from":{}}`, `[]`, `{"from":{"ids":[]}}`, `{"from":{"type":"Service","where":{"and":[]}}}`,
	} {
		f.Add([]byte(seed))
	}
	s := example(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := graph.ParseQuery(s.Model(), data)
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("ParseQuery error %v is not ErrInvalid", err)
			}
			return
		}
		res, err := graph.Run(t.Context(), s, q, graph.Limits{MaxResults: 50, MaxHops: 4, MaxVisited: 2000, TimeoutMs: 200, MaxBytes: 64 << 10})
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) && !errors.Is(err, graph.ErrNotFound) {
				t.Fatalf("Run(%s): unexpected error %v", data, err)
			}
			return
		}
		if len(res.Nodes) > 50 || res.Stats.Visited > 2000 {
			t.Fatalf("Run(%s) exceeded its limits: %d nodes, %d visited", data, len(res.Nodes), res.Stats.Visited)
		}
		if out, err := json.Marshal(res); err != nil || len(out) > 64<<10 {
			t.Fatalf("Run(%s): response of %d bytes (%v)", data, len(out), err)
		}
	})
}

// FuzzEdgeKey: parsing an edge ID never panics, and a parsed ID formats
// back to an ID that parses to the same key.
func FuzzEdgeKey(f *testing.F) {
	for _, seed := range []string{"memberOf(person/ada,team/core)", "relation(entity/A%20B,entity/C,works%20at)", "x(a,b,c,d)", "(a,b)", "l(,)", "l(a/b,c%2"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := graph.ParseEdgeKey(s)
		if err != nil {
			if !errors.Is(err, graph.ErrInvalid) {
				t.Fatalf("ParseEdgeKey(%q) error %v is not ErrInvalid", s, err)
			}
			return
		}
		again, err := graph.ParseEdgeKey(k.String())
		if err != nil || again != k {
			t.Fatalf("ParseEdgeKey(%q) = %+v, which formats to %q and parses to %+v, %v", s, k, k.String(), again, err)
		}
	})
}

// fuzzImport runs data through a dry-run import into the example store:
// decoding, checking and planning. Nothing may panic, and any error is an
// *ImportError whose text names no Go type.
func fuzzImport(t *testing.T, s graph.Store, f graph.Format, data []byte) {
	_, err := graph.Import(t.Context(), s, bytes.NewReader(data), graph.ImportOptions{Format: f, DryRun: true, BatchSize: 7, MaxDepth: 16})
	if err == nil {
		return
	}
	var ie *graph.ImportError
	if !errors.As(err, &ie) {
		t.Fatalf("Import(%q): %v is not an *ImportError", data, err)
	}
	if ie.Total < len(ie.Lines) || len(ie.Lines) > graph.MaxProblems {
		t.Fatalf("Import(%q): %d problems counted, %d listed", data, ie.Total, len(ie.Lines))
	}
	if msg := err.Error(); strings.Contains(msg, "Go value") || strings.Contains(msg, "Go struct") || strings.Contains(msg, "graph.") {
		t.Fatalf("Import(%q): the error names a Go type: %v", data, err)
	}
}

// FuzzImportNDJSON: NDJSON import lines never panic the decoder or the planner.
func FuzzImportNDJSON(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"node","id":"person/ada","type":"Person","properties":{"name":"Ada"}}`,
		`{"kind":"edge","from":"person/ada","label":"memberOf","to":"team/payments","properties":{"role":"lead"},"revision":3,"createdAt":"2024-01-02T03:04:05Z"}`,
		`{"kind":"edge","from":"entity/a","label":"relation","to":"entity/b","key":"k"}`,
		`{"kind":"node","id":"topic/t","type":"Topic","properties":{"name":"t"},"revision":9007199254740992}`,
		`{"kind":"node","id":"a","kind":"edge"}`, "{\"kind\":\"node\",\"id\":\"\xff\"}", `[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]`,
		"\n\n{}\n{\"kind\":\"node\"}\n", `{"kind":"node","id":"topic/t","type":"Topic","properties":{"name":1e400}}`,
	} {
		f.Add([]byte(seed))
	}
	s := example(f)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, s, graph.NDJSON, data) })
}

// FuzzImportNQuads: N-Quads import lines never panic the decoder or the planner.
func FuzzImportNQuads(f *testing.F) {
	for _, seed := range []string{
		"<n:topic/a> <pg:type> <t:Topic> .\n<n:topic/a> <p:name> \"a\" .\n<n:topic/a> <pg:revision> \"2\"^^<http://www.w3.org/2001/XMLSchema#integer> .\n",
		"<n:doc/d> <pg:type> <t:Document> .\n<n:doc/d> <p:title> \"d\" .\n<n:doc/d> <e:about> <n:topic/a> .\n<x:about(doc/d,topic/a)> <pg:createdAt> \"2024-01-02T03:04:05Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> .\n",
		"<n:entity/a> <e:relation> <n:entity/b> <k:works%20at> .\n",
		"<n:topic/a> <p:x> \"{\\\"a\\\":[1,2]}\"^^<lore:json> .\n", "<n:topic/a> <p:x> \"\\uD800\" .\n", "# comment\n<a> <b> <c> .\n",
	} {
		f.Add([]byte(seed))
	}
	s := example(f)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, s, graph.NQuads, data) })
}

// FuzzImportMemory: memory-server JSONL lines never panic the decoder or the planner.
func FuzzImportMemory(f *testing.F) {
	for _, seed := range []string{
		`{"type":"entity","name":"Ada","entityType":"person","observations":["likes tea"]}` + "\n" + `{"type":"relation","from":"Ada","to":"Acme","relationType":"works_at"}`,
		`{"type":"entity","name":"a/b%c","entityType":"","observations":[]}`, `{"type":"relation","from":"","to":"x"}`, `{"type":"entity","observations":[1]}`,
	} {
		f.Add([]byte(seed))
	}
	s := example(f)
	f.Fuzz(func(t *testing.T, data []byte) { fuzzImport(t, s, graph.Memory, data) })
}

// FuzzParseMigration: a migration document never panics the parser, and
// one it accepts, written out again, reads back as the same migration.
func FuzzParseMigration(f *testing.F) {
	for _, seed := range []string{
		`{"steps": [{"renameProperty": {"type": "Person", "from": "mail", "to": "email"}}]}`,
		`{"steps": [{"setDefault": {"type": "Person", "property": "tier", "value": {"a": [1, 2.5e3, null]}}}]}`,
		`{"steps": [{"convertProperty": {"type": "Person", "property": "age", "to": "integer"}}]}`,
		`{"steps": [{"retypeNodes": {"from": "Topic", "to": "Concept", "ids": ["topic/a"], "where": {"name": {"prefix": "a"}}}}]}`,
		`{"steps": [{"setDefault": {"type": "B", "property": "x", "value": 1}}, {"retypeNodes": {"from": "A", "to": "B"}}]}`,
		`{"steps": [{"retypeNodes": {"from": "A", "to": "B", "from": "C"}}]}`,
		`{"steps": []}`, `[]`, `{"steps": [{}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := graph.ParseMigration(data)
		if err != nil {
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("an accepted migration does not marshal: %v", err)
		}
		again, err := graph.ParseMigration(out)
		if err != nil {
			t.Fatalf("%s, written out as %s, is refused: %v", data, out, err)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("%s reads back as %s", out, out2)
		}
	})
}
