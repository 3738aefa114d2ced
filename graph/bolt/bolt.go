package bolt

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lore-dev/lore/graph"

	cgraph "github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/lore-dev/lore/schema"
)

// FileName is the bbolt file inside a store directory.
const FileName = "store.bolt"

// ownerFile records which process holds a store, for the "locked" message.
const ownerFile = "owner"

// storeVersion is the layout version of Lore's buckets. Version 1 kept
// in-edge counters only, one bDeg entry per node and label; version 2 kept
// each node's edge summary in bDeg; version 3 keeps it in the node record;
// version 4 keeps Cayley's value IDs and reference counts in two buckets
// instead of 131,072 (see hookKV); version 5 adds the in-edge index (bIn);
// version 6 holds the search postings of graph.TokenizerVersion 2 (folded,
// stemmed, BM25 impacts), in impact order too, and their counts; version 7
// adds the degree index (bDegIdx); version 8 writes edge records of
// version 2 (see record.go) and keeps one of Cayley's quad indexes (see
// oneQuadIndex), so that a Lore that reads only version 7 refuses it
// rather than finding its edges corrupt; version 9 packs the in-edge,
// degree and property indexes into blocks (see packKeys), which a Lore
// that reads only version 8 would take for one key each: a version-8
// index is a valid version-9 one, and needs no upgrade; version 10 packs
// the type index too (a version-9 one is a valid version-10 one); version
// 11 packs the search index, its postings' weights in their keys (see
// tokenKey), keeps each of Cayley's values in one record, its ID and its
// count (see valueRecord), and Cayley's log in blocks (see bCayleyLog).
// Open upgrades older stores: it moves the values
// (mergeValueBuckets) and rebuilds the derived data, the in-edge index
// with it (up to version 6), the search index (version 10), and drops
// Cayley's [S,P] index.
const storeVersion = 11

// Lore's buckets, beside Cayley's ("meta", "log", "ops", and "v" and
// "n" as the adapter keeps them, see hookKV).
var (
	bNodes     = []byte("lore.node") // ID -> nodeRec
	bEdges     = []byte("lore.edge") // edge key bytes -> edgeRec
	bIn        = []byte("lore.in")   // the in-edge index: keys to NUL label NUL from NUL key (inKey), in blocks (see packKeys)
	bType      = []byte("lore.type") // type NUL ID -> ""
	bProp      = []byte("lore.prop") // the property index: keys type NUL prop NUL value ID, in blocks
	bTok       = []byte("lore.tok")  // the search index: keys tokenKey and impKey, in blocks
	bDeg       = []byte("lore.deg")  // marked while a bulk load sums the edge summaries in memory (see degree.go)
	bDegIdx    = []byte("lore.degx") // the degree index: keys type NUL label NUL dir count ID (see degindex.go), in blocks
	bLog       = []byte("lore.log")  // seq -> Change
	bIdem      = []byte("lore.idem") // idempotency key -> idemRec
	bMeta      = []byte("lore.meta") // seq, version, model, counts
	allBuckets = [][]byte{bNodes, bEdges, bIn, bType, bProp, bTok, bDeg, bDegIdx, bLog, bIdem, bMeta}
)

// Config configures Open.
type Config struct {
	// Path is the store directory; it is created if missing (unless
	// ReadOnly). Required. A URL (postgres://…) is refused: this Lore
	// keeps stores in local directories only.
	Path string
	// Model is the model to validate against. Nil means the model the store
	// was last opened with, or the default model for a new store.
	//
	// A model other than the stored one is checked against the store: it
	// must have every node type and edge label the store holds. If it
	// changes what Lore derives from the records (a node type's indexed or
	// search properties, or its display property), Open rebuilds the
	// derived indexes before it returns (see Progress), so that no answer
	// changes silently. The model is then saved in the store, unless
	// ReadOnly.
	Model *schema.Model
	// ReadOnly opens a store for reading: Open fails with an error
	// wrapping ErrNoStore if Path holds none, a Model other than the
	// stored one is used by this process only and never saved (and
	// refused if it would change the derived indexes, which only a writer
	// rebuilds), and Apply refuses writes. Open may still finish work a
	// writer left undone (an interrupted load or rebuild).
	ReadOnly bool
	// Progress, if set, is called as Open rebuilds derived indexes: after
	// a model change, or an interrupted bulk load or rebuild.
	Progress func(RebuildProgress)
	// LockTimeout bounds the wait for another process's lock; 0 means 1s.
	LockTimeout time.Duration
	// MmapSize is the initial memory map size in bytes; 0 means 1 GiB.
	MmapSize int
	// NoSync skips the fsync of each commit. A process crash loses nothing
	// committed, a power cut may; call Sync to flush. For tests and bulk loads.
	NoSync bool

	// Bulk-load tuning (see graph.BulkLoader); the defaults are what the
	// import benchmarks chose.
	//
	// DeferAfter is how many elements a bulk load writes before it defers
	// the derived index entries to its end; 0 means DefaultDeferAfter, and
	// a negative value defers them from the first element. Below it the
	// indexes are small, and writing each commit's entries with it costs
	// less than collecting, sorting and writing them all in the last
	// commit, which nothing overlaps: at 10k nodes and 20k edges (30k
	// elements), the load took 4% less time without deferring. A load
	// that rewrites its file (see KeepLoadFile) defers them from the first
	// element whatever DeferAfter says: its deferred entries wait in
	// sorted runs that the rewrite merges into the new file, which costs
	// less than writing them into the old one (the benchmark graph at 10k
	// nodes: 0.37 s against 0.28 s; at 100k, 2.70 s against 2.63 s).
	DeferAfter int
	// DeferFlush is how many deferred entries a bulk load holds before it
	// writes them (in key order, with the next commit); 0 means
	// DefaultDeferFlush.
	DeferFlush int
	// KeepLoadFile keeps the file as a bulk load into an empty store wrote
	// it, instead of rewriting it compactly at the load's end (see
	// rewriteFile): for a load that the rewrite's extra seconds would
	// delay more than the file's size matters.
	KeepLoadFile bool
	// LoadBuffer bounds, in bytes, what a bulk load holds in memory to
	// write at its end (see Store.held): its edge records, in-edge and
	// index entries, and Cayley's index entries and log. Once a batch
	// finds more held, the load writes it into the file, as a load that
	// keeps its file does, and holds anew (see Store.spill): the load
	// goes on in bounded memory, at the cost of those writes. 0 means
	// DefaultLoadBuffer(); a negative value sets no bound.
	LoadBuffer int64
	// UpgradeChunk is how many of Cayley's values an upgrade from store
	// layout 3 or older moves per transaction; 0 means DefaultUpgradeChunk.
	UpgradeChunk int

	// cayleyLoads makes bulk loads write their quads through Cayley's
	// ApplyDeltas instead of a quadLoad, for tests that compare the two.
	cayleyLoads bool
	// beforeRename, if set, is called by a rewrite of the file once the
	// new file is written and synced, before it takes the old one's
	// place; tests copy the directory there, as a crash would leave it.
	beforeRename func()
	// stream, if set, is called at points of ApplyStream's pipeline.
	stream streamHooks
}

