package gen_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lore-dev/lore/gen"
)

// TestGolden: the committed files are exactly what the generator renders
// now, and the embedded copies are the committed files. Run make generate
// after changing the catalog.
func TestGolden(t *testing.T) {
	files, err := gen.Files(gen.Default())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		disk, err := os.ReadFile(filepath.Join("..", f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(disk, f.Data) {
			t.Errorf("%s is stale: run make generate", f.Path)
		}
		if name, ok := strings.CutPrefix(f.Path, "gen/"); ok && !strings.Contains(name, "/") {
			if !bytes.Equal(gen.Committed(name), disk) {
				t.Errorf("the embedded %s differs from the file", name)
			}
		}
	}
}
