package bolt

import (
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// A store of layout 5 had no degree index: Open builds it, and the
// commits after keep it.
func TestUpgradeBuildsDegreeIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{
			{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a"}},
			{ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}},
			{ID: "service/c", Type: "Service", Properties: graph.Props{"name": "c"}},
		},
		Edges: []graph.EdgeInput{
			{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}},
			{EdgeKey: graph.EdgeKey{From: "service/c", Label: "dependsOn", To: "service/b"}},
			{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/c"}},
		},
	})
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bDegIdx); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("version"), u64(5))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir, Config{})
	q := graph.DegreeQuery{Type: "Service", Label: "dependsOn", Direction: graph.In, Desc: true}
	got, err := s.RankByDegree(t.Context(), q)
	want := []graph.DegreeEntry{{ID: "service/b", Degree: 2}, {ID: "service/c", Degree: 1}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("in-degrees after the upgrade: %v %v, want %v", got, err, want)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check after the upgrade: %v %v", err, r.Problems)
	}
	// A damaged index is found, and repaired.
	_ = s.db.DB().Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bDegIdx).Put(degIdxKey("Service", "dependsOn", 'i', 7, "service/a"), nil)
	})
	if r, err := s.Check(t.Context()); err != nil || r.OK() {
		t.Errorf("check of a damaged degree index: %v %v", err, r.Problems)
	}
	if r, err := s.Repair(t.Context()); err != nil || !r.OK() {
		t.Errorf("repair: %v %v", err, r)
	}
	if got, _ := s.RankByDegree(t.Context(), q); len(got) != 2 || got[0] != want[0] {
		t.Errorf("in-degrees after the repair: %v", got)
	}
}
