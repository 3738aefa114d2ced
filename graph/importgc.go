package graph

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// The collector's percent while an import's live heap is small
// (TuneGCForImport): ImportGCPercent below ImportGCHeap, the runtime's
// own (100 unless GOGC says otherwise) above it. Collections come each
// time the heap grows by the percent of the live heap, and each marks the
// live heap, so a load's marking goes down as the percent goes up: 300
// does about a third of what 100 does. What it costs instead is memory, a
// heap up to four times the live one, all of it fresh pages to fault in,
// which are dear in a virtual machine: below 1 GiB live that is cheap,
// past it the faults cost more than the marking saved. Measured on the
// benchmark graph in new processes, binaries interleaved: 100k nodes 3.49,
// 3.50 and 3.49 s against 4.20, 3.85 and 4.06 s with 100 throughout; 1M
// nodes 43.8 s against 46.2 s. 300 throughout took 50.3 s at 1M against
// 43.3 s with 100 (25.6 s of system time against 6.8 s), 200 throughout
// 47.2 s.
const (
	ImportGCPercent = 300
	ImportGCHeap    = 1 << 30
)

// TuneGCForImport sets this process's collector up for an import, and
// returns what sets it back: the soft memory limit of ImportMemoryLimit
// (unless keepLimit, as when GOMEMLIMIT sets one), and the percent of
// ImportGCPercent until the live heap reaches ImportGCHeap (unless
// keepPercent, as when GOGC sets one). lore import calls it for a bulk
// load, and the benchmarks load the same way. On Linux it also advises
// transparent huge pages for the heap the import grows into (hugeHeap). A
// process that serves others meanwhile should not call it: the settings
// are the process's.
func TuneGCForImport(keepLimit, keepPercent bool) (restore func()) {
	limit := int64(-1)
	if !keepLimit {
		limit = ImportMemoryLimit()
	}
	percent := -1
	if !keepPercent {
		percent = ImportGCPercent
	}
	// Huge pages for the heap the import grows into (hugeHeap), up to
	// half the memory limit in effect; reserved first, as the slices that
	// reserve them are live for a collection, which tuneGC's ticks would
	// take for the import's live heap.
	lim := limit
	if lim < 0 {
		lim = debug.SetMemoryLimit(-1)
	}
	if lim == math.MaxInt64 {
		lim = PhysicalMemory()
	}
	unhuge := hugeHeap(lim / 2)
	t := time.NewTicker(20 * time.Millisecond)
	back, _ := tuneGC(limit, percent, ImportGCHeap, t.C)
	return sync.OnceFunc(func() { back(); t.Stop(); unhuge() })
}

// tuneGC sets the soft memory limit to limit (unless negative) and the
// percent to percent (unless negative) until, at a tick, the live heap is
// heap bytes or more: then it sets the percent back, and closes switched.
// restore sets both back.
func tuneGC(limit int64, percent int, heap uint64, tick <-chan time.Time) (restore func(), switched <-chan struct{}) {
	before := int64(-1)
	if limit >= 0 {
		before = debug.SetMemoryLimit(limit)
	}
	sw := make(chan struct{})
	if percent < 0 {
		return func() {
			if before >= 0 {
				debug.SetMemoryLimit(before)
			}
		}, sw
	}
	was := debug.SetGCPercent(percent)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		for {
			select {
			case <-stop:
				return
			case <-tick:
			}
			if metrics.Read(live); live[0].Value.Kind() == metrics.KindUint64 && live[0].Value.Uint64() >= heap {
				debug.SetGCPercent(was)
				close(sw)
				return
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		debug.SetGCPercent(was)
		if before >= 0 {
			debug.SetMemoryLimit(before)
		}
	}, sw
}
