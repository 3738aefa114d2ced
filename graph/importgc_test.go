package graph

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func memoryLimit() int64 { return debug.SetMemoryLimit(-1) } // a negative limit reads it

// tuneGC raises the collector's percent and sets the memory limit, puts
// the percent back once the live heap reaches its threshold (at a tick),
// and restores both; with a negative percent or limit it leaves that one.
func TestTuneGCForImport(t *testing.T) {
	percent0, limit0 := gcPercent(), memoryLimit()
	tick := make(chan time.Time)

	// A threshold the heap is far from: the percent stays raised.
	restore, switched := tuneGC(3<<30, 350, 1<<50, tick)
	if got := gcPercent(); got != 350 {
		t.Fatalf("percent during the load: %d, want 350", got)
	}
	if got := memoryLimit(); got != 3<<30 {
		t.Fatalf("memory limit during the load: %d, want %d", got, int64(3<<30))
	}
	tick <- time.Time{}
	tick <- time.Time{} // the first tick's check is done
	select {
	case <-switched:
		t.Fatal("the percent went back below the threshold")
	default:
	}
	restore()
	if gcPercent() != percent0 || memoryLimit() != limit0 {
		t.Fatalf("after restore: percent %d, limit %d; want %d, %d", gcPercent(), memoryLimit(), percent0, limit0)
	}

	// A threshold the live heap passes: at the next tick the percent goes back.
	keep := make([]byte, 1<<20)
	runtime.GC() // the live heap is measured at a collection's end
	restore, switched = tuneGC(-1, 350, 1<<10, tick)
	if gcPercent() != 350 || memoryLimit() != limit0 {
		t.Fatalf("during the load: percent %d, limit %d; want 350, %d", gcPercent(), memoryLimit(), limit0)
	}
	tick <- time.Time{}
	<-switched
	if got := gcPercent(); got != percent0 {
		t.Fatalf("percent past the threshold: %d, want %d", got, percent0)
	}
	restore()
	runtime.KeepAlive(keep)

	// keepPercent: the percent is left alone.
	restore, _ = tuneGC(3<<30, -1, 1<<10, tick)
	if gcPercent() != percent0 || memoryLimit() != 3<<30 {
		t.Fatalf("with the percent kept: percent %d, limit %d", gcPercent(), memoryLimit())
	}
	restore()
	if memoryLimit() != limit0 {
		t.Fatalf("limit after restore: %d, want %d", memoryLimit(), limit0)
	}
}

// TuneGCForImport's restore returns, sets both back, and may be called
// twice.
func TestTuneGCForImportRestores(t *testing.T) {
	percent0, limit0 := gcPercent(), memoryLimit()
	restore := TuneGCForImport(false, false)
	if gcPercent() != ImportGCPercent || memoryLimit() != ImportMemoryLimit() {
		t.Fatalf("during the load: percent %d, limit %d", gcPercent(), memoryLimit())
	}
	restore()
	restore()
	if gcPercent() != percent0 || memoryLimit() != limit0 {
		t.Fatalf("after restore: percent %d, limit %d; want %d, %d", gcPercent(), memoryLimit(), percent0, limit0)
	}
}
