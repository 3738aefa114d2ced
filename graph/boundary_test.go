package graph_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The storage engines Lore embeds. Only the embedded store's package
// (graph/bolt) may import them: everything else reaches a store through
// graph.Store.
var engines = []string{"github.com/cayleygraph/", "github.com/hidal-go/", "go.etcd.io/bbolt"}

const (
	module   = "github.com/lore-dev/lore"
	embedded = module + "/graph/bolt"
)

// A listed is one package as go list -json describes it.
type listed struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

// goList runs go list -json on patterns from the module's root.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,Module"}, args...)...)
	cmd.Dir = ".." // the module's root
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(&out)
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func isEngine(path string) bool {
	return slices.ContainsFunc(engines, func(e string) bool { return strings.HasPrefix(path, e) })
}

// TestStoreBoundary: Cayley, hidalgo and bbolt are imported by graph/bolt
// alone, among every package of the module and its tests; and the packages
// above the store (graph, mcp, gen, web) depend on none of them, nor on
// graph/bolt, outside their tests.
func TestStoreBoundary(t *testing.T) {
	for _, p := range goList(t, "-deps", "-test", "./...") {
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		// "…/graph/bolt", "…/graph/bolt [….test]", "…/graph/bolt.test", "…/graph/bolt_test […]"
		base, _, _ := strings.Cut(p.ImportPath, " ")
		base = strings.TrimSuffix(strings.TrimSuffix(base, ".test"), "_test")
		if base == embedded {
			continue
		}
		for _, imp := range p.Imports {
			if isEngine(imp) {
				t.Errorf("%s imports %s; only %s may import a storage engine", p.ImportPath, imp, embedded)
			}
		}
	}
	above := []string{"./graph", "./mcp/...", "./gen/...", "./web/..."}
	for _, p := range goList(t, append([]string{"-deps"}, above...)...) {
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		for _, imp := range p.Imports {
			if imp == embedded {
				t.Errorf("%s imports %s; it must reach stores through graph.Store (only cmd/lore/store.go and test fixtures construct one)", p.ImportPath, imp)
			}
		}
	}
}
