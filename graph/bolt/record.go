package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lore-dev/lore/graph"
)

// Records are stored with a small binary header, so that reading a node's
// type or revision (which planning does for every edge endpoint) never
// parses JSON:
//
//	node: 2, uvarint len(type), type, varint created, varint updated, uvarint revision,
//	      uvarint len(summary), edge summary (see degree.go), properties (canonical JSON)
//	edge: 2, varint created, varint updated−created, uvarint revision, properties (canonical JSON, may be empty)
//
// Node records of version 1 (store layout 2 and before) had no summary;
// they are still read, and Open rewrites them. Edge records of version 1
// held updated whole: nine bytes where the difference usually takes one,
// 4.4 of 229 MiB of the 100k-node benchmark graph's store (578,241 edges).
// They are still read, and rewritten when their edge is.
const (
	recordVersion     = 2 // edges
	edgeRecordV1      = 1 // updated whole
	nodeRecordVersion = 2
	nodeRecordV1      = 1 // without a summary
)

func nodeVersionOK(v byte) bool { return v == nodeRecordVersion || v == nodeRecordV1 }

var errCorrupt = errors.New("corrupt record")

// A nodeRec is a node record as this store keeps it: the record, and the
// node's encoded edge summary (see degree.go). The summary is not the
// node's content: the commit that writes a record sets it from the
// committed record and the commit's own edge changes.
type nodeRec struct {
	graph.NodeRecord
	Deg []byte
}

// An edgeRec is an edge record (its key is the bbolt key).
type edgeRec = graph.EdgeRecord

func (r *nodeRec) encode() []byte { return r.appendTo(make([]byte, 0, r.size())) }

// size bounds the length of r's encoding.
func (r *nodeRec) size() int {
	return 1 + binary.MaxVarintLen64*5 + len(r.Type) + len(r.Deg) + len(r.Props)
}

// appendTo appends r's encoding to b.
func (r *nodeRec) appendTo(b []byte) []byte {
	b = append(b, nodeRecordVersion)
	b = binary.AppendUvarint(b, uint64(len(r.Type)))
	b = append(b, r.Type...)
	b = binary.AppendVarint(b, r.Created)
	b = binary.AppendVarint(b, r.Updated)
	b = binary.AppendUvarint(b, uint64(r.Rev))
	b = binary.AppendUvarint(b, uint64(len(r.Deg)))
	b = append(b, r.Deg...)
	return append(b, r.Props...)
}

// decodeNodeRec decodes a node record; the result does not alias b, which
// bbolt owns only for the life of its transaction.
func decodeNodeRec(b []byte) (*nodeRec, error) {
	v, err := parseNodeRec(b)
	if err != nil {
		return nil, err
	}
	r := &nodeRec{NodeRecord: graph.NodeRecord{Type: string(v.typ), Created: v.created, Updated: v.updated, Rev: v.rev}}
	if len(v.deg) > 0 {
		r.Deg = bytes.Clone(v.deg)
	}
	r.Props = bytes.Clone(v.props)
	return r, nil
}

// A nodeView is a node record's parts as they lie in b: it aliases the
// record, so it lives no longer than the transaction that read it.
type nodeView struct {
	typ, deg, props       []byte
	created, updated, rev int64
}

// parseNodeRec splits a node record into its parts without copying them.
func parseNodeRec(b []byte) (v nodeView, err error) {
	if len(b) == 0 || !nodeVersionOK(b[0]) {
		return v, errCorrupt
	}
	version := b[0]
	b = b[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < n {
		return v, errCorrupt
	}
	v.typ = b[k : k+int(n)]
	rest, err := decodeMeta(b[k+int(n):], &v.created, &v.updated, &v.rev)
	if err != nil {
		return v, err
	}
	if version == nodeRecordVersion {
		n, k := binary.Uvarint(rest)
		if k <= 0 || uint64(len(rest)-k) < n {
			return v, errCorrupt
		}
		v.deg = rest[k : k+int(n)]
		rest = rest[k+int(n):]
	}
	v.props = rest
	return v, nil
}

// decodeNodeType reads only the type of a node record.
func decodeNodeType(b []byte) (string, error) {
	if len(b) == 0 || !nodeVersionOK(b[0]) {
		return "", errCorrupt
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || uint64(len(b)-1-k) < n {
		return "", errCorrupt
	}
	return string(b[1+k : 1+k+int(n)]), nil
}

func encodeEdge(r *edgeRec) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64*3+len(r.Props))
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, r.Created)
	b = binary.AppendVarint(b, r.Updated-r.Created) // wraps, and decoding wraps back
	b = binary.AppendUvarint(b, uint64(r.Rev))
	return append(b, r.Props...)
}

func decodeEdgeRec(b []byte) (*edgeRec, error) {
	if len(b) == 0 || b[0] != recordVersion && b[0] != edgeRecordV1 {
		return nil, errCorrupt
	}
	r := &edgeRec{}
	rest, err := decodeMeta(b[1:], &r.Created, &r.Updated, &r.Rev)
	if err != nil {
		return nil, err
	}
	if b[0] == recordVersion {
		r.Updated += r.Created
	}
	if len(rest) > 0 {
		r.Props = bytes.Clone(rest)
	}
	return r, nil
}

func decodeMeta(b []byte, created, updated, rev *int64) ([]byte, error) {
	c, k1 := binary.Varint(b)
	if k1 <= 0 {
		return nil, errCorrupt
	}
	u, k2 := binary.Varint(b[k1:])
	if k2 <= 0 {
		return nil, errCorrupt
	}
	r, k3 := binary.Uvarint(b[k1+k2:])
	if k3 <= 0 {
		return nil, errCorrupt
	}
	*created, *updated, *rev = c, u, int64(r)
	return b[k1+k2+k3:], nil
}

func corrupt(what string, err error) error {
	return fmt.Errorf("%s: %w: run lore check", what, err)
}
