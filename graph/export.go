package graph

import (
	"bufio"
	"context"
	"fmt"
	"io"
)

// ExportStats reports an export.
type ExportStats struct {
	Nodes int64 `json:"nodes"`
	Edges int64 `json:"edges"`
}

// Export writes the whole graph to w: nodes in ID order, then edges in key
// order, so equal graphs export to equal bytes. NDJSON and N-Quads carry
// everything (timestamps and revisions included) and import back into an
// empty store as an identical graph; Memory writes only the Entity nodes and
// their relations.
func Export(ctx context.Context, s Store, w io.Writer, f Format) (*ExportStats, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	st := &ExportStats{}
	var err error
	switch f {
	case NDJSON, "":
		err = exportNDJSON(ctx, s, bw, st)
	case NQuads:
		err = exportNQuads(ctx, s, bw, st)
	case Memory:
		err = exportMemory(ctx, s, bw, st)
	default:
		return nil, fmt.Errorf("format %q: %w (use ndjson, nquads or memory)", f, ErrInvalid)
	}
	if err != nil {
		return st, err
	}
	return st, bw.Flush()
}
