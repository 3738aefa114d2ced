package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// TestFindPathsK: k asks for the k shortest simple paths, of every length,
// shortest first; a result over the byte cap keeps the first of them.
func TestFindPathsK(t *testing.T) {
	const args = `{"from":"service/checkout","to":"service/postgres-cluster","edge":["dependsOn"],"direction":"out","k":6}`
	f := newFixture(t, nil)
	res := f.call(t, f.connect(t, legacy, nil), "find_paths", args)
	if res.IsError {
		t.Fatal(text(res))
	}
	full := structured[graph.PathsResult](t, res)
	if len(full.Paths) != 6 || full.Truncated {
		t.Fatalf("want 6 paths, complete: %+v", full)
	}
	first, last := len(full.Paths[0].Edges), len(full.Paths[len(full.Paths)-1].Edges)
	if full.Length != first || last <= first {
		t.Errorf("length %d; paths of %d to %d edges, want longer ones after the shortest", full.Length, first, last)
	}
	for i := 1; i < len(full.Paths); i++ {
		if len(full.Paths[i].Edges) < len(full.Paths[i-1].Edges) {
			t.Errorf("path %d is shorter than path %d", i, i-1)
		}
	}
	if got := text(res); !strings.Contains(got, "6 path(s), shortest first") {
		t.Errorf("text: %s", got)
	}

	small := newFixture(t, &mcp.Options{Ceilings: graph.Limits{MaxBytes: 900}})
	res = small.call(t, small.connect(t, legacy, nil), "find_paths", args)
	if res.IsError {
		t.Fatal(text(res))
	}
	data, _ := json.Marshal(res.StructuredContent)
	cut := structured[graph.PathsResult](t, res)
	if len(data) > 900 || !cut.Truncated || cut.Reason != graph.ReasonBytes || len(cut.Paths) == 0 {
		t.Fatalf("%d bytes, truncated %v (%s), %d paths", len(data), cut.Truncated, cut.Reason, len(cut.Paths))
	}
	if diff := cmp.Diff(full.Paths[:len(cut.Paths)], cut.Paths); diff != "" {
		t.Errorf("under the byte cap, not the first paths (-want +got):\n%s", diff)
	}
}
