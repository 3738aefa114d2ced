//go:build linux

package bolt

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/lore-dev/lore/graph"
)

// A process that waits for the store's lock when a rewrite replaces the
// file gets the old file's lock once the old file closes: its Open must go
// on to the file now in the directory, or it would read and write a file
// nobody else sees.
func TestWaitingOpenGetsRewrittenFile(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), Config{Path: dir, NoSync: true, KeepLoadFile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := graph.Import(t.Context(), s, strings.NewReader(loadInput(200)), graph.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, FileName)
	// How many of this process's descriptors have the store's file open.
	opened := func() (n int) {
		fds, _ := os.ReadDir("/proc/self/fd")
		for _, fd := range fds {
			if target, _ := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); target == name {
				n++
			}
		}
		return n
	}
	held := opened()
	type result struct {
		s   *Store
		err error
	}
	waiter := make(chan result, 1)
	go func() {
		w, err := Open(t.Context(), Config{Path: dir, NoSync: true, LockTimeout: time.Minute})
		waiter <- result{w, err}
	}()
	for deadline := time.Now().Add(time.Minute); opened() == held; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the second Open never opened the file")
		}
	}
	// The second Open has the old file open and waits for its lock.
	s.wmu.Lock()
	s.rw.Lock()
	err = s.rewriteFile(fileMerge{})
	s.rw.Unlock()
	s.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{{ID: "service/after", Type: "Service", Properties: graph.Props{"name": "after"}}}})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	w := <-waiter
	if w.err != nil {
		t.Fatal(w.err)
	}
	defer w.s.Close()
	if n, err := w.s.Node(t.Context(), "service/after"); err != nil || n == nil {
		t.Errorf("the waiting Open does not see a write made after the rewrite (%v, %v): it opened the replaced file", n, err)
	}
}
