package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
	"github.com/lore-dev/lore/schema"
)

// TestServeOnPostgres starts two lore serve processes on one PostgreSQL
// database (a database of the test's own; the test fails if PostgreSQL is
// unreachable): a write through one's MCP endpoint is read through the
// other's, and reaches a resource subscriber of the other within 1 s.
func TestServeOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url)
	_, urlB := startServe(t, url, "--no-example")
	a, b := httpClient(t, "A", urlA), httpClient(t, "B", urlB)
	const uri = "lore://node/topic/replicated"
	if err := b.subscribe(t.Context(), []string{uri}); err != nil {
		t.Fatal(err)
	}
	wrote := time.Now()
	if err := a.upsert(t.Context(), "topic/replicated"); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(time.Second)
wait:
	for {
		select {
		case u := <-b.updates():
			if u.uri == uri {
				t.Logf("replica B's subscriber heard of A's write %v after it was acknowledged", u.at.Sub(wrote).Round(time.Millisecond))
				break wait
			}
		case <-timeout:
			t.Fatal("replica B's subscriber heard nothing of A's write within 1 s")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := b.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": "topic/replicated"}})
	if err != nil || res.IsError {
		t.Fatalf("get_node on B: %v %s", err, resultText(res))
	}
	if txt := resultText(res); !strings.Contains(txt, "Topic topic/replicated") {
		t.Errorf("get_node on B: %s", txt)
	}
	// The example dataset A loaded into the new database is there too.
	res, err = b.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": "service/billing"}})
	if err != nil || res.IsError {
		t.Fatalf("get_node service/billing on B: %v %s", err, resultText(res))
	}
}

// TestCLIOnPostgres: a read on a database without Lore's schema says there
// is no store and creates none; import creates it, and the CLI then reads,
// exports and checks it.
func TestCLIOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	if _, errOut, code := lore(t, "stats", "--store", url); code == 0 || !strings.Contains(errOut, "no store") {
		t.Errorf("stats on an empty database: exit %d, %s", code, errOut)
	}
	data := writeFile(t, "d.ndjson", `{"kind":"node","id":"topic/a","type":"Topic","properties":{"name":"alpha"}}`+"\n")
	if _, errOut, code := lore(t, "import", "--store", url, data); code != 0 {
		t.Fatalf("import: exit %d, %s", code, errOut)
	}
	if out, errOut, code := lore(t, "stats", "--store", url, "--json"); code != 0 || !strings.Contains(out, `"nodes": 1`) {
		t.Errorf("stats: exit %d, %s%s", code, out, errOut)
	}
	if out, errOut, code := lore(t, "export", "--store", url, "-"); code != 0 || !strings.Contains(out, `"topic/a"`) {
		t.Errorf("export: exit %d, %s%s", code, out, errOut)
	}
	if out, errOut, code := lore(t, "check", "--store", url); code != 0 {
		t.Errorf("check: exit %d, %s%s", code, out, errOut)
	}
}

