package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/lore-dev/lore/graph"
)

// Backup writes a copy of the store's file as of one committed state (see
// graph.Backuper): bbolt's Tx.WriteTo, from one read transaction begun
// under the read side of rw and run outside it, as the package
// documentation allows a single read transaction that ends on its own.
// Commits go on meanwhile, except one that must grow the file, which
// waits for the copy to end. The sequence number and counts come from the
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
	info := &graph.BackupInfo{File: FileName, NodeTypes: map[string]int64{}, EdgeLabels: map[string]int64{}}
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
	n, err := tx.WriteTo(ctxWriter{ctx, w})
	info.Bytes = n
	if err != nil {
		return nil, err
	}
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
