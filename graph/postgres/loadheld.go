package postgres

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// A fast load holds the new rows of its two largest derived tables, the
// text-search postings and the property index, in memory, compactly, and
// writes them at its end sorted by their keys, so that PostgreSQL builds
// each key over rows already in order: at 100k nodes (700k postings)
// building the postings' key took 2.2 s of CPU over the rows in the order
// the load wrote them, 0.76 s over sorted rows (the property index's 200k
// rows: 0.83 s against 0.32 s), and the sort grows as n log n with the
// load. Sorting in Lore is cheaper: its comparisons are of integers (a
// token's first 8 bytes, then ranks), PostgreSQL's of three
// variable-length columns.
//
// The load holds rows only while its batches only add nodes (and edges,
// which have no such rows): the first commit of an element the load
// wrote before (given again, or deleted), and any write of the load
// through Apply, first writes the held rows in its transaction (then
// builds the keys if it needs them, see load.restoreKeys), and the load
// goes on without holding. So does a load that holds maxHeld rows, which
// bounds Lore's memory. Until the load writes them (at its end, or when
// its edges begin, see earlyBuild), readers see no postings or property
// index entries of the rows it holds.
type heldRows struct {
	ids   []string          // the nodes of the held rows
	names []string          // types and property names
	name  map[string]uint16 // -> index in names
	posts chunks[heldPosting]
	props chunks[heldProp]
	buf   []byte // tokens and values
	// postv and propv are posts and props in one slice each (see ranks).
	postv []heldPosting
	propv []heldProp
}

// chunks is a list that grows by chunks: a slice that grows copies what
// it holds, over and over (at 1M nodes, growing the held postings by
// doubling took 3.4 s of Lore's CPU time, mostly clearing and faulting in
// fresh memory); all returns it as one slice at the end.
type chunks[T any] struct {
	full [][]T
	cur  []T
	n    int
}

const maxChunk = 1 << 20

func (c *chunks[T]) add(v T) {
	if len(c.cur) == cap(c.cur) {
		if c.cur != nil {
			c.full = append(c.full, c.cur)
		}
		c.cur = make([]T, 0, min(max(1024, 2*len(c.cur)), maxChunk))
	}
	c.cur = append(c.cur, v)
	c.n++
}

// all returns the list as one slice, and empties c.
func (c *chunks[T]) all() []T {
	out := c.cur
	if len(c.full) > 0 {
		out = make([]T, 0, c.n)
		for _, f := range append(c.full, c.cur) {
			out = append(out, f...)
		}
	}
	*c = chunks[T]{}
	return out
}

// maxHeld is the most rows a load holds (24 bytes each, with their tokens
// and values: about 0.5 GB).
const maxHeld = 1 << 24

type heldPosting struct {
	prefix uint64 // the token's first 8 bytes, big-endian, zero-padded
	at     uint32 // where the token is in buf
	n      uint16 // its length
	weight int16
	typ    uint16 // in names
	node   uint32 // in ids
}

type heldProp struct {
	prefix    uint64 // the value's first 8 bytes
	at, n     uint32 // the value in buf
	node      uint32
	typ, prop uint16
}

func newHeldRows() *heldRows {
	return &heldRows{name: map[string]uint16{}}
}

// full says the held rows reached maxHeld.
func (h *heldRows) full() bool {
	return h.posts.n+h.props.n >= maxHeld || int64(len(h.buf)) >= 1<<31 || len(h.names) >= 1<<15
}

func prefix8(b []byte) uint64 {
	var p [8]byte
	copy(p[:], b)
	return binary.BigEndian.Uint64(p[:])
}

func prefix8s(s string) uint64 {
	var p [8]byte
	copy(p[:], s)
	return binary.BigEndian.Uint64(p[:])
}

// heldRef remembers the last name looked up (rows come a node at a time).
type heldRef struct {
	name   string
	nameAt uint16
}

func (h *heldRows) nameOf(r *heldRef, name string) uint16 {
	if name == r.name && r.name != "" {
		return r.nameAt
	}
	n, ok := h.name[name]
	if !ok {
		n = uint16(len(h.names))
		h.names = append(h.names, name)
		h.name[name] = n
	}
	r.name, r.nameAt = name, n
	return n
}

// grow doubles the capacity of s when it is full: append grows a large
// slice by a quarter, which copied and cleared the held rows over and
// over (at 1M nodes, a tenth of Lore's CPU time).
func grow[T any](s []T, n int) []T {
	if len(s)+n > cap(s) {
		s = slices.Grow(s, max(len(s), n, 1024))
	}
	return s
}

// addNode holds the derived rows of a node new to the load.
func (h *heldRows) addNode(id, typ string, rows []propRow, toks map[string]byte) {
	n := 0
	for tok := range toks {
		n += len(tok)
	}
	for _, r := range rows {
		n += len(r.val)
	}
	h.buf = grow(h.buf, n)
	node := uint32(len(h.ids))
	h.ids = append(h.ids, id)
	var tr, pr heldRef
	t := h.nameOf(&tr, typ)
	for tok, wt := range toks {
		at := len(h.buf)
		h.buf = append(h.buf, tok...)
		h.posts.add(heldPosting{prefix: prefix8s(tok), at: uint32(at), n: uint16(len(tok)), weight: int16(wt), typ: t, node: node})
	}
	for _, r := range rows {
		at := len(h.buf)
		h.buf = append(h.buf, r.val...)
		h.props.add(heldProp{prefix: prefix8(r.val), at: uint32(at), n: uint32(len(r.val)), node: node, typ: t, prop: h.nameOf(&pr, r.prop)})
	}
}

