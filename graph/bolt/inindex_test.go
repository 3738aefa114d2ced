package bolt

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lore-dev/lore/graph"

	bbolt "go.etcd.io/bbolt"
)

// inIndex returns the in-edge index's entries, as the edges they name.
func inIndex(t *testing.T, s *Store) []graph.EdgeKey {
	t.Helper()
	var out []graph.EdgeKey
	err := s.db.DB().View(func(tx *bbolt.Tx) error {
		c := newPackedCursor(tx.Bucket(bIn))
		for k := c.First(); k != nil; k = c.Next() {
			r := graph.EdgeKeyFromBytes(k)
			out = append(out, graph.EdgeKey{From: r.To, Label: r.Label, To: r.From, Key: r.Key})
		}
		return c.err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(out, func(a, b graph.EdgeKey) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// allEdges lists every edge record's key, sorted as inIndex sorts.
func allEdges(t *testing.T, s *Store) []graph.EdgeKey {
	t.Helper()
	var out []graph.EdgeKey
	for after := ""; ; {
		page, err := s.ScanEdges(t.Context(), graph.Page{After: after, Limit: graph.MaxPageSize})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Edges {
			out = append(out, e.EdgeKey)
		}
		if after = page.Next; after == "" {
			break
		}
	}
	slices.SortFunc(out, func(a, b graph.EdgeKey) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// The in-edge index follows every write path: edges added, updated,
// deleted, deleted by a node's cascade, bulk loaded (deferring the other
// indexes), and an undone load.
func TestInIndexFollowsWrites(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{DeferAfter: -1})
	same := func(when string) {
		t.Helper()
		if got, want := inIndex(t, s), allEdges(t, s); !slices.Equal(got, want) {
			t.Errorf("%s: the in-edge index holds %v, the records %v", when, got, want)
		}
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Errorf("%s: check: %v %v", when, err, r.Problems)
		}
	}
	var data strings.Builder
	for i := range 30 {
		fmt.Fprintf(&data, `{"kind":"node","id":"service/t%d","type":"Service","properties":{"name":"t%d"}}`+"\n", i, i)
	}
	for i := range 30 {
		fmt.Fprintf(&data, `{"kind":"edge","from":"service/t%d","label":"dependsOn","to":"service/t%d"}`+"\n", i, (i*7+1)%30)
		fmt.Fprintf(&data, `{"kind":"edge","from":"service/t%d","label":"dependsOn","to":"service/t0"}`+"\n", i) // t0 is a hub, with a self-loop
	}
	if _, err := graph.Import(t.Context(), s, strings.NewReader(data.String()), graph.ImportOptions{BatchSize: 7}); err != nil {
		t.Fatal(err)
	}
	same("after a bulk load")
	ent := func(id graph.ID) graph.NodeInput {
		return graph.NodeInput{ID: id, Type: "Entity", Properties: graph.Props{"name": string(id), "entityType": "t", "observations": []any{}}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{ent("entity/a"), ent("entity/b")}, Edges: []graph.EdgeInput{
		{EdgeKey: graph.EdgeKey{From: "entity/a", Label: "relation", To: "entity/b", Key: "k1"}},
		{EdgeKey: graph.EdgeKey{From: "entity/a", Label: "relation", To: "entity/b", Key: "k2"}},
		{EdgeKey: graph.EdgeKey{From: "entity/b", Label: "relation", To: "entity/b", Key: "self"}},
	}})
	same("after adding keyed edges")
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/t3", Label: "dependsOn", To: "service/t0"}, Properties: graph.Props{"critical": true}}}})
	same("after updating an edge")
	apply(t, s, &graph.Batch{DeleteEdges: []graph.EdgeRef{{EdgeKey: graph.EdgeKey{From: "entity/a", Label: "relation", To: "entity/b", Key: "k1"}}}})
	same("after deleting an edge")
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "service/t0"}, {ID: "entity/b"}}})
	same("after deleting the hub and a node with a self-loop")
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/t8"}, Direction: graph.In})
	if err != nil || len(page.Edges) != 1 || page.Edges[0].From != "service/t1" {
		t.Fatalf("in-edges of service/t8: %v %v", page, err)
	}
}

// Check finds an in-edge index that lacks an entry or holds a stray one,
// and Repair rebuilds it.
func TestCheckFindsInIndexDamage(t *testing.T) {
	s := openTest(t, t.TempDir(), Config{})
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a"}}, {ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}}},
	})
	for _, damage := range []func(b *bbolt.Bucket) error{
		func(b *bbolt.Bucket) error {
			return b.Delete(inKey(graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}))
		},
		func(b *bbolt.Bucket) error {
			return b.Put(inKey(graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/a"}), []byte{})
		},
	} {
		if err := s.db.DB().Update(func(tx *bbolt.Tx) error { return damage(tx.Bucket(bIn)) }); err != nil {
			t.Fatal(err)
		}
		r, err := s.Check(t.Context())
		if err != nil || r.OK() || !strings.Contains(strings.Join(r.Problems, "\n"), "in-edge index") {
			t.Errorf("check of a damaged in-edge index: %v %v", err, r.Problems)
		}
		if r, err := s.Repair(t.Context()); err != nil || !r.OK() {
			t.Errorf("repair: %v %v", err, r)
		}
		if got := inIndex(t, s); len(got) != 1 {
			t.Errorf("after the repair the in-edge index holds %v", got)
		}
	}
}