// streamHooks let a test force an order on ApplyStream's planning of one
// batch and the commit of the one before, which run at the same time.
type streamHooks struct {
	planning func(*graph.Batch)          // planning has opened its snapshot and read nothing yet
	waiting  func()                      // planning waits for the commit in flight, which removes edges
	flush    func(do func() error) error // runs a commit's write (do) of the load's waiting edge records
}

// Defaults of Config's tuning fields.
const (
	DefaultDeferAfter   = graph.DefaultImportBatch
	DefaultDeferFlush   = 1 << 18
	DefaultUpgradeChunk = 1 << 18
)

// DefaultLoadBuffer returns what a zero Config.LoadBuffer means: a quarter
// of the machine's memory, at least 256 MiB, or 4 GiB where it is unknown.
// An all-or-nothing bulk load into an empty store keeps about as much live
// as the file it writes, most of it what the buffer bounds; the rest
// (Cayley's values, the load's tally of edge summaries, the planner's
// duplicate tracker) grows with the input too, and is not bounded. Measured
// at 1M nodes of the benchmark graph (a 2.1 GB file), one load each: with
// no spill, 66.8 s and 2.47 GB live at most; with a buffer of 256 MiB, five
// spills of 261-265 MiB, each 8.4 to 11.6 s (they write into big buckets
// at scattered places), 126.6 s and 1.57 GB live at most. So the default
// leaves loads that fit the machine alone, and keeps a bigger one from
// running out of memory a few million nodes sooner.
func DefaultLoadBuffer() int64 {
	if mem := graph.PhysicalMemory(); mem > 0 {
		return max(mem/4, 256<<20)
	}
	return 4 << 30
}

// Bolt is the embedded store: Cayley's KV quad store on a bbolt file that
// Lore opens itself, plus Lore's records, indexes and change log in the
// same file.
type Store struct {
	path string
	db   *hbolt.DB
	kv   *hookKV
	// model is the model in use: set at Open, replaced by UseModel (under
	// wmu and rw, with the derived indexes it implies).
	model atomic.Pointer[schema.Model]

	// wmu serialises writers. rw keeps readers out while Cayley commits:
	// its bbolt store deadlocks when a commit remaps the file under open
	// read transactions.
	wmu sync.Mutex
	rw  sync.RWMutex

	qs       cgraph.QuadStore // replaced after a failed commit (Cayley's state is then tainted)
	lastSeq  uint64
	base     uint64 // the change log starts after it (see metaBase)
	readOnly bool
	loading  bool // an all-or-nothing load is under way: other writes wait for it (see BeginLoad)
	// ending says that an all-or-nothing load has finished its batches
	// and left the rest of its writes for the rewrite of the file (see
	// bulk.finish): no commit may come in between.
	ending   bool
	closed   bool
	changed  *graph.Notifier
	deferred *deferredIndexes // during a bulk load: derived index entries not yet written
	qload    *quadLoad        // during a bulk load: writes Cayley's part of its commits (see quadLoad)

	cursorKey []byte // authenticates the cursors the engine hands out (see graph.CursorKeyer)

	deferAfter, deferFlush int // see Config
	keepLoadFile           bool
	loadBuffer             int64          // see Config.LoadBuffer
	spills                 int            // the times bulk loads wrote what they held (see spill)
	cayleyLoads            bool           // bulk loads write quads through Cayley's ApplyDeltas (see Config.cayleyLoads)
	beforeRename           func()         // see Config.beforeRename
	stream                 streamHooks    // see Config.stream
	boltOpts               *bbolt.Options // how Open opened the file, and a rewrite its new one
}

// metaDeferred marks a store whose derived indexes are stale: a bulk load
// deferred them, or a model change or an upgrade made them so. Its value
// says which (deferReason); Open rebuilds them.
var metaDeferred = []byte("deferred")

// Why derived indexes are stale, as metaDeferred records it.
var (
	staleModel   = []byte("model")
	staleUpgrade = []byte("upgrade")
)

func staleReason(v []byte) string {
	switch {
	case bytes.Equal(v, staleModel):
		return "the model changed what is indexed"
	case bytes.Equal(v, staleUpgrade):
		return "the store's layout was upgraded"
	}
	return "a bulk load did not finish"
}

