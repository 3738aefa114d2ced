package graph

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lore-dev/lore/schema"
)

// A Format is a file format for import and export.
type Format string

// Formats.
const (
	// NDJSON: one JSON object per line, a node or an edge (see the README).
	NDJSON Format = "ndjson"
	// NQuads: the logical quad mapping of the package documentation.
	NQuads Format = "nquads"
	// Memory: the JSONL file of the MCP memory server (entities and relations).
	Memory Format = "memory"
)

// ParseFormat parses a format name.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(s)); f {
	case NDJSON, NQuads, Memory:
		return f, nil
	case "jsonl":
		return NDJSON, nil
	case "nq":
		return NQuads, nil
	}
	return "", fmt.Errorf("format %q: %w (use ndjson, nquads or memory)", s, ErrInvalid)
}

// ImportMemoryLimit returns the soft memory limit for imports: three
// quarters of physical memory (at least 512 MiB), or none where physical
// memory is unknown. lore import sets it unless GOMEMLIMIT sets one (see
// TuneGCForImport); the benchmarks load Lore and the Cayley baselines the
// same way.
//
// The limit is there to keep a big load's heap within the machine, not to
// shape it. An all-or-nothing load that rewrites its file keeps what it
// defers in memory until its end (2.7 GB live at the end of a 1M-node
// load, 4.5 GB at 2M), and a limit near that live heap makes the collector
// run without pause: at 2M nodes (13.5M elements), a load took 263 s
// under the 4 GiB this limit used to be capped at, against 171 s under
// 18 GiB (85 collections against 43, 24% of the CPU against 9%, 4.2M page
// faults against 2.4M). At 1M nodes it made no difference: 71.6 s at
// 4 GiB, 73.3 s with no limit, one run each.
//
// The collector's percent is left as it is: see TuneGCForImport.
func ImportMemoryLimit() int64 {
	mem := PhysicalMemory()
	if mem == 0 {
		return math.MaxInt64
	}
	return max(mem/4*3, 512<<20)
}

// DefaultImportBatch is the number of elements an import commits at a
// time, and MaxImportBatch the most it may. An import's batches may be
// larger than MaxBatch: each commit rewrites every page it touches, so
// fewer, larger transactions load faster (measured at 1M nodes: 245 s at
// 10,000 elements per transaction, 182 s at 50,000). Beyond 50,000 the gain
// is within the noise at 1M nodes (154-159 s at 100,000 against 160 s), and
// a load of 100k nodes loses its pipelining (21.4 s against 15.7 s).
const (
	DefaultImportBatch = 50000
	MaxImportBatch     = 100000
)

// DefaultFirstBatch is the size of an import's first batch at the default
// batch size: it doubles batch by batch up to DefaultImportBatch, so that
// the store starts committing soon after the input starts, and even a
// small import is read, checked and written in a pipeline. At 10k nodes
// and 20k edges, a first batch of 2,000 took 6% less time than one of
// 6,250: Cayley's single-threaded part starts sooner, and more batches do
// not cost more than that.
const DefaultFirstBatch = DefaultImportBatch / 25

// MaxLine is the longest line an import reads, in bytes.
const MaxLine = 16 << 20

