package graph

import (
	"fmt"
	"hash/maphash"
	"testing"
)

// BenchmarkTracker measures what duplicate detection adds per element read
// by an import (compare with an import's time per element: ~100-250 µs
// per element on the benchmark machine, see README's Benchmarks).
func BenchmarkTracker(b *testing.B) {
	els := make([]element, 100000)
	for i := range els {
		if i%3 == 0 {
			els[i] = element{line: int64(i), node: &NodeInput{ID: ID(fmt.Sprintf("topic/t%d", i))}}
		} else {
			els[i] = element{line: int64(i), edge: &EdgeInput{EdgeKey: EdgeKey{From: ID(fmt.Sprintf("doc/d%d", i)), Label: "about", To: ID(fmt.Sprintf("topic/t%d", i))}}}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		tr := newTracker(false)
		for _, el := range els {
			tr.see(el, 0)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(els)), "ns/element")
}

// TestElemHash checks that the tracker hashes an element's key as written
// whole: "n\x00" and a node's ID, "e\x00" and an edge's EdgeKey.Bytes.
func TestElemHash(t *testing.T) {
	tr := newTracker(false)
	for _, el := range []element{
		{node: &NodeInput{ID: "topic/t1"}},
		{node: &NodeInput{ID: ""}},
		{edge: &EdgeInput{EdgeKey: EdgeKey{From: "doc/d1", Label: "about", To: "topic/t1"}}},
		{edge: &EdgeInput{EdgeKey: EdgeKey{From: "a", Label: "relation", To: "b", Key: "works at"}}},
	} {
		key := "n\x00"
		if el.node != nil {
			key += string(el.node.ID)
		} else {
			key = "e\x00" + string(el.edge.Bytes())
		}
		if got, want := tr.elemHash(el), maphash.String(tr.seed, key); got != want {
			t.Errorf("elemHash(%q) = %x, want %x", key, got, want)
		}
	}
	if a, b := tr.elemHash(element{edge: &EdgeInput{EdgeKey: EdgeKey{From: "a", Label: "l", To: "bc"}}}),
		tr.elemHash(element{edge: &EdgeInput{EdgeKey: EdgeKey{From: "a", Label: "l", To: "b", Key: "c"}}}); a == b {
		t.Errorf("two edge keys hash alike")
	}
}
