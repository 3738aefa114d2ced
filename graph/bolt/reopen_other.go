//go:build !unix

package bolt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

// canRewrite is false where a file cannot be given a second handle under
// another name, nor renamed over while bbolt holds it open and mapped
// (Windows): a bulk load there keeps the file it wrote (as with
// Config.KeepLoadFile), and Compact keeps the file its copy wrote.
const canRewrite = false

func reopenAs(f *os.File, _ string) (*os.File, error) {
	f.Close()
	return nil, fmt.Errorf("rewriting a store's file in place on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
