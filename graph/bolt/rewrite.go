package bolt

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"

	ckv "github.com/cayleygraph/cayley/graph/kv"
	bbolt "go.etcd.io/bbolt"
)

// A load into an empty store leaves a file about twice the size of what it
// holds. Its batches insert keys at random places in the big buckets (edge
// records, the in-edge index, Cayley's quad indexes), so every commit
// rewrites nearly every page of them elsewhere in the file, copy on write,
// and frees the old ones; bbolt never gives a free page back to the file
// system, and a page split in the middle of a bucket is left half full.
// Measured on the generated package index of graph/pgbench at 100k nodes
// (678k elements): a 546 MB file holding 235 MB of keys and values.
//
// So a bulk load ends by rewriting the file (rewriteFile): every bucket is
// copied in key order into a new file, whose pages are filled to the brim
// as bbolt appends to them, and the new file replaces the old one. On the
// same load the file became 239 MB, and the load took about a fifth more
// CPU time (27.3 s against 22.5 s, user time of the whole process, two
// runs each). Config.KeepLoadFile turns it off.
//
// rewriteSuffix names the new file while it is written. A process that dies
// before the rename leaves it behind, with the old file whole; Open removes
// it once it holds the store's lock.
const rewriteSuffix = ".rewrite"

// rewriteChunk and rewriteKeys bound what the rewrite copies per
// transaction of the new file, in bytes of keys and values and in keys:
// bbolt keeps a transaction's pages in memory until its commit, and an
// append touches only the last page of each level, so a commit costs the
// same whatever came before it. The last leaf, though, holds every key
// the transaction appended until the commit splits it, in one slice that
// grows by a quarter at a time: 64 MiB of in-edge keys (1.6 million) per
// transaction spent 30 of the 57 s the rewrite took at 1M nodes copying
// that slice as it grew.
const (
	rewriteChunk = 64 << 20
	rewriteKeys  = 1 << 16
)

// rewriteFile copies the store's file into a new one, bucket by bucket in
// key order, and puts the new file in its place: the store goes on with the
// new file, open under the same lock. The caller holds wmu and rw's write
// side, so no transaction is open. If anything fails before the rename,
// the store goes on with the old file, which the rewrite never touched, and
// the error says so.
func (s *Store) rewriteFile() (err error) {
	name := filepath.Join(s.path, FileName)
	tmp := name + rewriteSuffix
	if err := os.Remove(tmp); err != nil && !os.IsNotExist(err) {
		return err
	}
	fi, err := os.Stat(name)
	if err != nil {
		return err
	}
	opts := *s.boltOpts
	opts.NoSync, opts.NoGrowSync = true, true
	// bbolt names a database after its file, and opens it again by that
	// name to copy it (Tx.WriteTo, which backups use): so the new file is
	// opened at tmp under the name it will have after the rename.
	first := true
	opts.OpenFile = func(path string, flag int, mode os.FileMode) (*os.File, error) {
		if !first || path != name {
			return os.OpenFile(path, flag, mode)
		}
		first = false
		f, err := os.OpenFile(tmp, flag, mode)
		if err != nil {
			return nil, err
		}
		fd, err := syscall.Dup(int(f.Fd()))
		f.Close()
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), name), nil
	}
	dst, err := bbolt.Open(name, fi.Mode().Perm(), &opts)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = dst.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := copyFile(s.db.DB(), dst); err != nil {
		return err
	}
	if err := dst.Sync(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	renamed = true
	if err := syncDir(s.path); err != nil {
		return fmt.Errorf("the store's file was rewritten, but syncing its directory failed: %w", err)
	}
	old := s.db
	// A process waiting for the old file's lock would get it when the
	// old file closes, and open a file no longer in the directory: the
	// mark tells its Open to open the directory's file instead.
	_ = old.DB().Update(func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(metaMoved, []byte{1}) })
	dst.NoSync, dst.NoGrowSync = s.boltOpts.NoSync, s.boltOpts.NoGrowSync
	s.db = hbolt.New(dst)
	s.kv.DB = s.db
	qs, err := ckv.New(s.kv, cayleyOpts)
	_ = old.Close() // its file is gone: closing it releases the old lock and mapping
	if err != nil {
		return fmt.Errorf("cayley, on the rewritten file: %w", err)
	}
	s.qs = qs
	return nil
}

// copyFile copies every bucket of src, nested ones included, into the empty
// dst, in key order, filling dst's pages.
func copyFile(src, dst *bbolt.DB) error {
	stx, err := src.Begin(false)
	if err != nil {
		return err
	}
	defer func() { _ = stx.Rollback() }() // src's values are read in place until the last commit
	c := &fileCopy{dst: dst}
	if err := c.begin(); err != nil {
		return err
	}
	err = stx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		if _, err := c.tx.CreateBucket(name); err != nil {
			return err
		}
		return c.bucket([][]byte{name}, b)
	})
	if err != nil {
		_ = c.tx.Rollback()
		return err
	}
	return c.tx.Commit()
}

// A fileCopy is a copy under way: dst's open transaction and the bytes it
// holds.
type fileCopy struct {
	dst        *bbolt.DB
	tx         *bbolt.Tx
	size, keys int
}

func (c *fileCopy) begin() (err error) {
	c.tx, err = c.dst.Begin(true)
	c.size, c.keys = 0, 0
	return err
}

// at returns the bucket at path in the open transaction, set to fill its
// pages: keys arrive in order, so a page split leaves the page before it
// full.
func (c *fileCopy) at(path [][]byte) *bbolt.Bucket {
	b := c.tx.Bucket(path[0])
	for _, p := range path[1:] {
		b = b.Bucket(p)
	}
	b.FillPercent = 1
	return b
}

// bucket copies src, which is at path, into the bucket at path.
func (c *fileCopy) bucket(path [][]byte, src *bbolt.Bucket) error {
	dst := c.at(path)
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // a nested bucket
			if _, err := dst.CreateBucket(k); err != nil {
				return err
			}
			if err := c.bucket(append(path[:len(path):len(path)], k), src.Bucket(k)); err != nil {
				return err
			}
			dst = c.at(path) // the nested copy may have committed
			continue
		}
		if err := dst.Put(k, v); err != nil {
			return err
		}
		c.size += len(k) + len(v)
		if c.keys++; c.size >= rewriteChunk || c.keys >= rewriteKeys {
			if err := c.tx.Commit(); err != nil {
				return err
			}
			if err := c.begin(); err != nil {
				return err
			}
			dst = c.at(path)
		}
	}
	return nil
}

// metaMoved marks a file that a rewrite replaced (see rewriteFile).
var metaMoved = []byte("moved")

// openFile opens the bbolt file at path, waiting for its lock as opts say.
// A file whose lock it got after a rewrite replaced it (metaMoved) is
// closed, and the file now at path is opened instead.
func openFile(path string, opts *bbolt.Options) (*hbolt.DB, error) {
	for range 16 {
		db, err := hbolt.Open(path, opts)
		if err != nil {
			return nil, err
		}
		moved := false
		_ = db.DB().View(func(tx *bbolt.Tx) error {
			if meta := tx.Bucket(bMeta); meta != nil {
				moved = meta.Get(metaMoved) != nil
			}
			return nil
		})
		if !moved {
			return db, nil
		}
		_ = db.Close()
	}
	return nil, fmt.Errorf("%s: rewritten again and again while this open waited for it", path)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
