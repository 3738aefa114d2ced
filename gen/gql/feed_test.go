package gql_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/gen/gql"
	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/graphtest"
	"github.com/lore-dev/lore/mcp"
)

var feedSeed = flag.Uint64("feed.seed", 0, "the seed of TestFeedExactlyOnce's batches (0: from the clock)")

// feedCap is the byte cap the feed test reads under.
const feedCap = 4 << 10

// feedEntry is what a reader learns of one change-log entry.
type feedEntry struct {
	Seq       uint64
	Nodes     []struct{ ID string }
	Truncated bool
	Part      *struct{ NodeCount, EdgeCount, Offset, Next int }
}

// elements returns how many nodes the entry has, as it says.
func (e feedEntry) elements() int {
	if e.Part != nil {
		return e.Part.NodeCount + e.Part.EdgeCount
	}
	return len(e.Nodes)
}

// TestFeedExactlyOnce writes random batches of 1 to 20,000 elements (those
// over graph.MaxBatch through Import) under a 4 KiB byte cap. A client
// paging changes_since over MCP and a GraphQL changes(since: 0)
// subscriber, started half-way so that it replays the first half and
// follows the rest live, both see every sequence number exactly once, in
// order, each entry with its true element count, and no GraphQL event is
// larger than the cap allows.
func TestFeedExactlyOnce(t *testing.T) {
	seed := *feedSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -feed.seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	s := graphtest.New(t)
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: graph.Limits{MaxBytes: feedCap}})
	hs := httptest.NewServer(gql.NewHandler(cat, nil))
	t.Cleanup(hs.Close)

	// Batch sizes, log-uniform in [1, 20000], one above graph.MaxBatch for
	// sure; every third batch of up to graph.MaxBatch deletes nodes written
	// before.
	sizes := []int{graph.MaxBatch + 1 + rng.IntN(20000-graph.MaxBatch)}
	for range 5 {
		sizes = append(sizes, int(math.Exp(rng.Float64()*math.Log(20000))))
	}
	rng.Shuffle(len(sizes), func(i, j int) { sizes[i], sizes[j] = sizes[j], sizes[i] })
	want := map[uint64]int{} // seq -> elements
	var written []graph.ID
	write := func(b, n int) {
		t.Helper()
		if b%3 == 2 && n <= graph.MaxBatch && len(written) > 0 {
			n = min(n, len(written), graph.MaxBatch)
			batch := &graph.Batch{Op: "delete_nodes"}
			for _, id := range written[len(written)-n:] {
				batch.DeleteNodes = append(batch.DeleteNodes, graph.NodeRef{ID: id})
			}
			written = written[:len(written)-n]
			r, err := s.Apply(t.Context(), batch)
			if err != nil {
				t.Fatal(err)
			}
			want[r.Seq] = n
			return
		}
		var ids []graph.ID
		for i := range n {
			ids = append(ids, graph.ID(fmt.Sprintf("topic/b%d-%d", b, i)))
		}
		written = append(written, ids...)
		if n > graph.MaxBatch {
			var lines bytes.Buffer
			for _, id := range ids {
				fmt.Fprintf(&lines, `{"kind":"node","id":%q,"type":"Topic","properties":{"name":"t"}}`+"\n", id)
			}
			before, _ := s.Stats(t.Context())
			if _, err := graph.Import(t.Context(), s, &lines, graph.ImportOptions{Format: graph.NDJSON, BatchSize: n}); err != nil {
				t.Fatal(err)
			}
			want[before.LastSeq+1] = n
			return
		}
		batch := &graph.Batch{Op: "upsert_nodes"}
		for _, id := range ids {
			batch.Nodes = append(batch.Nodes, graph.NodeInput{ID: id, Type: "Topic", Properties: graph.Props{"name": "t"}})
		}
		r, err := s.Apply(t.Context(), batch)
		if err != nil {
			t.Fatal(err)
		}
		want[r.Seq] = n
	}
	start := time.Now()
	half := len(sizes) / 2
	for b, n := range sizes[:half] {
		write(b, n)
	}

	// The GraphQL subscriber, from the start of the log.
	body, _ := json.Marshal(map[string]any{"query": `subscription { changes(since: 0) { seq nodes { id action } truncated part { nodeCount edgeCount offset next } } }`})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := bufio.NewScanner(res.Body)
	events.Buffer(nil, 64<<20)

	for b, n := range sizes[half:] {
		write(half+b, n)
	}
	last := uint64(len(want))
	t.Logf("batches %v: %d entries, written in %v", sizes, last, time.Since(start))

	check := func(who string, got []feedEntry) {
		t.Helper()
		for i, e := range got {
			if e.Seq != uint64(i+1) {
				t.Fatalf("%s: entry %d is #%d: a gap or a repeat", who, i+1, e.Seq)
			}
			if e.elements() != want[e.Seq] || e.Truncated != (len(e.Nodes) < want[e.Seq]) {
				t.Errorf("%s: #%d lists %d of %d elements (truncated %v), want %d", who, e.Seq, len(e.Nodes), e.elements(), e.Truncated, want[e.Seq])
			}
		}
		if uint64(len(got)) != last {
			t.Fatalf("%s: %d entries, want %d", who, len(got), last)
		}
	}

	// The MCP client pages changes_since.
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := mcp.NewServer(cat, nil).SDK().Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var paged []feedEntry
	for cursor, calls := uint64(0), 0; ; calls++ {
		r, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "changes_since", Arguments: map[string]any{"cursor": cursor}})
		if err != nil || r.IsError {
			t.Fatalf("changes_since from %d: %v %v", cursor, err, r)
		}
		data, _ := json.Marshal(r.StructuredContent)
		if len(data) > feedCap {
			t.Fatalf("changes_since from %d: %d bytes, over the cap", cursor, len(data))
		}
		var page struct {
			Changes []feedEntry
			Cursor  uint64
			More    bool
		}
		if err := json.Unmarshal(data, &page); err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page.Changes...)
		if !page.More {
			t.Logf("changes_since: %d calls", calls+1)
			break
		}
		cursor = page.Cursor
	}
	check("changes_since", paged)

	var streamed []feedEntry
	for uint64(len(streamed)) < last && events.Scan() {
		data, ok := strings.CutPrefix(events.Text(), "data: ")
		if !ok {
			continue
		}
		if len(data) > feedCap+512 {
			t.Errorf("a GraphQL event of %d bytes", len(data))
		}
		var ev struct {
			Data   struct{ Changes feedEntry }
			Errors []gqlError
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Errors) > 0 {
			t.Fatalf("event %.300s: %v", data, err)
		}
		streamed = append(streamed, ev.Data.Changes)
	}
	check("GraphQL changes(since: 0)", streamed)
	t.Logf("all in %v", time.Since(start))
}

