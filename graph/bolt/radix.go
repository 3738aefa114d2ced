package bolt

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"slices"
)

// sortByKey returns a sorted by the bytes key returns, stably: elements
// with equal keys keep their order. It sorts a in place, or returns a new
// slice and leaves a as it was. A batch's keys share long prefixes ("package/p…"),
// so that comparing them again and again was most of a comparison sort's
// time (edge records, in-edge keys and index entries: some 7 s of a
// 1M-node load's CPU). It sorts by the eight bytes after the keys' common
// prefix instead, with a radix sort of those as numbers, then sorts each
// group of keys whose eight bytes are the same by the bytes after them,
// the same way (or by comparing them, for a small group).
func sortByKey[T any](a []T, key func(*T) []byte) []T {
	if len(a) < radixMin {
		slices.SortStableFunc(a, func(x, y T) int { return bytes.Compare(key(&x), key(&y)) })
		return a
	}
	items := make([]radixItem, len(a))
	for i := range items {
		items[i].i = int32(i)
	}
	keys := func(it radixItem) []byte { return key(&a[it.i]) }
	sortItems(items, make([]radixItem, len(a)), keys, 0)
	sorted := make([]T, len(a))
	for j, it := range items {
		sorted[j] = a[it.i]
	}
	return sorted
}

// radixMin is the size of the smallest group sortByKey sorts by radix;
// it compares the keys of smaller ones.
const radixMin = 256

// A radixItem is an element's place in the slice being sorted, and eight
// bytes of its key as a number.
type radixItem struct {
	p uint64
	i int32
}

// sortItems sorts items, whose keys are equal before off, by their keys,
// stably (items come in their elements' order). tmp is scratch of the same
// length.
func sortItems(items, tmp []radixItem, key func(radixItem) []byte, off int) {
	// The keys' common prefix (none ends before off: see below).
	first := key(items[0])
	end := len(first)
	for _, it := range items[1:] {
		k := key(it)
		end = min(end, len(k))
		n := off
		for n < end && k[n] == first[n] {
			n++
		}
		end = n
	}
	short := false // a key ends before the eight bytes after the prefix
	for j := range items {
		k := key(items[j])
		var b [8]byte
		if copy(b[:], k[end:]) < 8 {
			short = true
		}
		items[j].p = binary.BigEndian.Uint64(b[:])
	}
	radixSort(items, tmp)
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].p == items[i].p {
			j++
		}
		switch {
		case j-i == 1:
		case short || j-i < radixMin:
			// Some key ends in the eight bytes; or the group is small.
			compareSort(items[i:j], key)
		default:
			sortItems(items[i:j], tmp[i:j], key, end+8)
		}
		i = j
	}
}

// compareSort sorts items by their keys, and equal keys by their places.
func compareSort(items []radixItem, key func(radixItem) []byte) {
	slices.SortFunc(items, func(x, y radixItem) int {
		if c := bytes.Compare(key(x), key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.i, y.i)
	})
}

// radixSort sorts items by p, stably, a byte at a time from the lowest
// (skipping the bytes all of them share); tmp is scratch of the same
// length.
func radixSort(items, tmp []radixItem) {
	if len(items) < 2 {
		return
	}
	src, dst := items, tmp
	for shift := 0; shift < 64; shift += 8 {
		var count [256]int
		for _, it := range src {
			count[byte(it.p>>shift)]++
		}
		if count[byte(src[0].p>>shift)] == len(src) {
			continue // every item has this byte
		}
		pos := 0
		for b, c := range count {
			count[b] = pos
			pos += c
		}
		for _, it := range src {
			b := byte(it.p >> shift)
			dst[count[b]] = it
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &items[0] {
		copy(items, src)
	}
}