// TestConcurrentWritesAcrossServeReplicas: 4 MCP clients, two on each of
// two lore serve processes on one database, write 250 nodes each, one
// commit apiece, concurrently: all 1,000 are there, and the change log
// holds 1,000 entries after the example's, with no gap.
func TestConcurrentWritesAcrossServeReplicas(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url, "--no-example", "--rate", "0") // four clients from one address
	_, urlB := startServe(t, url, "--no-example", "--rate", "0")
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		c := httpClient(t, fmt.Sprintf("writer%d", w), []string{urlA, urlB}[w%2])
		var ids []string
		for i := range 250 {
			ids = append(ids, fmt.Sprintf("topic/w%d-%03d", w, i))
		}
		wg.Go(func() {
			if err := c.write(t.Context(), ids, 1); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats(t.Context())
	if err != nil || st.Nodes != 1000 || st.LastSeq != 1000 {
		t.Fatalf("stats %+v %v; want 1,000 nodes and entries", st, err)
	}
	var seq uint64
	for seq < st.LastSeq {
		chs, err := s.Since(t.Context(), seq, graph.MaxPageSize)
		if err != nil || len(chs) == 0 {
			t.Fatalf("since %d: %v", seq, err)
		}
		for _, c := range chs {
			if c.Seq != seq+1 {
				t.Fatalf("the log goes from %d to %d", seq, c.Seq)
			}
			seq = c.Seq
		}
	}
}

// TestKilledReplicaLosesNoWrite: a lore serve on PostgreSQL killed (-9)
// while a client writes through it loses no write it acknowledged, the log
// stays gapless, and a replica started afterwards serves every one of them.
func TestKilledReplicaLosesNoWrite(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cmd, urlA := startServe(t, url, "--no-example")
	c := httpClient(t, "writer", urlA)
	var acked []string
	for i := 0; ; i++ {
		id := fmt.Sprintf("topic/k%04d", i)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err := c.upsert(ctx, id)
		cancel()
		if err != nil {
			break // the process is gone
		}
		acked = append(acked, id)
		if i == 50 {
			go cmd.Process.Kill() // mid-stream: the next writes race with it
		}
		if i > 5000 {
			t.Fatal("the killed replica still answers")
		}
	}
	_, urlB := startServe(t, url, "--no-example")
	b := httpClient(t, "reader", urlB)
	for _, id := range acked {
		res, err := b.cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": id}})
		if err != nil || res.IsError {
			t.Fatalf("%s, acknowledged before the kill, is lost: %v %s", id, err, resultText(res))
		}
	}
	s, err := postgres.Open(t.Context(), postgres.Config{URL: url, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Stats(t.Context())
	if err != nil || st.LastSeq < uint64(len(acked)) || st.Nodes != int64(st.LastSeq) {
		t.Fatalf("stats %+v %v after %d acknowledged writes", st, err, len(acked))
	}
	chs, err := s.Since(t.Context(), 0, graph.MaxPageSize)
	if err != nil {
		t.Fatal(err)
	}
	for i, ch := range chs {
		if ch.Seq != uint64(i+1) {
			t.Fatalf("the log goes from %d to %d", i, ch.Seq)
		}
	}
	t.Logf("%d writes acknowledged before the kill, %d committed", len(acked), st.LastSeq)
}

// TestSubscribersOnAnotherReplica: with two lore serve on one database,
// a GraphQL subscription and a REST event stream on replica B hear of every
// write made through replica A's MCP endpoint, each within 1 s of its
// acknowledgement, in the order of the change log. (Both subscribe with
// since=0, so a change made before the subscription took hold is
// replayed, not missed.)
func TestSubscribersOnAnotherReplica(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url)
	_, urlB := startServe(t, url, "--no-example")
	a := httpClient(t, "A", urlA)
	base := strings.TrimSuffix(urlB, "/mcp")
	const id = "topic/replicated"

	gql, sse := make(chan event, 16), make(chan event, 16)

	// GraphQL over graphql-transport-ws.
	ctx := t.Context()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/graphql", &websocket.DialOptions{Subprotocols: []string{"graphql-transport-ws"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"type":"connection_init"}`)); err != nil {
		t.Fatal(err)
	}
	if _, m, err := conn.Read(ctx); err != nil || !strings.Contains(string(m), "connection_ack") {
		t.Fatalf("GraphQL on B: no connection_ack: %s %v", m, err)
	}
	sub := `{"id":"1","type":"subscribe","payload":{"query":"subscription { nodeChanged(id: \"` + id + `\", since: 0) { change { seq } } }"}}`
	if err := conn.Write(ctx, websocket.MessageText, []byte(sub)); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			_, m, err := conn.Read(ctx)
			if err != nil {
				return
			}
			var msg struct {
				Type    string `json:"type"`
				Payload struct {
					Data struct {
						NodeChanged struct {
							Change struct {
								Seq uint64 `json:"seq"`
							} `json:"change"`
						} `json:"nodeChanged"`
					} `json:"data"`
				} `json:"payload"`
			}
			if json.Unmarshal(m, &msg) != nil || msg.Type != "next" {
				t.Errorf("GraphQL on B: %s", m)
				return
			}
			gql <- event{msg.Payload.Data.NodeChanged.Change.Seq, time.Now()}
		}
	}()

	// The REST event stream; its "ready" event says it follows.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/subscribe?uri="+neturl.QueryEscape("lore://node/"+id)+"&since=0", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE on B: %s", resp.Status)
	}
	lines := bufio.NewScanner(resp.Body)
	ready := make(chan struct{})
	go func() {
		kind := ""
		for lines.Scan() {
			line := lines.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				kind = strings.TrimPrefix(line, "event: ")
				if kind == "ready" {
					close(ready)
				}
			case strings.HasPrefix(line, "id: ") && kind == "updated":
				seq, err := strconv.ParseUint(strings.TrimPrefix(line, "id: "), 10, 64)
				if err != nil {
					t.Errorf("SSE on B: %q", line)
					return
				}
				sse <- event{seq, time.Now()}
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("SSE on B: no ready event")
	}

	var acked []time.Time
	const writes = 5
	for i := range writes {
		res, err := a.cs.CallTool(ctx, callUpsert(id, fmt.Sprintf("write %d", i)))
		if err != nil || res.IsError {
			t.Fatalf("write %d through A: %v %s", i, err, resultText(res))
		}
		acked = append(acked, time.Now())
	}
	for name, ch := range map[string]chan event{"GraphQL subscription": gql, "REST event stream": sse} {
		var last uint64
		for i := range writes {
			e, ok := receive(ch, acked[i].Add(time.Second))
			if !ok {
				t.Fatalf("%s on B heard nothing of write %d within 1 s", name, i)
			}
			if e.seq <= last {
				t.Errorf("%s on B: change %d after %d: out of order", name, e.seq, last)
			}
			last = e.seq
			if lag := e.at.Sub(acked[i]); lag > time.Second {
				t.Errorf("%s on B heard of write %d %v after A acknowledged it", name, i, lag)
			}
		}
		if e, ok := receive(ch, time.Now().Add(200*time.Millisecond)); ok {
			t.Errorf("%s on B: change %d, after the %d writes", name, e.seq, writes)
		}
	}
}

