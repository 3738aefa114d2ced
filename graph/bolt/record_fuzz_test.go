package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
)

// FuzzStoreRecords: the decoders of what a store's file holds (node and
// edge records, edge summaries, change-log entries, Cayley's value
// records, log blocks and quad index blocks as the adapter keeps them)
// take any bytes without
// a panic, for the file is input too (a backup from elsewhere, a damaged
// disk), and some of them run where no handler recovers (a load's fold of
// its summaries runs on a goroutine of its own). What decodes encodes back
// to bytes that decode to the same.
func FuzzStoreRecords(f *testing.F) {
	summary := encodeDeg([]degEntry{{"dependsOn", 'o', 3}, {"dependsOn", 'i', 70000}, {"about", 'i', 1}})
	node := nodeRec{NodeRecord: graph.NodeRecord{Type: "Service", Created: 1e18, Updated: 1e18 + 5, Rev: 2,
		Props: []byte(`{"name":"a"}`)}, Deg: summary}
	edge := edgeRec{Created: 1e18, Updated: 1e18 + 9, Rev: 4, Props: []byte(`{"kind":"sync"}`)}
	change := &graph.Change{Seq: 3, Time: time.Unix(1e9, 0).UTC(), Op: "import"}
	for i := range 300 { // compressed: an entry this large is
		change.Nodes = append(change.Nodes, graph.NodeChange{ID: graph.ID(fmt.Sprintf("service/s%d", i)), Type: "Service", Action: graph.Created, Revision: 1})
	}
	for _, seed := range [][]byte{node.encode(), encodeEdge(&edge), summary, graph.EncodeChange(change),
		graph.EncodeChange(&graph.Change{Seq: 1, Op: "write", Nodes: change.Nodes[:2]}), {nodeRecordV1, 1, 'T', 2, 2, 2},
		valueRecord([]byte{0x81, 1}, []byte{3}), {0, 7}, {5},
		appendLogEntry(appendLogEntry(nil, 0, []byte("\b\x01B\x03\x1a\x01a")), 5, []byte{8, 2, 16, 1}),
		{1, 7, 3, 2, 9, 10}} {
		f.Add(seed, int16(0), int16(-1))
		f.Add(seed, int16(1), int16(40))
	}
	f.Fuzz(func(t *testing.T, data []byte, offset, budget int16) {
		if r, err := decodeNodeRec(data); err == nil {
			again, err := decodeNodeRec(r.encode())
			if err != nil || again.Type != r.Type || again.Created != r.Created || again.Updated != r.Updated || again.Rev != r.Rev ||
				!bytes.Equal(again.Deg, r.Deg) || !bytes.Equal(again.Props, r.Props) {
				t.Fatalf("node record %q decodes to %+v, which encodes to one that decodes to %+v, %v", data, r, again, err)
			}
			if typ, err := decodeNodeType(data); err != nil || typ != r.Type {
				t.Fatalf("node record %q has type %q; decodeNodeType says %q, %v", data, r.Type, typ, err)
			}
		} else if _, err := decodeNodeType(data); err == nil {
			if _, err := parseNodeRec(data); err == nil {
				t.Fatalf("node record %q: parseNodeRec takes what decodeNodeRec refuses", data)
			}
		}
		if r, err := decodeEdgeRec(data); err == nil {
			again, err := decodeEdgeRec(encodeEdge(r))
			if err != nil || again.Created != r.Created || again.Updated != r.Updated || again.Rev != r.Rev || !bytes.Equal(again.Props, r.Props) {
				t.Fatalf("edge record %q decodes to %+v, which encodes to one that decodes to %+v, %v", data, r, again, err)
			}
		}
		if es, err := decodeDeg(data); err == nil {
			again, err := decodeDeg(encodeDeg(slices.Clone(es)))
			slices.SortFunc(es, degCmp)
			if err != nil || !slices.Equal(again, es) {
				t.Fatalf("summary %q decodes to %v, which encodes to one that decodes to %v, %v", data, es, again, err)
			}
		}
		// A fold adds and takes away edges, and refuses a count below zero.
		_, _, _ = foldSummary("n", data, []degEntry{{"dependsOn", 'o', -1}, {"about", 'i', 2}}, make([]degEntry, 0, 2))
		// A value record that reads has its parts, each set on its own.
		if id, err := valuePart(data, 'v'); err == nil {
			count, err := valuePart(data, 'n')
			if err != nil {
				t.Fatalf("value record %x: its ID reads, its count fails: %v", data, err)
			}
			for _, p := range []struct {
				part     byte
				val, not []byte
			}{{'v', id, count}, {'n', count, id}} {
				rec, err := withValuePart(data, p.part, nil)
				if err != nil {
					t.Fatalf("value record %x without %c: %v", data, p.part, err)
				}
				if got, _ := valuePart(rec, p.part); got != nil {
					t.Fatalf("value record %x without %c still has it: %x", data, p.part, got)
				}
				other := byte('n' + 'v' - p.part)
				if got, _ := valuePart(rec, other); !bytes.Equal(got, p.not) {
					t.Fatalf("value record %x without %c: %c is %x, was %x", data, p.part, other, got, p.not)
				}
				if p.val == nil {
					continue
				}
				back, err := withValuePart(rec, p.part, p.val)
				if got, _ := valuePart(back, p.part); err != nil || !bytes.Equal(got, p.val) {
					t.Fatalf("value record %x: %c set back reads %x, %v; want %x", data, p.part, got, err, p.val)
				}
			}
		}
		// A log block that reads takes a set and a delete at any offset,
		// and keeps its other entries.
		entries := map[byte][]byte{}
		if eachLogEntry(data, func(off byte, v []byte) bool { entries[off] = v; return true }) == nil {
			off := byte(offset) % logSpan
			set, err := logBlockSet(data, off, []byte{byte(budget)}, false)
			if err != nil {
				t.Fatalf("log block %x: set %d: %v", data, off, err)
			}
			gone, err := logBlockSet(data, off, nil, true)
			if err != nil {
				t.Fatalf("log block %x: delete %d: %v", data, off, err)
			}
			for o := range byte(logSpan) {
				got, err1 := logBlockGet(set, o)
				del, err2 := logBlockGet(gone, o)
				want := entries[o]
				if o == off {
					want = []byte{byte(budget)}
				}
				if err1 != nil || err2 != nil || !bytes.Equal(got, want) || o == off && del != nil || o != off && !bytes.Equal(del, entries[o]) {
					t.Fatalf("log block %x: at %d after a set of %d: %x (%v), after its delete: %x (%v)", data, o, off, got, err1, del, err2)
				}
			}
		}
		// A quad index block that reads encodes to blocks that read back
		// to its entries.
		first := binary.BigEndian.AppendUint64(make([]byte, 16, 24), uint64(offset)<<20)
		if es, err := decodeOPSBlock(first, data); err == nil {
			var again []opsEntry
			err := encodeOPSBlocks(first[:opsGroupLen], es, func(k, v []byte) error {
				part, err := decodeOPSBlock(k, v)
				again = append(again, part...)
				return err
			})
			if err != nil || !slices.EqualFunc(es, again, func(a, b opsEntry) bool { return a.s == b.s && bytes.Equal(a.list, b.list) }) {
				t.Fatalf("quad index block %x: %v, encoded again %v (%v)", data, es, again, err)
			}
		}
		var c graph.Change
		_ = graph.DecodeChange(data, &c)
		e := graph.NewLogEntry(1, data)
		_, _ = e.Decode(int(offset), int(budget))
	})
}