// ranks replaces the node and name indexes of the held rows by their
// ranks in key order (C collation: bytewise, as Go compares strings), and
// ids and names by their sorted copies, so that the rows sort by integers
// after the first 8 bytes.
func (h *heldRows) ranks() {
	rank := func(s []string) ([]string, []uint32) {
		order := sortStrings(s)
		r := make([]uint32, len(s))
		sorted := make([]string, len(s))
		for k, i := range order {
			r[i], sorted[k] = uint32(k), s[i]
		}
		return sorted, r
	}
	var idRank, nameRank []uint32
	h.ids, idRank = rank(h.ids)
	h.names, nameRank = rank(h.names)
	h.postv, h.propv = h.posts.all(), h.props.all()
	for i := range h.postv {
		p := &h.postv[i]
		p.node, p.typ = idRank[p.node], uint16(nameRank[p.typ])
	}
	for i := range h.propv {
		p := &h.propv[i]
		p.node, p.typ, p.prop = idRank[p.node], uint16(nameRank[p.typ]), uint16(nameRank[p.prop])
	}
	h.name = nil
}

// writePostings sorts the held postings (after ranks) by their key and
// copies them into lore_postings in tx.
func (h *heldRows) writePostings(ctx context.Context, tx pgx.Tx) error {
	buf := h.buf
	tok := func(p *heldPosting) []byte { return buf[p.at : p.at+uint32(p.n)] }
	slices.SortFunc(h.postv, func(a, b heldPosting) int {
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		if a.n > 8 || b.n > 8 || a.n != b.n {
			if c := bytes.Compare(tok(&a), tok(&b)); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return cmp.Compare(a.node, b.node)
	})
	err := copyRows(ctx, tx, `lore_postings (token, type, id, weight)`, len(h.postv), func(i int, b *copyBuf) {
		p := &h.postv[i]
		b.row(4)
		b.bytea(tok(p))
		b.text(h.names[p.typ])
		b.text(h.ids[p.node])
		b.int16(p.weight)
	})
	if err != nil {
		return fmt.Errorf("copy into lore_postings: %w", err)
	}
	return nil
}

// writeProps sorts the held property index rows (after ranks) by their
// key and copies them into lore_prop in tx.
func (h *heldRows) writeProps(ctx context.Context, tx pgx.Tx) error {
	buf := h.buf
	val := func(p *heldProp) []byte { return buf[p.at : p.at+p.n] }
	slices.SortFunc(h.propv, func(a, b heldProp) int {
		if c := cmp.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		if c := cmp.Compare(a.prop, b.prop); c != 0 {
			return c
		}
		if c := cmp.Compare(a.prefix, b.prefix); c != 0 {
			return c
		}
		if a.n > 8 || b.n > 8 || a.n != b.n {
			if c := bytes.Compare(val(&a), val(&b)); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.node, b.node)
	})
	err := copyRows(ctx, tx, `lore_prop (type, prop, val, id)`, len(h.propv), func(i int, b *copyBuf) {
		p := &h.propv[i]
		b.row(4)
		b.text(h.names[p.typ])
		b.text(h.names[p.prop])
		b.bytea(val(p))
		b.text(h.ids[p.node])
	})
	if err != nil {
		return fmt.Errorf("copy into lore_prop: %w", err)
	}
	return nil
}

// write writes every held row in tx.
func (h *heldRows) write(ctx context.Context, tx pgx.Tx) error {
	h.ranks()
	if err := h.writePostings(ctx, tx); err != nil {
		return err
	}
	return h.writeProps(ctx, tx)
}

// commonPrefix returns the length of the prefix all of ss share.
func commonPrefix(ss []string) int {
	if len(ss) == 0 {
		return 0
	}
	n := len(ss[0])
	for _, s := range ss[1:] {
		n = min(n, len(s))
		for i := range n {
			if s[i] != ss[0][i] {
				n = i
				break
			}
		}
	}
	return n
}

// abbrev returns the 8 bytes of s after skip, big-endian, zero-padded:
// where two strings that share their first skip bytes have different
// abbreviations, these order them as the strings; where the same, the
// strings must be compared.
func abbrev(s string, skip int) uint64 {
	var p [8]byte
	if len(s) > skip {
		copy(p[:], s[skip:])
	}
	return binary.BigEndian.Uint64(p[:])
}

// sortStrings returns the indexes of ss in the order of the strings
// (bytewise). It compares abbreviations first (see abbrev): comparing the
// strings themselves reads each from wherever it was allocated, and
// sorting 2M node IDs that share a prefix ("service/s") that way took
// 10 s, waiting on memory.
func sortStrings(ss []string) []uint32 {
	type key struct {
		abbr uint64
		i    uint32
	}
	skip := commonPrefix(ss)
	keys := make([]key, len(ss))
	for i, s := range ss {
		keys[i] = key{abbrev(s, skip), uint32(i)}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.abbr, b.abbr); c != 0 {
			return c
		}
		return strings.Compare(ss[a.i], ss[b.i])
	})
	order := make([]uint32, len(ss))
	for k, key := range keys {
		order[k] = key.i
	}
	return order
}
