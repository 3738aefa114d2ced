package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	cgraph "github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// A quadLoad writes Cayley's part of a bulk load's commits itself, in
// Cayley's layout, instead of through Cayley's ApplyDeltas. A bulk load
// into an empty store only adds quads, and Cayley's writer spends most of
// its time finding out what a load already knows: it looks up each
// value's ID and reference count in bbolt, checks each new quad against
// its indexes and log, and reads each index entry before appending to it
// (at 100k nodes, its own work was 12.5 s of a 32 s load; see
// BenchmarkLoad). A quadLoad keeps every value the load has written in a
// map (the store held none when it began), with its ID and reference
// count, and the ID horizon and quad count, so a commit only writes:
//
//   - each new value: its ID (bucket "v"), its primitive (Cayley's log);
//   - each value the commit refers to: its reference count ("n");
//   - each quad: its primitive in the log, its ID appended to the entry
//     of each of Cayley's quad indexes (read, then written, as Cayley does);
//   - Cayley's meta: the ID horizon and the quad count.
//
// These are the keys and values Cayley's writer would write, up to the
// order in which IDs are given out (values first, then quads, per commit,
// with Cayley; in order of first use here) and the timestamps: Cayley
// writes one into each primitive and never reads it, and a quadLoad
// leaves it out (ten of the 34 bytes of a quad's log entry);
// TestQuadLoadMatchesCayley compares the two, decoded. The quads of one
// commit are new: the planner adds a quad only for an element the store
// lacks, which Cayley's duplicate check would otherwise confirm.
//
// A commit that removes a quad goes to Cayley's ApplyDeltas, and the load
// drops its quadLoad: from then on Cayley writes, reading what the
// quadLoad wrote from bbolt. A commit that fails drops it too (the maps
// would hold what bbolt rolled back).
type quadLoad struct {
	values  map[refs.ValueHash]*loadValue
	horizon uint64 // the last ID given out
	size    int64  // quads
	indexes []quadIndex
	commits uint64 // the commits written
	buf     []kvOp // a commit's writes, reused
}

type loadValue struct {
	id   uint64
	refs uint64
	// touched is the number of the last commit that changed refs.
	touched uint64
}

// A quadIndex is one of Cayley's quad indexes: its bucket and the
// directions its keys list, in order.
type quadIndex struct {
	bucket []byte
	dirs   []quad.Direction
}

var (
	cayleyMeta       = []byte("meta")
	cayleyLogBucket  = []byte("log")
	cayleyHorizon    = []byte("horizon")
	cayleySize       = []byte("size")
	cayleyIndexesKey = []byte("indexes")
)

// newQuadLoad returns a quadLoad for a bulk load into the store in tx, or
// nil if Cayley's part of the store is not empty (the map would not know
// its values) or its layout is not the one a quadLoad writes.
func newQuadLoad(tx *bbolt.Tx) *quadLoad {
	for _, name := range [][]byte{bValueIDs, bValueRefs, cayleyLogBucket} {
		b := tx.Bucket(name)
		if b == nil {
			return nil
		}
		if k, _ := b.Cursor().First(); k != nil {
			return nil
		}
	}
	meta := tx.Bucket(cayleyMeta)
	if meta == nil {
		return nil
	}
	var inds []ckv.QuadIndex
	if err := json.Unmarshal(meta.Get(cayleyIndexesKey), &inds); err != nil || len(inds) == 0 {
		return nil
	}
	l := &quadLoad{values: map[refs.ValueHash]*loadValue{}}
	for _, ind := range inds {
		if ind.Unique || len(ind.Dirs) == 0 {
			return nil
		}
		name := make([]byte, len(ind.Dirs))
		for i, d := range ind.Dirs {
			name[i] = d.Prefix()
		}
		if tx.Bucket(name) == nil {
			return nil
		}
		l.indexes = append(l.indexes, quadIndex{bucket: name, dirs: ind.Dirs})
	}
	if v := meta.Get(cayleyHorizon); len(v) == 8 {
		l.horizon = binary.LittleEndian.Uint64(v)
	}
	if v := meta.Get(cayleySize); len(v) == 8 {
		l.size = int64(binary.LittleEndian.Uint64(v))
	}
	return l
}

// addsOnly reports whether deltas only add quads.
func addsOnly(deltas []cgraph.Delta) bool {
	for _, d := range deltas {
		if d.Action != cgraph.Add {
			return false
		}
	}
	return true
}