// An event is a change a subscriber heard of, and when.
type event struct {
	seq uint64
	at  time.Time
}

// receive returns the next event on ch, waiting until deadline; an event
// already there is taken even past it.
func receive(ch <-chan event, deadline time.Time) (event, bool) {
	select {
	case e := <-ch:
		return e, true
	default:
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case e := <-ch:
		return e, true
	case <-t.C:
		return event{}, false
	}
}

// BenchmarkReplicaCalls measures get_node tool calls per second through
// lore serve on one PostgreSQL database with one replica and then two,
// from 8 MCP sessions over Streamable HTTP spread over the replicas, and
// the CPU time per call of each part: the lore serve processes, PostgreSQL
// (every postgres process of the machine's cluster) and this process (the
// clients). On a two-core machine two replicas cannot run faster than
// one; the CPU per call is what projects the rate onto more cores:
//
//	go test -run '^$' -bench ReplicaCalls -benchtime 3000x ./cmd/lore
func BenchmarkReplicaCalls(b *testing.B) {
	url := pgtest.NewDatabase(b)
	var pids []int
	var urls []string
	for range 2 {
		cmd, u := startServe(b, url, "--rate", "0")
		pids, urls = append(pids, cmd.Process.Pid), append(urls, u)
	}
	const sessions = 8
	ids := []string{"service/billing", "team/payments", "person/ada-okafor", "team/platform", "person/tomas-rivera"}
	for _, replicas := range []int{1, 2} {
		b.Run(fmt.Sprintf("replicas=%d", replicas), func(b *testing.B) {
			var cs []*client
			for i := range sessions {
				cs = append(cs, httpClient(b, fmt.Sprintf("s%d", i), urls[i%replicas]))
			}
			call := func(c *client, i int) {
				res, err := c.cs.CallTool(b.Context(), &mcpsdk.CallToolParams{Name: "get_node", Arguments: map[string]any{"id": ids[i%len(ids)]}})
				if err != nil || res.IsError {
					b.Fatalf("get_node: %v %s", err, resultText(res))
				}
			}
			for i, c := range cs { // warm up
				for j := range 50 {
					call(c, i+j)
				}
			}
			lore0 := cpuOf(b, pids[:replicas]...)
			pg0 := cpuOf(b, postgresPIDs(b)...)
			self0 := cpuOf(b, os.Getpid())
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for i, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := i; j < b.N; j += sessions {
						call(c, j)
					}
				}()
			}
			wg.Wait()
			took := time.Since(start)
			b.StopTimer()
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
			b.ReportMetric(float64(b.N)/took.Seconds(), "calls/s")
			b.ReportMetric(per(cpuOf(b, pids[:replicas]...)-lore0), "lore-cpu-µs/call")
			b.ReportMetric(per(cpuOf(b, postgresPIDs(b)...)-pg0), "pg-cpu-µs/call")
			b.ReportMetric(per(cpuOf(b, os.Getpid())-self0), "client-cpu-µs/call")
		})
	}
}

