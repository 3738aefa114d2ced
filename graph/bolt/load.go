package bolt

import (
	"bytes"
	"errors"
	"fmt"

	cgraph "github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	bbolt "go.etcd.io/bbolt"
)

// An all-or-nothing load into a store that holds, and held, nothing (see
// Import) marks the store "loading" before its first batch and clears the
// mark after its last. Undoing it empties the store again: every bucket
// but Lore's meta is dropped and made anew, as a new store has them. The
// change log's sequence numbers are not reused: the meta keeps the last
// one given out, and "base", the sequence number the log now starts
// after. A process that dies during a load leaves the mark, and the next
// Open undoes the load.
var (
	metaLoading = []byte("loading")
	metaBase    = []byte("base")
)

// BeginLoad starts an all-or-nothing load (see atomicLoader); fast makes
// it a bulk load as well. Until done, Apply refuses other writes: undoing
// the load would undo them too. (The load itself commits through
// ApplyStream, not Apply.)
func (s *Store) BeginLoad(fast bool) (done func(ok bool) error, ok bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed || s.readOnly || s.lastSeq != s.base || s.deferred != nil || s.loading {
		return nil, false, nil
	}
	err = s.update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bMeta)
		if fast {
			if err := meta.Put(metaDeferred, []byte{1}); err != nil {
				return err
			}
			if err := markTally(tx); err != nil {
				return err
			}
		}
		return meta.Put(metaLoading, []byte{1})
	})
	if err != nil {
		return nil, false, err
	}
	s.loading = true
	var b *bulk
	if fast {
		b = s.bulkLocked()
	}
	return func(ok bool) error {
		if !ok {
			if b != nil {
				b.abort()
			}
			return s.undoLoad()
		}
		if b != nil {
			if err := b.finish(); err != nil {
				return errors.Join(err, s.undoLoad())
			}
		}
		return s.alone(func() error {
			s.loading = false
			if b == nil {
				return updateDB(s.db.DB(), func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Delete(metaLoading) })
			}
			if err := b.end(metaLoading); err != nil {
				// What the load left could not be written: undo it.
				err = errors.Join(err, s.empty())
				s.changed.Notify()
				return errors.Join(err, s.db.DB().Sync())
			}
			return nil
		})
	}, true, nil
}

// undoLoad empties the store of an all-or-nothing load that failed.
func (s *Store) undoLoad() error {
	return s.alone(func() error {
		s.loading = false
		if err := s.empty(); err != nil {
			return fmt.Errorf("emptying the store of an import that failed: %w", err)
		}
		s.changed.Notify()
		return s.db.DB().Sync()
	})
}

// empty drops every bucket but Lore's meta, Cayley's included, and makes
// them anew, empty. The caller holds wmu and rw, or has the store to
// itself. The meta keeps the model and the last sequence number given out.
func (s *Store) empty() error {
	db := s.db.DB()
	err := updateDB(db, func(tx *bbolt.Tx) error {
		var names [][]byte
		err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
			if !bytes.Equal(name, bMeta) {
				names = append(names, bytes.Clone(name))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		var stale [][]byte
		c := meta.Cursor()
		for _, prefix := range [][]byte{[]byte("count/"), []byte(dfPrefix)} {
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				stale = append(stale, bytes.Clone(k))
			}
		}
		for _, k := range append(stale, metaDeferred, metaLoading, metaQuadsPending) {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return meta.Put(metaBase, u64(s.lastSeq))
	})
	if err != nil {
		return err
	}
	s.base = s.lastSeq
	if err := s.createBuckets(); err != nil {
		return err
	}
	if err := s.newQuadStore(); err != nil {
		return err
	}
	return nil
}

// newQuadStore opens a fresh Cayley QuadStore over the store's file: one
// whose caches hold nothing of what came before.
func (s *Store) newQuadStore() error {
	qs, err := ckv.New(s.kv, cayleyOpts)
	if err != nil {
		return fmt.Errorf("cayley: %w", err)
	}
	s.qs = qs
	return nil
}

// initCayley initialises Cayley's part of the file, if it has none, and
// keeps one quad index in it (see oneQuadIndex) if one is true. A
// read-only open leaves an older store's indexes as they are, but one
// that rebuilds Cayley's part (createBuckets) writes the layout a
// writer's would: a later bulk load writes only into that one.
func (s *Store) initCayley(one bool) error {
	if err := ckv.Init(s.kv, cayleyOpts); err != nil && !errors.Is(err, cgraph.ErrDatabaseExists) {
		return fmt.Errorf("cayley init: %w", err)
	}
	var cut bool
	_ = s.db.DB().View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(cayleyMeta)
		cut = meta != nil && meta.Get(cayleyIndexesKey) == nil
		return nil
	})
	if cut {
		if err := updateDB(s.db.DB(), finishCayleyInit); err != nil {
			return fmt.Errorf("cayley init: %w", err)
		}
	}
	if !one {
		return nil
	}
	if err := updateDB(s.db.DB(), oneQuadIndex); err != nil {
		return fmt.Errorf("dropping Cayley's [S,P] index: %w", err)
	}
	return nil
}

// createBuckets initialises Cayley's part of the file and creates Lore's
// buckets, where missing.
func (s *Store) createBuckets() error {
	if err := s.initCayley(true); err != nil {
		return err
	}
	return updateDB(s.db.DB(), func(tx *bbolt.Tx) error {
		for _, b := range append([][]byte{bValues}, allBuckets...) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}
