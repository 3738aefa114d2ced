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
	in  io.WriteCloser
	out *bufio.Reader
	pid int
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
// lore mcp --direct (which serves the session itself), through lore mcp
// handed over to a background holder (attached: the default where stdin
// and stdout are pipes) and through lore mcp --relay on the same holder,
// one call of each in turn so that all see the same machine. It reports
// each p50 and what each bridge adds to the direct one:
//
//	go test -run '^$' -bench StdioGetNode -benchtime 5000x ./cmd/lore
func BenchmarkStdioGetNode(b *testing.B) {
	direct := startStdioProc(b, "mcp", "--direct", "--store", newStore(b))
	store := newStore(b)
	attached := startStdioProc(b, "mcp", "--idle", "5s", "--store", store)
	relayed := startStdioProc(b, "mcp", "--idle", "5s", "--relay", "--store", store)
	procs := []*stdioProc{direct, attached, relayed}
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_node","arguments":{"id":"team/payments"}}}`
	for range 200 { // warm them up
		for _, p := range procs {
			p.call(b, req)
		}
	}
	holder, err := dialHolder(b.Context(), store)
	if err != nil {
		b.Fatal(err)
	}
	pids := []int{direct.pid, attached.pid, relayed.pid, holder.info.PID}
	cpu0 := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuTime(b, pid)
	}
	times := make([][]time.Duration, len(procs))
	b.ResetTimer()
	for range b.N {
		for i, p := range procs {
			t0 := time.Now()
			p.call(b, req)
			times[i] = append(times[i], time.Since(t0))
		}
	}
	b.StopTimer()
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	p50 := make([]time.Duration, len(procs))
	for i, name := range []string{"direct", "attached", "relayed"} {
		slices.Sort(times[i])
		p50[i] = times[i][len(times[i])/2]
		b.ReportMetric(us(p50[i]), name+"-p50-µs")
		b.ReportMetric(us(times[i][len(times[i])*99/100]), name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(us(p50[i]-p50[0]), name+"-added-p50-µs")
		}
	}
	// CPU time per call of each process (user and system, at the kernel's
	// clock-tick resolution): the direct server, the two lore mcp, and the
	// holder (which serves both bridged sessions: per call of either).
	for i, name := range []string{"direct", "attached-bridge", "relay-bridge", "holder"} {
		n := float64(b.N)
		if name == "holder" {
			n *= 2
		}
		b.ReportMetric(us(cpuTime(b, pids[i])-cpu0[i])/n, name+"-cpu-µs/op")
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
