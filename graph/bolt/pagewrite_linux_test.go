package bolt

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// A writeFile whose writes fail returns their error: Linux's /dev/full
// fails every write with ENOSPC, as a full disk does.
func TestWriteFileReportsFullDisk(t *testing.T) {
	src, err := bbolt.Open(filepath.Join(t.TempDir(), "src"), 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Update(func(tx *bbolt.Tx) error { return fillRandom(rand.New(rand.NewPCG(1, 1)), tx, true) }); err != nil {
		t.Fatal(err)
	}
	err = src.View(func(tx *bbolt.Tx) error { return writeFile(tx, "/dev/full", 4096, 0o600, fileMerge{}) })
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writeFile to a full disk: %v", err)
	}
}
