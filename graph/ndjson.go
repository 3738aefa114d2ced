package graph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/lore-dev/lore/schema"
)

// An ndjsonLine is one line of Lore's NDJSON format:
//
//	{"kind":"node","id":"person/ada","type":"Person","properties":{"name":"Ada"}}
//	{"kind":"edge","from":"person/ada","label":"memberOf","to":"team/core","properties":{"role":"lead"}}
//
// Edges of keyed labels carry "key". createdAt, updatedAt (RFC 3339) and
// revision are optional; an import keeps them for the elements it creates.
// "merge": true makes the line an RFC 7396 merge patch of the element's
// properties (see NodeInput.Merge) whatever the import's mode.
type ndjsonLine struct {
	Kind       string    `json:"kind"`
	ID         ID        `json:"id,omitempty"`
	Type       string    `json:"type,omitempty"`
	From       ID        `json:"from,omitempty"`
	Label      string    `json:"label,omitempty"`
	To         ID        `json:"to,omitempty"`
	Key        string    `json:"key,omitempty"`
	Properties Props     `json:"properties"`
	CreatedAt  time.Time `json:"createdAt,omitzero"`
	UpdatedAt  time.Time `json:"updatedAt,omitzero"`
	Revision   int64     `json:"revision,omitempty"`
	Merge      bool      `json:"merge,omitempty"`
}

type ndjsonDecoder struct {
	lr       *lineReader
	maxDepth int // of a line's JSON; 0 means schema.DefaultMaxDepth
	// The line decoded last, and the element made of it: the element is
	// valid until the next call (readBatches copies it into its batch),
	// which spares two allocations per line.
	line ndjsonLine
	node NodeInput
	edge EdgeInput
	// The tokenizer of the lines fast decodes, kept for the next line.
	r   bytes.Reader
	tok *jsontext.Decoder
	// The short strings lines repeat, kept once (see names).
	names names
}

func (d *ndjsonDecoder) lines() int64 { return d.lr.n }

func (d *ndjsonDecoder) next() (element, error) {
	line, n, err := d.lr.next()
	el := element{line: n}
	if err != nil {
		return el, err
	}
	l := &d.line
	*l = ndjsonLine{}
	if !d.fast(line, l) {
		*l = ndjsonLine{}
		if bytes.Contains(line, []byte(`"properties"`)) {
			l.Properties = make(Props, 8) // or segmentio makes one of 64 slots
		}
		if err := strictJSON(line, l, d.maxDepth, ndjsonFields); err != nil {
			return el, err
		}
	}
	switch l.Kind {
	case "node":
		if l.From != "" || l.To != "" || l.Label != "" || l.Key != "" {
			return el, fmt.Errorf("a node line takes id, type and properties, not from, label, to or key")
		}
		d.node = NodeInput{ID: l.ID, Type: l.Type, Properties: l.Properties, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, Revision: l.Revision, Merge: l.Merge}
		el.node = &d.node
	case "edge":
		if l.ID != "" || l.Type != "" {
			return el, fmt.Errorf("an edge line takes from, label, to, key and properties, not id or type")
		}
		d.edge = EdgeInput{EdgeKey: EdgeKey{From: l.From, Label: l.Label, To: l.To, Key: l.Key},
			Properties: l.Properties, CreatedAt: l.CreatedAt, UpdatedAt: l.UpdatedAt, Revision: l.Revision, Merge: l.Merge}
		el.edge = &d.edge
	default:
		return el, fmt.Errorf(`"kind" is %q; want "node" or "edge"`, l.Kind)
	}
	return el, nil
}