// A RebuildProgress reports Open's rebuilding of the derived indexes
// (type, property and search indexes, counts, edge summaries) from the
// node and edge records.
type RebuildProgress struct {
	// Reason says why they are rebuilt.
	Reason string `json:"reason"`
	// Done counts the records read, of Total (nodes and edges).
	Done  int64 `json:"done"`
	Total int64 `json:"total"`
	// Writing is true once every record is read: the indexes are being
	// written, in one transaction.
	Writing bool `json:"writing,omitempty"`
}

var cayleyOpts = cgraph.Options{ckv.OptNoBloom: true} // open in milliseconds instead of rebuilding a 100M-entry bloom filter

// Open opens (creating if needed) the store at cfg.Path. If another process
// holds it, Open fails within cfg.LockTimeout with an error wrapping ErrLocked.
func Open(ctx context.Context, cfg Config) (_ *Store, err error) {
	defer func() {
		if !errors.Is(err, graph.ErrNoStore) {
			wrap(&err, "open store %s", cfg.Path)
		}
	}()
	if cfg.Path == "" {
		return nil, fmt.Errorf("no path given: %w", graph.ErrInvalid)
	}
	if scheme, _, ok := strings.Cut(cfg.Path, "://"); ok {
		return nil, fmt.Errorf("%q is a URL, and this Lore keeps a store in a local directory only: %s stores are not supported (PostgreSQL support is planned for a later release); give a directory: %w", cfg.Path, scheme, graph.ErrInvalid)
	}
	if cfg.ReadOnly {
		if fi, err := os.Stat(filepath.Join(cfg.Path, FileName)); err != nil || fi.Size() == 0 {
			return nil, fmt.Errorf("%w at %s", graph.ErrNoStore, cfg.Path)
		}
	}
	if err := os.MkdirAll(cfg.Path, 0o755); err != nil {
		return nil, err
	}
	timeout := cfg.LockTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	mmap := cfg.MmapSize
	if mmap <= 0 {
		mmap = 1 << 30
	}
	opts := &bbolt.Options{
		Timeout:         timeout,
		InitialMmapSize: mmap,
		FreelistType:    bbolt.FreelistMapType,
		NoSync:          cfg.NoSync,
		NoGrowSync:      cfg.NoSync,
	}
	db, err := openFile(filepath.Join(cfg.Path, FileName), opts)
	if errors.Is(err, bolterrors.ErrTimeout) {
		owner, _ := os.ReadFile(filepath.Join(cfg.Path, ownerFile))
		who := strings.TrimSpace(string(owner))
		if who == "" {
			who = "another process"
		}
		return nil, fmt.Errorf("%w: held by %s (waited %v); stop it or wait for it to finish", graph.ErrLocked, who, timeout)
	}
	if err != nil {
		return nil, err
	}
	if !cfg.ReadOnly {
		// A rewrite that died before its rename (see rewriteFile); the
		// lock just taken says that none is under way.
		_ = os.Remove(filepath.Join(cfg.Path, FileName+rewriteSuffix))
	}
	s := &Store{path: cfg.Path, db: db, kv: &hookKV{DB: db}, changed: graph.NewNotifier(), readOnly: cfg.ReadOnly,
		deferAfter: cmp.Or(cfg.DeferAfter, DefaultDeferAfter), deferFlush: cmp.Or(cfg.DeferFlush, DefaultDeferFlush),
		keepLoadFile: cfg.KeepLoadFile, loadBuffer: cmp.Or(cfg.LoadBuffer, DefaultLoadBuffer()),
		cayleyLoads: cfg.cayleyLoads, beforeRename: cfg.beforeRename, stream: cfg.stream, boltOpts: opts}
	if err := s.init(cfg.Model, cmp.Or(cfg.UpgradeChunk, DefaultUpgradeChunk)); err != nil {
		db.Close()
		return nil, err
	}
	var loading, pending bool
	var stale []byte
	_ = db.DB().View(func(tx *bbolt.Tx) error {
		loading = tx.Bucket(bMeta).Get(metaLoading) != nil
		pending = tx.Bucket(bMeta).Get(metaQuadsPending) != nil
		stale = bytes.Clone(tx.Bucket(bMeta).Get(metaDeferred))
		return nil
	})
	if loading {
		// An all-or-nothing load died: undo it.
		if err := s.empty(); err != nil {
			db.Close()
			return nil, fmt.Errorf("emptying the store of an import that did not finish: %w", err)
		}
		stale = nil
	}
	if pending && !loading {
		// A bulk load died before its quadLoad wrote what it kept back.
		if err := s.rebuildQuads(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("rebuilding Cayley's quads after a bulk load that did not finish: %w", err)
		}
	}
	if stale != nil {
		reason := staleReason(stale)
		if err := s.rebuildDerived(ctx, func(p RebuildProgress) {
			if cfg.Progress != nil {
				p.Reason = reason
				cfg.Progress(p)
			}
		}); err != nil {
			db.Close()
			return nil, fmt.Errorf("rebuilding the derived indexes (%s): %w", reason, err)
		}
	}
	_ = os.WriteFile(filepath.Join(cfg.Path, ownerFile), fmt.Appendf(nil, "pid %d (%s)\n", os.Getpid(), strings.Join(os.Args, " ")), 0o644)
	return s, nil
}

