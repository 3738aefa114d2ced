package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Lore reads and writes N-Quads (RDF 1.1) itself: a statement per line,
// subject, predicate, object and an optional graph label, each an IRI, a
// blank node or (the object only) a literal.

// An nqTerm is one term of an N-Quad.
type nqTerm struct {
	kind byte   // nqIRI, nqBlank or nqLiteral
	val  string // the IRI, the blank node's label or the literal's text, unescaped
	lang string // a literal's language tag
	typ  string // a literal's datatype IRI ("" for a plain string)
}

const (
	nqIRI = 'i' + iota
	nqBlank
	nqLiteral
)

func iri(s string) nqTerm { return nqTerm{kind: nqIRI, val: s} }

func plainLit(s string) nqTerm { return nqTerm{kind: nqLiteral, val: s} }

func typedLit(s, typ string) nqTerm { return nqTerm{kind: nqLiteral, val: s, typ: typ} }

// An nquad is one statement; label is nil without a graph label.
type nquad struct {
	subject, predicate, object nqTerm
	label                      *nqTerm
}

// String returns the term as N-Quads writes it.
func (t nqTerm) String() string {
	switch t.kind {
	case nqIRI:
		return "<" + escapeIRI(t.val) + ">"
	case nqBlank:
		return "_:" + t.val
	}
	s := `"` + literalEscaper.Replace(t.val) + `"`
	switch {
	case t.lang != "":
		s += "@" + t.lang
	case t.typ != "":
		s += "^^<" + escapeIRI(t.typ) + ">"
	}
	return s
}

var literalEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)

