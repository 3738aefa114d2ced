package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lore-dev/lore/graph"

	cgraph "github.com/cayleygraph/cayley/graph"
	bbolt "go.etcd.io/bbolt"
)

// CompactStats reports a compaction.
type CompactStats struct {
	BytesBefore int64 `json:"bytesBefore"`
	BytesAfter  int64 `json:"bytesAfter"`
	Quads       int64 `json:"quads"`
}

// Compact rewrites the store at cfg.Path into a fresh file. Cayley's KV
// never reclaims a deleted quad (deletes are tombstones that every later
// read of the same index entry skips); Compact reloads Cayley from the node
// and edge records, so the tombstones are gone, and copies Lore's records,
// indexes, change log and idempotency keys unchanged, and writes the new
// file out densely (see rewriteFile). The new file replaces
// the old one with an atomic rename; until then the old store is untouched.
// The store must not be open elsewhere.
func Compact(ctx context.Context, cfg Config) (st *CompactStats, err error) {
	defer wrap(&err, "compact %s", cfg.Path)
	old, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer old.Close()
	tmpDir := filepath.Join(cfg.Path, ".compact")
	if err := os.RemoveAll(tmpDir); err != nil {
		return nil, err
	}
	fresh, err := Open(ctx, Config{Path: tmpDir, Model: old.Model(), NoSync: true, MmapSize: cfg.MmapSize})
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmpDir)
	defer fresh.Close()
	st = &CompactStats{}
	if fi, err := os.Stat(filepath.Join(cfg.Path, FileName)); err == nil {
		st.BytesBefore = fi.Size()
	}
	if err := copyBuckets(ctx, old, fresh); err != nil {
		return nil, err
	}
	if st.Quads, err = reloadQuads(ctx, old.read, fresh.db.DB()); err != nil {
		return nil, err
	}
	// The copy's transactions left pages free and half full; the new
	// file is written out once more, dense, as after a bulk load.
	if canRewrite {
		if err := fresh.alone(func() error { return fresh.rewriteFile(fileMerge{}) }); err != nil {
			return nil, err
		}
	}
	if err := fresh.Sync(); err != nil {
		return nil, err
	}
	if err := fresh.Close(); err != nil {
		return nil, err
	}
	if err := old.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(tmpDir, FileName), filepath.Join(cfg.Path, FileName)); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(filepath.Join(cfg.Path, FileName)); err == nil {
		st.BytesAfter = fi.Size()
	}
	return st, nil
}

// copyBuckets copies Lore's buckets, a chunk per transaction.
func copyBuckets(ctx context.Context, from, to *Store) error {
	const chunk = 10000
	for _, name := range allBuckets {
		var after []byte
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			var keys, vals [][]byte
			err := from.read(func(tx *bbolt.Tx) error {
				c := tx.Bucket(name).Cursor()
				k, v := c.First()
				if after != nil {
					if k, v = c.Seek(after); bytes.Equal(k, after) {
						k, v = c.Next()
					}
				}
				for ; k != nil && len(keys) < chunk; k, v = c.Next() {
					keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(v))
				}
				return nil
			})
			if err != nil {
				return err
			}
			if len(keys) == 0 {
				break
			}
			err = updateDB(to.db.DB(), func(tx *bbolt.Tx) error {
				b := tx.Bucket(name)
				for i, k := range keys {
					if err := b.Put(k, vals[i]); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			after = keys[len(keys)-1]
		}
	}
	// The fresh store read its sequence before the copy.
	to.lastSeq = from.lastSeq
	return nil
}

// reloadQuads writes one quad per node and per edge record of old (read
// through view) into Cayley's part of the store on db, which holds none:
// through a quadLoad, which the last step writes out (materialize). The
// caller has db's writes to itself.
func reloadQuads(ctx context.Context, view func(func(*bbolt.Tx) error) error, db *bbolt.DB) (n int64, err error) {
	var ql *quadLoad
	_ = db.View(func(tx *bbolt.Tx) error { ql = newQuadLoad(tx); return nil })
	if ql == nil {
		return 0, errors.New("reloading Cayley's quads: its part of the store is not empty, or not in the layout a reload writes")
	}
	var deltas []cgraph.Delta
	flush := func() error {
		if len(deltas) == 0 {
			return nil
		}
		err := updateDB(db, func(tx *bbolt.Tx) error { return ql.write(tx, deltas) })
		n += int64(len(deltas))
		deltas = deltas[:0]
		return err
	}
	defer func() {
		if err == nil {
			err = ql.materialize(db)
		}
	}()
	for _, bucket := range [][]byte{bNodes, bEdges} {
		var after []byte
		for {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			var last []byte
			err := view(func(tx *bbolt.Tx) error {
				c := tx.Bucket(bucket).Cursor()
				k, v := c.First()
				if after != nil {
					if k, v = c.Seek(after); bytes.Equal(k, after) {
						k, v = c.Next()
					}
				}
				for i := 0; k != nil && i < 10000; k, v = c.Next() {
					i++
					last = bytes.Clone(k)
					if bytes.Equal(bucket, bEdges) {
						deltas = append(deltas, cgraph.Delta{Quad: edgeQuad(graph.EdgeKeyFromBytes(k)), Action: cgraph.Add})
						continue
					}
					rec, err := decodeNodeRec(v)
					if err != nil {
						return corrupt(fmt.Sprintf("node %q", k), err)
					}
					deltas = append(deltas, cgraph.Delta{Quad: nodeQuad(graph.ID(k), rec.Type), Action: cgraph.Add})
				}
				return nil
			})
			if err != nil {
				return n, err
			}
			if err := flush(); err != nil {
				return n, err
			}
			if last == nil {
				break
			}
			after = last
		}
	}
	return n, nil
}
