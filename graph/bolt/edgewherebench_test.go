package bolt

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// BenchmarkEdgeWhere compares a 3-hop step from 20 start nodes without an
// edgeWhere (edges read through Adjacency, keys only), with one every edge
// passes (edges read with their properties through Store.Edges: the cost
// of reading them), and with one half the edges pass, on n Service nodes
// with about two dependsOn edges each carrying kind and critical:
//
//	go test -run '^$' -bench EdgeWhere -benchtime 1x ./graph/bolt
func BenchmarkEdgeWhere(b *testing.B) {
	const n = 20000
	s, err := Open(b.Context(), Config{Path: filepath.Join(b.TempDir(), "store")})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var data strings.Builder
	for i := range n {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/s%d","type":"Service","properties":{"name":"service %d","tier":%d}}`+"\n", i, i, i%4)
	}
	kinds := []string{"sync", "async", "library", "data"}
	for i := range n {
		for k, j := range []int{(i*7919 + 1) % n, (i*104729 + 3) % n} {
			if j != i {
				fmt.Fprintf(&data, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d","properties":{"kind":%q,"critical":%v}}`+"\n",
					i, j, kinds[(i+k)%4], (i+k)%2 == 0)
			}
		}
	}
	if _, err := graph.Import(b.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ids := func() string {
		var out []string
		for range 20 {
			out = append(out, strconv.Quote("service/s"+strconv.Itoa(rng.IntN(n))))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for b.Loop() {
		for _, c := range []struct{ name, edgeWhere string }{
			{"none", ""},
			{"all-pass", `,"edgeWhere":{"kind":{"exists":true}}`},
			{"half-pass", `,"edgeWhere":{"critical":true}`},
		} {
			var results int
			p50, p99 := latencies(b, 100, func(int) {
				q, err := graph.ParseQuery(s.Model(), []byte(`{"from":{"ids":`+ids()+`},"traverse":[{"edge":"dependsOn","hops":3`+c.edgeWhere+`}],"return":{"count":true}}`))
				if err != nil {
					b.Fatal(err)
				}
				res, err := graph.Run(b.Context(), s, q, graph.Limits{})
				if err != nil || res.Truncated {
					b.Fatalf("%v (truncated %v)", err, res != nil && res.Truncated)
				}
				results += *res.Count
			})
			report(b, "3hop-20-ids-"+c.name, p50, p99)
			fmt.Printf("  (%.0f results on average)\n", float64(results)/100)
		}
	}
}
