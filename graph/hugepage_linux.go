//go:build !race

package graph

import (
	"cmp"
	"runtime/debug"
	"slices"
	"sync"
	"syscall"
	"unsafe"
)

// An import's heap grows by gigabytes of fresh memory, and in a virtual
// machine each 4 KiB page of it costs a fault to map: 1.4 million faults
// and 15-21 s of system time in a load of 1M nodes. Transparent huge pages
// map 2 MiB at a fault, but where the system's setting is "madvise" (the
// kernel's default) only for memory advised MADV_HUGEPAGE, and the Go
// runtime advises none of its heap. hugeHeap reserves address ranges the
// heap grows into next and advises them: it allocates slices as large as
// the ranges, which the runtime maps fresh and does not touch, advises
// them, and lets them go; the runtime hands the ranges out again to the
// allocations after them, and the advice stays with the mappings. Measured
// on the benchmark graph, binaries interleaved: 1M nodes 32.6-36.5 s
// against 41.3-45.6 s (27k page faults against 1.4M), 100k nodes 2.1-2.9 s
// against 4.5 s.
//
// The slices are hugeChunk bytes each, not one: the runtime clears a new
// slice whole when any page of it was in use before, and one slice of
// gigabytes that began in a freed part of the heap would be cleared, and
// so mapped, whole (once in a dozen loads: 40 s and 9 GB resident).
// Chunks clear at most the freed memory the heap already holds, and a
// chunk more.

// hugeChunk is the size of the slices hugeHeap allocates.
const hugeChunk = 64 << 20

// maxHugeHeap caps the reserve: address space, not memory, but the
// runtime keeps a little bookkeeping per 4 MiB of heap it maps.
const maxHugeHeap = 64 << 30

// hugeRanges are the address ranges hugeHeap reserved: reserved once per
// process, at the first import, and advised again at each later one (new
// slices would not come fresh: the runtime would clear them).
var hugeRanges struct {
	once   sync.Once
	ranges []addrRange
}

type addrRange struct{ addr, size uintptr }

// hugeHeap advises huge pages for the next size bytes the heap grows into
// (reserving them at its first call), and returns what withdraws the
// advice: pages already huge stay so, but no more are made, as the
// runtime's collector and the kernel's khugepaged work best on a heap of
// small pages once the import is over. It does nothing where the system
// offers no huge pages.
func hugeHeap(size int64) (undo func()) {
	hugeRanges.once.Do(func() { hugeRanges.ranges = reserveHuge(min(size, maxHugeHeap)) })
	var advised []addrRange
	for _, r := range hugeRanges.ranges {
		if madvise(r.addr, r.size, syscall.MADV_HUGEPAGE) == nil {
			advised = append(advised, r)
		}
	}
	return func() {
		for _, r := range advised {
			madvise(r.addr, r.size, syscall.MADV_NOHUGEPAGE)
		}
	}
}

// reserveHuge allocates size bytes in hugeChunk slices, lets them go, and
// returns the ranges they took, adjacent ones joined.
func reserveHuge(size int64) []addrRange {
	held := make([][]byte, 0, size/hugeChunk)
	for range size / hugeChunk {
		held = append(held, make([]byte, hugeChunk))
	}
	var rs []addrRange
	for _, b := range held {
		rs = append(rs, addrRange{uintptr(unsafe.Pointer(unsafe.SliceData(b))), hugeChunk})
	}
	held = nil
	slices.SortFunc(rs, func(a, b addrRange) int { return cmp.Compare(a.addr, b.addr) })
	joined := rs[:0]
	for _, r := range rs {
		if n := len(joined); n > 0 && joined[n-1].addr+joined[n-1].size == r.addr {
			joined[n-1].size += r.size
			continue
		}
		joined = append(joined, r)
	}
	// The slices were never written: giving them back to the system costs
	// little and keeps the runtime's count of the memory it holds true (it
	// would otherwise count the ranges as in use).
	debug.FreeOSMemory()
	return slices.Clip(joined)
}

// madvise advises the range [addr, addr+size), which the runtime holds
// mapped for good (it never unmaps its heap).
func madvise(addr, size uintptr, advice int) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, addr, size, uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
