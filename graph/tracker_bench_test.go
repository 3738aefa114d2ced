package graph

import (
	"fmt"
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
	keys := make([]string, len(els))
	for i, el := range els {
		keys[i] = el.key() // which the import computes anyway
	}
	b.ResetTimer()
	for b.Loop() {
		tr := newTracker(false)
		for i, el := range els {
			tr.see(el, keys[i])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(els)), "ns/element")
}
