//go:build !race

package graph

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TuneGCForImport advises huge pages for the range the heap grows into:
// reserving it maps no memory, a large allocation made during the import
// lands in it, its restore withdraws the advice, and a second import
// advises the same range again. It runs in a new process of its own, where
// no earlier test has reserved the range or grown the heap.
func TestHugeHeap(t *testing.T) {
	if os.Getenv("LORE_HUGEHEAP_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHugeHeap$", "-test.count=1")
		cmd.Env = append(os.Environ(), "LORE_HUGEHEAP_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("the test's own process failed: %v\n%s", err, out)
		}
		return
	}
	peak0 := peakResident(t)
	restore := TuneGCForImport(false)
	ranges := slices.Clone(hugeRanges.ranges)
	var size uintptr
	for _, r := range ranges {
		size += r.size
	}
	if want := uintptr(ImportMemoryLimit() / 2 / hugeChunk * hugeChunk); size != want {
		t.Fatalf("reserved %d bytes in %d ranges, want half the memory limit in chunks (%d)", size, len(ranges), want)
	}
	if grew := peakResident(t) - peak0; grew > 64<<20 {
		t.Errorf("reserving the range made the process's peak %d MiB larger: it should touch nothing", grew>>20)
	}
	checkAdvice(t, ranges, "hg")
	b := make([]byte, 256<<20)
	p := uintptr(unsafe.Pointer(&b[0]))
	if !slices.ContainsFunc(ranges, func(r addrRange) bool { return r.addr <= p && p+uintptr(len(b)) <= r.addr+r.size }) {
		t.Errorf("a 256 MiB allocation during the import is at %#x, outside the advised ranges %x", p, ranges)
	}
	restore()
	checkAdvice(t, ranges, "nh")

	restore = TuneGCForImport(true)
	if !slices.Equal(hugeRanges.ranges, ranges) {
		t.Errorf("a second import reserved %x, want the first one's %x", hugeRanges.ranges, ranges)
	}
	checkAdvice(t, ranges, "hg")
	restore()
	checkAdvice(t, ranges, "nh")
	_ = b[len(b)-1]
}

// checkAdvice checks each range with checkRange.
func checkAdvice(t *testing.T, ranges []addrRange, flag string) {
	t.Helper()
	for _, r := range ranges {
		checkRange(t, r.addr, r.size, flag)
	}
}

// checkRange fails t unless every mapping of the range [addr, addr+size)
// carries the flag (hg: huge pages advised; nh: not) and none the other.
func checkRange(t *testing.T, addr, size uintptr, flag string) {
	t.Helper()
	other := map[string]string{"hg": "nh", "nh": "hg"}[flag]
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var covered uintptr
	var lo, hi uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rng, _, ok := strings.Cut(line, " "); ok && strings.Contains(rng, "-") && !strings.HasSuffix(rng, ":") {
			a, b, _ := strings.Cut(rng, "-")
			x, err1 := strconv.ParseUint(a, 16, 64)
			y, err2 := strconv.ParseUint(b, 16, 64)
			if err1 == nil && err2 == nil {
				lo, hi = uintptr(x), uintptr(y)
				continue
			}
		}
		flags, ok := strings.CutPrefix(line, "VmFlags:")
		if !ok || hi <= addr || lo >= addr+size {
			continue
		}
		fs := strings.Fields(flags)
		has := func(s string) bool { return strings.Contains(" "+strings.Join(fs, " ")+" ", " "+s+" ") }
		if !has(flag) || has(other) {
			t.Errorf("mapping %#x-%#x of the range: flags %q, want %s and not %s", lo, hi, flags, flag, other)
		}
		covered += min(hi, addr+size) - max(lo, addr)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if covered != size {
		t.Errorf("mappings cover %d of the range's %d bytes", covered, size)
	}
}

// peakResident returns the process's peak resident memory.
func peakResident(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
