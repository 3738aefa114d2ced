package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ckv "github.com/cayleygraph/cayley/graph/kv"
	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	bbolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/lore-dev/lore/graph"
)

// cayleyDump decodes Cayley's part of a store into lines that name values
// instead of IDs, so that two stores that gave out IDs in another order
// compare equal: each value with its reference count, each quad of the log
// (and whether it is deleted), each entry of each quad index with the
// quads it lists, and the quad count. It fails the test on what Cayley's
// own writer never leaves: a value under another hash, an index entry
// whose key is not its quads' or whose IDs are out of order, a horizon
// below an ID in use.
func cayleyDump(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	err := s.read(func(tx *bbolt.Tx) error {
		log := tx.Bucket(bCayleyLog)
		prims := map[uint64]*cproto.Primitive{}
		var maxID uint64
		err := eachLogPrimitive(log, func(id uint64, v []byte) error {
			p := &cproto.Primitive{}
			if err := proto.Unmarshal(v, p); err != nil {
				return err
			}
			if id != p.ID {
				return fmt.Errorf("log key %d holds primitive %d", id, p.ID)
			}
			prims[p.ID] = p
			maxID = max(maxID, p.ID)
			return nil
		})
		if err != nil {
			return err
		}
		name := func(id uint64) (string, error) {
			if id == 0 {
				return "-", nil
			}
			p := prims[id]
			if p == nil || len(p.Value) == 0 {
				return "", fmt.Errorf("ID %d names no value", id)
			}
			v, err := pquads.UnmarshalValue(p.Value)
			if err != nil {
				return "", err
			}
			return quad.StringOf(v), nil
		}
		quadOf := func(p *cproto.Primitive) (string, error) {
			var parts []string
			for _, d := range quad.Directions {
				n, err := name(p.GetDirection(d))
				if err != nil && p.Deleted {
					n, err = "(gone)", nil // a tombstone outlives the values it named
				}
				if err != nil {
					return "", err
				}
				parts = append(parts, n)
			}
			return strings.Join(parts, " "), nil
		}
		err = tx.Bucket(bValues).ForEach(func(k, v []byte) error {
			idPart, err := valuePart(v, 'v')
			if err != nil {
				return err
			}
			id, _ := binary.Uvarint(idPart)
			n, err := name(id)
			if err != nil {
				return err
			}
			val, _ := pquads.UnmarshalValue(prims[id].Value)
			if h := refs.HashOf(val); !bytes.Equal(h[:], k) {
				return fmt.Errorf("value %s is under another hash", n)
			}
			countPart, _ := valuePart(v, 'n')
			count, _ := binary.Uvarint(countPart)
			out = append(out, fmt.Sprintf("value %s refs %d", n, count))
			return nil
		})
		if err != nil {
			return err
		}
		live := 0
		for _, p := range prims {
			if len(p.Value) != 0 {
				continue
			}
			q, err := quadOf(p)
			if err != nil {
				return err
			}
			if !p.Deleted {
				live++
			}
			out = append(out, fmt.Sprintf("quad %s deleted %v", q, p.Deleted))
		}
		meta := tx.Bucket([]byte("meta"))
		var inds []ckv.QuadIndex
		if err := json.Unmarshal(meta.Get([]byte("indexes")), &inds); err != nil {
			return fmt.Errorf("Cayley's list of quad indexes %q: %w", meta.Get([]byte("indexes")), err)
		}
		for _, ind := range inds {
			var bname []byte
			for _, d := range ind.Dirs {
				bname = append(bname, d.Prefix())
			}
			each := tx.Bucket(bname).ForEach
			if bytes.Equal(bname, cayleyOPS) { // in blocks (see bOPS)
				each = func(f func(k, v []byte) error) error { return eachOPSEntry(tx.Bucket(bOPS), f) }
			}
			err := each(func(k, v []byte) error {
				var quads []string
				var last uint64
				for len(v) > 0 {
					id, n := binary.Uvarint(v)
					v = v[n:]
					if id <= last {
						return fmt.Errorf("index %s lists %d after %d", bname, id, last)
					}
					last = id
					p := prims[id]
					if p == nil {
						return fmt.Errorf("index %s lists %d, which is not in the log", bname, id)
					}
					var want []byte
					for _, d := range ind.Dirs {
						want = binary.BigEndian.AppendUint64(want, p.GetDirection(d))
					}
					if !bytes.Equal(want, k) {
						return fmt.Errorf("index %s lists %d under another key", bname, id)
					}
					q, err := quadOf(p)
					if err != nil {
						return err
					}
					quads = append(quads, q)
				}
				slices.Sort(quads)
				out = append(out, fmt.Sprintf("index %s: %s", bname, strings.Join(quads, " | ")))
				return nil
			})
			if err != nil {
				return err
			}
		}
		// A store never written into has neither.
		u64le := func(v []byte) uint64 {
			if v == nil {
				return 0
			}
			return binary.LittleEndian.Uint64(v)
		}
		size := u64le(meta.Get([]byte("size")))
		if int(size) != live {
			out = append(out, fmt.Sprintf("size %d, live quads %d", size, live))
		}
		if h := u64le(meta.Get([]byte("horizon"))); h < maxID {
			return fmt.Errorf("horizon %d is below ID %d", h, maxID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// randomLoad is a random graph as an import file: services that depend
// on one another, entities related by keyed relations (several keys
// between one pair), topics and documents about them, some nodes written
// twice, some edges from a node to itself.
func randomLoad(rng *rand.Rand) string {
	var b strings.Builder
	nServices, nEntities, nTopics := 5+rng.IntN(60), 3+rng.IntN(40), 2+rng.IntN(20)
	node := func(id, typ, props string) {
		fmt.Fprintf(&b, `{"kind":"node","id":%q,"type":%q,"properties":%s}`+"\n", id, typ, props)
	}
	for i := range nServices {
		node(fmt.Sprintf("service/s%d", i), "Service", fmt.Sprintf(`{"name":"service %d","tier":%d}`, i, rng.IntN(4)))
	}
	for i := range nEntities {
		node(fmt.Sprintf("entity/e%d", i), "Entity", fmt.Sprintf(`{"name":"entity %d","entityType":"kind%d"}`, i, rng.IntN(3)))
	}
	for i := range nTopics {
		node(fmt.Sprintf("topic/t%d", i), "Topic", fmt.Sprintf(`{"name":"topic %d"}`, i))
		node(fmt.Sprintf("doc/d%d", i), "Document", fmt.Sprintf(`{"title":"doc %d"}`, i))
	}
	for range rng.IntN(10) { // written again, with other properties
		i := rng.IntN(nServices)
		node(fmt.Sprintf("service/s%d", i), "Service", fmt.Sprintf(`{"name":"service %d again"}`, i))
	}
	for range rng.IntN(6 * nServices) {
		fmt.Fprintf(&b, `{"kind":"edge","from":"service/s%d","label":"dependsOn","to":"service/s%d"}`+"\n", rng.IntN(nServices), rng.IntN(nServices))
	}
	for range rng.IntN(4 * nEntities) {
		fmt.Fprintf(&b, `{"kind":"edge","from":"entity/e%d","label":"relation","to":"entity/e%d","key":"k%d"}`+"\n", rng.IntN(nEntities), rng.IntN(nEntities), rng.IntN(3))
	}
	for range rng.IntN(3 * nTopics) {
		to := fmt.Sprintf("topic/t%d", rng.IntN(nTopics))
		if rng.IntN(3) == 0 {
			to = fmt.Sprintf("service/s%d", rng.IntN(nServices))
		}
		fmt.Fprintf(&b, `{"kind":"edge","from":"doc/d%d","label":"about","to":%q}`+"\n", rng.IntN(nTopics), to)
	}
	return b.String()
}

// TestQuadLoadMatchesCayley is the quadLoad's oracle: random graphs loaded
// in small batches into two empty stores, one writing its quads through
// Cayley's ApplyDeltas and one through a quadLoad, leave the same values,
// reference counts, quads and index entries, decoded; and the same writes
// afterwards, through Cayley on both (deletes that drop values among
// them), leave them the same again.
func TestQuadLoadMatchesCayley(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			data := randomLoad(rng)
			batch := 1 + rng.IntN(80)
			cayley := openTest(t, t.TempDir(), Config{cayleyLoads: true, DeferAfter: -1})
			direct := openTest(t, t.TempDir(), Config{DeferAfter: -1})
			for _, s := range []*Store{cayley, direct} {
				if _, err := graph.Import(t.Context(), s, strings.NewReader(data), graph.ImportOptions{BatchSize: batch}); err != nil {
					t.Fatal(err)
				}
			}
			want, got := cayleyDump(t, cayley), cayleyDump(t, direct)
			if !slices.Equal(want, got) {
				t.Fatalf("after the load (batches of %d):\n%s", batch, lineDiff(want, got))
			}
			if r, err := direct.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check: %v %v", err, r.Problems)
			}

			// Writes after the load: delete nodes (their edges go with
			// them), delete and add edges, add a node.
			var del graph.Batch
			for i := range 3 {
				del.DeleteNodes = append(del.DeleteNodes, graph.NodeRef{ID: graph.ID(fmt.Sprintf("service/s%d", i))})
			}
			del.DeleteNodes = append(del.DeleteNodes, graph.NodeRef{ID: "entity/e0"}, graph.NodeRef{ID: "topic/t0"})
			add := &graph.Batch{
				Nodes: []graph.NodeInput{{ID: "service/new", Type: "Service", Properties: graph.Props{"name": "new"}}},
				Edges: []graph.EdgeInput{
					{EdgeKey: graph.EdgeKey{From: "service/new", Label: "dependsOn", To: "service/s4"}},
					{EdgeKey: graph.EdgeKey{From: "entity/e1", Label: "relation", To: "entity/e2", Key: "later"}},
				},
			}
			for _, s := range []*Store{cayley, direct} {
				apply(t, s, &del)
				apply(t, s, add)
			}
			want, got = cayleyDump(t, cayley), cayleyDump(t, direct)
			if !slices.Equal(want, got) {
				t.Fatalf("after writes that followed the load:\n%s", lineDiff(want, got))
			}
			if r, err := direct.Check(t.Context()); err != nil || !r.OK() {
				t.Fatalf("check after the writes: %v %v", err, r.Problems)
			}
		})
	}
}

// A bulk load whose batch removes quads hands Cayley the rest of the load,
// which goes on from what the quadLoad wrote.
func TestQuadLoadHandsOverToCayley(t *testing.T) {
	batches := []*graph.Batch{
		{Nodes: []graph.NodeInput{
			{ID: "service/a", Type: "Service", Properties: graph.Props{"name": "a"}},
			{ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b"}},
			{ID: "service/c", Type: "Service", Properties: graph.Props{"name": "c"}},
		}, Edges: []graph.EdgeInput{
			{EdgeKey: graph.EdgeKey{From: "service/a", Label: "dependsOn", To: "service/b"}},
			{EdgeKey: graph.EdgeKey{From: "service/b", Label: "dependsOn", To: "service/c"}},
		}},
		{DeleteNodes: []graph.NodeRef{{ID: "service/b"}}},
		{Nodes: []graph.NodeInput{{ID: "service/b", Type: "Service", Properties: graph.Props{"name": "b again"}}},
			Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "service/c", Label: "dependsOn", To: "service/b"}}}},
	}
	var dumps [2][]string
	for i, cfg := range []Config{{cayleyLoads: true, DeferAfter: -1}, {DeferAfter: -1}} {
		s := openTest(t, t.TempDir(), cfg)
		end, ok := s.BeginBulk()
		if !ok {
			t.Fatal("an empty store did not start a bulk load")
		}
		for j, b := range batches {
			apply(t, s, b)
			if i == 1 && j == 0 && (s.qload == nil || s.qload.commits != 1) {
				t.Fatalf("the first batch of a bulk load did not go through a quadLoad: %+v", s.qload)
			}
			if i == 1 && j == 1 && s.qload != nil {
				t.Fatal("a batch that deletes kept the quadLoad")
			}
		}
		dumps[i] = endAndDump(t, s, end)
	}
	if !slices.Equal(dumps[0], dumps[1]) {
		t.Fatalf("%s", lineDiff(dumps[0], dumps[1]))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// A commit of a bulk load that fails leaves nothing of its quads, in the
// file or in the quadLoad (its kept log entries included, in a load that
// rewrites its file), which goes on with the rest of the load and leaves
// what Cayley would.
func TestQuadLoadSurvivesFailedCommit(t *testing.T) {
	topic := func(id string) graph.NodeInput {
		return graph.NodeInput{ID: graph.ID(id), Type: "Topic", Properties: graph.Props{"name": id}}
	}
	doc := func(id, about string) (graph.NodeInput, graph.EdgeInput) {
		return graph.NodeInput{ID: graph.ID(id), Type: "Document", Properties: graph.Props{"title": id}},
			graph.EdgeInput{EdgeKey: graph.EdgeKey{From: graph.ID(id), Label: "about", To: graph.ID(about)}}
	}
	d1, e1 := doc("doc/d1", "topic/t1")
	d2, e2 := doc("doc/d2", "topic/t5")
	d3, e3 := doc("doc/d3", "topic/t5")
	first := &graph.Batch{Nodes: []graph.NodeInput{topic("topic/t1"), topic("topic/t5"), d1}, Edges: []graph.EdgeInput{e1}}
	failing := &graph.Batch{Nodes: []graph.NodeInput{topic("topic/t9"), d2}, Edges: []graph.EdgeInput{e2}}
	last := &graph.Batch{Nodes: []graph.NodeInput{d3}, Edges: []graph.EdgeInput{e3}}
	var dumps [3][]string
	for i, cfg := range []Config{{cayleyLoads: true, DeferAfter: -1, DeferFlush: 1}, {DeferAfter: -1, DeferFlush: 1}, {DeferAfter: -1, DeferFlush: 1}} {
		s := openTest(t, t.TempDir(), cfg)
		ctx := t.Context()
		var end func() error
		if i < 2 {
			e, ok := s.BeginBulk()
			if !ok {
				t.Fatal("an empty store did not start a bulk load")
			}
			end = e
		} else { // all or nothing, rewriting the file
			e, ok, err := s.BeginLoad(true)
			if err != nil || !ok {
				t.Fatalf("an empty store did not start a load: %v", err)
			}
			end = func() error { return e(true) }
			ctx = graph.WithinLoad(ctx)
		}
		apply := func(t *testing.T, s *Store, b *graph.Batch) {
			t.Helper()
			if _, err := s.Apply(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		apply(t, s, first)
		if i > 0 && s.qload == nil {
			t.Fatal("the bulk load has no quadLoad")
		}
		if (i == 2) != (s.qload != nil && s.qload.keptLog != nil) {
			t.Fatalf("load %d keeps Cayley's log: %v", i, i != 2)
		}
		var kept logMark
		if i == 2 {
			kept = s.qload.keptLog.mark()
		}
		// A count the next commit must add to reads as below zero: its
		// writes fail, after the quadLoad wrote its part.
		topics := countKey("node", "Topic")
		count := func(v []byte) {
			t.Helper()
			if err := s.db.DB().Update(func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(topics, v) }); err != nil {
				t.Fatal(err)
			}
		}
		var good []byte
		_ = s.read(func(tx *bbolt.Tx) error { good = bytes.Clone(tx.Bucket(bMeta).Get(topics)); return nil })
		count(u64(1 << 63))
		if _, err := s.Apply(ctx, failing); err == nil || !strings.Contains(err.Error(), "would go negative") {
			t.Fatalf("a commit over a corrupt count: %v", err)
		}
		if i > 0 && (s.qload == nil || s.qload.links.len() != 4 || s.qload.commits != 2) {
			t.Fatalf("after a failed commit, the quadLoad holds %+v", s.qload)
		}
		if i == 2 && s.qload.keptLog.mark() != kept {
			t.Fatalf("after a failed commit, the kept log holds %+v, not %+v", s.qload.keptLog.mark(), kept)
		}
		count(good)
		apply(t, s, failing)
		apply(t, s, last)
		dumps[i] = endAndDump(t, s, end)
	}
	for i := 1; i < 3; i++ {
		if !slices.Equal(dumps[0], dumps[i]) {
			t.Fatalf("load %d: %s", i, lineDiff(dumps[0], dumps[i]))
		}
	}
}

// A new store keeps one of Cayley's quad indexes, [O,P,S]; a store of
// layout 7, made with Cayley's two default indexes, loses [S,P] at its next
// Open and becomes layout 8, and Cayley goes on with the other index.
func TestOneQuadIndex(t *testing.T) {
	indexes := func(t *testing.T, s *Store) (string, bool) {
		t.Helper()
		var list string
		var sp bool
		_ = s.read(func(tx *bbolt.Tx) error {
			list = string(tx.Bucket([]byte("meta")).Get([]byte("indexes")))
			sp = tx.Bucket([]byte("sp")) != nil
			return nil
		})
		return list, sp
	}
	oneJSON, _ := json.Marshal([]ckv.QuadIndex{{Dirs: []quad.Direction{quad.Object, quad.Predicate, quad.Subject}}})
	one := string(oneJSON)
	dir := t.TempDir()
	s := openTest(t, dir, Config{})
	if list, sp := indexes(t, s); list != one || sp {
		t.Fatalf("a new store's indexes: %s, [S,P] bucket %v", list, sp)
	}
	topic := graph.NodeInput{ID: "topic/a", Type: "Topic", Properties: graph.Props{"name": "a"}}
	docs := &graph.Batch{Nodes: []graph.NodeInput{topic,
		{ID: "doc/d", Type: "Document", Properties: graph.Props{"title": "d"}},
		{ID: "doc/e", Type: "Document", Properties: graph.Props{"title": "e"}}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "doc/d", Label: "about", To: "topic/a"}}}}
	apply(t, s, docs)
	s.Close()

	// What Cayley's defaults leave: both indexes, [S,P] with an entry.
	db, err := bbolt.Open(dir+"/"+FileName, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		data, _ := json.Marshal(ckv.DefaultQuadIndexes)
		if err := tx.Bucket([]byte("meta")).Put([]byte("indexes"), data); err != nil {
			return err
		}
		sp, err := tx.CreateBucket([]byte("sp"))
		if err != nil {
			return err
		}
		if err := sp.Put(make([]byte, 16), []byte{1}); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("version"), u64(7)) // the layout that had both
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, Config{})
	if list, sp := indexes(t, s); list != one || sp {
		t.Fatalf("after reopening a store with both indexes: %s, [S,P] bucket %v", list, sp)
	}
	_ = s.read(func(tx *bbolt.Tx) error {
		if v := binary.BigEndian.Uint64(tx.Bucket(bMeta).Get([]byte("version"))); v != storeVersion {
			t.Errorf("store layout version %d after the upgrade, want %d", v, storeVersion)
		}
		return nil
	})
	apply(t, s, &graph.Batch{DeleteNodes: []graph.NodeRef{{ID: "doc/d"}},
		Edges: []graph.EdgeInput{{EdgeKey: graph.EdgeKey{From: "doc/e", Label: "about", To: "topic/a"}}}})
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	want := []string{
		"index ops: <n:doc/e> <e:about> <n:topic/a> -",
		"quad <n:doc/e> <e:about> <n:topic/a> - deleted false",
		"quad (gone) <pg:type> <t:Document> - deleted true",
		"value <n:topic/a> refs 2",
	}
	dump := cayleyDump(t, s)
	for _, w := range want {
		if !slices.Contains(dump, w) {
			t.Errorf("no %q in\n%s", w, strings.Join(dump, "\n"))
		}
	}
}