// A store of layout 4 had no in-edge index: Open builds it.
func TestUpgradeBuildsInIndex(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	apply(t, s, &graph.Batch{
		Nodes: []graph.NodeInput{{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a"}}, {ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}}},
	})
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket(bIn); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("version"), u64(4))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir, Config{})
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/b"}, Direction: graph.In})
	if err != nil || len(page.Edges) != 1 || page.Edges[0].From != "service/a" {
		t.Errorf("in-edges of service/b after the upgrade: %v %v", page, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check after the upgrade: %v %v", err, r.Problems)
	}
}

// A store of layout 8 held one in-edge index key per bbolt key (a packed
// index of blocks of one key). Layouts 9 and 10 took it as it was; since
// layout 11 (the search index's keys) Open rebuilds the derived indexes of
// older stores, and the store works on.
func TestLayout8InIndexUpgrades(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	svc := func(id graph.ID) graph.NodeInput {
		return graph.NodeInput{ID: id, Type: "Service", Properties: graph.Props{"name": string(id)}}
	}
	dep := func(from, to graph.ID) graph.EdgeInput {
		return graph.EdgeInput{EdgeKey: graph.EdgeKey{From: from, Label: "dependsOn", To: to}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/b"), svc("service/c")}})
	// Layout 8's index: one bbolt key per edge, with an empty value.
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bMeta).Put([]byte("version"), u64(8))
	})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{dep("service/a", "service/c")}})
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{dep("service/b", "service/c")}})
	err = s.db.DB().Update(func(tx *bbolt.Tx) error {
		// Written as layout 8 wrote them: unpack the block into single keys.
		b := tx.Bucket(bIn)
		keys := [][]byte{inKey(dep("service/a", "service/c").EdgeKey), inKey(dep("service/b", "service/c").EdgeKey)}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		for _, k := range keys {
			if err := b.Put(k, []byte{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir, Config{})
	err = s.db.DB().View(func(tx *bbolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bMeta).Get([]byte("version"))); v != storeVersion {
			t.Errorf("layout %d after Open, want %d", v, storeVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{Edges: []graph.EdgeInput{dep("service/c", "service/c"), dep("service/a", "service/b")}})
	if got, want := inIndex(t, s), allEdges(t, s); !slices.Equal(got, want) {
		t.Errorf("the in-edge index holds %v, the records %v", got, want)
	}
	page, err := s.Edges(t.Context(), graph.EdgeQuery{Nodes: []graph.ID{"service/c"}, Direction: graph.In})
	if err != nil || len(page.Edges) != 3 {
		t.Errorf("in-edges of service/c: %v %v", page, err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
}

// A layout-9 store's type index holds one bbolt key per node, with an
// empty value (a packed index of blocks of one key), which layout 10 took
// as it was and Open now rebuilds with the other derived indexes (see
// TestLayout8InIndexUpgrades). Writes, reads and the check see every key.
func TestLayout9TypeIndexUpgrades(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	svc := func(id graph.ID) graph.NodeInput {
		return graph.NodeInput{ID: id, Type: "Service", Properties: graph.Props{"name": string(id)}}
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/a"), svc("service/c"), svc("service/e")}})
	err := s.db.DB().Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bMeta).Put([]byte("version"), u64(9)); err != nil {
			return err
		}
		// Written as layout 9 wrote them: one key per node.
		if err := tx.DeleteBucket(bType); err != nil {
			return err
		}
		b, err := tx.CreateBucket(bType)
		if err != nil {
			return err
		}
		for _, id := range []graph.ID{"service/a", "service/c", "service/e"} {
			if err := b.Put(typeKey("Service", id), []byte{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTest(t, dir, Config{})
	err = s.db.DB().View(func(tx *bbolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bMeta).Get([]byte("version"))); v != storeVersion {
			t.Errorf("layout %d after Open, want %d", v, storeVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, s, &graph.Batch{Nodes: []graph.NodeInput{svc("service/b"), svc("service/d"), svc("service/f")}})
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "service/c"}}})
	var got []graph.ID
	for next := ""; ; {
		page, err := s.NodeIDsByType(t.Context(), "Service", graph.Page{Limit: 2, After: next})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page.IDs...)
		if next = page.Next; next == "" {
			break
		}
	}
	if want := []graph.ID{"service/a", "service/b", "service/d", "service/e", "service/f"}; !slices.Equal(got, want) {
		t.Errorf("the type index's pages hold %v, want %v", got, want)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Errorf("check: %v %v", err, r.Problems)
	}
}
