package graph

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
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

// Imports allocate heavily and briefly. lore import runs them with the
// garbage collector set by ImportOptions.TuneGC, under the soft memory
// limit ImportMemoryLimit returns, unless GOGC or GOMEMLIMIT say otherwise;
// the benchmarks use the same settings for Lore and for the Cayley
// baselines.
const ImportGCPercent = 400

// ImportGCPercentAt returns the collector's percent for an import that has
// committed n elements: 200 for its first 300,000 elements, then
// ImportGCPercent. A small load's heap is small, and collecting it more
// often costs less than touching fresh memory: a 10k-node load took 6%
// less time at 200 than at 400, 100k nodes 8% less; a 1M-node load took 7%
// longer at 200 throughout.
func ImportGCPercentAt(n int64) int {
	if n < largeImport {
		return 200
	}
	return ImportGCPercent
}

var largeImport int64 = 300000 // a variable so that tests can lower it

// ImportMemoryLimit returns the soft memory limit for imports: a quarter
// of physical memory, between 1 GiB and 4 GiB (2 GiB where physical memory
// is unknown). The live heap of a load is bounded by its batch size, not
// by the file's; the limit decides how often the collector runs over it.
// Measured on 24 GiB: at 1M nodes, 151-160 s at 4 GiB against 178-198 s at
// 2 GiB, where the collector ran every 2 s over a 500-650 MB heap; at 100k
// nodes the larger heap costs instead, 18.0 s against 15.7-16.1 s.
func ImportMemoryLimit() int64 {
	mem := physicalMemory()
	if mem == 0 {
		return 2 << 30
	}
	return min(max(mem/4, 1<<30), 4<<30)
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

// rampSteps: an import at the default batch size starts with batches this
// many times smaller (2,000 elements) and doubles them up to the default,
// so that the store starts committing soon after the input starts, and
// even a small import is read, checked and written in a pipeline. At 10k
// nodes and 20k edges, a first batch of 2,000 took 6% less time than one
// of 6,250: Cayley's single-threaded part starts sooner, and more batches
// do not cost more than that.
var rampSteps = 25

// MaxLine is the longest line an import reads, in bytes.
const MaxLine = 16 << 20

// ImportOptions configures Import.
type ImportOptions struct {
	Format Format
	// BatchSize is the number of elements per transaction, capped at
	// MaxImportBatch. 0 means DefaultImportBatch, reached by doubling from
	// a 25th of it (see rampSteps).
	BatchSize int
	// DryRun validates the whole input and writes nothing.
	DryRun bool
	// Progress, if set, is called after each batch.
	Progress func(ImportStats)
	// TuneGC has the import set the collector's percent as it grows
	// (ImportGCPercentAt), and restore it when it returns.
	TuneGC bool
	// Durable makes every batch durable (fsynced) when it commits. Without
	// it, an import into an empty store is a bulk load: batches commit
	// atomically but are flushed to disk once, at the end, as bbolt advises
	// for bulk loads. A process crash loses no committed batch either way;
	// a power cut during a bulk load may leave a store to delete and import
	// again, which held nothing before. A store that holds data is always
	// written durably.
	Durable bool
}

// A pipeliner applies a stream of batches, planning each while the one
// before it commits.
type pipeliner interface {
	applyPipelined(ctx context.Context, batches <-chan *importBatch, handle func(*importBatch, *Result, error) bool, tn *turns)
}

// A bulkLoader can skip per-commit flushes while it is empty. beginBulk
// reports whether it did; end flushes and restores durable commits.
type bulkLoader interface {
	beginBulk() (end func() error, ok bool)
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

// A decoder reads elements; it returns io.EOF at the end.
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

// An ImportError lists the lines an import rejected. Batches before the
// first rejected one were committed (see Stats); nothing after it was.
type ImportError struct {
	Lines []*LineError
	Stats ImportStats
}

func (e *ImportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "import stopped: %d problem(s)", len(e.Lines))
	if e.Stats.Batches > 0 {
		fmt.Fprintf(&b, " (the %d batches before them, %d elements, were committed)", e.Stats.Batches, e.Stats.Created+e.Stats.Updated+e.Stats.Unchanged)
	}
	for _, l := range e.Lines {
		b.WriteString("\n  ")
		b.WriteString(l.Error())
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

// Import reads r in the given format and applies it in batches, streaming
// with memory bounded by the batch size. Each batch is validated whole and
// committed atomically as one change-log entry; the first rejected batch
// stops the import with an *ImportError naming every bad line in it.
// Elements created by the import keep the timestamps and revisions the input
// carries, so an export imports back exactly. A dry run validates every line
// against the store and the nodes read so far, and writes nothing.
//
// Reading, decoding and schema validation of the next batch run on their
// own goroutine while the store commits the current one.
func Import(ctx context.Context, s Store, r io.Reader, opt ImportOptions) (_ *ImportStats, err error) {
	start := time.Now()
	dec, err := newDecoder(opt.Format, r)
	if err != nil {
		return nil, err
	}
	size, ramp := opt.BatchSize, opt.BatchSize <= 0
	if ramp {
		size = DefaultImportBatch
	}
	size = min(size, MaxImportBatch)
	if bl, ok := s.(bulkLoader); ok && !opt.Durable && !opt.DryRun {
		if end, ok := bl.beginBulk(); ok {
			defer func() {
				if ferr := end(); ferr != nil && err == nil {
					err = ferr
				}
			}()
		}
	}
	gcPercent := 0 // the collector's percent as the import set it
	if opt.TuneGC {
		gcPercent = ImportGCPercentAt(0)
		defer debug.SetGCPercent(debug.SetGCPercent(gcPercent))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan *importBatch, 1)
	pl, pipelined := s.(pipeliner)
	pipelined = pipelined && !opt.DryRun
	var tn *turns
	if pipelined && useTurns {
		tn = newTurns(runtime.GOMAXPROCS(0))
	}
	go readBatches(ctx, s.Model(), dec, size, ramp, opt.DryRun, batches, tn)

	st := &ImportStats{}
	var (
		assume  map[ID]string
		rejects []*LineError
		stopErr error // why the import stopped early
	)
	if opt.DryRun {
		assume = map[ID]string{}
	}
	// handle records one batch's outcome and says whether to go on.
	handle := func(ib *importBatch, res *Result, err error) bool {
		rejects = append(rejects, ib.parseErrs...)
		st.Lines = ib.lines
		if ib.fatal {
			stopErr = &ImportError{Lines: rejects, Stats: *st}
			return false
		}
		var be *BatchError
		switch {
		case errors.As(err, &be):
			for _, p := range be.Problems {
				rejects = append(rejects, &LineError{Line: lineOf(p.Pointer, ib.nodeLines, ib.edgeLines), Problem: &p})
			}
			if !opt.DryRun {
				stopErr = &ImportError{Lines: rejects, Stats: *st}
				return false
			}
		case err != nil:
			stopErr = err
			return false
		case res != nil:
			st.count(res)
		}
		if opt.DryRun {
			for _, n := range ib.b.Nodes {
				assume[n.ID] = n.Type
			}
		}
		st.Nodes += int64(len(ib.b.Nodes))
		st.Edges += int64(len(ib.b.Edges))
		if p := ImportGCPercentAt(st.Elements()); opt.TuneGC && p != gcPercent {
			debug.SetGCPercent(p) // only when it changes: it stops the world
			gcPercent = p
		}
		st.Elapsed = time.Since(start)
		if opt.Progress != nil && ib.b.Len() > 0 {
			opt.Progress(*st)
		}
		return true
	}
	if pipelined {
		pl.applyPipelined(ctx, batches, handle, tn)
	} else {
		for ib := range batches {
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
	if stopErr != nil {
		return st, stopErr
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	st.Elapsed = time.Since(start)
	if len(rejects) > 0 {
		return st, &ImportError{Lines: rejects, Stats: *st}
	}
	return st, nil
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
	nodeLines, edgeLines []int64 // input line of each element of b
	lines                int64   // lines read so far
	parseErrs            []*LineError
	fatal                bool // a parse error ends the import
	last                 bool // the input ends after this batch
}

// readBatches decodes the input into prepared batches. A batch ends at the
// size limit, or before an element the batch already holds (so the later
// line wins). It closes out when the input ends or ctx is cancelled.
func readBatches(ctx context.Context, m *schema.Model, dec decoder, size int, ramp, dryRun bool, out chan<- *importBatch, tn *turns) {
	defer close(out)
	tn.take(turnRead)
	defer tn.give()
	limit := size
	if ramp {
		limit = max(size/rampSteps, 1)
	}
	newBatch := func() *importBatch {
		return &importBatch{b: &Batch{Op: "import", Restore: true, DryRun: dryRun, max: MaxImportBatch,
			yield: func() { tn.yield(turnRead) }}}
	}
	cur, inBatch := newBatch(), map[string]bool{}
	send := func() bool {
		prepare(m, cur.b)
		cur.lines = dec.lines()
		tn.give()
		defer tn.take(turnRead)
		select {
		case out <- cur:
		case <-ctx.Done():
			return false
		}
		// The planner, woken by the send, would wait in this core's queue
		// until the reader blocks or is preempted: let it run now.
		runtime.Gosched()
		cur = newBatch()
		clear(inBatch)
		limit = min(2*limit, size)
		return true
	}
	parseErrs := 0
	for ctx.Err() == nil {
		tn.yield(turnRead)
		el, err := dec.next()
		if err == io.EOF {
			cur.last = true
			send()
			return
		}
		if err != nil {
			cur.parseErrs = append(cur.parseErrs, &LineError{Line: el.line, Err: err})
			if parseErrs++; !dryRun || parseErrs >= MaxProblems {
				cur.fatal = true
				cur.b = &Batch{max: MaxImportBatch}
				send()
				return
			}
			continue
		}
		key := el.key()
		if inBatch[key] && !send() {
			return
		}
		inBatch[key] = true
		if el.node != nil {
			cur.b.Nodes = append(cur.b.Nodes, *el.node)
			cur.nodeLines = append(cur.nodeLines, el.line)
		} else {
			cur.b.Edges = append(cur.b.Edges, *el.edge)
			cur.edgeLines = append(cur.edgeLines, el.line)
		}
		if cur.b.Len() >= limit && !send() {
			return
		}
	}
}

func (el element) key() string {
	if el.node != nil {
		return "n\x00" + string(el.node.ID)
	}
	return "e\x00" + string(el.edge.bytes())
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

func newDecoder(f Format, r io.Reader) (decoder, error) {
	lr := &lineReader{r: bufio.NewReaderSize(r, 1<<16)}
	switch f {
	case NDJSON, "":
		return &ndjsonDecoder{lr: lr}, nil
	case NQuads:
		return &nquadsDecoder{lr: lr}, nil
	case Memory:
		return &memoryDecoder{lr: lr}, nil
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

// next returns the next non-blank line (without its newline) and its number.
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
				return nil, l.n, fmt.Errorf("line longer than %d bytes", MaxLine)
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
				return nil, l.n, err
			}
			break
		}
		l.n++
		line := strings.TrimSpace(string(l.buf))
		if line != "" {
			return []byte(line), l.n, nil
		}
	}
}
