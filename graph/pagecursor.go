package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
)

// neighbors and find_paths page through an answer whose order is fixed
// for a given graph (the breadth-first search's, the paths' by length and
// IDs): a cursor holds how many items earlier pages returned, and a call
// computes its answer up to the end of its page and returns that page.

// pageCursor continues a paged answer: F identifies the query, N is how
// many items came before the page.
type pageCursor struct {
	F string `json:"f"`
	N int    `json:"n"`
}

// maxPageOffset bounds a page cursor's offset: more items than any
// ceiling lets one call compute.
const maxPageOffset = 1 << 24

// fingerprintOf identifies a query for its cursors: everything that
// shapes its answer (never the page size, limits or cursor).
func fingerprintOf(v any) string {
	data, _ := json.Marshal(v)
	h := sha256.Sum256(data)
	return base64.RawURLEncoding.EncodeToString(h[:12])
}

// openPageCursor returns the offset a cursor made for the query fp holds
// (0 for no cursor).
func openPageCursor(s Store, cursor, fp string) (int, error) {
	if cursor == "" {
		return 0, nil
	}
	data, err := openCursor(s, "graph.pageCursor", cursor)
	if err != nil {
		return 0, err
	}
	var c pageCursor
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return 0, fmt.Errorf("the cursor is damaged; send the call again without it: %w", ErrInvalid)
	}
	if c.F != fp {
		return 0, fmt.Errorf("the cursor was made for another call; send the same arguments with the cursor it returned, or drop the cursor to start over: %w", ErrInvalid)
	}
	if c.N < 0 || c.N > maxPageOffset {
		return 0, fmt.Errorf("the cursor's position is out of range: %w", ErrInvalid)
	}
	return c.N, nil
}

// pageCursors makes the cursors of a page: at is the offset of its first
// item, cursor the cursor it was asked with.
type pageCursors struct {
	s      Store
	fp     string
	at     int
	cursor string
}

// after returns the cursor after the page's first n items; with n 0, the
// page's own cursor (a retry).
func (p pageCursors) after(n int) string {
	if n <= 0 || p.s == nil {
		return p.cursor
	}
	return encodeCursor(p.s, pageCursor{F: p.fp, N: p.at + n})
}
