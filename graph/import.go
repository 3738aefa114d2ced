package graph

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
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

// DefaultImportBatch is the number of elements an import commits at a time.
const DefaultImportBatch = 5000

// MaxLine is the longest line an import reads, in bytes.
const MaxLine = 16 << 20

// ImportOptions configures Import.
type ImportOptions struct {
	Format Format
	// BatchSize is the number of elements per transaction; 0 means DefaultImportBatch.
	BatchSize int
	// DryRun validates the whole input and writes nothing.
	DryRun bool
	// Progress, if set, is called after each batch.
	Progress func(ImportStats)
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
func Import(ctx context.Context, s Store, r io.Reader, opt ImportOptions) (*ImportStats, error) {
	start := time.Now()
	dec, err := newDecoder(opt.Format, r)
	if err != nil {
		return nil, err
	}
	size := opt.BatchSize
	if size <= 0 {
		size = DefaultImportBatch
	}
	if size > MaxBatch {
		size = MaxBatch
	}
	st := &ImportStats{}
	var assume map[ID]string
	if opt.DryRun {
		assume = map[ID]string{}
	}
	var (
		b                    = &Batch{Op: "import", Restore: true, DryRun: opt.DryRun, Assume: assume}
		nodeLines, edgeLines []int64 // input line of each element of b
		inBatch              = map[string]bool{}
		rejects              []*LineError
	)
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		res, err := s.Apply(ctx, b)
		var be *BatchError
		if errors.As(err, &be) {
			for _, p := range be.Problems {
				rejects = append(rejects, &LineError{Line: lineOf(p.Pointer, nodeLines, edgeLines), Problem: &p})
			}
			if !opt.DryRun {
				return &ImportError{Lines: rejects, Stats: *st}
			}
		} else if err != nil {
			return err
		} else {
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
		if opt.DryRun {
			for _, n := range b.Nodes {
				assume[n.ID] = n.Type
			}
		}
		b = &Batch{Op: "import", Restore: true, DryRun: opt.DryRun, Assume: assume}
		nodeLines, edgeLines = nodeLines[:0], edgeLines[:0]
		clear(inBatch)
		st.Lines = dec.lines()
		st.Elapsed = time.Since(start)
		if opt.Progress != nil {
			opt.Progress(*st)
		}
		return nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		el, err := dec.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rejects = append(rejects, &LineError{Line: el.line, Err: err})
			if !opt.DryRun || len(rejects) >= MaxProblems {
				st.Lines = dec.lines()
				return st, &ImportError{Lines: rejects, Stats: *st}
			}
			continue
		}
		key := el.key()
		if inBatch[key] {
			// The same element again: commit what came before, so the later line wins.
			if err := flush(); err != nil {
				return st, err
			}
		}
		inBatch[key] = true
		if el.node != nil {
			st.Nodes++
			b.Nodes = append(b.Nodes, *el.node)
			nodeLines = append(nodeLines, el.line)
		} else {
			st.Edges++
			b.Edges = append(b.Edges, *el.edge)
			edgeLines = append(edgeLines, el.line)
		}
		if b.Len() >= size {
			if err := flush(); err != nil {
				return st, err
			}
		}
	}
	if err := flush(); err != nil {
		return st, err
	}
	st.Lines = dec.lines()
	st.Elapsed = time.Since(start)
	if len(rejects) > 0 {
		return st, &ImportError{Lines: rejects, Stats: *st}
	}
	return st, nil
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
