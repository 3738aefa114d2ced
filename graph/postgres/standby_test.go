//go:build unix

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/graph/postgres"
	"github.com/lore-dev/lore/graph/postgres/pgtest"
)

// TestReadsFromStandby starts a hot standby of the test server
// (pg_basebackup, a second postgres on another loopback port) and shows,
// for Stores opened with ReadURL on it: reads are served by the standby;
// a client reads its own writes (waiting for the replay, or from the
// primary when the standby lags past ReadWait), also through another
// replica given the write's sequence number; Changed follows the
// standby's replay; and a Store survives the standby's restart, reading
// from the primary meanwhile and from the standby again after.
func TestReadsFromStandby(t *testing.T) {
	url := pgtest.NewDatabase(t)
	primary := open(t, url) // creates the schema before the base backup
	sb := pgtest.NewStandby(t)
	sb.WaitReplayed(url)
	ctx := t.Context()
	openRead := func(wait time.Duration) *postgres.Store {
		s, err := postgres.Open(ctx, postgres.Config{URL: url, ReadURL: sb.URL(url), ReadWait: wait, PollMax: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// patient waits for the standby as long as a test may take: its
	// reads must be served there. hasty gives up at once.
	patient, hasty := openRead(time.Minute), openRead(time.Millisecond)

	// Read-your-writes through the standby: the write raises the
	// session's floor, and the read waits until the standby replayed it.
	session := graph.WithSeqFloor(ctx, new(graph.SeqFloor))
	hastyFirst := hasty.Changed() // closed once hasty announces this write
	res, err := patient.Apply(session, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/one", "one")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := graph.MinSeq(session); got != res.Seq {
		t.Fatalf("after the write (seq %d) the session's floor is %d", res.Seq, got)
	}
	if _, err := patient.Node(session, "topic/one"); err != nil {
		t.Fatalf("reading the session's own write: %v", err)
	}
	if c := patient.ReadCounts(); c.Standby != 1 || c.Behind+c.Failed != 0 {
		t.Fatalf("the read was not served by the standby: %+v", c)
	}
	// The standby sees the Store's connections.
	var n int
	c, err := pgx.Connect(ctx, sb.URL(url))
	if err != nil {
		t.Fatal(err)
	}
	err = c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lore-standby-reads' AND pid <> pg_backend_pid()`).Scan(&n)
	c.Close(ctx)
	if err != nil || n == 0 {
		t.Fatalf("pg_stat_activity on the standby shows %d connections of the read pools (%v)", n, err)
	}

	// hasty hears of the first write through NOTIFY and announces it once
	// the standby has replayed it: let that happen before replay pauses,
	// or its late announcement would look like one of the next write.
	select {
	case <-hastyFirst:
	case <-time.After(time.Minute):
		t.Fatal("Changed did not announce the first write within a minute")
	}
	// Replay paused: reads are stale (the standby serves them), except
	// those that must see a write, which the primary then serves.
	sb.Exec(url, "SELECT pg_wal_replay_pause()")
	changed := hasty.Changed()
	other := graph.WithSeqFloor(ctx, new(graph.SeqFloor))
	res2, err := hasty.Apply(other, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/two", "two")}})
	if err != nil {
		t.Fatal(err)
	}
	before := hasty.ReadCounts()
	if _, err := hasty.Node(ctx, "topic/two"); !errors.Is(err, graph.ErrNotFound) {
		t.Fatalf("with the standby's replay paused, a read without a floor found the new node (%v): it was not served by the standby", err)
	}
	if _, err := hasty.Node(other, "topic/two"); err != nil {
		t.Fatalf("with the standby's replay paused, the writer's read: %v", err)
	}
	// Another replica, given the write's sequence number (as a client
	// carries it from one request to the next), sees it too.
	if _, err := primary.Node(graph.WithMinSeq(ctx, res2.Seq), "topic/two"); err != nil {
		t.Fatal(err)
	}
	if c := hasty.ReadCounts(); c.Standby != before.Standby+1 || c.Behind != before.Behind+1 {
		t.Fatalf("read counts went from %+v to %+v; want one read on the standby and one on the primary after waiting", before, c)
	}
	select {
	case <-changed:
		t.Fatal("Changed fired while the standby had not replayed the write")
	default:
	}
	sb.Exec(url, "SELECT pg_wal_replay_resume()")
	select {
	case <-changed:
	case <-time.After(time.Minute):
		t.Fatal("Changed did not fire within a minute of the standby resuming its replay")
	}
	if _, err := hasty.Node(ctx, "topic/two"); err != nil {
		t.Fatalf("after Changed, a read without a floor: %v", err)
	}
	chs, err := hasty.Since(ctx, res2.Seq-1, 10)
	if err != nil || len(chs) != 1 || chs[0].Seq != res2.Seq {
		t.Fatalf("after Changed, Since(%d) = %+v, %v", res2.Seq-1, chs, err)
	}

	// The standby restarts: reads and read-your-writes go on through the
	// primary, and return to the standby once it is back.
	sb.Stop()
	for i, s := range []*postgres.Store{patient, hasty} {
		before := s.ReadCounts()
		if _, err := s.Node(ctx, "topic/one"); err != nil {
			t.Fatalf("store %d, standby stopped: %v", i, err)
		}
		sess := graph.WithSeqFloor(ctx, new(graph.SeqFloor))
		if _, err := s.Apply(sess, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/down", "down")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Node(sess, "topic/down"); err != nil {
			t.Fatalf("store %d, standby stopped, reading its own write: %v", i, err)
		}
		if c := s.ReadCounts(); c.Failed < before.Failed+2 || c.Standby != before.Standby {
			t.Fatalf("store %d: with the standby stopped, read counts went from %+v to %+v", i, before, c)
		}
	}
	sb.Start()
	for i, s := range []*postgres.Store{patient, hasty} {
		before := s.ReadCounts()
		deadline := time.Now().Add(time.Minute)
		for s.ReadCounts().Standby == before.Standby {
			if time.Now().After(deadline) {
				t.Fatalf("store %d did not read from the standby again within a minute of its restart: %+v", i, s.ReadCounts())
			}
			if _, err := s.Node(ctx, "topic/down"); err != nil {
				t.Fatalf("store %d, standby restarted: %v", i, err)
			}
			waitBriefly(ctx)
		}
	}
	res3, err := patient.Apply(session, &graph.Batch{Nodes: []graph.NodeInput{topic("topic/three", "three")}})
	if err != nil {
		t.Fatal(err)
	}
	before = patient.ReadCounts()
	if n, err := patient.Node(session, "topic/three"); err != nil || n.Revision != res3.Nodes[0].Revision {
		t.Fatalf("after the restart, reading the session's write: %+v %v", n, err)
	}
	if c := patient.ReadCounts(); c.Standby != before.Standby+1 {
		t.Fatalf("after the restart, the session's read was not served by the standby: %+v then %+v", before, c)
	}
}

// waitBriefly waits 20 ms, the pace of a loop polling for a state
// another process reaches.
func waitBriefly(ctx context.Context) {
	t := time.NewTimer(20 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// BenchmarkStandby measures, interleaved in one run on a hot standby the
// benchmark starts: get-node on the primary and on the standby, and a
// write followed by the writer's read of it (read-your-writes) on a Store
// without and with ReadURL, where the read waits for the standby's replay.
//
//	go test -run '^$' -bench Standby -benchtime 1x ./graph/postgres
func BenchmarkStandby(b *testing.B) {
	url := pgtest.NewDatabase(b)
	primary := open(b, url)
	ctx := b.Context()
	const seeded = 1000
	var nodes []graph.NodeInput
	for i := range seeded {
		nodes = append(nodes, topic(fmt.Sprintf("topic/s%04d", i), "seeded"))
	}
	if _, err := primary.Apply(ctx, &graph.Batch{Nodes: nodes}); err != nil {
		b.Fatal(err)
	}
	sb := pgtest.NewStandby(b)
	sb.WaitReplayed(url)
	reader, err := postgres.Open(ctx, postgres.Config{URL: url, ReadURL: sb.URL(url)})
	if err != nil {
		b.Fatal(err)
	}
	defer reader.Close()
	const rounds = 500
	var getP, getS, rywP, rywS []time.Duration
	timed := func(lat *[]time.Duration, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*lat = append(*lat, time.Since(start))
	}
	ryw := func(s *postgres.Store, id string) func() error {
		return func() error {
			sess := graph.WithSeqFloor(ctx, new(graph.SeqFloor))
			if _, err := s.Apply(sess, &graph.Batch{Nodes: []graph.NodeInput{topic(id, "written")}}); err != nil {
				return err
			}
			_, err := s.Node(sess, graph.ID(id))
			return err
		}
	}
	for b.Loop() {
		getP, getS, rywP, rywS = nil, nil, nil, nil
		for i := range rounds {
			id := graph.ID(fmt.Sprintf("topic/s%04d", i*7%seeded))
			timed(&getP, func() error { _, err := primary.Node(ctx, id); return err })
			timed(&getS, func() error { _, err := reader.Node(ctx, id); return err })
			timed(&rywP, ryw(primary, fmt.Sprintf("topic/p%d-%d", b.N, i)))
			timed(&rywS, ryw(reader, fmt.Sprintf("topic/r%d-%d", b.N, i)))
		}
	}
	c := reader.ReadCounts()
	gp, gs, wp, ws := p50(getP), p50(getS), p50(rywP), p50(rywS)
	b.ReportMetric(ms(gp), "get-primary-p50-ms")
	b.ReportMetric(ms(gs), "get-standby-p50-ms")
	b.ReportMetric(float64(gs)/float64(gp), "standby/primary-get")
	b.ReportMetric(ms(wp), "write+read-primary-p50-ms")
	b.ReportMetric(ms(ws), "write+read-standby-p50-ms")
	b.ReportMetric(float64(ws)/float64(wp), "standby/primary-write+read")
	b.Logf("reads on the standby %d, on the primary after ReadWait %d, on the primary while the standby failed %d", c.Standby, c.Behind, c.Failed)
}