// ImportOptions configures Import.
type ImportOptions struct {
	Format Format
	// BatchSize is the number of elements per transaction, capped at
	// MaxImportBatch. 0 means DefaultImportBatch, reached by doubling from
	// FirstBatch.
	BatchSize int
	// FirstBatch is the size of the first batch when BatchSize is 0; 0
	// means DefaultFirstBatch.
	FirstBatch int
	// DryRun validates the whole input against the store and writes
	// nothing. Every problem is counted; the first MaxProblems, by line,
	// are listed.
	DryRun bool
	// Partial commits batch by batch and stops at the first rejected
	// batch, keeping the batches before it. Without it an import is all
	// or nothing (see Import).
	Partial bool
	// Progress, if set, is called after each batch.
	Progress func(ImportStats)
	// Durable makes every batch durable (fsynced) when it commits. Without
	// it, an import into an empty store is a bulk load: batches commit
	// atomically but are flushed to disk once, at the end, as bbolt advises
	// for bulk loads. A process crash loses no committed batch either way;
	// a power cut during a bulk load may leave a store to delete and import
	// again, which held nothing before. A store that holds data is always
	// written durably.
	Durable bool
	// MaxDepth is the deepest nesting a line's JSON (or an N-Quads
	// lore:json literal) may have; 0 means schema.DefaultMaxDepth.
	MaxDepth int
	// SpoolDir is where an all-or-nothing import into a store that holds
	// data keeps a copy of an input it cannot read twice (one that is not
	// a seekable file, such as stdin); "" means os.TempDir().
	SpoolDir string
	// Mode says how elements are written; "" means ModeUpsert. ModeSync
	// needs Scopes.
	Mode ImportMode
	// Scopes are the parts of the store a sync import answers for (see
	// Import); only with ModeSync.
	Scopes []SyncScope
	// Dangling says what to do with an edge whose endpoint neither the
	// store nor the input holds; "" means DanglingError.
	Dangling Dangling
	// StubType is the type of a stub (see StubProperty) when an edge's
	// label allows several at the missing end.
	StubType string
}

// check checks the options against the model.
func (opt *ImportOptions) check(m *schema.Model) error {
	mode, err := ParseImportMode(string(opt.Mode))
	if err != nil {
		return err
	}
	if _, err := ParseDangling(string(opt.Dangling)); err != nil {
		return err
	}
	switch {
	case mode == ModeSync && len(opt.Scopes) == 0:
		return fmt.Errorf("a sync import needs a scope (type:TYPE, prefix:PREFIX or file): %w", ErrInvalid)
	case mode != ModeSync && len(opt.Scopes) > 0:
		return fmt.Errorf("a scope is for a sync import only: %w", ErrInvalid)
	case opt.StubType != "" && opt.Dangling != DanglingStub:
		return fmt.Errorf("a stub type is for --dangling stub only: %w", ErrInvalid)
	}
	if opt.StubType != "" {
		if _, ok := m.Node(opt.StubType); !ok {
			return fmt.Errorf("stub type %q: the model has no such node type (it has %s): %w", opt.StubType, list(m.NodeTypeNames()), ErrInvalid)
		}
	}
	for _, sc := range opt.Scopes {
		if sc.Type != "" {
			if _, ok := m.Node(sc.Type); !ok {
				return fmt.Errorf("scope %s: the model has no such node type (it has %s): %w", sc, list(m.NodeTypeNames()), ErrInvalid)
			}
		}
	}
	return nil
}

// ImportStats reports an import.
type ImportStats struct {
	Lines     int64         `json:"lines"`
	Nodes     int64         `json:"nodes"`
	Edges     int64         `json:"edges"`
	Created   int64         `json:"created"`
	Updated   int64         `json:"updated"`
	Unchanged int64         `json:"unchanged"`
	Batches   int64         `json:"batches"`
	Elapsed   time.Duration `json:"elapsed"`
	// Checking is true while an all-or-nothing import into a store that
	// holds data checks its whole input, before it writes anything: the
	// counts are then of the elements checked, and nothing is committed.
	Checking bool `json:"checking,omitempty"`
	// Duplicates counts the elements the input gives again (the later line
	// wins); DuplicateLines lists the first.
	Duplicates     int64       `json:"duplicates,omitempty"`
	DuplicateLines []Duplicate `json:"duplicateLines,omitempty"`
	// Skipped counts the dangling edges left out (DanglingSkip);
	// SkippedEdges lists the first.
	Skipped      int64    `json:"skipped,omitempty"`
	SkippedEdges []string `json:"skippedEdges,omitempty"`
	// Stubs counts the stubs made (DanglingStub); StubNodes lists the first.
	Stubs     int64 `json:"stubs,omitempty"`
	StubNodes []ID  `json:"stubNodes,omitempty"`
	// Sync reports a sync import's deletions (or, in a dry run, what it
	// would delete).
	Sync *SyncReport `json:"sync,omitempty"`

	tr *tracker // what the pass read
}

