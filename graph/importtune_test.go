package graph_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
)

// An import at the default batch size starts with small batches and
// doubles them; one with a batch size given keeps it.
func TestImportRampsBatches(t *testing.T) {
	var data strings.Builder
	n := graph.DefaultFirstBatch*3 + 100 // the first two batches, and part of the third
	for i := range n {
		fmt.Fprintf(&data, `{"kind":"node","id":"topic/t%d","type":"Topic","properties":{"name":"t%d"}}`+"\n", i, i)
	}
	sizes := func(opt graph.ImportOptions) []int {
		s := graphtest.New(t)
		if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), opt); err != nil {
			t.Fatal(err)
		}
		changes, err := s.Since(t.Context(), 0, graph.MaxPageSize)
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, c := range changes {
			out = append(out, len(c.Nodes))
		}
		return out
	}
	first := graph.DefaultFirstBatch
	if got, want := sizes(graph.ImportOptions{}), []int{first, 2 * first, 100}; !slices.Equal(got, want) {
		t.Errorf("batches at the default size: %v, want %v", got, want)
	}
	if got, want := sizes(graph.ImportOptions{BatchSize: first}), []int{first, first, first, 100}; !slices.Equal(got, want) {
		t.Errorf("batches of %d: %v, want %v", first, got, want)
	}
}