// appendLink writes what proto.Marshal writes for a quad's primitive.
func TestAppendLinkMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		id := func() uint64 {
			if rng.IntN(4) == 0 {
				return 0
			}
			return rng.Uint64() >> rng.IntN(64)
		}
		p := &cproto.Primitive{ID: id(), Subject: id(), Predicate: id(), Object: id(), Label: id()}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLink(nil, p); !bytes.Equal(got, want) {
			t.Fatalf("%v: %x, proto.Marshal %x", p, got, want)
		}
	}
}

// Edge records keep updated as a difference from created, whatever the
// two are; records of version 1, which kept it whole, still read.
func TestEdgeRecordEncoding(t *testing.T) {
	const maxInt, minInt = int64(^uint64(0) >> 1), -int64(^uint64(0)>>1) - 1
	for _, r := range []edgeRec{
		{Created: 1764633600123456789, Updated: 1764633600123456789, Rev: 1},
		{Created: 1764633600123456789, Updated: 1764640000000000000, Rev: 7, Props: []byte(`{"a":1}`)},
		{Created: 1764640000000000000, Updated: 5, Rev: 2}, // an import may set either
		{Created: maxInt, Updated: minInt, Rev: 3},
		{Created: minInt, Updated: maxInt},
	} {
		got, err := decodeEdgeRec(encodeEdge(&r))
		if err != nil || got.Created != r.Created || got.Updated != r.Updated || got.Rev != r.Rev || !bytes.Equal(got.Props, r.Props) {
			t.Errorf("%+v decodes as %+v, %v", r, got, err)
		}
	}
	v1 := binary.AppendVarint([]byte{edgeRecordV1}, 100)
	v1 = binary.AppendVarint(v1, 250)
	v1 = binary.AppendUvarint(v1, 4)
	v1 = append(v1, `{"b":2}`...)
	got, err := decodeEdgeRec(v1)
	if err != nil || got.Created != 100 || got.Updated != 250 || got.Rev != 4 || string(got.Props) != `{"b":2}` {
		t.Errorf("a version 1 record decodes as %+v, %v", got, err)
	}
	if n := len(encodeEdge(&edgeRec{Created: 1764633600123456789, Updated: 1764633600123456789, Rev: 1})); n > 12 {
		t.Errorf("an edge record without properties takes %d bytes", n)
	}
}

