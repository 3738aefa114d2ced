package bolt

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
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

// An aheadWriter on a file opened for direct writes whose write is refused
// as invalid (here: buffers of 1000 bytes, no whole block) turns O_DIRECT
// off and writes the bytes, all of them, in order.
func TestAheadWriterLeavesDirectOnRefusal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, direct, err := openDirect(path, 0o600, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !direct {
		t.Log("this file system refuses O_DIRECT at open: only the plain path ran")
	}
	rng := rand.New(rand.NewPCG(5, 5))
	var want []byte
	w := newAheadWriter(f, 1000, direct)
	for range 50 {
		p := make([]byte, rng.IntN(300))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		want = append(want, p...)
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the file holds %d bytes, not the %d written", len(got), len(want))
	}
}
