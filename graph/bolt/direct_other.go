//go:build !linux

package bolt

import "os"

// openDirect creates the file at path for writeFile; O_DIRECT is Linux's
// (see direct_linux.go).
func openDirect(path string, mode os.FileMode, _ int) (*os.File, bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, mode)
	return f, false, err
}

func undirect(*os.File) error { return nil }
