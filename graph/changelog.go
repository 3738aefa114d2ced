package graph

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"
)

// A Change is one change-log entry: everything one committed batch did.
type Change struct {
	// Seq is the entry's sequence number: 1 for the first entry, then one
	// more for each committed batch. It is never reused, even across restarts.
	Seq   uint64       `json:"seq"`
	Time  time.Time    `json:"time"`
	Op    string       `json:"op"`
	Nodes []NodeChange `json:"nodes,omitempty"`
	Edges []EdgeChange `json:"edges,omitempty"`
}

// A NodeChange is what a batch did to one node.
type NodeChange struct {
	ID       ID     `json:"id"`
	Type     string `json:"type"`
	Action   Status `json:"action"`
	Revision int64  `json:"revision"`
}

// An EdgeChange is what a batch did to one edge.
type EdgeChange struct {
	EdgeKey
	Action   Status `json:"action"`
	Revision int64  `json:"revision"`
}

// Types returns the node types the change touched, sorted.
func (c *Change) Types() []string {
	var ts []string
	for _, n := range c.Nodes {
		ts = append(ts, n.Type)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// NodeIDs returns the nodes the change touched, the endpoints of changed
// edges included (their edge counts changed), sorted.
func (c *Change) NodeIDs() []ID {
	var ids []ID
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
	}
	for _, e := range c.Edges {
		ids = append(ids, e.From, e.To)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// subscribeBatch is how many entries a subscription reads at a time.
const subscribeBatch = 256

// Subscribe delivers every change-log entry after seq, in order and with no
// gaps, until ctx is done or reading the log fails. It reads the persistent
// log, so it resumes across restarts and a slow subscriber never loses an
// entry; it wakes on each commit instead of polling. The channel is closed
// when delivery stops; the returned function then reports why (nil after
// ctx was cancelled).
func Subscribe(ctx context.Context, s Store, seq uint64) (<-chan Change, func() error) {
	ch := make(chan Change)
	var (
		mu  sync.Mutex
		err error
	)
	go func() {
		defer close(ch)
		for {
			wake := s.Changed() // before reading, so no commit goes unnoticed
			entries, e := s.Since(ctx, seq, subscribeBatch)
			if e != nil {
				if ctx.Err() == nil {
					mu.Lock()
					err = e
					mu.Unlock()
				}
				return
			}
			for _, c := range entries {
				select {
				case ch <- c:
					seq = c.Seq
				case <-ctx.Done():
					return
				}
			}
			if len(entries) == subscribeBatch {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch, func() error {
		mu.Lock()
		defer mu.Unlock()
		return err
	}
}

// notifier wakes subscribers after each commit.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) notify() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// Change-log entries are stored as JSON; an entry of a large batch (an
// import's lists every element) is compressed with DEFLATE, marked by a
// leading 'z' (JSON never starts with it).
const compressAbove = 2048

func encodeChange(c *Change) []byte {
	data, _ := json.Marshal(c)
	if len(data) < compressAbove {
		return data
	}
	var buf bytes.Buffer
	buf.WriteByte('z')
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

func decodeChange(data []byte, c *Change) error {
	if len(data) > 0 && data[0] == 'z' {
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(data[1:])))
		if err != nil {
			return err
		}
		data = raw
	}
	return json.Unmarshal(data, c)
}
