package graph

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// An EdgePlace is the place of an edge in a listing of Store.Edges: the
// index in EdgeQuery.Nodes of the node it is listed for, and its place
// among that node's edges (label, direction, the node at the other end,
// key). Its cursor, EdgePage.Next, is the same on every store, so a page
// continues in the same place whichever backend lists it.
type EdgePlace struct {
	Node  int
	Label string
	In    bool
	Other ID
	Key   string
}

// edgeCursorV is the version of the edge cursor's encoding.
const edgeCursorV = "e2"

// Cursor encodes p as an Edges cursor.
func (p EdgePlace) Cursor() string {
	dir := "o"
	if p.In {
		dir = "i"
	}
	raw := strings.Join([]string{edgeCursorV, strconv.Itoa(p.Node), p.Label, dir, string(p.Other), p.Key}, "\x00")
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseEdgeCursor decodes an Edges cursor; ok is false for "" (the first
// page). A cursor it cannot read is ErrInvalid.
func ParseEdgeCursor(s string) (p EdgePlace, ok bool, err error) {
	if s == "" {
		return p, false, nil
	}
	bad := fmt.Errorf("cursor %q is not an edge cursor from this listing: %w", s, ErrInvalid)
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return p, false, bad
	}
	parts := strings.SplitN(string(raw), "\x00", 6)
	if len(parts) != 6 || parts[0] != edgeCursorV || (parts[3] != "o" && parts[3] != "i") {
		return p, false, bad
	}
	n, err := strconv.ParseUint(parts[1], 10, 31)
	if err != nil {
		return p, false, bad
	}
	return EdgePlace{Node: int(n), Label: parts[2], In: parts[3] == "i", Other: ID(parts[4]), Key: parts[5]}, true, nil
}

// EdgeQueryPlace checks what every store checks of an EdgeQuery before it
// reads: each node ID, and the cursor, which must be an Edges cursor of a
// node of q.Nodes. It returns the place to go on after (ok false for the
// first page).
func EdgeQueryPlace(q EdgeQuery) (p EdgePlace, ok bool, err error) {
	for _, id := range q.Nodes {
		if err := id.Check(); err != nil {
			return p, false, err
		}
	}
	p, ok, err = ParseEdgeCursor(q.After)
	if err == nil && ok && p.Node >= len(q.Nodes) {
		err = fmt.Errorf("cursor %q is not an edge cursor from this listing: %w", q.After, ErrInvalid)
	}
	return p, ok, err
}
