package bolt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"
)

// Footprint names every bucket of the file, Cayley's and Lore's, with the
// bytes of its pages: after a load that rewrote the file, they make up all
// of it but its meta and freelist pages; and a bucket grows with what is
// written into it alone.
func TestFootprint(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	if _, err := graph.Import(t.Context(), s, strings.NewReader(topicsAndDocs()), graph.ImportOptions{Format: graph.NDJSON}); err != nil {
		t.Fatal(err)
	}
	before, err := s.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	page := int64(s.db.DB().Info().PageSize)
	var sum int64
	for _, b := range append(allBuckets, bCayleyLog, bOPS, bValues, cayleyMeta) {
		n, ok := before[string(b)]
		if !ok || n < page {
			t.Errorf("bucket %s: %d bytes (listed: %v)", b, n, ok)
		}
	}
	if _, ok := before[string(bValueRefs)]; ok {
		t.Errorf("bucket %s, of store layouts 4 to 10, is in a new store", bValueRefs)
	}
	for _, n := range before {
		sum += n
	}
	if sum > fi.Size() || fi.Size()-sum > 8*page {
		t.Errorf("the buckets' pages take %d bytes of a %d-byte file just rewritten", sum, fi.Size())
	}
	var b graph.Batch
	for i := range 100 {
		for j := range 20 {
			if i != j {
				b.Edges = append(b.Edges, graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID("doc/d" + itoa(i)), Label: "references", To: graph.ID("doc/d" + itoa(j))}})
			}
		}
	}
	apply(t, s, &b)
	after, err := s.Footprint()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{string(bEdges), string(bIn), string(bOPS)} {
		if after[name] <= before[name] {
			t.Errorf("bucket %s: %d bytes after 1,900 more edges, %d before", name, after[name], before[name])
		}
	}
	if after[string(bType)] != before[string(bType)] {
		t.Errorf("the type index went from %d to %d bytes, with no node written", before[string(bType)], after[string(bType)])
	}
}
