package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lore-dev/lore/schema"
)

// N-Quads export writes the logical graph, properties included:
//
//	<n:ID> <pg:type> <t:TYPE> .
//	<n:ID> <p:NAME> VALUE .
//	<n:ID> <pg:createdAt> "…"^^<xsd:dateTime> .   (also updatedAt, and revision as xsd:integer)
//	<n:FROM> <e:LABEL> <n:TO> [<k:KEY>] .
//	<x:EDGE-ID> <p:NAME> VALUE .                    (edge properties and metadata)
//
// VALUE is a plain literal for a string, an xsd:integer, xsd:double or
// xsd:boolean literal for a number or boolean (keeping its exact lexical
// form), and a lore:json literal for null, arrays and objects. All quads of
// one node, and of one edge, are consecutive; import relies on it.

const (
	xsd         = "http://www.w3.org/2001/XMLSchema#"
	xsdInteger  = xsd + "integer"
	xsdDouble   = xsd + "double"
	xsdDecimal  = xsd + "decimal"
	xsdBoolean  = xsd + "boolean"
	xsdString   = xsd + "string"
	xsdDateTime = xsd + "dateTime"
	loreJSON    = "lore:json"
)

var intLexical = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func literalOf(v any) (nqTerm, error) {
	switch x := v.(type) {
	case string:
		return plainLit(x), nil
	case bool:
		return typedLit(strconv.FormatBool(x), xsdBoolean), nil
	case json.Number:
		if intLexical.MatchString(string(x)) {
			return typedLit(string(x), xsdInteger), nil
		}
		return typedLit(string(x), xsdDouble), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nqTerm{}, err
	}
	return typedLit(string(bytes.TrimSpace(buf.Bytes())), loreJSON), nil
}

func valueOf(v nqTerm, maxDepth int) (any, error) {
	if v.kind == nqLiteral {
		s := v.val
		switch v.typ {
		case xsdInteger, xsdDouble, xsdDecimal, xsd + "float", xsd + "long", xsd + "int":
			var n json.Number
			if err := json.Unmarshal([]byte(s), &n); err != nil {
				return nil, fmt.Errorf("%q is not a number Lore can store", s)
			}
			return n, nil
		case xsdBoolean:
			return strconv.ParseBool(s)
		case loreJSON:
			if err := schema.CheckJSON([]byte(s), maxDepth); err != nil {
				return nil, fmt.Errorf("lore:json literal: %w", err)
			}
			var out any
			if err := schema.Decode([]byte(s), &out); err != nil {
				return nil, fmt.Errorf("lore:json literal: %w", err)
			}
			return out, nil
		}
		return s, nil
	}
	return nil, fmt.Errorf("property value %s must be a literal", v)
}

func timeLiteral(t time.Time) nqTerm {
	return typedLit(t.UTC().Format(time.RFC3339Nano), xsdDateTime)
}

// The IRIs of the logical quad mapping (see the package documentation).
func nodeIRI(id ID) nqTerm       { return iri("n:" + string(id)) }
func typeIRI(t string) nqTerm    { return iri("t:" + t) }
func labelIRI(l string) nqTerm   { return iri("e:" + l) }
func keyIRI(k string) nqTerm     { return iri("k:" + EscapeSegment(k)) }
func propIRI(p string) nqTerm    { return iri("p:" + p) }
func metaIRI(name string) nqTerm { return iri("pg:" + name) }

func nodeQuad(id ID, typ string) nquad {
	return nquad{subject: nodeIRI(id), predicate: metaIRI("type"), object: typeIRI(typ)}
}

func edgeQuad(k EdgeKey) nquad {
	q := nquad{subject: nodeIRI(k.From), predicate: labelIRI(k.Label), object: nodeIRI(k.To)}
	if k.Key != "" {
		l := keyIRI(k.Key)
		q.label = &l
	}
	return q
}

func edgeSubject(k EdgeKey) nqTerm { return iri("x:" + k.String()) }