func (s *Store) init(model *schema.Model, upgradeChunk int) error {
	var version uint64
	_ = s.db.DB().View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bMeta); meta != nil {
			if v := meta.Get([]byte("version")); len(v) == 8 {
				version = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	if version > 0 && version < 4 { // layouts before 4 kept values in Cayley's buckets
		if err := mergeValueBuckets(s.db.DB(), upgradeChunk); err != nil {
			return fmt.Errorf("moving Cayley's values to store layout %d: %w", storeVersion, err)
		}
	}
	if version > 0 && version < 11 { // layouts 4 to 10 kept the counts in a bucket of their own, and the log a key per primitive
		if err := updateDB(s.db.DB(), combineValueBuckets); err != nil {
			return fmt.Errorf("moving Cayley's value counts to store layout %d: %w", storeVersion, err)
		}
		if err := migrateLog(s.db.DB(), upgradeChunk); err != nil {
			return fmt.Errorf("moving Cayley's log into blocks (store layout %d): %w", storeVersion, err)
		}
		if err := migrateOPS(s.db.DB(), upgradeChunk); err != nil {
			return fmt.Errorf("moving Cayley's quad index into blocks (store layout %d): %w", storeVersion, err)
		}
	}
	if err := s.initCayley(!s.readOnly); err != nil {
		return err
	}
	if err := s.newQuadStore(); err != nil {
		return err
	}
	return updateDB(s.db.DB(), func(tx *bbolt.Tx) error {
		for _, b := range append([][]byte{bValues}, allBuckets...) {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bMeta)
		if v := meta.Get([]byte("version")); v != nil {
			switch binary.BigEndian.Uint64(v) {
			case storeVersion: // edge records of version 1 (layouts 7 and before) are still read
			case 1, 2, 3, 4, 5, 6, 7, 8, 9, 10:
				// Mark the derived buckets stale in the same transaction
				// that bumps the version: Open rebuilds them, and a crash
				// before it finishes leaves the mark for the next Open.
				if err := meta.Put(metaDeferred, staleUpgrade); err != nil {
					return err
				}
			default:
				return fmt.Errorf("store layout version %d; this lore reads versions 1 to %d", binary.BigEndian.Uint64(v), storeVersion)
			}
		}
		if err := meta.Put([]byte("version"), u64(storeVersion)); err != nil {
			return err
		}
		var err error
		if s.cursorKey, err = loadCursorKey(meta); err != nil {
			return err
		}
		if v := meta.Get([]byte("seq")); v != nil {
			s.lastSeq = binary.BigEndian.Uint64(v)
		}
		if v := meta.Get(metaBase); len(v) == 8 {
			s.base = binary.BigEndian.Uint64(v)
		}
		return s.adoptModel(tx, model)
	})
}

// adoptModel sets the store's model: model, or the stored one if nil, or
// the default one for a new store. A model other than the stored one must
// fit the store (checkModelFits); if it changes what is derived from the
// records of node types the store holds, the derived indexes are marked
// stale in the same transaction that saves it, and Open rebuilds them.
// Replacing a stored model commits a change-log entry (graph.OpModel) in
// that transaction too. A read-only store never saves a model, and refuses
// one that would need a rebuild.
func (s *Store) adoptModel(tx *bbolt.Tx, model *schema.Model) error {
	meta := tx.Bucket(bMeta)
	stored := meta.Get([]byte("model"))
	var old *schema.Model
	if stored != nil {
		var err error
		if old, err = schema.Load(stored); err != nil {
			return fmt.Errorf("stored model: %w", err)
		}
	}
	m := cmp.Or(model, old)
	if m == nil {
		m = schema.Default()
	}
	s.model.Store(m)
	if bytes.Equal(stored, m.JSON()) {
		return nil
	}
	if err := checkModelFits(tx, m); err != nil {
		return err
	}
	changes := derivedChanges(tx, cmp.Or(old, defaultModel()), m) // a store of a Lore that kept no model had the default one
	if s.readOnly {
		if len(changes) > 0 {
			return fmt.Errorf("the model changes what Lore indexes in this store (%s), and a read does not rebuild indexes; "+
				"open the store once with this model to write (for example lore check --repair --model FILE), which rebuilds them and keeps the model: %w",
				strings.Join(changes, "; "), graph.ErrInvalid)
		}
		return nil // used by this process, never saved
	}
	if len(changes) > 0 {
		if err := meta.Put(metaDeferred, staleModel); err != nil {
			return err
		}
	}
	if old != nil {
		if err := s.logModelChange(tx); err != nil {
			return err
		}
	}
	return meta.Put([]byte("model"), m.JSON())
}

// defaultModel returns the default model, compiled once.
var defaultModel = sync.OnceValue(schema.Default)

// logModelChange appends the change-log entry of a model change in tx,
// and takes its number. The caller holds wmu (or is Open).
func (s *Store) logModelChange(tx *bbolt.Tx) error {
	seq := s.lastSeq + 1
	c := &graph.Change{Seq: seq, Time: now(), Op: graph.OpModel}
	if err := tx.Bucket(bLog).Put(u64(seq), graph.EncodeChange(c)); err != nil {
		return err
	}
	if err := tx.Bucket(bMeta).Put([]byte("seq"), u64(seq)); err != nil {
		return err
	}
	s.lastSeq = seq
	return nil
}

// derivedChanges lists what a change of model from old to m changes in the
// data derived from the records of node types the store holds: their
// indexed, search and display properties.
func derivedChanges(tx *bbolt.Tx, old, m *schema.Model) []string {
	var out []string
	for _, nt := range m.NodeTypes() {
		ot, ok := old.Node(nt.Name)
		if !ok || tx.Bucket(bMeta).Get(countKey("node", nt.Name)) == nil {
			continue // no node of the type: nothing derived from it
		}
		for _, f := range []struct {
			name     string
			was, now []string
		}{{"indexed", ot.Indexed, nt.Indexed}, {"search", ot.Search, nt.Search}} {
			if added, dropped := setDiff(f.was, f.now); len(added)+len(dropped) > 0 {
				out = append(out, fmt.Sprintf("%s %s: %s", nt.Name, f.name, describeDiff(added, dropped)))
			}
		}
		if ot.Display != nt.Display {
			out = append(out, fmt.Sprintf("%s display: %q becomes %q", nt.Name, ot.Display, nt.Display))
		}
	}
	return out
}

// setDiff returns the names in now and not in was, and those in was and not in now.
func setDiff(was, now []string) (added, dropped []string) {
	for _, n := range now {
		if !slices.Contains(was, n) {
			added = append(added, n)
		}
	}
	for _, n := range was {
		if !slices.Contains(now, n) {
			dropped = append(dropped, n)
		}
	}
	return added, dropped
}

func describeDiff(added, dropped []string) string {
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "adds "+strings.Join(added, ", "))
	}
	if len(dropped) > 0 {
		parts = append(parts, "drops "+strings.Join(dropped, ", "))
	}
	return strings.Join(parts, " and ")
}

