// Command generate writes every generated file: `make generate` runs it
// from the repository root. It takes no flags and needs no network.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lore-dev/lore/gen"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run() error {
	if _, err := os.Stat("go.mod"); err != nil {
		return fmt.Errorf("run from the repository root (make generate): %w", err)
	}
	files, err := gen.Files(gen.Default())
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(f.Path, f.Data, 0o644); err != nil {
			return err
		}
	}
	return generateGraphQL()
}