// A bulk load that dies before its quadLoad wrote what it kept back leaves
// a store whose next Open rebuilds Cayley's part from the records: the
// same as a load through Cayley that died at the same point.
func TestQuadLoadDiesAndOpenRebuilds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	data := randomLoad(rng)
	var dumps [2][]string
	for i, cfg := range []Config{{cayleyLoads: true, DeferAfter: -1}, {DeferAfter: -1}} {
		dir := t.TempDir()
		s := openTest(t, dir, cfg)
		end, ok := s.BeginBulk()
		if !ok {
			t.Fatal("an empty store did not start a bulk load")
		}
		_ = end // never called: the process "dies"
		for _, b := range lineBatches(t, data, 40) {
			apply(t, s, b)
		}
		if i == 1 && (s.qload == nil || s.qload.links.len() == 0) {
			t.Fatalf("the load kept nothing back: %+v", s.qload)
		}
		s.deferred, s.qload = nil, nil // what a dead process leaves
		s.Close()
		// A read-only open (lore check, say) finishes it the same way: it
		// has the file to itself, and must not answer from half of it.
		copied := t.TempDir()
		copyStore(t, dir, copied)
		ro := cfg
		ro.Path, ro.ReadOnly = copied, true
		rs, err := Open(t.Context(), ro)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := rs.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("check after a read-only open: %v %v", err, r.Problems)
		}
		roDump := cayleyDump(t, rs)
		rs.Close()
		s = openTest(t, dir, cfg)
		if r, err := s.Check(t.Context()); err != nil || !r.OK() {
			t.Fatalf("check after reopening: %v %v", err, r.Problems)
		}
		_ = s.read(func(tx *bbolt.Tx) error {
			if tx.Bucket(bMeta).Get(metaQuadsPending) != nil {
				t.Error("the reopened store is still marked")
			}
			return nil
		})
		dumps[i] = cayleyDump(t, s)
		if !slices.Equal(roDump, dumps[i]) {
			t.Fatalf("read-only open vs open:\n%s", lineDiff(roDump, dumps[i]))
		}
	}
	if !slices.Equal(dumps[0], dumps[1]) {
		t.Fatalf("%s", lineDiff(dumps[0], dumps[1]))
	}
}