// TestCommittedMutationOverTheCap: a mutation whose whole result is over
// the byte cap returns its result cut to fit (truncated, counts whole), not
// an error; a resource over the cap is an error saying how to read it.
func TestCommittedMutationOverTheCap(t *testing.T) {
	const max = 4 << 10
	s := graphtest.New(t)
	cat := mcp.NewCatalog(s, &mcp.Options{Ceilings: graph.Limits{MaxBytes: max}})
	hs := httptest.NewServer(gql.NewHandler(cat, nil))
	t.Cleanup(hs.Close)
	var nodes, refs []map[string]any
	for i := range 300 {
		id := fmt.Sprintf("topic/capped-%d", i)
		nodes = append(nodes, map[string]any{"id": id, "type": "Topic", "properties": map[string]any{"name": id}})
		refs = append(refs, map[string]any{"id": id})
	}
	r := do(t, hs.URL, `mutation($nodes: [UpsertNodesNodeInput!]!) { upsertNodes(nodes: $nodes) { seq truncated nodeCount nodes { id status } } }`,
		map[string]any{"nodes": nodes}, nil)
	var up struct {
		Seq       int
		Truncated bool
		NodeCount int
		Nodes     []struct{ ID string }
	}
	if len(r.Errors) > 0 || json.Unmarshal(r.Data["upsertNodes"], &up) != nil || up.Seq == 0 || !up.Truncated || up.NodeCount != 300 || len(up.Nodes) == 0 || len(up.Nodes) == 300 {
		t.Errorf("upsertNodes: %+v", r)
	}
	r = do(t, hs.URL, `mutation($nodes: [DeleteNodesNodeInput!]!) { deleteNodes(nodes: $nodes, confirm: true) { seq truncated deletedNodeCount deletedNodes } }`,
		map[string]any{"nodes": refs}, nil)
	var del struct {
		Seq              int
		Truncated        bool
		DeletedNodeCount int
	}
	if len(r.Errors) > 0 || json.Unmarshal(r.Data["deleteNodes"], &del) != nil || del.Seq == 0 || !del.Truncated || del.DeletedNodeCount != 300 {
		t.Errorf("deleteNodes: %+v", r)
	}

	if _, err := cat.Invoke(t.Context(), "upsert_nodes", json.RawMessage(fmt.Sprintf(
		`{"nodes":[{"id":"topic/long","type":"Topic","properties":{"name":"long","description":%q}}]}`, strings.Repeat("y", 4900)))); err != nil {
		t.Fatal(err)
	}
	r = do(t, hs.URL, `{ resource(uri: "lore://node/topic/long") { text } }`, nil, nil)
	if len(r.Errors) != 1 || r.Errors[0].code() != "INVALID_ARGUMENT" || !strings.Contains(r.Errors[0].Message, "over the server's cap") {
		t.Errorf("a resource over the cap: %+v", r)
	}
}
