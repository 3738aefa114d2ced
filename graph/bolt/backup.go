package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// Backup writes a copy of the store's file as of one committed state (see
// graph.Backuper): bbolt's Tx.WriteTo, from one read transaction begun
// under the read side of rw and run outside it, as the package
// documentation allows a single read transaction that ends on its own.
// Commits go on meanwhile, except one that must grow the file, which
// waits for the copy to end (bbolt's remap waits for every open read
// transaction), and the reads after it wait behind that commit (rw): a
// backup of a large store taken while writes grow it stalls them for as
// long as the copy takes. The sequence number and counts come from the
// same transaction, so they describe exactly the copy.
func (s *Store) Backup(ctx context.Context, w io.Writer) (_ *graph.BackupInfo, err error) {
	defer wrap(&err, "backup")
	s.rw.RLock()
	if s.closed {
		s.rw.RUnlock()
		return nil, graph.ErrClosed
	}
	tx, err := s.db.DB().Begin(false)
	s.rw.RUnlock()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	meta := tx.Bucket(bMeta)
	switch {
	case meta.Get(metaLoading) != nil:
		return nil, fmt.Errorf("an all-or-nothing import into this empty store is under way; back it up once the import ends: %w", graph.ErrConflict)
	case meta.Get(metaDeferred) != nil:
		return nil, fmt.Errorf("the store's indexes are being written (a bulk load or a rebuild is under way); back it up once it ends: %w", graph.ErrConflict)
	}
	info := backupInfo(tx)
	n, err := tx.WriteTo(ctxWriter{ctx, w})
	info.Bytes = n
	if err != nil {
		return nil, err
	}
	return info, nil
}

// backupInfo reads the sequence number and counts of the state tx sees.
func backupInfo(tx *bbolt.Tx) *graph.BackupInfo {
	meta := tx.Bucket(bMeta)
	info := &graph.BackupInfo{File: FileName, NodeTypes: map[string]int64{}, EdgeLabels: map[string]int64{}}
	if meta == nil {
		return info
	}
	if v := meta.Get([]byte("seq")); len(v) == 8 {
		info.Seq = binary.BigEndian.Uint64(v)
	}
	c := meta.Cursor()
	prefix := []byte("count/")
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		kind, name, _ := strings.Cut(string(k[len(prefix):]), "/")
		n := int64(binary.BigEndian.Uint64(v))
		if n == 0 {
			continue
		}
		if kind == "node" {
			info.NodeTypes[name] = n
			info.Nodes += n
		} else {
			info.EdgeLabels[name] = n
			info.Edges += n
		}
	}
	return info
}

// ReadBackup reads the sequence number and counts of the copy at path,
// opening it read-only (see graph.Backuper): it changes nothing in the
// file, which a store's Open would.
func (s *Store) ReadBackup(path string) (_ *graph.BackupInfo, err error) {
	defer wrap(&err, "reading the copy %s", path)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var info *graph.BackupInfo
	err = db.View(func(tx *bbolt.Tx) error {
		if tx.Bucket(bMeta) == nil {
			return fmt.Errorf("not a Lore store: no %s bucket", bMeta)
		}
		info = backupInfo(tx)
		return nil
	})
	if err != nil {
		return nil, err
	}
	info.Bytes = fi.Size()
	return info, nil
}

// ctxWriter stops a copy once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