// fast decodes the usual line into l as strictJSON does, in one pass of
// a tokenizer that checks it as schema.CheckJSON does: the lines whose
// fields are kind, id, type, from, label, to and key, as strings, and
// properties, as an object. It reports false for any other line (another
// field, or a value of another kind, a line that is not valid JSON or
// nests too deep), leaving l to be decoded again; strictJSON then decodes
// it, or says what is wrong. Checking a line and then decoding it took
// 10 s of a 1M-node load's CPU.
func (d *ndjsonDecoder) fast(data []byte, l *ndjsonLine) bool {
	if d.tok == nil {
		d.tok = jsontext.NewDecoder(&d.r)
		d.names = names{}
	}
	d.r.Reset(data)
	dec := d.tok
	dec.Reset(&d.r)
	maxDepth := cmp.Or(d.maxDepth, schema.DefaultMaxDepth)
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadValue()
		if err != nil {
			return false
		}
		var dst *string
		var nm names // for a kind, type or label: kept in names
		switch string(name) {
		case `"kind"`:
			dst, nm = &l.Kind, d.names
		case `"id"`:
			dst = (*string)(&l.ID)
		case `"type"`:
			dst, nm = &l.Type, d.names
		case `"from"`:
			dst = (*string)(&l.From)
		case `"label"`:
			dst, nm = &l.Label, d.names
		case `"to"`:
			dst = (*string)(&l.To)
		case `"key"`:
			dst = &l.Key
		case `"properties"`:
			if dec.PeekKind() != '{' {
				return false
			}
			v, ok := jsonValue(dec, maxDepth, d.names)
			if !ok {
				return false
			}
			l.Properties = v.(map[string]any)
			continue
		default:
			return false
		}
		if dec.PeekKind() != '"' {
			return false
		}
		var ok bool
		*dst, ok = jsonString(dec, nm)
		if !ok {
			return false
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF
}

// jsonValue reads the next value from dec as schema.DecodeStrict decodes
// it into an any: objects as maps, arrays as slices, numbers as
// json.Number. It reports false on a tokenizer error or a value nested
// deeper than maxDepth. The names of objects' members are kept in nm (if
// not nil).
func jsonValue(dec *jsontext.Decoder, maxDepth int, nm names) (any, bool) {
	switch dec.PeekKind() {
	case '{':
		if _, err := dec.ReadToken(); err != nil || dec.StackDepth() > maxDepth {
			return nil, false
		}
		m := map[string]any{}
		for dec.PeekKind() != '}' {
			name, ok := jsonString(dec, nm)
			if !ok {
				return nil, false
			}
			v, ok := jsonValue(dec, maxDepth, nm)
			if !ok {
				return nil, false
			}
			m[name] = v
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		return m, true
	case '[':
		if _, err := dec.ReadToken(); err != nil || dec.StackDepth() > maxDepth {
			return nil, false
		}
		a := []any{}
		for dec.PeekKind() != ']' {
			v, ok := jsonValue(dec, maxDepth, nm)
			if !ok {
				return nil, false
			}
			a = append(a, v)
		}
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		return a, true
	case '"':
		return jsonString(dec, nil)
	}
	raw, err := dec.ReadValue()
	if err != nil {
		return nil, false
	}
	switch raw.Kind() {
	case '0':
		return json.Number(raw), true
	case 't':
		return true, true
	case 'f':
		return false, true
	case 'n':
		return nil, true
	}
	return nil, false
}

// jsonString reads the next value from dec, a string (an object's member
// name, or a value), kept in nm if nm is not nil. It reports false on a
// tokenizer error or a value of another kind.
func jsonString(dec *jsontext.Decoder, nm names) (string, bool) {
	raw, err := dec.ReadValue()
	if err != nil || raw.Kind() != '"' {
		return "", false
	}
	b := raw[1 : len(raw)-1]
	if bytes.IndexByte(b, '\\') >= 0 {
		if b, err = jsontext.AppendUnquote(nil, raw); err != nil {
			return "", false
		}
	}
	if nm != nil {
		return nm.get(b), true
	}
	return string(b), true
}

// names keeps one copy of the short strings an input's lines repeat
// (kinds, types, labels, property names), so that a line's need none of
// their own: up to maxNames of them, each up to maxNameLen bytes, as an
// input could make every one different.
type names map[string]string

const (
	maxNames   = 4096
	maxNameLen = 64
)

// get returns b as a string, kept once if there is room.
func (nm names) get(b []byte) string {
	if s, ok := nm[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(nm) < maxNames && len(b) <= maxNameLen {
		nm[s] = s
	}
	return s
}

// ndjsonFields lists the fields of an NDJSON line, for the error that
// names an unknown one.
const ndjsonFields = "kind, id, type, from, label, to, key, properties, createdAt, updatedAt, revision and merge"

// strictJSON decodes one JSON line with schema.DecodeStrict: numbers as
// json.Number, unknown fields and trailing data refused. (It took a third
// of the time of a json.Decoder per line at 10k nodes.) Decode objects
// into maps made beforehand. schema.CheckJSON scans the line first: what a
// decoder would accept silently (invalid UTF-8, a key given twice) or
// slowly (deep nesting) is refused, naming the place. fields lists the
// fields a line takes, for an unknown one.
func strictJSON(data []byte, v any, maxDepth int, fields string) error {
	if err := schema.CheckJSON(data, maxDepth); err != nil {
		return err
	}
	if err := schema.DecodeStrict(data, v); err != nil {
		var de *schema.DecodeError
		if errors.As(err, &de) && de.UnknownField != "" {
			return fmt.Errorf("unknown field %q; a line takes %s", de.UnknownField, fields)
		}
		return err
	}
	return nil
}

// lineWriter writes one JSON value per line, without HTML escaping.
type lineWriter struct {
	enc *json.Encoder
}

func newLineWriter(w io.Writer) *lineWriter {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &lineWriter{enc: enc}
}

func (w *lineWriter) write(v any) error { return w.enc.Encode(v) }

func exportNDJSON(ctx context.Context, s Store, w io.Writer, st *ExportStats) error {
	lw := newLineWriter(w)
	err := eachNode(ctx, s, func(n *Node) error {
		st.Nodes++
		return lw.write(ndjsonLine{Kind: "node", ID: n.ID, Type: n.Type, Properties: n.Properties,
			CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt, Revision: n.Revision})
	})
	if err != nil {
		return err
	}
	return eachEdge(ctx, s, func(e *Edge) error {
		st.Edges++
		return lw.write(ndjsonLine{Kind: "edge", From: e.From, Label: e.Label, To: e.To, Key: e.Key, Properties: e.Properties,
			CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Revision: e.Revision})
	})
}

// eachNode calls f for every node, in ID order, a page at a time.
func eachNode(ctx context.Context, s Store, f func(*Node) error) error {
	p := Page{Limit: 1000}
	for {
		page, err := s.ScanNodes(ctx, p)
		if err != nil {
			return err
		}
		for _, n := range page.Nodes {
			if err := f(n); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		p.After = page.Next
	}
}

// eachEdge calls f for every edge, in key order, a page at a time.
func eachEdge(ctx context.Context, s Store, f func(*Edge) error) error {
	p := Page{Limit: 1000}
	for {
		page, err := s.ScanEdges(ctx, p)
		if err != nil {
			return err
		}
		for _, e := range page.Edges {
			if err := f(e); err != nil {
				return err
			}
		}
		if page.Next == "" {
			return nil
		}
		p.After = page.Next
	}
}