func exportNQuads(ctx context.Context, s Store, w io.Writer, st *ExportStats) error {
	nw := newNQuadsWriter(w)
	writeProps := func(subj nqTerm, props Props, created, updated time.Time, rev int64) error {
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			lit, err := literalOf(props[name])
			if err != nil {
				return err
			}
			if err := nw.write(nquad{subject: subj, predicate: propIRI(name), object: lit}); err != nil {
				return err
			}
		}
		for _, q := range []nquad{
			{subject: subj, predicate: metaIRI("createdAt"), object: timeLiteral(created)},
			{subject: subj, predicate: metaIRI("updatedAt"), object: timeLiteral(updated)},
			{subject: subj, predicate: metaIRI("revision"), object: typedLit(strconv.FormatInt(rev, 10), xsdInteger)},
		} {
			if err := nw.write(q); err != nil {
				return err
			}
		}
		return nil
	}
	err := eachNode(ctx, s, func(n *Node) error {
		st.Nodes++
		if err := nw.write(nodeQuad(n.ID, n.Type)); err != nil {
			return err
		}
		return writeProps(nodeIRI(n.ID), n.Properties, n.CreatedAt, n.UpdatedAt, n.Revision)
	})
	if err != nil {
		return err
	}
	err = eachEdge(ctx, s, func(e *Edge) error {
		st.Edges++
		if err := nw.write(edgeQuad(e.EdgeKey)); err != nil {
			return err
		}
		return writeProps(edgeSubject(e.EdgeKey), e.Properties, e.CreatedAt, e.UpdatedAt, e.Revision)
	})
	if err != nil {
		return err
	}
	return nw.close()
}

// nquadsDecoder assembles elements from consecutive quads.
type nquadsDecoder struct {
	lr       *lineReader
	maxDepth int // of a lore:json literal; 0 means schema.DefaultMaxDepth
	pending  *element
	subject  string // the subject the pending element collects
}

func (d *nquadsDecoder) lines() int64 { return d.lr.n }

func (d *nquadsDecoder) next() (element, error) {
	for {
		line, n, err := d.lr.next()
		if err == io.EOF {
			return d.take(io.EOF)
		}
		if err != nil {
			return element{line: n}, err
		}
		if line[0] == '#' {
			continue
		}
		if err := checkNQuadsText(line); err != nil {
			return element{line: n}, err
		}
		q, err := parseNQuad(string(line))
		if err != nil {
			return element{line: n}, fmt.Errorf("not an N-Quad: %v", err)
		}
		if q.subject.kind != nqIRI {
			return element{line: n}, fmt.Errorf("subject and predicate must be IRIs")
		}
		subj, pred := q.subject.val, q.predicate.val
		if label, ok := strings.CutPrefix(pred, "e:"); ok {
			k, err := edgeOfQuad(q, label)
			if err != nil {
				return element{line: n}, err
			}
			if out, ready := d.start(element{line: n, edge: &EdgeInput{EdgeKey: k}}, edgeSubject(k).val); ready {
				return out, out.complete()
			}
			continue
		}
		if d.pending == nil || subj != d.subject {
			id, ok := strings.CutPrefix(subj, "n:")
			if !ok {
				return element{line: n}, fmt.Errorf("%s: subject must be a node <n:ID> or follow its edge quad", subj)
			}
			out, ready := d.start(element{line: n, node: &NodeInput{ID: ID(id), Properties: Props{}}}, subj)
			if err := d.add(q, pred); err != nil {
				return element{line: n}, err
			}
			if ready {
				return out, out.complete()
			}
			continue
		}
		if err := d.add(q, pred); err != nil {
			return element{line: n}, err
		}
	}
}

// start makes el the pending element and returns the previous one, if any.
func (d *nquadsDecoder) start(el element, subject string) (element, bool) {
	prev := d.pending
	d.pending, d.subject = &el, subject
	if prev == nil {
		return element{}, false
	}
	return *prev, true
}

func (d *nquadsDecoder) take(end error) (element, error) {
	if d.pending == nil {
		return element{line: d.lr.n}, end
	}
	el := *d.pending
	d.pending, d.subject = nil, ""
	return el, el.complete()
}

func (el *element) complete() error {
	if el.node != nil && el.node.Type == "" {
		return fmt.Errorf("node %q has no <pg:type> quad", el.node.ID)
	}
	return nil
}