// write writes the quads deltas adds, in Cayley's layout, into tx. Every
// delta adds.
func (l *quadLoad) write(tx *bbolt.Tx, deltas []cgraph.Delta) error {
	l.commits++
	commit := l.commits
	ops := l.buf[:0]
	var touched []*loadValue
	var hashes []refs.ValueHash
	lists := make([]map[string][]uint64, len(l.indexes))
	for i := range lists {
		lists[i] = map[string][]uint64{}
	}
	var p cproto.Primitive
	for _, d := range deltas {
		p = cproto.Primitive{}
		for _, dir := range quad.Directions {
			val := d.Quad.Get(dir)
			if val == nil {
				continue
			}
			h := refs.HashOf(val)
			v := l.values[h]
			if v == nil {
				l.horizon++
				v = &loadValue{id: l.horizon}
				l.values[h] = v
				b, err := pquads.MarshalValue(val)
				if err != nil {
					return fmt.Errorf("cayley value %v: %w", val, err)
				}
				prim, err := proto.Marshal(&cproto.Primitive{ID: v.id, Value: b})
				if err != nil {
					return err
				}
				ops = append(ops,
					kvOp{bucket: bValueIDs, key: hashKey(h), val: binary.AppendUvarint(nil, v.id)},
					kvOp{bucket: cayleyLogBucket, key: binary.BigEndian.AppendUint64(nil, v.id), val: prim})
			}
			if v.touched != commit {
				v.touched = commit
				touched = append(touched, v)
				hashes = append(hashes, h)
			}
			v.refs++
			p.SetDirection(dir, v.id)
		}
		l.horizon++
		p.ID = l.horizon
		ops = append(ops, kvOp{bucket: cayleyLogBucket, key: binary.BigEndian.AppendUint64(nil, p.ID), val: appendLink(nil, &p)})
		for i, ind := range l.indexes {
			key := make([]byte, 0, 8*len(ind.dirs))
			for _, dir := range ind.dirs {
				key = binary.BigEndian.AppendUint64(key, p.GetDirection(dir))
			}
			lists[i][string(key)] = append(lists[i][string(key)], p.ID)
		}
	}
	for i, v := range touched {
		ops = append(ops, kvOp{bucket: bValueRefs, key: hashKey(hashes[i]), val: binary.AppendUvarint(nil, v.refs)})
	}
	for i, ind := range l.indexes {
		b := tx.Bucket(ind.bucket)
		for key, ids := range lists[i] {
			k := []byte(key)
			val := append([]byte(nil), b.Get(k)...)
			for _, id := range ids {
				val = binary.AppendUvarint(val, id)
			}
			ops = append(ops, kvOp{bucket: ind.bucket, key: k, val: val})
		}
	}
	l.size += int64(len(deltas))
	ops = append(ops,
		kvOp{bucket: cayleyMeta, key: cayleyHorizon, val: binary.LittleEndian.AppendUint64(nil, l.horizon)},
		kvOp{bucket: cayleyMeta, key: cayleySize, val: binary.LittleEndian.AppendUint64(nil, uint64(l.size))})
	for i := range ops {
		ops[i].ord = i
	}
	sortOps(ops)
	err := writeOps(tx, ops)
	clear(ops)
	l.buf = ops[:0]
	return err
}

func hashKey(h refs.ValueHash) []byte { return append([]byte(nil), h[:]...) }

// appendLink appends the encoding of a quad's primitive without a
// timestamp, as proto.Marshal writes it (fields in order, zero fields
// left out), without its reflection.
func appendLink(b []byte, p *cproto.Primitive) []byte {
	for _, f := range [...]struct {
		num protowire.Number
		v   uint64
	}{{1, p.ID}, {2, p.Subject}, {3, p.Predicate}, {4, p.Object}, {5, p.Label}} {
		if f.v != 0 {
			b = protowire.AppendTag(b, f.num, protowire.VarintType)
			b = protowire.AppendVarint(b, f.v)
		}
	}
	return b
}

// oneQuadIndex keeps one of Cayley's two quad indexes, [O,P,S], and drops
// [S,P], in a store that has both (every store Cayley initialised: they
// are its defaults). Lore reads neither to answer a query: out-edges and
// in-edges come from its own records and in-edge index. Cayley reads its
// indexes only to check that a quad it adds is new, or that one it
// removes exists, and [O,P,S] names a quad's IDs but its label, so the
// check reads a list of one quad (or one per key of a keyed edge); with
// [S,P] as well it also decoded every quad of the subject's predicate, and
// each commit that gave a node an out-edge rewrote that whole list. [S,P]
// was 12 of 229 MiB of a store of the 100k-node benchmark graph. A store
// with other indexes (not Cayley's defaults) is left as it is.
func oneQuadIndex(tx *bbolt.Tx) error {
	meta := tx.Bucket(cayleyMeta)
	if meta == nil {
		return nil
	}
	var inds []ckv.QuadIndex
	if err := json.Unmarshal(meta.Get(cayleyIndexesKey), &inds); err != nil {
		return nil // Cayley's own legacy default; left alone
	}
	sp := ckv.QuadIndex{Dirs: []quad.Direction{quad.Subject, quad.Predicate}}
	ops := ckv.QuadIndex{Dirs: []quad.Direction{quad.Object, quad.Predicate, quad.Subject}}
	if len(inds) != 2 || !equalIndex(inds[0], sp) || !equalIndex(inds[1], ops) {
		return nil
	}
	if err := tx.DeleteBucket([]byte("sp")); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
		return err
	}
	data, err := json.Marshal([]ckv.QuadIndex{ops})
	if err != nil {
		return err
	}
	return meta.Put(cayleyIndexesKey, data)
}

func equalIndex(a, b ckv.QuadIndex) bool {
	return a.Unique == b.Unique && slices.Equal(a.Dirs, b.Dirs)
}