// checkModelFits refuses a model that lacks a node type or edge label the store holds.
func checkModelFits(tx *bbolt.Tx, m *schema.Model) error {
	c := tx.Bucket(bMeta).Cursor()
	var missing []string
	for k, v := c.Seek([]byte("count/")); k != nil && bytes.HasPrefix(k, []byte("count/")); k, v = c.Next() {
		if int64(binary.BigEndian.Uint64(v)) == 0 {
			continue
		}
		kind, name, _ := strings.Cut(strings.TrimPrefix(string(k), "count/"), "/")
		switch kind {
		case "node":
			if _, ok := m.Node(name); !ok {
				missing = append(missing, "node type "+name)
			}
		case "edge":
			if _, ok := m.Edge(name); !ok {
				missing = append(missing, "edge label "+name)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the model lacks %s, which the store holds: %w", strings.Join(missing, ", "), graph.ErrInvalid)
	}
	return nil
}

// BeginBulk starts a bulk load into an empty store: derived index entries
// are deferred (see deferredIndexes) and commits skip fsync until the end.
func (s *Store) BeginBulk() (func() error, bool) {
	b, ok := s.startBulk()
	if !ok {
		return nil, false
	}
	return func() error {
		if err := b.finish(); err != nil {
			return err
		}
		return s.alone(func() error { return b.end(nil) })
	}, true
}

// alone runs f with the store to itself: it holds wmu and rw's write side,
// so no write and no read runs. It fails if the store is closed.
func (s *Store) alone(f func() error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.rw.Lock()
	defer s.rw.Unlock()
	if s.closed {
		return graph.ErrClosed
	}
	return f()
}

// A bulk is a bulk load under way (see BeginBulk).
type bulk struct {
	s                  *Store
	synced, growSynced bool // the file's settings before the load
	// rewrite says that the load ends by rewriting the file (see
	// rewriteFile): finish leaves commits unsynced, and end syncs the
	// new file instead of the old one.
	rewrite bool
	// rest is what an all-or-nothing load leaves for the rewrite to merge
	// into the new file, rather than write into the old one first (see
	// finish).
	rest *loadRest
}

// A loadRest is the part of an all-or-nothing bulk load that waits in
// memory when its batches have committed: its node records (nodeRuns),
// edge records and in-edge index entries (see runSet), its type, property and search index entries
// and what its last fold of the edge summaries wrote (see indexRuns), and
// Cayley's part a quadLoad kept back.
// Writing them into the old file before the rewrite copied them all again
// into the new one: at 1M nodes of the benchmark graph, the load's end
// took 25.7 s of CPU that way, and 13.3 s merging them into the new file
// (one profiled load each, same machine, same run).
type loadRest struct {
	edges *edgeRuns // or nil
	nodes *nodeRuns // or nil; with idx
	df    *dfCounts // or nil; with idx
	in    runSet
	idx   *indexRuns // or nil
	// deg, with idx, is the load's tally of edge-summary changes, which no
	// commit folded into the records (see fold).
	deg   *degTally
	qload *quadLoad // or nil
	// sorted, if merge made the quadLoad's sources on a goroutine of its
	// own, is closed once they are made: until then nothing else may use
	// the quadLoad.
	sorted chan struct{}
	// folded, once fold has started, is closed when it is done, with
	// foldErr set if it failed: until then nothing else may use idx.
	folded  chan struct{}
	foldErr error
}

// fold starts folding the tally into the node records as they are in db,
// on a goroutine of its own, unless it has started: the records it
// changes and the degree index keys they move go into idx. A load that
// rewrites its file ends this way rather than with a fold in its last
// commit, so that the fold (3.3 to 3.9 s of a 300,000-node load's end,
// keeping what it writes included, when its last commit did it) runs
// while writeFile writes the buckets that do not need it, which are most
// of the file; lore.node and lore.degx are written last (fileMerge.late).
// bDeg stays marked until then: readers of the old file do not trust the
// records' summaries.
func (r *loadRest) fold(db *bbolt.DB) {
	if r.deg == nil || r.folded != nil {
		return
	}
	r.folded = make(chan struct{})
	go func() {
		defer close(r.folded)
		r.foldErr = db.View(func(tx *bbolt.Tx) error {
			var waiting *runSet
			if r.nodes != nil {
				waiting = &r.nodes.set
			}
			nodes, degIdx, nDegIdx, err := foldTally(tx, r.deg, waiting)
			if err != nil {
				return err
			}
			for _, run := range nodes {
				r.idx.sets[indexBucket(bNodes)].addData(run.data, run.n)
			}
			r.idx.sets[indexBucket(bDegIdx)].addData(degIdx, nDegIdx)
			return nil
		})
	}()
}

// waitFold waits for fold, starting it if it has not started, and returns
// its error.
func (r *loadRest) waitFold(db *bbolt.DB) error {
	if r.deg == nil {
		return nil
	}
	r.fold(db)
	<-r.folded
	return r.foldErr
}

// merge returns what writeFile merges into the new file: the rest's pairs
// (none if r is nil), and the marks that end with the load
// (metaQuadsPending and mark) left out of Lore's meta. If the quadLoad's
// part cannot be merged, it is written into db first.
func (r *loadRest) merge(db *bbolt.DB, mark []byte) (fileMerge, error) {
	m := fileMerge{into: map[string]pairSource{}, flagged: map[string]bool{}, drop: map[string]map[string]bool{
		string(bMeta): {string(metaQuadsPending): true},
	}}
	if mark != nil {
		m.drop[string(bMeta)][string(mark)] = true
	}
	if r == nil {
		return m, nil
	}
	if r.edges != nil && r.edges.set.n > 0 {
		m.into[string(bEdges)] = r.edges.set.merge()
	}
	if r.in.n > 0 {
		m.into[string(bIn)] = r.in.merge()
	}
	if r.df.held() {
		src, err := r.df.source(db)
		if err != nil {
			return fileMerge{}, fmt.Errorf("the load's search term counts: %w", err)
		}
		m.into[string(bMeta)], m.flagged[string(bMeta)] = src, true
	}
	if r.idx != nil { // and so r.deg: a load that keeps index runs tallies
		r.fold(db)
		m.drop[string(bDeg)] = map[string]bool{string(degTallyKey): true}
		m.late = map[string]bool{}
		m.err = func() error { return r.waitFold(db) }
		for b := range r.idx.sets {
			name := string(indexBuckets[b])
			set := &r.idx.sets[b]
			if !bytes.Equal(indexBuckets[b], bNodes) && !bytes.Equal(indexBuckets[b], bDegIdx) {
				if set.n > 0 {
					m.into[name], m.flagged[name] = set.merge(), true
				}
				continue
			}
			// What the fold writes: these buckets come last.
			m.late[name], m.flagged[name] = true, true
			m.into[name] = lazySource(func() pairSource {
				if r.waitFold(db) != nil {
					return nil // writeFile fails on m.err
				}
				all := set
				if r.nodes != nil && r.nodes.set.n > 0 && bytes.Equal(indexBuckets[b], bNodes) {
					// The records that wait, under those the fold wrote.
					all = &runSet{runs: append(slices.Clone(r.nodes.set.runs), set.runs...), n: r.nodes.set.n + set.n}
				}
				if all.n == 0 {
					return nil
				}
				return all.merge()
			})
		}
	}
	switch {
	case r.qload != nil && r.qload.materialized:
		if err := r.qload.materialize(db); err != nil {
			return fileMerge{}, err
		}
	case r.qload != nil:
		if r.qload.keptLog != nil {
			// The log in the file is empty (the quadLoad began with it so,
			// and kept all it wrote): the blocks of what it kept are all.
			m.into[string(bCayleyLog)] = logBlocks(r.qload.keptLog.source())
		}
		// The quadLoad sorts its values and links (0.56 s of a 300,000-node
		// load's end) while writeFile writes the buckets that come before
		// theirs, which are most of the file: "log" and Lore's.
		var src map[string]pairSource
		r.sorted = make(chan struct{})
		go func() {
			defer close(r.sorted)
			src = r.qload.sources()
		}()
		for _, name := range [][]byte{bValues, bOPS} {
			m.into[string(name)] = lazySource(func() pairSource {
				<-r.sorted
				return src[string(name)]
			})
		}
	}
	return m, nil
}

// write writes the rest into the store's file, as a load that does not
// rewrite its file does (flushPending, endQuadLoad). The caller has the
// store to itself.
func (r *loadRest) write(s *Store) error {
	// The fold first, whatever fails after it: nothing of the rest is
	// used once write returns.
	if err := r.waitFold(s.db.DB()); err != nil {
		return fmt.Errorf("folding the load's edge summaries: %w", err)
	}
	if err := writeWaiting(s.db.DB(), r.nodes, r.edges, &r.in, r.df); err != nil {
		return err
	}
	if r.idx != nil {
		if err := r.idx.write(s.db.DB()); err != nil {
			return err
		}
	}
	if r.deg != nil {
		if err := updateDB(s.db.DB(), func(tx *bbolt.Tx) error { return tx.Bucket(bDeg).Delete(degTallyKey) }); err != nil {
			return err
		}
	}
	if r.qload != nil {
		if r.sorted != nil {
			<-r.sorted
		}
		s.qload = r.qload
		if err := s.endQuadLoad(); err != nil {
			return fmt.Errorf("writing Cayley's part of the load: %w", err)
		}
	}
	return nil
}

func (s *Store) startBulk() (*bulk, bool) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed || s.lastSeq != s.base || s.deferred != nil || s.loading {
		return nil, false
	}
	err := s.update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bMeta).Put(metaDeferred, []byte{1}); err != nil {
			return err
		}
		return markTally(tx)
	})
	if err != nil {
		return nil, false
	}
	return s.bulkLocked(), true
}

