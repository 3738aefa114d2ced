package graph

import (
	"math"
	"runtime/debug"
	"sync"
)

// TuneGCForImport sets this process up for an import, and returns what
// sets it back: the soft memory limit of ImportMemoryLimit (unless
// keepLimit, as when GOMEMLIMIT sets one), and on Linux transparent huge
// pages for the heap the import grows into (hugeHeap). lore import calls
// it for a bulk load, and the benchmarks load the same way. A process that
// serves others meanwhile should not call it: the settings are the
// process's.
//
// It leaves the collector's percent alone. It used to raise it to 300
// while the live heap was below 1 GiB: fewer collections, each marking
// the live heap, for a heap up to four times the live one. Once the
// load's own tables held no pointers (idTable), collections cost little,
// and in a virtual machine memory the process has not touched before
// costs most: a page the guest gave back is mapped anew by the host at
// its first touch, 1-1.5 s per GiB measured here, seconds after the
// memory was freed. Loads in new processes after such a pause, at 100k
// nodes: 2.75 and 2.75 s with the runtime's 100 against 3.84 and 4.48 s
// with 300 (0.4 s of system time against 2.3-2.5 s; 680 MB resident
// against 1.1-1.2 GB); at 1M nodes 26.2 and 28.7 s against 31.5 and
// 26.5 s.
func TuneGCForImport(keepLimit bool) (restore func()) {
	before := int64(-1)
	if !keepLimit {
		before = debug.SetMemoryLimit(ImportMemoryLimit())
	}
	// Huge pages for the heap the import grows into, up to half the
	// memory limit in effect.
	lim := debug.SetMemoryLimit(-1)
	if lim == math.MaxInt64 {
		lim = PhysicalMemory()
	}
	unhuge := hugeHeap(lim / 2)
	return sync.OnceFunc(func() {
		unhuge()
		if before >= 0 {
			debug.SetMemoryLimit(before)
		}
	})
}