func (d *nquadsDecoder) add(q nquad, pred string) error {
	el := d.pending
	var p Props
	var created, updated *time.Time
	var rev *int64
	if el.node != nil {
		if el.node.Properties == nil {
			el.node.Properties = Props{}
		}
		p, created, updated, rev = el.node.Properties, &el.node.CreatedAt, &el.node.UpdatedAt, &el.node.Revision
	} else {
		if el.edge.Properties == nil {
			el.edge.Properties = Props{}
		}
		p, created, updated, rev = el.edge.Properties, &el.edge.CreatedAt, &el.edge.UpdatedAt, &el.edge.Revision
	}
	switch name := string(pred); {
	case name == "pg:type" && el.node != nil:
		ok := q.object.kind == nqIRI
		typ, ok2 := strings.CutPrefix(q.object.val, "t:")
		if !ok || !ok2 {
			return fmt.Errorf("<pg:type> object must be <t:TYPE>")
		}
		el.node.Type = typ
	case name == "pg:createdAt", name == "pg:updatedAt":
		if q.object.kind != nqLiteral || q.object.typ == "" {
			return fmt.Errorf("%s must be an xsd:dateTime literal", name)
		}
		t, err := time.Parse(time.RFC3339Nano, q.object.val)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		if name == "pg:createdAt" {
			*created = t
		} else {
			*updated = t
		}
	case name == "pg:revision":
		v, err := valueOf(q.object, d.maxDepth)
		n, ok := v.(json.Number)
		if err == nil && ok {
			*rev, err = n.Int64()
		}
		if err != nil || !ok || *rev < 1 || *rev > MaxRevision {
			return fmt.Errorf("pg:revision must be an xsd:integer from 1 to %d", MaxRevision)
		}
	case strings.HasPrefix(name, "p:"):
		v, err := valueOf(q.object, d.maxDepth)
		if err != nil {
			return err
		}
		p[name[2:]] = v
	default:
		return fmt.Errorf("unknown predicate <%s>; Lore reads pg:type, pg:createdAt, pg:updatedAt, pg:revision, p:NAME and e:LABEL", name)
	}
	return nil
}

// checkNQuadsText refuses a line the N-Quads parser would change
// silently: invalid UTF-8, and \u or \U escapes of no Unicode scalar value
// (a surrogate, or past U+10FFFF), which it replaces with U+FFFD.
func checkNQuadsText(line []byte) error {
	if !utf8.Valid(line) {
		i := 0
		for i < len(line) {
			r, size := utf8.DecodeRune(line[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return fmt.Errorf("invalid UTF-8 at byte %d; N-Quads are UTF-8 text", i+1)
	}
	for i := 0; i < len(line); i++ {
		if line[i] != '\\' || i+1 == len(line) {
			continue
		}
		n := 0
		switch line[i+1] {
		case 'u':
			n = 4
		case 'U':
			n = 8
		default:
			i++ // an escaped character, perhaps a backslash
			continue
		}
		if i+2+n > len(line) {
			return fmt.Errorf("escape at byte %d is cut short", i+1)
		}
		hex := string(line[i+2 : i+2+n])
		v, err := strconv.ParseUint(hex, 16, 32)
		if err != nil {
			return fmt.Errorf("escape \\%c%s at byte %d is not hexadecimal", line[i+1], hex, i+1)
		}
		if !utf8.ValidRune(rune(v)) {
			return fmt.Errorf("escape \\%c%s at byte %d is not a Unicode character (a surrogate or past U+10FFFF); write the character itself", line[i+1], hex, i+1)
		}
		i += 1 + n
	}
	return nil
}

func edgeOfQuad(q nquad, label string) (EdgeKey, error) {
	ok1, ok2 := q.subject.kind == nqIRI, q.object.kind == nqIRI
	f, ok3 := strings.CutPrefix(q.subject.val, "n:")
	t, ok4 := strings.CutPrefix(q.object.val, "n:")
	if !(ok1 && ok2 && ok3 && ok4) {
		return EdgeKey{}, fmt.Errorf("an edge quad joins <n:FROM> to <n:TO>")
	}
	k := EdgeKey{From: ID(f), Label: label, To: ID(t)}
	if q.label != nil {
		ok := q.label.kind == nqIRI
		key, ok2 := strings.CutPrefix(q.label.val, "k:")
		if !ok || !ok2 {
			return EdgeKey{}, fmt.Errorf("an edge's graph label must be <k:KEY>")
		}
		var err error
		if k.Key, err = UnescapeSegment(key); err != nil {
			return EdgeKey{}, err
		}
	}
	return k, nil
}
