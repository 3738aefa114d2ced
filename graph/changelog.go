package graph

import (
	"bytes"
	"compress/flate"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
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
	// Truncated is set on an entry read in part (Part) when elements
	// follow those listed: read on from Part.Next.
	Truncated bool `json:"truncated,omitempty"`
	// Part is set on an entry read in part, when its lists hold fewer than
	// all of its elements. Stored entries never have it.
	Part *ChangePart `json:"part,omitempty"`
}

// A ChangePart says which elements of an entry a Change lists when it lists
// only some of them: an entry too large for a reader's byte cap is
// delivered in part, never skipped. An entry's elements are its nodes, then
// its edges, numbered from 0.
type ChangePart struct {
	// NodeCount and EdgeCount count the entry's nodes and edges.
	NodeCount int `json:"nodeCount"`
	EdgeCount int `json:"edgeCount"`
	// Offset is the number of the first element listed.
	Offset int `json:"offset"`
	// Next is the number of the first element after those listed, where
	// reading goes on; 0 when the listed elements end the entry.
	Next int `json:"next,omitempty"`
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

// OpModel is the Op of the change-log entry that records a change of the
// model in use. Such an entry lists no element: a backend commits one when
// it puts a model in use in place of another one the store had, so every
// reader of the log (another replica, a subscriber) learns of the change in
// order with the writes around it, and Model returns the new model to
// whoever has read the entry.
const OpModel = "model"

// ModelChanged reports whether the entry records a change of the model in
// use (OpModel).
func (c *Change) ModelChanged() bool {
	return c.Op == OpModel && len(c.Nodes) == 0 && len(c.Edges) == 0 && c.Part == nil
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
// ctx was cancelled). Entries are decoded one at a time as they are sent,
// so a subscriber behind a run of huge entries holds one of them at a time.
// A panic while reading (a broken store) stops delivery like an error,
// reported with its stack, instead of ending the process.
func Subscribe(ctx context.Context, s Store, seq uint64) (<-chan Change, func() error) {
	ch := make(chan Change)
	var (
		mu  sync.Mutex
		err error
	)
	go func() {
		defer close(ch)
		defer func() {
			if v := recover(); v != nil {
				mu.Lock()
				err = fmt.Errorf("reading the change log after %d panicked: %v\n%s", seq, v, debug.Stack())
				mu.Unlock()
			}
		}()
		for {
			wake := s.Changed() // before reading, so no commit goes unnoticed
			n := 0
			e := ReadLog(ctx, s, seq, func(le *LogEntry) (bool, error) {
				c, err := le.Decode(0, -1)
				if err != nil {
					return false, err
				}
				select {
				case ch <- *c:
					seq = c.Seq
				case <-ctx.Done():
					return false, nil
				}
				n++
				return n < subscribeBatch, nil
			})
			if e != nil || ctx.Err() != nil {
				if e != nil && ctx.Err() == nil {
					mu.Lock()
					err = e
					mu.Unlock()
				}
				return
			}
			if n == subscribeBatch {
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

// A Notifier wakes the waiters of Store.Changed: a backend calls Notify
// after each commit. Its zero value is not ready; use NewNotifier.
type Notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// NewNotifier returns a Notifier with no waiter.
func NewNotifier() *Notifier { return &Notifier{ch: make(chan struct{})} }

// Wait returns a channel closed at the next Notify.
func (n *Notifier) Wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// Notify closes the channel Wait returned, and starts a new one.
func (n *Notifier) Notify() {
	n.mu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.mu.Unlock()
}

// Change-log entries are stored as JSON; an entry of a large batch (an
// import's lists every element) is compressed with DEFLATE, marked by a
// leading 'z' (JSON never starts with it).
const compressAbove = 2048

// EncodeChange encodes a change-log entry as Lore stores it: JSON,
// compressed when large. DecodeChange and LogEntry read it back.
func EncodeChange(c *Change) []byte {
	bp := changeBufs.Get().(*[]byte)
	defer changeBufs.Put(bp)
	data, ok := appendChange((*bp)[:0], c)
	*bp = data
	if !ok {
		data, _ = json.Marshal(c)
	}
	if len(data) < compressAbove {
		return slices.Clone(data)
	}
	var buf bytes.Buffer
	buf.Grow(len(data)/4 + 64)
	buf.WriteByte('z')
	w := flateWriters.Get().(*flate.Writer)
	w.Reset(&buf)
	w.Write(data)
	w.Close()
	flateWriters.Put(w)
	return buf.Bytes()
}

// changeBufs holds the buffers EncodeChange encodes into.
var changeBufs = sync.Pool{New: func() any { return new([]byte) }}

// flateWriters holds EncodeChange's compressors: each one is some 600 KB
// of state to allocate and clear.
var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// appendChange appends c as json.Marshal encodes it, without reflection:
// an import's entries list every element of their batch. It returns false
// for what it leaves to json.Marshal: an entry read in part, a time
// MarshalJSON refuses, invalid UTF-8.
func appendChange(dst []byte, c *Change) ([]byte, bool) {
	if c.Part != nil {
		return dst, false
	}
	t, err := c.Time.MarshalJSON()
	if err != nil {
		return dst, false
	}
	ok := true
	str := func(s string) {
		if ok {
			dst, ok = appendQuoted(dst, s, true)
		}
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, c.Seq, 10)
	dst = append(dst, `,"time":`...)
	dst = append(dst, t...)
	dst = append(dst, `,"op":`...)
	str(c.Op)
	if len(c.Nodes) > 0 {
		dst = append(dst, `,"nodes":[`...)
		for i, n := range c.Nodes {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"id":`...)
			str(string(n.ID))
			dst = append(dst, `,"type":`...)
			str(n.Type)
			dst = append(dst, `,"action":`...)
			str(string(n.Action))
			dst = append(dst, `,"revision":`...)
			dst = strconv.AppendInt(dst, n.Revision, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(c.Edges) > 0 {
		dst = append(dst, `,"edges":[`...)
		for i, e := range c.Edges {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"from":`...)
			str(string(e.From))
			dst = append(dst, `,"label":`...)
			str(e.Label)
			dst = append(dst, `,"to":`...)
			str(string(e.To))
			if e.Key != "" {
				dst = append(dst, `,"key":`...)
				str(e.Key)
			}
			dst = append(dst, `,"action":`...)
			str(string(e.Action))
			dst = append(dst, `,"revision":`...)
			dst = strconv.AppendInt(dst, e.Revision, 10)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if c.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	return append(dst, '}'), ok
}

// DecodeChange decodes what EncodeChange returned into c.
func DecodeChange(data []byte, c *Change) error {
	if len(data) > 0 && data[0] == 'z' {
		raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(data[1:])))
		if err != nil {
			return err
		}
		data = raw
	}
	return json.Unmarshal(data, c)
}

// A LogEntry is one change-log entry as stored, not yet decoded: Decode
// reads as much of it as a reader can take.
type LogEntry struct {
	Seq  uint64
	data []byte
}

// NewLogEntry returns the entry of sequence number seq whose data is what
// EncodeChange returned for it, for a backend's ReadRawLog (see LogReader).
func NewLogEntry(seq uint64, data []byte) LogEntry { return LogEntry{Seq: seq, data: data} }

// Size returns the entry's stored size in bytes (compressed if large).
func (e *LogEntry) Size() int { return len(e.data) }

// Decode decodes the entry, keeping its elements (nodes, then edges) from
// offset on for as long as their JSON encodings, each with one byte for a
// separating comma, fit in budget bytes; a negative budget keeps every
// element. Elements are kept in order with no gap: after the first element
// that does not fit, none is kept. The elements not kept are counted, not
// held, so decoding a huge entry costs memory in proportion to what is
// kept. When fewer than all elements are kept the Change has Part (and
// Truncated when elements follow those kept). An offset past the entry's
// last element is ErrInvalid.
func (e *LogEntry) Decode(offset, budget int) (*Change, error) {
	if offset == 0 && budget < 0 {
		var c Change
		if err := DecodeChange(e.data, &c); err != nil {
			return nil, fmt.Errorf("change %d: corrupt entry: %w", e.Seq, err)
		}
		return &c, nil
	}
	c, err := decodePart(e.data, offset, budget, false)
	if err != nil {
		return nil, fmt.Errorf("change %d: %w", e.Seq, err)
	}
	return c, nil
}

// DecodeWhole decodes the entry if all its elements fit in budget bytes, as
// Decode counts them, and returns nil if they do not. It stops reading at
// the first element that does not fit.
func (e *LogEntry) DecodeWhole(budget int) (*Change, error) {
	c, err := decodePart(e.data, 0, budget, true)
	if err != nil {
		return nil, fmt.Errorf("change %d: %w", e.Seq, err)
	}
	return c, nil
}

// readLimit bounds the stored bytes ReadLog copies out of one read
// transaction (at least one entry is copied, whatever its size).
const readLimit = 256 << 10

// ReadLog calls fn with each change-log entry after seq, oldest first,
// until fn returns false or an error, or the log ends. Entries reach fn
// undecoded; fn runs outside the store's transactions and may read the
// store.
func ReadLog(ctx context.Context, s Store, seq uint64, fn func(*LogEntry) (bool, error)) error {
	return readLog(ctx, s, seq, false, fn)
}

// ReadLogNewest calls fn with each change-log entry, newest first, until fn
// returns false or an error, or the log's start.
func ReadLogNewest(ctx context.Context, s Store, fn func(*LogEntry) (bool, error)) error {
	return readLog(ctx, s, math.MaxUint64, true, fn)
}

func readLog(ctx context.Context, s Store, seq uint64, newest bool, fn func(*LogEntry) (bool, error)) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var batch []LogEntry
		var err error
		if r, ok := s.(LogReader); ok {
			batch, err = r.ReadRawLog(ctx, seq, newest, readLimit)
		} else {
			batch, err = sinceRaw(ctx, s, seq, newest)
		}
		if err != nil || len(batch) == 0 {
			return err
		}
		for i := range batch {
			more, err := fn(&batch[i])
			if err != nil || !more {
				return err
			}
			batch[i].data = nil // let it go while the rest is read
		}
		last := batch[len(batch)-1].Seq
		if newest {
			if last <= 1 {
				return nil
			}
			seq = last - 1
		} else {
			if last == math.MaxUint64 {
				return nil
			}
			seq = last
		}
	}
}

// sinceRaw reads one entry through Store.Since, for stores that do not
// implement LogReader.
func sinceRaw(ctx context.Context, s Store, seq uint64, newest bool) ([]LogEntry, error) {
	if newest {
		st, err := s.Stats(ctx)
		if err != nil {
			return nil, err
		}
		if seq > st.LastSeq {
			seq = st.LastSeq
		}
		if seq == 0 {
			return nil, nil
		}
		seq-- // Since reads after seq
	} else if seq == math.MaxUint64 {
		return nil, nil
	}
	chs, err := s.Since(ctx, seq, 1)
	if err != nil || len(chs) == 0 {
		return nil, err
	}
	data, err := json.Marshal(&chs[0])
	return []LogEntry{{Seq: chs[0].Seq, data: data}}, err
}

// A cut chooses the elements of an entry to keep: from offset on, in
// order, while their encodings fit in budget bytes (no limit if negative).
type cut struct {
	offset, budget int
	n              int  // elements seen
	used           int  // bytes kept
	stopped        bool // an element did not fit, so none after it is kept
	next           int  // that element
}

// keep reports whether to keep the next element, whose JSON encoding
// takes size bytes.
func (c *cut) keep(size int) bool {
	i := c.n
	c.n++
	if i < c.offset || c.stopped {
		return false
	}
	if c.budget >= 0 && c.used+size+1 > c.budget {
		c.stopped, c.next = true, i
		return false
	}
	c.used += size + 1
	return true
}

// full reports whether an element did not fit, so none after it is kept:
// the rest need only be counted.
func (c *cut) full() bool { return c.stopped }

// finish sets the change's Part and Truncated once every element was seen.
func (c *cut) finish(ch *Change, nodes, edges int) error {
	if c.offset > 0 && c.offset >= nodes+edges {
		return fmt.Errorf("offset %d is past the entry's last element (it has %d nodes and %d edges): %w", c.offset, nodes, edges, ErrInvalid)
	}
	if c.offset == 0 && !c.stopped {
		return nil
	}
	ch.Part = &ChangePart{NodeCount: nodes, EdgeCount: edges, Offset: c.offset, Next: c.next}
	ch.Truncated = c.stopped
	return nil
}

// Cut returns the part of c a reader with budget bytes for its elements
// gets, as LogEntry.Decode would decode it from the log: the elements
// (nodes, then edges) from offset on while their encodings fit, with Part
// and Truncated when fewer than all are kept. c is not changed; the result
// shares nothing with it but strings.
func (c *Change) Cut(offset, budget int) (*Change, error) {
	out := &Change{Seq: c.Seq, Time: c.Time, Op: c.Op}
	k := cut{offset: offset, budget: budget}
	size := func(v any) int {
		if k.full() || k.n < offset {
			return 0 // not kept whatever its size
		}
		data, _ := json.Marshal(v)
		return len(data)
	}
	for i := range c.Nodes {
		if k.keep(size(&c.Nodes[i])) {
			out.Nodes = append(out.Nodes, c.Nodes[i])
		}
	}
	for i := range c.Edges {
		if k.keep(size(&c.Edges[i])) {
			out.Edges = append(out.Edges, c.Edges[i])
		}
	}
	if err := k.finish(out, len(c.Nodes), len(c.Edges)); err != nil {
		return nil, fmt.Errorf("change %d: %w", c.Seq, err)
	}
	return out, nil
}

// decodePart decodes a stored entry as Decode describes, streaming: an
// element not kept is scanned and counted, never decoded. With whole, it
// returns nil as soon as an element does not fit.
func decodePart(data []byte, offset, budget int, whole bool) (*Change, error) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) > 0 && data[0] == 'z' {
		r = flate.NewReader(bytes.NewReader(data[1:]))
	}
	d := jsontext.NewDecoder(r)
	ch := &Change{}
	k := cut{offset: offset, budget: budget}
	corrupt := func(err error) (*Change, error) { return nil, fmt.Errorf("corrupt entry: %w", err) }
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return corrupt(orErr(err, "not an object"))
	}
	nodes, edges := 0, 0
	for d.PeekKind() == '"' {
		name, err := d.ReadToken()
		if err != nil {
			return corrupt(err)
		}
		switch list := name.String(); list {
		case "nodes", "edges":
			if d.PeekKind() == 'n' {
				d.ReadToken() // null: none
				continue
			}
			if t, err := d.ReadToken(); err != nil || t.Kind() != '[' {
				return corrupt(orErr(err, list+" is not an array"))
			}
			for d.PeekKind() != ']' {
				v, err := d.ReadValue()
				if err != nil {
					return corrupt(err)
				}
				if whole && k.full() {
					return nil, nil
				}
				if list == "nodes" {
					nodes++
					if k.keep(len(v)) {
						var n NodeChange
						if err := json.Unmarshal(v, &n); err != nil {
							return corrupt(err)
						}
						ch.Nodes = append(ch.Nodes, n)
					}
				} else {
					edges++
					if k.keep(len(v)) {
						var e EdgeChange
						if err := json.Unmarshal(v, &e); err != nil {
							return corrupt(err)
						}
						ch.Edges = append(ch.Edges, e)
					}
				}
			}
			if _, err := d.ReadToken(); err != nil {
				return corrupt(err)
			}
		default:
			v, err := d.ReadValue()
			if err != nil {
				return corrupt(err)
			}
			var dst any
			switch list {
			case "seq":
				dst = &ch.Seq
			case "time":
				dst = &ch.Time
			case "op":
				dst = &ch.Op
			default:
				continue
			}
			if err := json.Unmarshal(v, dst); err != nil {
				return corrupt(err)
			}
		}
	}
	if t, err := d.ReadToken(); err != nil || t.Kind() != '}' {
		return corrupt(orErr(err, "unexpected data"))
	}
	if whole && k.full() {
		return nil, nil
	}
	if err := k.finish(ch, nodes, edges); err != nil {
		return nil, err
	}
	return ch, nil
}

// orErr returns err, or an error saying what if err is nil.
func orErr(err error, what string) error {
	if err != nil {
		return err
	}
	return errors.New(what)
}
