package bolt

import (
	"fmt"
	"os"
	"path/filepath"

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
// written in key order into a new file, its pages filled to the brim (see
// writeFile), and the new file replaces the old one. On the same load the
// file became 239 MB, and the load took about a fifth more CPU time (27.3 s
// against 22.5 s, user time of the whole process, two runs each, when the
// rewrite went through bbolt's Put). Config.KeepLoadFile turns it off.
//
// rewriteSuffix names the new file while it is written. A process that dies
// before the rename leaves it behind, with the old file whole; Open removes
// it once it holds the store's lock.
const rewriteSuffix = ".rewrite"

// rewriteFile copies the store's file into a new one, bucket by bucket in
// key order, and puts the new file in its place: the store goes on with the
// new file, open under the same lock. The caller holds wmu and rw's write
// side, so no transaction is open. If anything fails before the rename,
// the store goes on with the old file, which the rewrite never touched, and
// the error says so.
func (s *Store) rewriteFile(m fileMerge) (err error) {
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
		return reopenAs(f, name)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = os.Remove(tmp)
		}
	}()
	src := s.db.DB()
	if err := src.View(func(tx *bbolt.Tx) error { return writeFile(tx, tmp, src.Info().PageSize, fi.Mode().Perm(), m) }); err != nil {
		return err
	}
	dst, err := bbolt.Open(name, fi.Mode().Perm(), &opts)
	if err != nil {
		return err
	}
	defer func() {
		if !renamed {
			_ = dst.Close()
		}
	}()
	if s.beforeRename != nil {
		s.beforeRename()
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
	_ = updateDB(old.DB(), func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(metaMoved, []byte{1}) })
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
