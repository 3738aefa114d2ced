package bolt

import (
	"fmt"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// BenchmarkFoldTally folds a load's tally into 300,000 node records
// without summaries, three labels and directions each, as a rewriting
// load's end does (loadRest.fold).
func BenchmarkFoldTally(b *testing.B) {
	const n = 300000
	db, err := bbolt.Open(b.TempDir()+"/db", 0o600, &bbolt.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ids := make([]graph.ID, n)
	err = db.Update(func(tx *bbolt.Tx) error {
		bk, err := tx.CreateBucket(bNodes)
		if err != nil {
			return err
		}
		bk.FillPercent = 1
		for i := range ids {
			ids[i] = graph.ID(fmt.Sprintf("package/p%07d", i))
			rec := nodeRec{NodeRecord: graph.NodeRecord{Type: "Package", Created: 1, Updated: 1, Rev: 1,
				Props: fmt.Appendf(nil, `{"name":"p%07d","version":"1.0","section":"libs","size":%d,"description":"p%07d, a package in libs"}`, i, i*37, i)}}
			if err := bk.Put([]byte(ids[i]), rec.encode()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		t := newDegTally()
		for i, id := range ids {
			t.add(id, 'i', "dependsOn", int64(1+i%7))
			t.add(id, 'o', "dependsOn", int64(1+i%3))
			t.add(id, 'o', "inSection", 1)
		}
		b.StartTimer()
		err := db.View(func(tx *bbolt.Tx) error {
			_, _, _, err := foldTally(tx, t, nil)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
