//go:build !linux || race

package graph

// hugeHeap does nothing where Lore does not advise huge pages: off Linux,
// and under the race detector, whose runtime clears shadow memory for the
// range hugeHeap would reserve (gigabytes of it).
func hugeHeap(int64) (undo func()) { return func() {} }
