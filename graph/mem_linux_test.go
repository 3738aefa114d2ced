package graph

import "testing"

// On Linux, where the machine's memory is known, an import's soft limit is
// three quarters of it: room for a big load's heap (under a limit near its
// live heap, a 2M-node load took 263 s against 171 s), short of all of it.
func TestImportMemoryLimitLinux(t *testing.T) {
	mem := PhysicalMemory()
	if mem == 0 {
		t.Fatal("sysinfo gave no memory size")
	}
	if l := ImportMemoryLimit(); mem >= 1<<30 && (l < mem/2 || l > mem/4*3) {
		t.Errorf("ImportMemoryLimit() = %d on a machine of %d bytes, want three quarters of it", l, mem)
	}
}