// endAndDump ends a bulk load, checks the store and dumps Cayley's part.
func endAndDump(t *testing.T, s *Store, end func() error) []string {
	t.Helper()
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Check(t.Context()); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
	return cayleyDump(t, s)
}

// addLine adds an import file's line, a node or an edge, to b.
func addLine(t *testing.T, b *graph.Batch, line string) {
	t.Helper()
	var kind struct{ Kind string }
	if err := json.Unmarshal([]byte(line), &kind); err != nil {
		t.Fatal(err)
	}
	if kind.Kind == "node" {
		var n graph.NodeInput
		if err := json.Unmarshal([]byte(line), &n); err != nil {
			t.Fatal(err)
		}
		b.Nodes = append(b.Nodes, n)
		return
	}
	var e graph.EdgeInput
	if err := json.Unmarshal([]byte(line), &e); err != nil {
		t.Fatal(err)
	}
	b.Edges = append(b.Edges, e)
}

// copyStore copies the store file of the closed store in dir into to.
func copyStore(t *testing.T, dir, to string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, FileName), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLinkList checks the blocks of a linkList against one slice: adds
// that cross blocks, truncations (a failed commit's rollback) to random
// points, and sorted, after which adds go on.
func TestLinkList(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var l linkList
	var want []link
	for round := range 40 {
		for range rng.IntN(3 * linkBlock) {
			x := link{rng.Uint64N(50), rng.Uint64N(5), rng.Uint64N(50), rng.Uint64()}
			l.add(x)
			want = append(want, x)
		}
		if rng.IntN(2) == 0 {
			n := rng.IntN(len(want) + 1)
			l.truncate(n)
			want = want[:n]
		}
		if l.len() != len(want) {
			t.Fatalf("round %d: len %d, want %d", round, l.len(), len(want))
		}
		if l.held() < int64(len(want))*32 {
			t.Fatalf("round %d: held %d bytes for %d links", round, l.held(), len(want))
		}
		if round%5 == 4 {
			sortLinks(want)
			if got := l.sorted(); !slices.Equal(got, want) {
				t.Fatalf("round %d: sorted differs", round)
			}
			continue
		}
		var got []link
		for _, b := range l.blocks {
			got = append(got, b...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: the blocks differ from the slice", round)
		}
	}
}
