package graph

import (
	"bytes"
	"compress/flate"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"
)

// TestEncodeChange checks that EncodeChange stores what json.Marshal
// writes (compressed when large), whether appendChange encodes the entry
// or leaves it to json.Marshal, and that DecodeChange reads it back.
func TestEncodeChange(t *testing.T) {
	at := time.Date(2026, 12, 2, 10, 51, 27, 123456789, time.UTC)
	odd := `a<b>&c "q" \ é` + "\u2028\n\x01"
	big := &Change{Seq: 7, Time: at, Op: "import"}
	for i := range 200 {
		id := ID("service/s" + strconv.Itoa(i))
		big.Nodes = append(big.Nodes, NodeChange{ID: id, Type: "Service", Action: Created, Revision: int64(i)})
		big.Edges = append(big.Edges, EdgeChange{EdgeKey: EdgeKey{From: id, Label: "dependsOn", To: "service/s0", Key: []string{"", "k"}[i%2]}, Action: Updated, Revision: 1})
	}
	for _, c := range []*Change{
		{Seq: 1, Time: at, Op: "write"},
		{Seq: 2, Time: at.In(time.FixedZone("x", 3600)), Op: OpModel},
		{Seq: 3, Time: at, Op: odd, Nodes: []NodeChange{{ID: ID(odd), Type: odd, Action: Deleted, Revision: -1}},
			Edges: []EdgeChange{{EdgeKey: EdgeKey{From: ID(odd), Label: odd, To: "x", Key: odd}, Action: Unchanged, Revision: MaxRevision}}},
		{Seq: 4, Time: at, Op: "write", Nodes: []NodeChange{{ID: "n/1"}}, Truncated: true},
		big,
		// Left to json.Marshal.
		{Seq: 5, Time: at, Op: "write", Nodes: []NodeChange{{ID: "bad \xff"}}},
		{Seq: 6, Time: at, Op: "write", Part: &ChangePart{NodeCount: 2, Offset: 1}},
		{Seq: 8, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Op: "write"},
	} {
		want, _ := json.Marshal(c)
		if got, ok := appendChange(nil, c); ok && !bytes.Equal(got, want) {
			t.Errorf("appendChange(seq %d) = %s\njson.Marshal writes %s", c.Seq, got, want)
		}
		data := EncodeChange(c)
		if len(data) > 0 && data[0] == 'z' {
			raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(data[1:])))
			if err != nil {
				t.Fatal(err)
			}
			data = raw
		}
		if !bytes.Equal(data, want) {
			t.Errorf("EncodeChange(seq %d) stores %s\njson.Marshal writes %s", c.Seq, data, want)
		}
	}
	var back Change
	if err := DecodeChange(EncodeChange(big), &back); err != nil || len(back.Nodes) != 200 || back.Edges[199] != big.Edges[199] || !back.Time.Equal(at) {
		t.Errorf("DecodeChange(EncodeChange(big)) = %+v, %v", back.Edges[len(back.Edges)-1], err)
	}
}
