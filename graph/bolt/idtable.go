package bolt

import (
	"hash/maphash"
	"strings"
)

// An idTable numbers the distinct node IDs given it, 0, 1, 2 in the order
// they first come, and finds an ID's number again. It holds no pointers:
// the IDs one after another in one slice, and an open-addressing table of
// numbers. A load keeps per-node sums for every node it writes (degTally,
// nodeRuns' types), and as a map keyed by ID each cost a string and a
// slot for the collector to mark at every cycle: at 1M nodes the
// collector's marking was an eighth of the load's CPU, most of it in
// following those pointers.
type idTable struct {
	seed   maphash.Seed
	slots  []int32  // a number + 1, 0 where empty; a power of two long
	hashes []uint64 // by number: the ID's hash
	starts []int    // by number: where the ID starts in keys; one more at the end
	keys   []byte
}

func newIDTable() *idTable {
	return &idTable{seed: maphash.MakeSeed(), starts: []int{0}}
}

// len returns how many IDs t holds.
func (t *idTable) len() int { return len(t.hashes) }

// size returns the bytes t holds.
func (t *idTable) size() int64 {
	return int64(cap(t.keys) + 4*cap(t.slots) + 8*cap(t.hashes) + 8*cap(t.starts))
}

// id returns the ID numbered i, in t's memory: the caller must not change it.
func (t *idTable) id(i int32) []byte { return t.keys[t.starts[i]:t.starts[i+1]:t.starts[i+1]] }

// find returns id's number, or false if t does not hold it.
func (t *idTable) find(id string) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	h := maphash.String(t.seed, id)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		n := t.slots[i] - 1
		if n < 0 {
			return 0, false
		}
		if t.hashes[n] == h && string(t.id(n)) == id {
			return n, true
		}
	}
}

// add returns id's number, numbering it if t does not hold it yet (added
// reports which).
func (t *idTable) add(id string) (n int32, added bool) {
	if 4*(len(t.hashes)+1) > 3*len(t.slots) {
		t.grow()
	}
	h := maphash.String(t.seed, id)
	mask := uint64(len(t.slots) - 1)
	i := h & mask
	for ; t.slots[i] != 0; i = (i + 1) & mask {
		if n := t.slots[i] - 1; t.hashes[n] == h && string(t.id(n)) == id {
			return n, false
		}
	}
	n = int32(len(t.hashes))
	t.slots[i] = n + 1
	t.hashes = append(t.hashes, h)
	t.keys = append(t.keys, id...)
	t.starts = append(t.starts, len(t.keys))
	return n, true
}

// truncate drops the IDs numbered n and up.
func (t *idTable) truncate(n int) {
	if n >= len(t.hashes) {
		return
	}
	t.hashes, t.keys, t.starts = t.hashes[:n], t.keys[:t.starts[n]], t.starts[:n+1]
	clear(t.slots)
	t.place()
}

// grow doubles the table (from 1024 slots) and places every number again.
func (t *idTable) grow() {
	t.slots = make([]int32, max(2*len(t.slots), 1024))
	t.place()
}

// place places every number in the empty slots.
func (t *idTable) place() {
	mask := uint64(len(t.slots) - 1)
	for n, h := range t.hashes {
		i := h & mask
		for t.slots[i] != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = int32(n) + 1
	}
}

// A nameTable numbers the few distinct names a load's tables share among
// many entries (labels, types), each kept once, not in the batch's memory.
type nameTable struct {
	num   map[string]int32
	names []string // by number
}

// number returns name's number, numbering it if it is new.
func (t *nameTable) number(name string) int32 {
	n, ok := t.num[name]
	if !ok {
		if t.num == nil {
			t.num = map[string]int32{}
		}
		n = int32(len(t.names))
		t.names = append(t.names, strings.Clone(name))
		t.num[t.names[n]] = n
	}
	return n
}
