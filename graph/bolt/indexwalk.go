package bolt

import (
	"bytes"
	"context"

	"go.etcd.io/bbolt"

	"github.com/lore-dev/lore/graph"
)

// WalkIndex returns a stretch of a property index, ascending or
// descending by value and ascending by ID within a value, from one read
// transaction. A descending walk reads the entries of each value that
// has few backwards, and those of a value shared by many nodes forwards
// from its first key (see desc).
func (s *Store) WalkIndex(ctx context.Context, w graph.IndexWalk) ([]graph.IndexEntry, error) {
	if _, err := graph.IndexedType(s.Model(), w.Type, w.Property); err != nil {
		return nil, err
	}
	iw := indexWalk{IndexWalk: w, prefix: propPrefix(w.Type, w.Property), limit: w.Size()}
	err := s.read(func(tx *bbolt.Tx) error {
		iw.c = newPackedCursor(tx.Bucket(bProp))
		if w.Desc {
			iw.desc()
		} else {
			iw.asc()
		}
		return iw.c.err
	})
	if err != nil {
		return nil, err
	}
	if iw.out == nil {
		iw.out = []graph.IndexEntry{}
	}
	return iw.out, nil
}

type indexWalk struct {
	graph.IndexWalk
	prefix []byte
	limit  int
	c      *packedCursor // keys valid until its next move
	out    []graph.IndexEntry
}

// split returns the value and ID of an index key of the walk's index, or
// ok false for a key past it.
func (w *indexWalk) split(k []byte) (val []byte, id graph.ID, ok bool) {
	if k == nil || !bytes.HasPrefix(k, w.prefix) {
		return nil, "", false
	}
	rest := k[len(w.prefix):]
	n := graph.IndexValueLen(rest)
	return rest[:n], graph.ID(rest[n:]), true
}

func (w *indexWalk) emit(val []byte, id graph.ID) bool {
	w.out = append(w.out, graph.IndexEntry{Value: bytes.Clone(val), ID: id})
	return len(w.out) < w.limit
}

func (w *indexWalk) key(val []byte, id graph.ID) []byte {
	k := append(bytes.Clone(w.prefix), val...)
	return append(k, id...)
}

// asc walks up from the later of From and the position after AfterValue.
func (w *indexWalk) asc() {
	start := w.prefix
	if w.From != nil {
		start = w.key(w.From, "")
	}
	var after []byte
	if w.AfterValue != nil {
		after = w.key(w.AfterValue, w.AfterID)
		if bytes.Compare(after, start) > 0 {
			start = after
		}
	}
	k := w.c.Seek(start)
	if after != nil && bytes.Equal(k, after) {
		k = w.c.Next()
	}
	for ; ; k = w.c.Next() {
		val, id, ok := w.split(k)
		if !ok || w.To != nil && bytes.Compare(val, w.To) >= 0 {
			return
		}
		if w.From != nil && bytes.Compare(val, w.From) < 0 {
			continue // a value that is a proper prefix of From sorts after its key
		}
		if !w.emit(val, id) {
			return
		}
	}
}

// backGroup is how many entries of one value a descending walk reads
// backwards before it reads them forwards from the value's first key
// instead.
const backGroup = 16

// desc walks down, a value at a time: the rest of AfterValue's entries
// first, then each lower value's. It reads a value's entries backwards
// from its last key and emits them in ascending ID order, so an index of
// values with a few entries each is read key after key; a value with
// more than backGroup entries is read forwards from its first key (a
// seek), so that a value shared by many nodes costs a seek, not a read
// of all its entries.
func (w *indexWalk) desc() {
	below := w.To // the values still to read are below it (nil: all)
	if w.AfterValue != nil {
		switch {
		case w.From != nil && bytes.Compare(w.AfterValue, w.From) < 0:
			return // past the walk's end
		case w.To == nil || bytes.Compare(w.AfterValue, w.To) < 0:
			if !w.group(w.AfterValue, w.AfterID) {
				return
			}
			below = w.AfterValue
		}
	}
	k := w.lastKeyBelow(below)
	var ids []graph.ID
	for {
		val, _, ok := w.split(k)
		if !ok || w.From != nil && bytes.Compare(val, w.From) < 0 {
			return
		}
		val = bytes.Clone(val)
		ids = ids[:0]
		for {
			v, id, ok := w.split(k)
			if !ok || !bytes.Equal(v, val) {
				break // k is the last key of the next lower value, or past the index
			}
			if len(ids) == backGroup {
				if !w.group(val, "") {
					return
				}
				k = w.lastKeyBelow(val)
				ids = nil
				break
			}
			ids = append(ids, id)
			k = w.c.Prev()
		}
		for i := len(ids) - 1; i >= 0; i-- {
			w.out = append(w.out, graph.IndexEntry{Value: val, ID: ids[i]})
			if len(w.out) == w.limit {
				return
			}
		}
	}
}

// group emits val's entries after the ID after ("" for all), ascending,
// and reports whether the walk wants more.
func (w *indexWalk) group(val []byte, after graph.ID) bool {
	first := w.key(val, after)
	k := w.c.Seek(first)
	if after != "" && bytes.Equal(k, first) {
		k = w.c.Next()
	}
	for ; ; k = w.c.Next() {
		v, id, ok := w.split(k)
		if !ok || !bytes.Equal(v, val) {
			return true
		}
		if !w.emit(v, id) {
			return false
		}
	}
}

// lastKeyBelow returns the last key of the greatest value in the index
// below x (nil: the greatest value), comparing values bytewise, or a key
// past the index (nil, or one without its prefix) when there is none.
func (w *indexWalk) lastKeyBelow(x []byte) []byte {
	if x == nil {
		return w.lastWith(w.prefix)
	}
	k := w.c.Seek(w.key(x, ""))
	if val, _, ok := w.split(k); ok && bytes.Compare(val, x) < 0 {
		// val is a proper prefix of x: its keys sort at and after x's.
		return w.lastWith(w.key(val, ""))
	} else if k == nil {
		k = w.c.Last()
	} else {
		k = w.c.Prev()
	}
	return k
}

// lastWith returns the last key that starts with p, or nil.
func (w *indexWalk) lastWith(p []byte) []byte {
	var k []byte
	if end := graph.PrefixEnd(p); end == nil {
		k = w.c.Last()
	} else if k = w.c.Seek(end); k == nil {
		k = w.c.Last()
	} else {
		k = w.c.Prev()
	}
	if !bytes.HasPrefix(k, p) {
		return nil
	}
	return k
}
