package mcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lore-dev/lore/mcp"
)

const adaMember = "memberOf(person/ada-okafor,team/payments)"

// TestEdgesFirstClass: an edge's properties are readable through get_edge,
// the lore://edge/ resource, and on request from neighbors, find_paths
// and query_graph; get_node given an edge ID points at get_edge.
func TestEdgesFirstClass(t *testing.T) {
	f := newFixture(t, nil)
	cs := f.connect(t, legacy, nil)

	res := f.call(t, cs, "get_edge", map[string]any{"id": adaMember})
	got := structured[map[string]any](t, res)
	edge, _ := got["edge"].(map[string]any)
	if edge["id"] != adaMember || edge["properties"].(map[string]any)["role"] != "lead" {
		t.Errorf("get_edge: %v", got)
	}

	res = f.call(t, cs, "get_node", map[string]any{"id": adaMember})
	if !res.IsError || !strings.Contains(text(res), `get_edge {"id": "`+adaMember+`"}`) || !strings.Contains(text(res), mcp.EdgeURI(adaMember)) {
		t.Errorf("get_node with an edge ID: %s", text(res))
	}

	r, err := f.cat.ReadResource(t.Context(), mcp.EdgeURI(adaMember))
	if err != nil || !strings.Contains(r.Text, `"role":"lead"`) {
		t.Errorf("lore://edge/: %v %v", r, err)
	}

	wantRole := func(what string, v map[string]any) {
		t.Helper()
		props, _ := v["edgeProperties"].(map[string]any)
		p, _ := props[adaMember].(map[string]any)
		if p["role"] != "lead" {
			t.Errorf("%s: no role of %s in %v", what, adaMember, props)
		}
	}
	wantRole("neighbors", structured[map[string]any](t, f.call(t, cs, "neighbors",
		map[string]any{"id": "person/ada-okafor", "edge": "memberOf", "edgeProperties": true})))
	wantRole("find_paths", structured[map[string]any](t, f.call(t, cs, "find_paths",
		map[string]any{"from": "person/ada-okafor", "to": "team/payments", "edge": "memberOf", "edgeProperties": true})))
	wantRole("query_graph", structured[map[string]any](t, f.call(t, cs, "query_graph", json.RawMessage(
		`{"from":{"ids":["person/ada-okafor"]},"traverse":[{"edge":"memberOf","direction":"out"}],"return":{"fields":["id"],"paths":true,"edgeProperties":true}}`))))

	// Without the flag, no properties; edgeProperties needs paths.
	if v := structured[map[string]any](t, f.call(t, cs, "neighbors", map[string]any{"id": "person/ada-okafor"})); v["edgeProperties"] != nil {
		t.Errorf("neighbors without edgeProperties: %v", v["edgeProperties"])
	}
	res = f.call(t, cs, "query_graph", json.RawMessage(`{"from":{"ids":["person/ada-okafor"]},"return":{"edgeProperties":true}}`))
	if !res.IsError || !strings.Contains(text(res), "/return/edgeProperties") {
		t.Errorf("edgeProperties without paths: %s", text(res))
	}
}
