package graph

import (
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func memoryLimit() int64 { return debug.SetMemoryLimit(-1) } // a negative limit reads it

// TuneGCForImport sets the import's memory limit and leaves the percent;
// its restore sets the limit back, and may be called twice; keepLimit
// leaves the limit.
func TestTuneGCForImportRestores(t *testing.T) {
	percent0, limit0 := gcPercent(), memoryLimit()
	restore := TuneGCForImport(false)
	if gcPercent() != percent0 || memoryLimit() != ImportMemoryLimit() {
		t.Fatalf("during the load: percent %d, limit %d; want %d, %d", gcPercent(), memoryLimit(), percent0, ImportMemoryLimit())
	}
	restore()
	restore()
	if gcPercent() != percent0 || memoryLimit() != limit0 {
		t.Fatalf("after restore: percent %d, limit %d; want %d, %d", gcPercent(), memoryLimit(), percent0, limit0)
	}

	debug.SetMemoryLimit(3 << 30)
	defer debug.SetMemoryLimit(limit0)
	restore = TuneGCForImport(true)
	if memoryLimit() != 3<<30 {
		t.Fatalf("with the limit kept: limit %d, want %d", memoryLimit(), int64(3<<30))
	}
	restore()
	if memoryLimit() != 3<<30 {
		t.Fatalf("after restore, with the limit kept: %d", memoryLimit())
	}
}
