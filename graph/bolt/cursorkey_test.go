package bolt

import (
	"bytes"
	"path/filepath"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// TestCursorKeyCreatedOnUpgrade: a store made before stores kept a cursor
// key gets one when it is opened, and keeps it.
func TestCursorKeyCreatedOnUpgrade(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	s.Close()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Delete(metaCursorKey) }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s = openTest(t, dir, Config{})
	key := bytes.Clone(s.CursorKey())
	s.Close()
	if len(key) != cursorKeyLen {
		t.Fatalf("no cursor key after the upgrade: %x", key)
	}
	if s = openTest(t, dir, Config{}); !bytes.Equal(s.CursorKey(), key) {
		t.Fatal("the key created on upgrade was not kept")
	}
}
