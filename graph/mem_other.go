//go:build !linux

package graph

// PhysicalMemory returns 0 (unknown) where Lore does not read it.
func PhysicalMemory() int64 { return 0 }
