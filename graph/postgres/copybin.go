package postgres

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/jackc/pgx/v5"
)

// copyBuf is rows in COPY's binary format, encoded by Lore: pgx's CopyFrom
// takes each row as a []any and encodes each value through an interface,
// which allocates per row and per value.
type copyBuf struct{ b []byte }

func (c *copyBuf) header() {
	c.b = append(c.b, "PGCOPY\n\xff\r\n\x00"...)
	c.b = append(c.b, 0, 0, 0, 0, 0, 0, 0, 0) // flags, header extension length
}

// row starts a row of n fields.
func (c *copyBuf) row(n int) { c.b = binary.BigEndian.AppendUint16(c.b, uint16(n)) }

// text appends a text (or bytea) field.
func (c *copyBuf) text(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s)))
	c.b = append(c.b, s...)
}

func (c *copyBuf) bytea(v []byte) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(v)))
	c.b = append(c.b, v...)
}

func (c *copyBuf) int16(v int16) {
	c.b = binary.BigEndian.AppendUint32(c.b, 2)
	c.b = binary.BigEndian.AppendUint16(c.b, uint16(v))
}

func (c *copyBuf) int64(v int64) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v))
}

// copyChunk is how many bytes of rows a copyReader encodes at a time.
const copyChunk = 1 << 16

// A copyReader reads a binary COPY stream whose rows next encodes, a
// chunk at a time: next appends rows (at least one) and reports whether
// more follow.
type copyReader struct {
	buf  copyBuf
	off  int
	next func(b *copyBuf) bool
	done bool
}

func newCopyReader(next func(b *copyBuf) bool) *copyReader {
	r := &copyReader{next: next}
	r.buf.b = make([]byte, 0, copyChunk+copyChunk/4)
	r.buf.header()
	return r
}

func (r *copyReader) Read(p []byte) (int, error) {
	if r.off == len(r.buf.b) {
		if r.done {
			return 0, io.EOF
		}
		r.buf.b, r.off = r.buf.b[:0], 0
		for len(r.buf.b) < copyChunk && !r.done {
			if !r.next(&r.buf) {
				r.done = true
				r.buf.b = append(r.buf.b, 0xff, 0xff) // the trailer
			}
		}
	}
	n := copy(p, r.buf.b[r.off:])
	r.off += n
	return n, nil
}

// copyRows copies n rows, which row(i, b) encodes, into table (sql names
// its columns) in tx.
func copyRows(ctx context.Context, tx pgx.Tx, into string, n int, row func(i int, b *copyBuf)) error {
	if n == 0 {
		return nil
	}
	i := 0
	_, err := tx.Conn().PgConn().CopyFrom(ctx, newCopyReader(func(b *copyBuf) bool {
		row(i, b)
		i++
		return i < n
	}), `COPY `+into+` FROM STDIN BINARY`)
	return err
}
