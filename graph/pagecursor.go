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
// A neighbourhood of depth 1 comes in ID order, and its cursor holds the
// last neighbour returned instead (see neighborsPage).

// pageCursor continues a paged answer: F identifies the query, N is how
// many items came before the page, or K the last item returned.
type pageCursor struct {
	F string `json:"f"`
	N int    `json:"n,omitempty"`
	K ID     `json:"k,omitempty"`
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

// openPageCursor returns the place a cursor made for the query fp holds
// (none for no cursor): an offset, or with byKey the last item returned.
func openPageCursor(s Store, cursor, fp string, byKey bool) (pageCursor, error) {
	if cursor == "" {
		return pageCursor{}, nil
	}
	data, err := openCursor(s, "graph.pageCursor", cursor)
	if err != nil {
		return pageCursor{}, err
	}
	var c pageCursor
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return pageCursor{}, fmt.Errorf("the cursor is damaged; send the call again without it: %w", ErrInvalid)
	}
	if c.F != fp {
		return pageCursor{}, fmt.Errorf("the cursor was made for another call; send the same arguments with the cursor it returned, or drop the cursor to start over: %w", ErrInvalid)
	}
	if c.N < 0 || c.N > maxPageOffset {
		return pageCursor{}, fmt.Errorf("the cursor's position is out of range: %w", ErrInvalid)
	}
	if byKey != (c.K != "") || byKey && c.N != 0 {
		// An offset from before depth 1 paged by ID, or a forgery.
		return pageCursor{}, fmt.Errorf("the cursor is from an earlier version of this call; drop the cursor to start over: %w", ErrInvalid)
	}
	if byKey {
		if err := c.K.Check(); err != nil {
			return pageCursor{}, fmt.Errorf("the cursor is damaged; send the call again without it: %w", ErrInvalid)
		}
	}
	return c, nil
}

// pageCursors makes the cursors of a page: at is the offset of its first
// item, cursor the cursor it was asked with; with byKey, keys are its
// items' keys.
type pageCursors struct {
	s      Store
	fp     string
	at     int
	cursor string
	byKey  bool
	keys   []ID
	// idx, where set, is the place in the page's answer of each item the
	// page holds (it leaves out nodes deleted since they were reached).
	idx []int
}

// after returns the cursor after the page's first n items; with n 0, the
// page's own cursor (a retry).
func (p pageCursors) after(n int) string {
	switch {
	case n <= 0 || p.s == nil:
		return p.cursor
	case p.byKey:
		return p.afterID(p.keys[min(n, len(p.keys))-1])
	case p.idx != nil:
		return p.offset(p.idx[min(n, len(p.idx))-1] + 1)
	}
	return p.offset(n)
}

// offset returns the cursor after the first n items of the page's answer
// (those it leaves out included); with n 0, the page's own cursor.
func (p pageCursors) offset(n int) string {
	if n <= 0 || p.s == nil {
		return p.cursor
	}
	return encodeCursor(p.s, pageCursor{F: p.fp, N: p.at + n})
}

// afterID returns the cursor of a page by key after the item id.
func (p pageCursors) afterID(id ID) string {
	return encodeCursor(p.s, pageCursor{F: p.fp, K: id})
}