// cpuOf returns the CPU time the processes have used (processes gone are
// left out).
func cpuOf(b *testing.B, pids ...int) time.Duration {
	var sum time.Duration
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			sum += cpuTime(b, pid)
		}
	}
	return sum
}

// postgresPIDs lists the machine's postgres processes, whose CPU time is
// the database's.
func postgresPIDs(b *testing.B) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil && strings.TrimSpace(string(comm)) == "postgres" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestModelApplyOnPostgres: with two lore serve replicas on one database,
// lore model apply puts a model in use on the database: a subscriber of
// lore://model on replica B is told, B's describe_model shows the new
// version, and a write through replica A is validated with the new model.
func TestModelApplyOnPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, urlA := startServe(t, url)
	_, urlB := startServe(t, url, "--no-example")
	a, b := httpClient(t, "A", urlA), httpClient(t, "B", urlB)
	if err := b.subscribe(t.Context(), []string{"lore://model"}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	json.Unmarshal(schema.DefaultJSON(), &doc)
	topic := doc["$defs"].(map[string]any)["Topic"].(map[string]any)
	topic["x-lore-node"].(map[string]any)["indexed"] = []string{"name"}
	topic["properties"].(map[string]any)["name"].(map[string]any)["maxLength"] = 40
	data, _ := json.Marshal(doc)
	v2, err := schema.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "v2.json"), data, 0o644)
	if out, errOut, code := loreIn(t, dir, nil, "model", "apply", "v2.json", "--store", url); code != 0 || !strings.Contains(out, "applied: the store now uses v2.json") {
		t.Fatalf("lore model apply on PostgreSQL: exit %d\n%s%s", code, out, errOut)
	}
	timeout := time.After(10 * time.Second)
wait:
	for {
		select {
		case u := <-b.updates():
			if u.uri == "lore://model" {
				break wait
			}
		case <-timeout:
			t.Fatal("replica B's lore://model subscriber heard nothing of the model change within 10 s")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := b.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "describe_model", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(resultText(res), v2.Version()) {
		t.Fatalf("describe_model on B after the change: %v %s", err, resultText(res))
	}
	res, err = a.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "upsert_nodes", Arguments: map[string]any{
		"nodes": []any{map[string]any{"id": "topic/long", "type": "Topic", "properties": map[string]any{"name": strings.Repeat("x", 41)}}}}})
	if err != nil || !res.IsError {
		t.Fatalf("replica A took a Topic name v2 rejects: %v %s", err, resultText(res))
	}
}
