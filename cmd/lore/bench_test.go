package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// stdioProc is lore mcp driven with raw JSON-RPC lines, for timing.
type stdioProc struct {
	in    io.WriteCloser
	out   *bufio.Reader
	pid   int
	store string // the store's directory, where the test set it
}

func startStdioProc(b *testing.B, args ...string) *stdioProc {
	b.Helper()
	cmd := exec.Command(loreBin, args...)
	cmd.Env = testEnv(b)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	p := &stdioProc{in: in, out: bufio.NewReaderSize(out, 1<<20), pid: cmd.Process.Pid}
	p.call(b, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// call sends a request and reads lines up to its answer.
func (p *stdioProc) call(b *testing.B, req string) {
	if _, err := io.WriteString(p.in, req+"\n"); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := p.out.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if strings.Contains(string(line[:min(len(line), 64)]), `"id":`) {
			return
		}
	}
}

// BenchmarkStdioGetNode times get_node round trips over stdio, through
// lore mcp --direct (which serves the session itself) and through lore mcp
// bridged to a background holder, one call of each in turn so that both
// see the same machine. It reports each p50 and what the bridge adds:
//
//	go test -run '^$' -bench StdioGetNode -benchtime 5000x ./cmd/lore
func BenchmarkStdioGetNode(b *testing.B) {
	direct := startStdioProc(b, "mcp", "--direct", "--store", newStore(b))
	store := newStore(b)
	bridged := startStdioProc(b, "mcp", "--idle", "5s", "--store", store)
	bridged.store = store
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"team/payments"}}}`
	for range 200 { // warm both up
		direct.call(b, req)
		bridged.call(b, req)
	}
	holder, err := dialHolder(b.Context(), bridged.store)
	if err != nil {
		b.Fatal(err)
	}
	pids := []int{direct.pid, bridged.pid, holder.info.PID}
	cpu0 := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuTime(b, pid)
	}
	var d, br []time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		direct.call(b, req)
		t1 := time.Now()
		bridged.call(b, req)
		d, br = append(d, t1.Sub(t0)), append(br, time.Since(t1))
	}
	b.StopTimer()
	slices.Sort(d)
	slices.Sort(br)
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	b.ReportMetric(us(d[len(d)/2]), "direct-p50-µs")
	b.ReportMetric(us(br[len(br)/2]), "bridged-p50-µs")
	b.ReportMetric(us(br[len(br)/2]-d[len(d)/2]), "added-p50-µs")
	b.ReportMetric(us(d[len(d)*99/100]), "direct-p99-µs")
	b.ReportMetric(us(br[len(br)*99/100]), "bridged-p99-µs")
	// CPU time per call of each process (user and system, at the kernel's
	// clock-tick resolution): the direct server, the bridge, the holder.
	for i, name := range []string{"direct", "bridge", "holder"} {
		b.ReportMetric(us(cpuTime(b, pids[i])-cpu0[i])/float64(b.N), name+"-cpu-µs/op")
	}
}

// cpuTime returns the CPU time a process has used (Linux: /proc/PID/stat).
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses: utime
	// and stime are the 12th and 13th of them, in clock ticks (100 a second).
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	var ut, st int64
	fmt.Sscan(f[11], &ut)
	fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// BenchmarkFanout times a write until every subscriber has heard of it:
// two lore mcp clients and an HTTP client of lore serve on one store, each
// subscribed to the node written, writing in turn:
//
//	go test -run '^$' -bench Fanout -benchtime 300x ./cmd/lore
func BenchmarkFanout(b *testing.B) {
	store := newStore(b)
	_, url := startServe(b, store, "--rate", "0")
	clients := []*client{stdioClient(b, "stdio-a", store), stdioClient(b, "stdio-b", store), httpClient(b, "http", url)}
	for _, c := range clients {
		if err := c.subscribe(b.Context(), []string{"lore://node/topic/fanout"}); err != nil {
			b.Fatal(err)
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	for i := range b.N {
		w := clients[i%len(clients)]
		t0 := time.Now()
		res, err := w.cs.CallTool(b.Context(), callUpsert("topic/fanout", fmt.Sprint("v", i)))
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", w, err, res)
		}
		var last time.Time
		for _, c := range clients {
			select {
			case u := <-c.updates():
				if u.at.After(last) {
					last = u.at
				}
			case <-time.After(10 * time.Second):
				b.Fatalf("%s did not hear of write %d", c, i)
			}
		}
		lat = append(lat, last.Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	ms := func(x time.Duration) float64 { return float64(x) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
}
