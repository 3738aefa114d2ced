package bolt

import (
	"bytes"
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// UseModel puts m in use while the store serves (see graph.ModelSwitcher):
// under the writer lock, it derives the indexes m implies from the records
// if m changes what is derived, then commits them, m and its change-log
// entry in one transaction, with readers kept out for that commit only,
// so a reader sees the old model's indexes or the new one's.
func (s *Store) UseModel(ctx context.Context, m *schema.Model, at uint64) (seq uint64, err error) {
	defer wrap(&err, "UseModel")
	if s.readOnly {
		return 0, fmt.Errorf("the store is open for reading only: %w", graph.ErrInvalid)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.loading || s.deferred != nil {
		return 0, fmt.Errorf("an import is loading the store; change the model when it has finished: %w", graph.ErrConflict)
	}
	old := s.Model()
	if bytes.Equal(old.JSON(), m.JSON()) {
		return 0, nil
	}
	if s.lastSeq != at { // only writers move it, and they hold wmu
		return 0, fmt.Errorf("%w: the store was written after change %d, which the model was checked at (it is at %d now)", graph.ErrConflict, at, s.lastSeq)
	}
	var changes []string
	err = s.read(func(tx *bbolt.Tx) error {
		if err := checkModelFits(tx, m); err != nil {
			return err
		}
		changes = derivedChanges(tx, old, m)
		return nil
	})
	if err != nil {
		return 0, err
	}
	var d *derived
	if len(changes) > 0 {
		if d, err = s.derive(ctx, m, nil); err != nil {
			return 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.rw.Lock()
	last := s.lastSeq
	err = updateDB(s.db.DB(), func(tx *bbolt.Tx) error {
		if d != nil {
			if err := writeDerived(tx, d); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bMeta).Put([]byte("model"), m.JSON()); err != nil {
			return err
		}
		return s.logModelChange(tx)
	})
	if err == nil {
		s.model.Store(m)
	} else {
		s.lastSeq = last
	}
	seq = s.lastSeq
	s.rw.Unlock()
	if err != nil {
		return 0, err
	}
	s.changed.Notify()
	return seq, nil
}