// bulkLocked sets the store up for a bulk load, once it is marked
// deferred and its summaries tallied (markTally). The caller holds wmu.
func (s *Store) bulkLocked() *bulk {
	db := s.db.DB()
	b := &bulk{s: s, synced: !db.NoSync, growSynced: !db.NoGrowSync, rewrite: !s.keepLoadFile && canRewrite}
	db.NoSync = true
	// Nor does growing the file sync it (bbolt's truncate and fsync at
	// each 16 MiB): at 10k nodes that fsync took 7 ms.
	db.NoGrowSync = true
	s.deferred = newDeferred(s.deferAfter, s.deferFlush)
	if s.loading {
		// Its edge records wait too: should the load die, the next Open
		// undoes it. So do its index entries, if the rewrite at its end
		// is to write them.
		s.deferred.edges = newEdgeRuns()
		if b.rewrite {
			s.deferred.idx = &indexRuns{}
			s.deferred.nodes = newNodeRuns()
			s.deferred.df = newDFCounts()
			s.deferred.after = -1 // see Config.DeferAfter
		}
	}
	if !s.cayleyLoads {
		var ql *quadLoad
		_ = db.View(func(tx *bbolt.Tx) error { ql = newQuadLoad(tx); return nil })
		if ql != nil && s.update(func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Put(metaQuadsPending, []byte{1}) }) == nil {
			if s.deferred.idx != nil {
				ql.keptLog = &logRun{} // the rewrite merges Cayley's log too
			}
			s.qload = ql
		}
	}
	return b
}