// escapeIRI escapes what an IRI reference may not hold as \u escapes.
func escapeIRI(s string) string {
	if !strings.ContainsFunc(s, iriForbidden) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if iriForbidden(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func iriForbidden(r rune) bool {
	return r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r)
}

// An nquadsWriter writes statements, one a line.
type nquadsWriter struct {
	w   *bufio.Writer
	err error
}

func newNQuadsWriter(w io.Writer) *nquadsWriter { return &nquadsWriter{w: bufio.NewWriter(w)} }

func (w *nquadsWriter) write(q nquad) error {
	if w.err != nil {
		return w.err
	}
	w.w.WriteString(q.subject.String())
	w.w.WriteByte(' ')
	w.w.WriteString(q.predicate.String())
	w.w.WriteByte(' ')
	w.w.WriteString(q.object.String())
	if q.label != nil {
		w.w.WriteByte(' ')
		w.w.WriteString(q.label.String())
	}
	_, w.err = w.w.WriteString(" .\n")
	return w.err
}

func (w *nquadsWriter) close() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// parseNQuad parses one statement: a line without its newline, which may
// end in a comment.
func parseNQuad(line string) (nquad, error) {
	p := &nqParser{s: line}
	var q nquad
	var err error
	if q.subject, err = p.term("subject", false); err != nil {
		return q, err
	}
	if q.subject.kind == nqLiteral {
		return q, errors.New("the subject is a literal; it must be an IRI or a blank node")
	}
	if q.predicate, err = p.term("predicate", false); err != nil {
		return q, err
	}
	if q.predicate.kind != nqIRI {
		return q, errors.New("the predicate must be an IRI")
	}
	if q.object, err = p.term("object", true); err != nil {
		return q, err
	}
	p.space()
	if p.peek() != '.' {
		l, err := p.term("graph label", false)
		if err != nil {
			return q, err
		}
		if l.kind == nqLiteral {
			return q, errors.New("the graph label is a literal; it must be an IRI or a blank node")
		}
		q.label = &l
		p.space()
	}
	if p.peek() != '.' {
		return q, fmt.Errorf("expected '.' at byte %d", p.i+1)
	}
	p.i++
	p.space()
	if p.i < len(p.s) && p.s[p.i] != '#' {
		return q, fmt.Errorf("unexpected text after '.' at byte %d", p.i+1)
	}
	return q, nil
}

type nqParser struct {
	s string
	i int
}

func (p *nqParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *nqParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

// term reads the next term; literal allows a literal.
func (p *nqParser) term(what string, literal bool) (nqTerm, error) {
	p.space()
	start := p.i
	switch p.peek() {
	case '<':
		v, err := p.iriRef()
		return iri(v), err
	case '_':
		if !strings.HasPrefix(p.s[p.i:], "_:") {
			break
		}
		p.i += 2
		for p.i < len(p.s) && strings.IndexByte(" \t<\"#", p.s[p.i]) < 0 {
			p.i++
		}
		for p.i > start+2 && p.s[p.i-1] == '.' { // a label does not end in '.': the statement does
			p.i--
		}
		if p.i == start+2 {
			return nqTerm{}, fmt.Errorf("empty blank node label at byte %d", start+1)
		}
		return nqTerm{kind: nqBlank, val: p.s[start+2 : p.i]}, nil
	case '"':
		if !literal {
			break
		}
		return p.literal()
	case 0:
		return nqTerm{}, fmt.Errorf("the %s is missing", what)
	}
	return nqTerm{}, fmt.Errorf("unexpected %q at byte %d, where the %s should start", p.s[p.i], p.i+1, what)
}

// iriRef reads <…>.
func (p *nqParser) iriRef() (string, error) {
	start := p.i
	p.i++ // '<'
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '>':
			p.i++
			return b.String(), nil
		case c == '\\':
			r, err := p.uchar()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case c <= 0x20 || strings.IndexByte("<\"{}|^`", c) >= 0:
			return "", fmt.Errorf("%q is not allowed in an IRI (byte %d)", c, p.i+1)
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", fmt.Errorf("the IRI at byte %d has no closing '>'", start+1)
}

// uchar reads \uXXXX or \UXXXXXXXX.
func (p *nqParser) uchar() (rune, error) {
	at := p.i
	if p.i+1 >= len(p.s) {
		return 0, fmt.Errorf("escape at byte %d is cut short", at+1)
	}
	n := 0
	switch p.s[p.i+1] {
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return 0, fmt.Errorf("\\%c at byte %d is not an escape an IRI may hold", p.s[p.i+1], at+1)
	}
	if p.i+2+n > len(p.s) {
		return 0, fmt.Errorf("escape at byte %d is cut short", at+1)
	}
	v, err := strconv.ParseUint(p.s[p.i+2:p.i+2+n], 16, 32)
	if err != nil || !utf8.ValidRune(rune(v)) {
		return 0, fmt.Errorf("escape at byte %d is not a Unicode character", at+1)
	}
	p.i += 2 + n
	return rune(v), nil
}

// literal reads "…" and a language tag or datatype.
func (p *nqParser) literal() (nqTerm, error) {
	start := p.i
	p.i++ // '"'
	var b strings.Builder
	closed := false
	for p.i < len(p.s) && !closed {
		c := p.s[p.i]
		switch c {
		case '"':
			p.i++
			closed = true
		case '\\':
			if p.i+1 >= len(p.s) {
				return nqTerm{}, fmt.Errorf("escape at byte %d is cut short", p.i+1)
			}
			if e := p.s[p.i+1]; e == 'u' || e == 'U' {
				r, err := p.uchar()
				if err != nil {
					return nqTerm{}, err
				}
				b.WriteRune(r)
				continue
			}
			r, ok := map[byte]byte{'t': '\t', 'b': '\b', 'n': '\n', 'r': '\r', 'f': '\f', '"': '"', '\'': '\'', '\\': '\\'}[p.s[p.i+1]]
			if !ok {
				return nqTerm{}, fmt.Errorf("\\%c at byte %d is not an escape", p.s[p.i+1], p.i+1)
			}
			b.WriteByte(r)
			p.i += 2
		case '\n', '\r':
			return nqTerm{}, fmt.Errorf("a line break in the literal at byte %d; write \\n or \\r", p.i+1)
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	if !closed {
		return nqTerm{}, fmt.Errorf("the literal at byte %d has no closing '\"'", start+1)
	}
	t := plainLit(b.String())
	switch {
	case strings.HasPrefix(p.s[p.i:], "^^"):
		p.i += 2
		if p.peek() != '<' {
			return nqTerm{}, fmt.Errorf("the datatype at byte %d must be an IRI", p.i+1)
		}
		typ, err := p.iriRef()
		if err != nil {
			return nqTerm{}, err
		}
		t.typ = typ
	case p.peek() == '@':
		p.i++
		ls := p.i
		for p.i < len(p.s) && (isASCIILetter(p.s[p.i]) || p.i > ls && (p.s[p.i] == '-' || p.s[p.i] >= '0' && p.s[p.i] <= '9')) {
			p.i++
		}
		if p.i == ls {
			return nqTerm{}, fmt.Errorf("empty language tag at byte %d", ls)
		}
		t.lang = p.s[ls:p.i]
	}
	return t, nil
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
