package mcp_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// inventoryBudget caps the model-visible inventory: the bytes of each
// tool's name, title, description and input schema (compact JSON), which
// a model reads on every turn, however its client frames them. Output
// schemas are for clients and the generated surfaces.
const inventoryBudget = 6000

// TestInventory measures the model-visible inventory and keeps it under
// budget, and prints the whole tools/list in both protocol eras beside it.
func TestInventory(t *testing.T) {
	f := newFixture(t, nil)
	var report strings.Builder
	for _, era := range []string{legacy, "2026-07-28"} {
		cs := f.connect(t, era, nil)
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		inventory, asJSON := 0, 0
		for _, tool := range res.Tools {
			in, _ := json.Marshal(tool.InputSchema)
			one := len(tool.Name) + len(tool.Title) + len(tool.Description) + len(in)
			inventory += one
			framed, _ := json.Marshal(map[string]any{"name": tool.Name, "title": tool.Title, "description": tool.Description, "inputSchema": tool.InputSchema})
			asJSON += len(framed)
			if era == legacy {
				out, _ := json.Marshal(tool.OutputSchema)
				fmt.Fprintf(&report, "  %-15s inventory %5d bytes (input schema %4d; output schema %5d)\n", tool.Name, one, len(in), len(out))
			}
		}
		all, _ := json.Marshal(res)
		t.Logf("%s: model-visible inventory %d bytes (budget %d; %d as JSON objects of the four fields); full tools/list result %d bytes",
			era, inventory, inventoryBudget, asJSON, len(all))
		if inventory > inventoryBudget {
			t.Errorf("%s: the model-visible inventory is %d bytes, over %d", era, inventory, inventoryBudget)
		}
	}
	t.Logf("per tool:\n%s", report.String())
}
