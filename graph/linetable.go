package graph

// A lineTable maps the 64-bit hashes of an import's element keys to the
// line each was first read at (tracker.seen): an open-addressing table
// whose slot holds a hash and its line side by side, so that a lookup
// touches one slot (at 1M nodes the tracker's lookups into a Go map, then
// its insertions, were 3.2 s of the load's CPU: a cache miss each, and
// two walks for a new key). The hashes come from maphash, so their low
// bits place them.
type lineTable struct {
	slots []lineSlot // a power of two long
	n     int
}

// A lineSlot is empty where line1 is 0: it holds a line plus one.
type lineSlot struct {
	h     uint64
	line1 int64
}

// see returns the line h was first seen at, or adds h at line and returns
// false if t does not hold it.
func (t *lineTable) see(h uint64, line int64) (first int64, again bool) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.line1 == 0:
			s.h, s.line1 = h, line+1
			t.n++
			return 0, false
		case s.h == h:
			return s.line1 - 1, true
		}
	}
}

// has reports whether t holds h.
func (t *lineTable) has(h uint64) bool {
	if t.n == 0 {
		return false
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s := &t.slots[i]; {
		case s.line1 == 0:
			return false
		case s.h == h:
			return true
		}
	}
}

// set records h at line, whether t held it or not.
func (t *lineTable) set(h uint64, line int64) {
	if _, again := t.see(h, line); again {
		mask := uint64(len(t.slots) - 1)
		i := h & mask
		for t.slots[i].h != h || t.slots[i].line1 == 0 {
			i = (i + 1) & mask
		}
		t.slots[i].line1 = line + 1
	}
}

// grow doubles the table (from 1024 slots) and places every hash again.
func (t *lineTable) grow() {
	old := t.slots
	t.slots = make([]lineSlot, max(2*len(old), 1024))
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.line1 == 0 {
			continue
		}
		i := s.h & mask
		for t.slots[i].line1 != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}
