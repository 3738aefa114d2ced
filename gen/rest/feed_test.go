package rest_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/lore-dev/lore/gen"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// topics returns the arguments of an upsert_nodes of n topics and of a
// delete_nodes of them.
func topics(n int) (upsert, del string) {
	var nodes, refs []string
	for i := range n {
		id := fmt.Sprintf("topic/capped-%d", i)
		nodes = append(nodes, fmt.Sprintf(`{"id":%q,"type":"Topic","properties":{"name":%q}}`, id, id))
		refs = append(refs, fmt.Sprintf(`{"id":%q}`, id))
	}
	return `{"nodes":[` + strings.Join(nodes, ",") + `]}`, `{"confirm":true,"nodes":[` + strings.Join(refs, ",") + `]}`
}

// TestCommittedWriteOverTheCap: over REST, a write whose whole result is
// over the byte cap answers 200 with the result cut to fit (truncated, the
// counts whole), as the OpenAPI document describes it.
func TestCommittedWriteOverTheCap(t *testing.T) {
	const max = 4 << 10
	f := newFixtureWith(t, nil, &mcp.Options{Ceilings: graph.Limits{MaxBytes: max}})
	upsert, del := topics(300)
	for _, tc := range []struct{ tool, args, count string }{{"upsert_nodes", upsert, "nodeCount"}, {"delete_nodes", del, "deletedNodeCount"}} {
		r := f.post(t, tc.tool, tc.args, both)
		var out map[string]any
		if err := json.Unmarshal(r.body, &out); err != nil {
			t.Fatal(err)
		}
		if r.status != 200 || len(r.body) > max || out["truncated"] != true || out[tc.count] != float64(300) || out["seq"] == float64(0) {
			t.Errorf("%s: %d, %d bytes: %.300s", tc.tool, r.status, len(r.body), r.body)
		}
	}
}

// TestResourceOverTheCap: over REST, a node over the byte cap is a 400
// saying how to read it instead; the change list keeps to the cap.
func TestResourceOverTheCap(t *testing.T) {
	const max = 4 << 10
	f := newFixtureWith(t, nil, &mcp.Options{Ceilings: graph.Limits{MaxBytes: max}})
	if _, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(fmt.Sprintf(
		`{"nodes":[{"id":"topic/long","type":"Topic","properties":{"name":"long","description":%q}}]}`, strings.Repeat("y", 4900)))); err != nil {
		t.Fatal(err)
	}
	upsert, _ := topics(300)
	if _, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(upsert)); err != nil {
		t.Fatal(err)
	}
	read := func(uri string) reply {
		return f.do(t, f.request(t, http.MethodGet, gen.ResourcesPath+"?uri="+url.QueryEscape(uri), ""), both)
	}
	p := problemOf(t, read("lore://node/topic/long"), 400, mcp.CodeInvalid)
	if !strings.Contains(p.Detail, "over the server's cap of 4096 bytes") || !strings.Contains(p.Detail, "query_graph") {
		t.Errorf("detail %q", p.Detail)
	}
	for _, uri := range []string{mcp.ChangesURI, mcp.TypeURI("Topic")} {
		r := read(uri)
		var res mcp.Resource
		if err := json.Unmarshal(r.body, &res); err != nil || r.status != 200 || len(res.Text) > max {
			t.Errorf("%s: %d, %d bytes of text: %v", uri, r.status, len(res.Text), err)
		}
	}
}

// TestSubscribeEventsStaySmall: an event for a huge change names it by its
// sequence number; the change itself is read with changes_since.
func TestSubscribeEventsStaySmall(t *testing.T) {
	f := newFixture(t, nil)
	req := f.request(t, http.MethodGet, gen.SubscribePath+"?uri="+url.QueryEscape(mcp.ChangesURI), "")
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	data := func() string {
		t.Helper()
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return d
			}
		}
		t.Fatalf("the stream ended: %v", sc.Err())
		return ""
	}
	if d := data(); !strings.Contains(d, `"uri":"lore://changes"`) {
		t.Fatalf("ready: %s", d)
	}
	upsert, _ := topics(1000)
	res, err := f.cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(upsert))
	if err != nil {
		t.Fatal(err)
	}
	var w struct{ Seq uint64 }
	json.Unmarshal(res.Structured, &w)
	if d, want := data(), fmt.Sprintf(`{"uri":"lore://changes","seq":%d}`, w.Seq); d != want {
		t.Errorf("event %.200s, want %s", d, want)
	}
}
