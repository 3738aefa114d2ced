package graph

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lore-dev/lore/schema"
)

// The search syntax: words, each a term every hit holds; "a quoted phrase",
// whose words a hit holds one after the other in one value; and name:word
// or name:"a phrase", held in the property name. Words are folded and
// stemmed as the index is (see tokenize); stopwords are left out unless
// nothing else is left. The last word kept, if bare, also matches as a
// prefix: the tokens that start with its stem (the maxExpansions most
// frequent of the first MaxTermScan), at half weight.
type parsedQuery struct {
	clauses []clause
	phrases []phrase
}

// A clause is one term of a query.
type clause struct {
	term   string // the token, folded and stemmed
	prefix string // if set: tokens that start with it match too (the last word)
	field  string // if set: the property that must hold it
}

// A phrase is a sequence of tokens (stopwords included) that must follow
// each other in one value of field (of any searchable property if "").
type phrase struct {
	field string
	toks  []string
}

func parseQuery(text string) parsedQuery {
	var pq, stops parsedQuery
	var lastBare, lastStop string // the last bare word kept, and stopword
	add := func(c clause) {
		target := &pq
		if stopwords[c.term] {
			target = &stops
		}
		for i, x := range target.clauses {
			if x.term == c.term && x.field == c.field {
				// Once: the later place counts (it may be the last word).
				target.clauses = append(slices.Delete(target.clauses, i, i+1), c)
				return
			}
		}
		target.clauses = append(target.clauses, c)
	}
	i := 0
	for i < len(text) {
		r := rune(text[i])
		if r == ' ' || r == '\t' || r == '\n' || r == '\r' {
			i++
			continue
		}
		field := ""
		if n := fieldName(text[i:]); n > 0 {
			field, i = text[i:i+n], i+n+1
		}
		quoted := i < len(text) && text[i] == '"'
		var seg string
		if quoted {
			end := strings.IndexByte(text[i+1:], '"')
			if end < 0 {
				seg, i = text[i+1:], len(text)
			} else {
				seg, i = text[i+1:i+1+end], i+2+end
			}
		} else {
			end := strings.IndexAny(text[i:], " \t\n\r\"")
			if end < 0 {
				end = len(text) - i
			}
			seg, i = text[i:i+end], i+end
		}
		var toks []string
		tokenize(seg, func(tok string) { toks = append(toks, tok) })
		if quoted && len(toks) > 1 {
			pq.phrases = append(pq.phrases, phrase{field: field, toks: toks})
		}
		for _, tok := range toks {
			add(clause{term: tok, field: field})
			switch {
			case quoted || field != "":
			case stopwords[tok]:
				lastStop = tok
			default:
				lastBare = tok
			}
		}
	}
	if len(pq.clauses) == 0 {
		pq.clauses, lastBare = stops.clauses, lastStop
	}
	// The last word kept, if bare, is perhaps not typed in full.
	if n := len(pq.clauses); n > 0 && pq.clauses[n-1].field == "" && pq.clauses[n-1].term == lastBare {
		pq.clauses[n-1].prefix = lastBare
	}
	return pq
}

// fieldName returns the length of a "name:" that starts s and is followed
// by a letter, a digit or a quote (so that http://… is words), or 0.
func fieldName(s string) int {
	for i, r := range s {
		switch {
		case r == ':' && i > 0:
			if next, _ := utf8.DecodeRuneInString(s[i+1:]); next == '"' || unicode.IsLetter(next) || unicode.IsDigit(next) {
				return i
			}
			return 0
		case r == '_' || r < 128 && (unicode.IsLetter(r) || i > 0 && unicode.IsDigit(r)):
		default:
			return 0
		}
	}
	return 0
}

// String returns the canonical form of the query, which its cursors carry.
func (pq parsedQuery) String() string {
	var b strings.Builder
	for i, c := range pq.clauses {
		if i > 0 {
			b.WriteByte(' ')
		}
		if c.field != "" {
			b.WriteString(c.field + ":")
		}
		b.WriteString(c.term)
		if c.prefix != "" {
			b.WriteByte('*')
		}
	}
	for _, p := range pq.phrases {
		fmt.Fprintf(&b, " %s:%q", p.field, strings.Join(p.toks, " "))
	}
	return b.String()
}

// verify says whether checking a node's text is needed beyond its postings.
func (pq parsedQuery) verify() bool {
	if len(pq.phrases) > 0 {
		return true
	}
	return slices.ContainsFunc(pq.clauses, func(c clause) bool { return c.field != "" })
}

// checkFields refuses a field that is not a searchable property (of typ
// if given, else of some type).
func (pq parsedQuery) checkFields(m *schema.Model, typ string) error {
	searchable := map[string]bool{}
	for _, name := range m.NodeTypeNames() {
		if nt, _ := m.Node(name); typ == "" || name == typ {
			for _, p := range nt.Search {
				searchable[p] = true
			}
		}
	}
	fields := map[string]bool{}
	for _, c := range pq.clauses {
		fields[c.field] = true
	}
	for _, p := range pq.phrases {
		fields[p.field] = true
	}
	for f := range fields {
		if f != "" && !searchable[f] {
			names := make([]string, 0, len(searchable))
			for p := range searchable {
				names = append(names, p)
			}
			slices.Sort(names)
			return fmt.Errorf("search field %q is not a searchable property; they are %s: %w", f, list(names), ErrInvalid)
		}
	}
	return nil
}

// matches checks a node's text against the fields and phrases.
func (pq parsedQuery) matches(nt *schema.NodeType, props Props) bool {
	values := map[string][][]string{} // property -> its values' tokens
	searchText(nt, props, func(prop, text string, _ int) {
		var toks []string
		tokenize(text, func(tok string) { toks = append(toks, tok) })
		values[prop] = append(values[prop], toks)
	})
	for _, c := range pq.clauses {
		if c.field == "" {
			continue
		}
		found := false
		for _, toks := range values[c.field] {
			found = found || slices.ContainsFunc(toks, func(t string) bool {
				return t == c.term || c.prefix != "" && strings.HasPrefix(t, c.prefix)
			})
		}
		if !found {
			return false
		}
	}
	for _, p := range pq.phrases {
		found := false
		for prop, vals := range values {
			if p.field != "" && prop != p.field {
				continue
			}
			for _, toks := range vals {
				found = found || hasRun(toks, p.toks)
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hasRun says whether run occurs in toks, its tokens one after the other.
func hasRun(toks, run []string) bool {
	for i := 0; i+len(run) <= len(toks); i++ {
		if slices.Equal(toks[i:i+len(run)], run) {
			return true
		}
	}
	return false
}