// endQuadLoad writes what a bulk load's quadLoad kept back and hands
// Cayley's part of the rest of the load to Cayley (see quadLoad), with a
// fresh QuadStore: nothing of the load is in the old one's caches. If
// the writing fails, the quadLoad stays, to be written again. The caller
// holds rw's write side.
func (s *Store) endQuadLoad() error {
	if s.qload == nil {
		return nil
	}
	if err := s.qload.materialize(s.db.DB()); err != nil {
		return err
	}
	s.qload = nil
	if err := s.newQuadStore(); err != nil {
		return err
	}
	return nil
}

// rebuildQuads rebuilds Cayley's part of the store from the node and edge
// records: after a bulk load whose quadLoad never wrote what it kept back
// (metaQuadsPending). The caller has the store to itself.
func (s *Store) rebuildQuads(ctx context.Context) error {
	db := s.db.DB()
	err := updateDB(db, func(tx *bbolt.Tx) error {
		// "s" and "o": Cayley's legacy layout (see finishCayleyInit).
		for _, name := range [][]byte{bCayleyLog, bOldCayleyLog, cayleyMeta, bValues, bValueRefs, bOPS, cayleyOPS, []byte("sp"), []byte("s"), []byte("o")} {
			if err := tx.DeleteBucket(name); err != nil && !errors.Is(err, bolterrors.ErrBucketNotFound) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.createBuckets(); err != nil {
		return err
	}
	if _, err := reloadQuads(ctx, db.View, db); err != nil {
		return err
	}
	if err := s.newQuadStore(); err != nil {
		return err
	}
	return nil
}

// finish writes the deferred entries and restores durable commits.
func (b *bulk) finish() error {
	s, db := b.s, b.s.db.DB()
	s.wmu.Lock()
	if s.closed {
		s.wmu.Unlock()
		return nil
	}
	var err error
	d := s.deferred
	lost := d.lost
	// An all-or-nothing load that rewrites the file leaves its waiting
	// edge records, in-edge entries and index entries, and Cayley's part,
	// for the rewrite to merge into the new file (see loadRest); until
	// then no other write may commit. Otherwise the edge records that
	// wait are the load's own: written even if the derived entries are to
	// be rebuilt, from them. (Index entries wait only for a merge: a load
	// that does not merge them has lost some, and rebuilds them all.)
	merge := b.rewrite && s.loading && !lost
	if !merge {
		err = s.flushPending()
	}
	if !lost && err == nil {
		err = s.flushDeferred()
	}
	if merge && err != nil {
		merge = false
		err = errors.Join(err, s.flushPending())
	}
	lost = lost || err != nil
	s.deferred = nil
	if merge {
		b.rest = &loadRest{edges: d.edges, nodes: d.nodes, df: d.df, in: d.in, idx: d.idx, deg: d.deg, qload: s.qload}
		s.qload = nil
		s.ending = true
	}
	if s.qload != nil {
		// What the quadLoad kept back; if writing it fails, Cayley's
		// part is rebuilt from the records.
		s.rw.Lock()
		if qerr := s.endQuadLoad(); qerr != nil {
			s.qload = nil
			err = errors.Join(err, qerr, s.rebuildQuads(context.Background()))
			lost = true
		}
		s.rw.Unlock()
	}
	b.rewrite = b.rewrite && err == nil && !lost
	if !b.rewrite {
		db.NoGrowSync = !b.growSynced
		if b.synced {
			db.NoSync = false
			err = errors.Join(err, db.Sync())
		}
	}
	s.wmu.Unlock()
	if lost {
		// A failed commit took deferred entries with it, or writing
		// them failed: rebuild them all from the records now rather
		// than at the next Open.
		err = errors.Join(err, s.rebuildDerived(context.Background(), nil))
	}
	return err
}

// end ends a load that finished, and the load's mark (metaLoading for an
// all-or-nothing load, or nil): it rewrites the file, unless the store
// keeps the file a load wrote or finish found a reason not to, with what
// the load left for it merged in and the marks left out, and then
// restores durable commits. A rewrite that fails leaves the old file:
// end writes into it what the load left, deletes the mark and syncs it, as
// a load without a rewrite does; the load stands either way, unless that
// fails too. The caller holds wmu and rw's write side.
func (b *bulk) end(mark []byte) error {
	s := b.s
	rest := b.rest
	b.rest = nil
	defer func() { s.ending = false }()
	deleteMark := func() error {
		if mark == nil {
			return nil
		}
		return updateDB(s.db.DB(), func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Delete(mark) })
	}
	if !b.rewrite {
		return deleteMark() // finish restored the settings
	}
	m, rerr := rest.merge(s.db.DB(), mark)
	if rerr == nil {
		rerr = s.rewriteFile(m)
	}
	db := s.db.DB() // the new file's, if the rewrite took
	db.NoGrowSync = !b.growSynced
	if rerr == nil {
		db.NoSync = !b.synced
		return nil // the new file was synced before it took the old one's place
	}
	if rest != nil {
		if err := rest.write(s); err != nil {
			return fmt.Errorf("writing the load into the store's file, after rewriting it failed (%v): %w", rerr, err)
		}
	}
	if err := deleteMark(); err != nil {
		return err
	}
	if b.synced {
		db.NoSync = false
		if err := db.Sync(); err != nil {
			return fmt.Errorf("syncing the loaded store, after rewriting its file failed (%v): %w", rerr, err)
		}
	}
	return nil
}

// abort drops the deferred entries of a load about to be undone, and
// restores durable commits; the store stays marked deferred.
func (b *bulk) abort() {
	s, db := b.s, b.s.db.DB()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.deferred = nil
	s.qload = nil // the load is undone: Cayley's part is emptied with the rest
	db.NoGrowSync = !b.growSynced
	db.NoSync = !b.synced
}

// flushDeferred writes the deferred index entries and clears the mark.
// The caller holds wmu.
func (s *Store) flushDeferred() error {
	if s.deferred.done && s.deferred.n == 0 {
		// The last batch's commit wrote them, and cleared the mark unless
		// edge records or in-edge entries waited (flushPending wrote them
		// before this).
		if !s.deferred.markLeft {
			return nil
		}
		s.rw.Lock()
		defer s.rw.Unlock()
		return updateDB(s.db.DB(), func(tx *bbolt.Tx) error { return tx.Bucket(bMeta).Delete(metaDeferred) })
	}
	ops := s.deferred.drain(nil, 0)
	s.rw.Lock()
	defer s.rw.Unlock()
	return updateDB(s.db.DB(), func(tx *bbolt.Tx) error {
		if s.deferred.idx == nil {
			// (A load that rewrites its file folds its tally as the
			// rewrite begins: see loadRest.fold.)
			dops, err := foldDeg(nil, tx, nil, nil, nil, nil, s.deferred.deg)
			if err != nil {
				return err
			}
			ops = append(ops, dops...)
		}
		sortOps(ops)
		if err := writeOps(tx, ops); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Delete(metaDeferred)
	})
}

// Model returns the model the store validates against.
func (s *Store) Model() *schema.Model { return s.model.Load() }

// Path returns the store directory.
func (s *Store) Path() string { return s.path }

// Changed returns a channel closed at the next commit.
func (s *Store) Changed() <-chan struct{} { return s.changed.Wait() }

// Sync flushes committed data to disk (needed only with Config.NoSync).
func (s *Store) Sync() error {
	s.rw.RLock()
	defer s.rw.RUnlock()
	if s.closed {
		return graph.ErrClosed
	}
	return s.db.DB().Sync()
}

// Close waits for the running write and reads, then closes the store.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.rw.Lock()
	defer s.rw.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.changed.Notify()
	_ = os.Remove(filepath.Join(s.path, ownerFile))
	return s.db.Close()
}

// update runs f in one bbolt write transaction under the write side of rw
// (see the package documentation). The caller holds wmu.
func (s *Store) update(f func(tx *bbolt.Tx) error) error {
	s.rw.Lock()
	defer s.rw.Unlock()
	return updateDB(s.db.DB(), f)
}

// updateDB runs f in a write transaction of db. Every write into a store's
// file goes through it or through Cayley's (writeTx.Commit), so that a
// test can stop at each commit, where a process may die (crashPoints).
func updateDB(db *bbolt.DB, f func(tx *bbolt.Tx) error) error {
	if err := db.Update(f); err != nil {
		return err
	}
	committed(db)
	return nil
}

// crashPoints, set by a test, is called after every commit into a store's
// file, with its database. It is a package variable, not a Config field,
// because the commits are made deep in helpers that are handed a
// *bbolt.DB; a test that sets it skips the databases of other tests.
var crashPoints atomic.Pointer[func(db *bbolt.DB)]

func committed(db *bbolt.DB) {
	if f := crashPoints.Load(); f != nil {
		(*f)(db)
	}
}

// read runs f under the read lock, in one bbolt read transaction.
func (s *Store) read(f func(tx *bbolt.Tx) error) error {
	s.rw.RLock()
	defer s.rw.RUnlock()
	if s.closed {
		return graph.ErrClosed
	}
	return s.db.DB().View(f)
}

func u64(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// cursorKeyLen is the size of a cursor key (see graph.CursorKeyer).
const cursorKeyLen = 32

// metaCursorKey holds the embedded store's cursor key in its meta bucket.
var metaCursorKey = []byte("cursorKey")

// loadCursorKey returns the cursor key kept in meta, creating it for a new
// store or one made before stores kept a key.
func loadCursorKey(meta *bbolt.Bucket) ([]byte, error) {
	if k := meta.Get(metaCursorKey); len(k) == cursorKeyLen {
		return bytes.Clone(k), nil
	}
	k := make([]byte, cursorKeyLen)
	rand.Read(k)
	return k, meta.Put(metaCursorKey, k)
}

// CursorKey returns the store's cursor key (see CursorKeyer).
func (s *Store) CursorKey() []byte { return s.cursorKey }

// ReadRawLog copies stored entries out of one read transaction (see
// graph.LogReader).
func (s *Store) ReadRawLog(ctx context.Context, seq uint64, newest bool, limit int) ([]graph.LogEntry, error) {
	var out []graph.LogEntry
	size := 0
	err := s.read(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bLog).Cursor()
		var k, v []byte
		switch {
		case newest:
			if k, v = c.Seek(u64(seq)); k == nil {
				k, v = c.Last()
			} else if binary.BigEndian.Uint64(k) > seq {
				k, v = c.Prev()
			}
		case seq == math.MaxUint64:
			return nil // nothing follows the last sequence number
		default:
			k, v = c.Seek(u64(seq + 1))
		}
		for k != nil && (len(out) == 0 || size+len(v) <= limit) {
			if err := ctx.Err(); err != nil {
				return err
			}
			out = append(out, graph.NewLogEntry(binary.BigEndian.Uint64(k), bytes.Clone(v)))
			size += len(v)
			if newest {
				k, v = c.Prev()
			} else {
				k, v = c.Next()
			}
		}
		return nil
	})
	return out, err
}

// wrap adds context to a non-nil error: defer wrap(&err, "Apply").
func wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}

// now returns the current time as Lore stores it (see graph.NormalizeTime).
func now() time.Time { return graph.NormalizeTime(time.Now()) }