// Elements returns the number of nodes and edges read.
func (s ImportStats) Elements() int64 { return s.Nodes + s.Edges }

// Rate returns elements per second.
func (s ImportStats) Rate() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Elements()) / s.Elapsed.Seconds()
}

// An element is one node or edge read from an input, with its line.
type element struct {
	line int64
	node *NodeInput
	edge *EdgeInput
}

// A decoder reads elements; it returns io.EOF at the end. An element's
// node or edge may be valid only until the next call.
type decoder interface {
	next() (element, error)
	lines() int64
}

// A LineError is an import failure located in the input.
type LineError struct {
	Line    int64
	Problem *Problem // nil for a parse error
	Err     error
}

func (e *LineError) Error() string {
	if p := e.Problem; p != nil {
		// Drop the batch's "/nodes/3" prefix: the line locates the element.
		if parts := strings.SplitN(p.Pointer, "/", 4); len(parts) == 4 {
			return fmt.Sprintf("line %d: %s at /%s: %s [%s]", e.Line, p.Element, parts[3], p.Message, p.Rule)
		}
		return fmt.Sprintf("line %d: %s: %s [%s]", e.Line, p.Element, p.Message, p.Rule)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *LineError) Unwrap() error {
	if e.Problem != nil {
		return e.Problem.Err
	}
	return e.Err
}

// An ImportError reports the problems that stopped an import, or that a
// dry run found, and what the import left in the store.
type ImportError struct {
	// Lines lists the first problems, by line: at most MaxProblems.
	Lines []*LineError
	// Total counts every problem found; it exceeds len(Lines) when the
	// list was cut.
	Total int
	// Stats reports the lines read, and the batches a partial import
	// committed.
	Stats ImportStats
	// DryRun: the problems of a dry run, which writes nothing.
	DryRun bool
	// Partial: a partial import (ImportOptions.Partial) committed the
	// Stats.Batches batches before the problems. Otherwise the import
	// wrote nothing.
	Partial bool
	// Stopped: the import stopped at the first rejected batch or
	// unreadable line (a dry run checks every line); StoppedAt is the
	// last line read.
	Stopped   bool
	StoppedAt int64
}

func (e *ImportError) Error() string {
	var b strings.Builder
	switch {
	case e.DryRun:
		fmt.Fprintf(&b, "dry run: %s found; nothing was written", plural(int64(e.Total), "problem"))
	case e.Partial && e.Stats.Batches > 0:
		fmt.Fprintf(&b, "import stopped: %s; the %s before them (%d elements) were committed", plural(int64(e.Total), "problem"),
			plural(e.Stats.Batches, "batch"), e.Stats.Created+e.Stats.Updated+e.Stats.Unchanged)
	default:
		fmt.Fprintf(&b, "import rejected: %s; nothing was written", plural(int64(e.Total), "problem"))
	}
	for _, l := range e.Lines {
		b.WriteString("\n  ")
		b.WriteString(l.Error())
	}
	if more := e.Total - len(e.Lines); more > 0 {
		fmt.Fprintf(&b, "\n  … and %d more (the first %d by line are listed)", more, len(e.Lines))
	}
	if e.Stopped {
		fmt.Fprintf(&b, "\nthe import stopped there, having read %s; a dry run checks every line", plural(e.StoppedAt, "line"))
	}
	return b.String()
}

func (e *ImportError) Unwrap() []error {
	errs := make([]error, len(e.Lines))
	for i, l := range e.Lines {
		errs[i] = l
	}
	return errs
}

func plural(n int64, word string) string {
	switch {
	case n == 1:
		return "1 " + word
	case strings.HasSuffix(word, "ch"):
		return fmt.Sprintf("%d %ses", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// A WriteError reports an import that failed part-way through writing an
// input it had checked whole (into a store that holds data): Stats says
// which batches were committed. Each batch is atomic, and importing the
// same input again completes it (what is already written comes out
// unchanged).
type WriteError struct {
	Stats ImportStats
	Err   error
}

func (e *WriteError) Error() string {
	return fmt.Sprintf("import interrupted while writing, after checking the whole input: %s (%d elements, up to line %d) were committed, the rest were not; import the same input again to complete it: %v",
		plural(e.Stats.Batches, "batch"), e.Stats.Created+e.Stats.Updated+e.Stats.Unchanged, e.Stats.Lines, e.Err)
}

func (e *WriteError) Unwrap() error { return e.Err }

// Import reads r in the given format and applies it in batches, streaming
// with memory bounded by the batch size. Each batch is validated whole and
// committed atomically as one change-log entry. Elements created by the
// import keep the timestamps and revisions the input carries, so an
// export imports back exactly.
//
// An import is all or nothing. Into a store that holds and held nothing,
// batches commit as they are read (a bulk load, see bulkLoader), and a
// rejected batch, a parse error, a cancelled ctx or a failed commit empty
// the store again (the change log's sequence numbers keep growing); if
// the process dies first, the next Open empties it. Into a store that
// holds data, the whole input is checked first (a dry run; an input that
// is not a seekable file is copied to ImportOptions.SpoolDir meanwhile),
// and written only if it has no problem; should writing still fail (a
// cancelled ctx, an I/O error), the error is a *WriteError saying which
// batches were committed. A rejected import returns an *ImportError
// listing its problems by line.
//
// With ImportOptions.Partial, batches are committed as they come and the
// first rejected batch stops the import, keeping those before it. A dry
// run validates every line against the store and the nodes read so far,
// and writes nothing.
//
// ImportOptions.Mode chooses how elements are written: replaced
// (ModeUpsert), patched (ModeMerge), or replaced and then synced
// (ModeSync). A sync import, once the whole input is written, reads its
// scopes from the store and deletes the nodes they hold that the input
// lacks (with their edges), and the edges from the nodes the input holds
// that it lacks; a dry run reports what it would delete (ImportStats.Sync).
// The deletions go through Apply like any write, as batches of node and
// edge deletes, in ID order, each atomic and recorded in the change log
// as one "import-sync" entry. What a concurrent reader can see: the input
// written and none of the deletions, then all of them when they fit one
// batch (up to MaxImportBatch elements, cascaded edges not counted), or
// whole batches of them, a prefix in ID order, never part of a batch. A
// node another writer deleted meanwhile is left out; one created
// meanwhile is kept. Should the deletions fail, the error is a
// *WriteError, and importing the same input again completes them.
//
// Dangling edges (ImportOptions.Dangling) and elements given twice
// (ImportStats.Duplicates) are reported; see DanglingStub and
// StubProperty. To find duplicates an import keeps a 64-bit hash of each
// element's key and its line (see tracker), so beyond its batches its
// memory grows by some tens of bytes per element; a sync import also
// keeps the input's node IDs and edge keys, to compare the scopes with.
//
// Reading, decoding and schema validation of the next batch run on their
// own goroutine while the store commits the current one. Cancelling ctx
// stops the import between lines and between batches; a read blocked on
// r is left to return on its own.
func Import(ctx context.Context, s Store, r io.Reader, opt ImportOptions) (*ImportStats, error) {
	start := time.Now()
	if _, err := newDecoder(opt.Format, nil, 0); err != nil {
		return nil, err
	}
	if err := opt.check(s.Model()); err != nil {
		return nil, err
	}
	withSync := func(st *ImportStats, err error) (*ImportStats, error) {
		if err != nil || opt.Mode != ModeSync {
			return st, err
		}
		rep, err := syncDeletes(ctx, s, opt.Scopes, st.tr, opt.DryRun)
		st.Sync = rep
		st.Elapsed = time.Since(start)
		if err != nil && !opt.DryRun {
			err = &WriteError{Stats: *st, Err: fmt.Errorf("the input was written, and its sync deletions stopped (%s and %s deleted): %w",
				plural(rep.DeletedNodes, "node"), plural(rep.DeletedEdges, "edge"), err)}
		}
		return st, err
	}
	switch {
	case opt.DryRun:
		return withSync(runPass(ctx, s, r, opt, passDry, start))
	case opt.Partial:
		return withSync(runPass(ctx, s, r, opt, passPartial, start))
	}
	if al, ok := s.(AtomicLoader); ok {
		done, ok, err := al.BeginLoad(!opt.Durable)
		if err != nil {
			// Not the two passes below: an import into an empty store is
			// all or nothing, and they are not.
			return nil, fmt.Errorf("beginning the load: %w", err)
		}
		if ok {
			st, err := runPass(WithinLoad(ctx), s, r, opt, passLoad, start)
			if err == nil {
				err = done(true) // which empties the store if it fails
			} else if derr := done(false); derr != nil {
				err = errors.Join(err, fmt.Errorf("emptying the store again: %w", derr))
			}
			if err != nil && st != nil {
				st.Created, st.Updated, st.Unchanged, st.Batches = 0, 0, 0, 0
				var ie *ImportError
				if errors.As(err, &ie) {
					ie.Stats = *st
				}
			}
			if err == nil && opt.Mode == ModeSync {
				st.Sync = &SyncReport{} // the store held nothing to delete
			}
			return st, err
		}
	}
	in, rewind, cleanup, err := rereadable(r, opt.SpoolDir)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if st, err := runPass(ctx, s, in, opt, passCheck, start); err != nil {
		return st, err
	}
	if in, err = rewind(); err != nil {
		return nil, err
	}
	return withSync(runPass(ctx, s, in, opt, passWrite, start))
}

// rereadable returns r, and a function that returns a reader of the same
// input from the start once r has been read to its end: r itself, sought
// back, if it is a seekable file, else a copy spooled to a temporary file
// in dir as r is read.
func rereadable(r io.Reader, dir string) (io.Reader, func() (io.Reader, error), func(), error) {
	if rs, ok := r.(io.ReadSeeker); ok {
		if pos, err := rs.Seek(0, io.SeekCurrent); err == nil {
			return r, func() (io.Reader, error) {
				_, err := rs.Seek(pos, io.SeekStart)
				return rs, err
			}, func() {}, nil
		}
	}
	f, err := os.CreateTemp(dir, "lore-import-*.spool")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("a copy of the input to read it twice: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<16)
	return io.TeeReader(r, w), func() (io.Reader, error) {
			if err := w.Flush(); err != nil {
				return nil, fmt.Errorf("a copy of the input to read it twice: %w", err)
			}
			_, err := f.Seek(0, io.SeekStart)
			return f, err
		}, func() {
			f.Close()
			os.Remove(f.Name())
		}, nil
}

// An importPass is one way of reading an input through.
type importPass int

const (
	passDry     importPass = iota // a dry run: check every line, write nothing
	passPartial                   // commit batch by batch, stop at the first rejected batch
	passLoad                      // commit batch by batch inside an atomic load (see atomicLoader)
	passCheck                     // the first pass of an import into a store with data: a dry run
	passWrite                     // its second pass: commit the input the first checked
)

func (p importPass) dry() bool { return p == passDry || p == passCheck }

// runPass reads the input once, in the way pass says.
func runPass(ctx context.Context, s Store, r io.Reader, opt ImportOptions, pass importPass, start time.Time) (_ *ImportStats, err error) {
	dec, err := newDecoder(opt.Format, r, opt.MaxDepth)
	if err != nil {
		return nil, err
	}
	size, ramp := opt.BatchSize, opt.BatchSize <= 0
	if ramp {
		size = DefaultImportBatch
	}
	size = min(size, MaxImportBatch)
	if bl, ok := s.(BulkLoader); ok && pass == passPartial && !opt.Durable {
		if end, ok := bl.BeginBulk(); ok {
			defer func() {
				if ferr := end(); ferr != nil && err == nil {
					err = ferr
				}
			}()
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *StreamBatch, 1)
	pl, pipelined := s.(Pipeliner)
	pipelined = pipelined && !pass.dry()
	first := size
	if ramp {
		first = min(max(cmp.Or(opt.FirstBatch, DefaultFirstBatch), 1), size)
	}
	rc := &readConfig{s: s, mode: cmp.Or(opt.Mode, ModeUpsert), dangling: cmp.Or(opt.Dangling, DanglingError), stubType: opt.StubType,
		tr: newTracker(opt.Mode == ModeSync), empty: pass == passLoad}
	go readBatches(ctx, rc, dec, first, size, pass.dry(), batches)

	st := &ImportStats{Checking: pass == passCheck, tr: rc.tr}
	defer func() { rc.tr.stats(st) }()
	var (
		assume  map[ID]string
		report  lineReport
		stopped bool  // at a rejected batch
		stopErr error // why the import stopped early, if not rejected
	)
	if pass.dry() {
		assume = map[ID]string{}
	}
	// handle records one batch's outcome and says whether to go on.
	handle := func(ib *importBatch, res *Result, err error) bool {
		st.Lines = ib.lines
		les := ib.parseErrs
		more := ib.parseMore
		var be *BatchError
		switch {
		case errors.As(err, &be):
			for _, p := range be.Problems {
				les = append(les, &LineError{Line: lineOf(p.Pointer, ib.nodeLines, ib.edgeLines), Problem: &p})
			}
			more += be.More
		case err != nil:
			stopErr = err
			return false
		case res != nil:
			st.count(res)
		}
		report.add(les, more)
		if ib.fatal || be != nil && !pass.dry() {
			stopped = true
			return false
		}
		if pass.dry() {
			for _, n := range ib.b.Nodes {
				assume[n.ID] = n.Type
			}
		}
		st.Nodes += int64(len(ib.b.Nodes))
		st.Edges += int64(len(ib.b.Edges))
		st.Elapsed = time.Since(start)
		if opt.Progress != nil && ib.b.Len() > 0 {
			opt.Progress(*st)
		}
		return true
	}
	if pipelined {
		pl.ApplyStream(ctx, batches, func(sb *StreamBatch, res *Result, err error) bool { return handle(sb.ib, res, err) })
	} else {
	loop:
		for {
			var ib *importBatch
			select {
			case sb, ok := <-batches:
				if !ok {
					break loop
				}
				ib = sb.ib
			case <-ctx.Done():
				break loop
			}
			var res *Result
			var err error
			if !ib.fatal && ib.b.Len() > 0 {
				ib.b.Assume = assume
				res, err = s.Apply(ctx, ib.b)
			}
			if !handle(ib, res, err) {
				break
			}
		}
	}
	st.Elapsed = time.Since(start)
	if stopErr == nil && !stopped {
		stopErr = ctx.Err()
	}
	if stopErr != nil {
		if pass == passWrite {
			return st, &WriteError{Stats: *st, Err: stopErr}
		}
		return st, stopErr
	}
	if report.total > 0 {
		return st, &ImportError{Lines: report.lines, Total: report.total, Stats: *st, DryRun: pass == passDry,
			Partial: pass == passPartial || pass == passWrite, Stopped: stopped && !pass.dry(), StoppedAt: st.Lines}
	}
	return st, nil
}

// lineReport collects an import's problems: the first MaxProblems by
// line, and the count of all.
type lineReport struct {
	lines []*LineError
	total int
}

// add adds one batch's problems, all on lines after those of the batches
// before it, and the count of more not listed.
func (r *lineReport) add(les []*LineError, more int) {
	r.total += len(les) + more
	if len(r.lines) >= MaxProblems || len(les) == 0 {
		return
	}
	slices.SortStableFunc(les, func(a, b *LineError) int { return cmp.Compare(a.Line, b.Line) })
	r.lines = append(r.lines, les[:min(len(les), MaxProblems-len(r.lines))]...)
}

func (st *ImportStats) count(res *Result) {
	for _, rs := range [][]ElementResult{res.Nodes, res.Edges} {
		for _, e := range rs {
			switch e.Status {
			case Created:
				st.Created++
			case Updated:
				st.Updated++
			default:
				st.Unchanged++
			}
		}
	}
	st.Batches++
}

// An importBatch is one batch read from the input, prepared for Apply.
type importBatch struct {
	b                    *Batch
	nodeLines, edgeLines []int64      // input line of each element of b
	lines                int64        // lines read so far
	parseErrs            []*LineError // the first MaxProblems
	parseMore            int          // parse errors beyond them
	fatal                bool         // a parse error ends the import
	sb                   StreamBatch  // what a Pipeliner sees of it
}

// readBatches decodes the input into prepared batches, the first of first
// elements, then each twice the one before, up to size. A batch ends at the
// size limit, or before an element the batch already holds (so the later
// line wins). It closes out when the input ends or ctx is cancelled.
func readBatches(ctx context.Context, rc *readConfig, dec decoder, first, size int, dryRun bool, out chan<- *StreamBatch) {
	defer close(out)
	m := rc.s.Model()
	limit := first
	newBatch := func() *importBatch {
		ib := &importBatch{b: &Batch{Op: "import", Restore: true, DryRun: dryRun, max: MaxImportBatch, counted: true, distinct: true}}
		ib.b.rank = func(ptr string) int64 { return lineOf(ptr, ib.nodeLines, ib.edgeLines) }
		return ib
	}
	cur := newBatch()
	since := int64(-1) // the line of cur's first element, once it has one
	send := func() bool {
		if rc.dangling != DanglingError && !cur.fatal && len(cur.b.Edges) > 0 {
			if err := resolveDangling(ctx, rc, cur); err != nil {
				cur.parseErrs = append(cur.parseErrs, &LineError{Line: dec.lines(), Err: &readError{fmt.Errorf("looking up the endpoints of the batch's edges: %w", err)}})
				cur.fatal = true
			}
		}
		prepare(m, cur.b)
		cur.lines = dec.lines()
		cur.sb.Batch, cur.sb.ib = cur.b, cur
		if cur.fatal || cur.b.Len() == 0 {
			cur.sb.Batch = nil
		}
		select {
		case out <- &cur.sb:
		case <-ctx.Done():
			return false
		}
		limit = min(2*limit, size)
		cur, since = newBatch(), -1
		return true
	}
	for ctx.Err() == nil {
		el, err := dec.next()
		if err == io.EOF {
			cur.sb.Last = true
			send()
			return
		}
		if err != nil {
			if len(cur.parseErrs) < MaxProblems {
				cur.parseErrs = append(cur.parseErrs, &LineError{Line: el.line, Err: err})
			} else {
				cur.parseMore++
			}
			if !dryRun || isReadError(err) {
				cur.fatal = true
				cur.b = &Batch{max: MaxImportBatch}
				send()
				return
			}
			continue
		}
		if since < 0 {
			since = el.line
		}
		// A batch ends before an element it holds already; the tracker
		// knows, from the lines it saw the element's key at.
		again, held := rc.tr.see(el, since)
		if held {
			if !send() {
				return
			}
			since = el.line
		}
		if rc.empty && !again {
			if el.node != nil {
				el.node.absent = true
			} else {
				el.edge.absent = true
			}
		}
		if rc.mode == ModeMerge {
			if el.node != nil {
				el.node.Merge = true
			} else {
				el.edge.Merge = true
			}
		}
		// A batch's first node or edge makes room for a whole batch of
		// them: growing the slices as they filled was 8% of a load's
		// CPU time in Lore.
		if el.node != nil {
			if cur.b.Nodes == nil {
				cur.b.Nodes, cur.nodeLines = make([]NodeInput, 0, limit), make([]int64, 0, limit)
			}
			cur.b.Nodes = append(cur.b.Nodes, *el.node)
			cur.nodeLines = append(cur.nodeLines, el.line)
		} else {
			if cur.b.Edges == nil {
				cur.b.Edges, cur.edgeLines = make([]EdgeInput, 0, limit), make([]int64, 0, limit)
			}
			cur.b.Edges = append(cur.b.Edges, *el.edge)
			cur.edgeLines = append(cur.edgeLines, el.line)
		}
		if cur.b.Len() >= limit && !send() {
			return
		}
	}
}

// lineOf maps a problem's pointer ("/nodes/3/…", "/edges/0/…") to its input line.
func lineOf(ptr string, nodeLines, edgeLines []int64) int64 {
	parts := strings.SplitN(ptr, "/", 4)
	if len(parts) < 3 {
		return 0
	}
	i, err := strconv.Atoi(parts[2])
	lines := nodeLines
	if parts[1] == "edges" {
		lines = edgeLines
	}
	if err != nil || i < 0 || i >= len(lines) {
		return 0
	}
	return lines[i]
}

// newDecoder returns a decoder of format f reading r; maxDepth bounds
// the nesting of JSON in the input (0: schema.DefaultMaxDepth).
func newDecoder(f Format, r io.Reader, maxDepth int) (decoder, error) {
	lr := &lineReader{}
	if r != nil {
		lr.r = bufio.NewReaderSize(r, 1<<16)
	}
	switch f {
	case NDJSON, "":
		return &ndjsonDecoder{lr: lr, maxDepth: maxDepth}, nil
	case NQuads:
		return &nquadsDecoder{lr: lr, maxDepth: maxDepth}, nil
	case Memory:
		return &memoryDecoder{lr: lr, maxDepth: maxDepth}, nil
	}
	return nil, fmt.Errorf("format %q: %w (use ndjson, nquads or memory)", f, ErrInvalid)
}

// lineReader reads lines of any length up to MaxLine, counting them.
type lineReader struct {
	r    *bufio.Reader
	n    int64
	buf  []byte
	done bool
}

// next returns the next non-blank line (without its newline or the spaces
// around it) and its number. The line is valid until the next call: the
// decoders copy what they keep of it.
func (l *lineReader) next() ([]byte, int64, error) {
	for {
		if l.done {
			return nil, l.n, io.EOF
		}
		l.buf = l.buf[:0]
		for {
			chunk, err := l.r.ReadSlice('\n')
			l.buf = append(l.buf, chunk...)
			if len(l.buf) > MaxLine {
				l.n++
				return nil, l.n, &readError{fmt.Errorf("line longer than %d bytes; the rest of the input is not read", MaxLine)}
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				l.done = true
				if len(l.buf) == 0 {
					return nil, l.n, io.EOF
				}
			} else if err != nil {
				return nil, l.n, &readError{err}
			}
			break
		}
		l.n++
		if line := bytes.TrimSpace(l.buf); len(line) > 0 {
			return line, l.n, nil
		}
	}
}

// A readError is a failure to read the input itself (not a line's
// content): the rest of the input cannot be read either.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func isReadError(err error) bool {
	var re *readError
	return errors.As(err, &re)
}
