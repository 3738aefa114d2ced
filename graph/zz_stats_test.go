package graph
import ("testing";"fmt";bolt "go.etcd.io/bbolt")
func TestZZStats(t *testing.T) {
	db, err := bolt.Open("/tmp/exp/bg/lore/store.bolt", 0o644, &bolt.Options{ReadOnly: true})
	if err != nil { t.Fatal(err) }
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		var other bolt.BucketStats
		tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			st := b.Stats()
			if len(name) > 0 && (name[0] == 'v' || name[0] == 'n') && len(name) == 3 { other.Add(st); return nil }
			fmt.Printf("%-12q keys %8d  leafAlloc %8d KB inuse %8d KB  branch %6d KB depth %d\n", name, st.KeyN, st.LeafAlloc>>10, st.LeafInuse>>10, st.BranchAlloc>>10, st.Depth)
			return nil
		})
		fmt.Printf("v/n buckets  keys %8d  leafAlloc %8d KB inuse %8d KB  buckets %d inline %d\n", other.KeyN, other.LeafAlloc>>10, other.LeafInuse>>10, other.BucketN, other.InlineBucketN)
		return nil
	})
}
