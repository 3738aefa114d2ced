//go:build !linux

package graph

// physicalMemory returns 0 (unknown) where Lore does not read it.
func physicalMemory() int64 { return 0 }
