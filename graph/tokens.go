package graph

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/lore-dev/lore/schema"
)

// Text search indexes the words of the properties a node type marks
// "search" in the model. Text is folded first: Unicode compatibility
// decomposition (NFKD), combining marks removed (accents: "Café" is
// "cafe"), full case folding ("Straße" is "strasse"), then recomposed
// (NFC). A token is a maximal run of letters and digits of the folded text;
// a token of ASCII letters only is reduced to its English stem (Snowball's
// Porter2: "parsers" and "parser" are both "parser"), and tokens longer than
// maxToken bytes are cut. A few English function words are not indexed
// (stopwords).
//
// Each token of a node is indexed with an impact: the term-frequency part
// of BM25 (k1 = bm25K1, b = bm25B) over the node's searchable text, with
// the words of the type's display property counted displayWeight times
// (a BM25F-style field boost), and the length normalised by a fixed
// average length (bm25AvgLen) rather than the store's current one, so that
// a node's impacts depend on that node alone: writing one node never
// changes another's postings, and the postings can be kept in impact order
// (see Store.Postings and Search). The impact is quantised to 1..255.
//
// TokenizerVersion names this analysis; a store whose index was built by
// another version rebuilds it when it opens.
const (
	maxToken        = 48
	maxNodeTokens   = 2000 // distinct tokens indexed per node
	displayWeight   = 3
	ordinaryWeight  = 1
	bm25K1          = 1.2
	bm25B           = 0.75
	bm25AvgLen      = 12.0
	maxImpact       = 255
	searchCandidate = 20_000

	// TokenizerVersion is the version of the text analysis and of the
	// postings' weights: 1 was lower-casing with a weight of 1 or 3; 2
	// folds, stems and weighs by BM25 impact.
	TokenizerVersion = 2
)

var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true, "for": true,
	"from": true, "in": true, "is": true, "it": true, "of": true, "on": true, "or": true, "that": true, "the": true,
	"this": true, "to": true, "was": true, "with": true,
}

// fold returns text normalised for search: decomposed, without combining
// marks, case-folded and recomposed. ASCII text only needs lower-casing.
func fold(text string) string {
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return strings.ToLower(text)
	}
	t := transform.Chain(norm.NFKD, runes.Remove(runes.In(unicode.Mn)), cases.Fold(), norm.NFC)
	out, _, err := transform.String(t, text)
	if err != nil {
		return strings.ToLower(text)
	}
	return out
}

// words splits folded text into words (runs of letters and digits), cut to
// maxToken bytes, stopwords included, unstemmed.
func words(text string, f func(word string)) {
	text = fold(text)
	start := -1
	emit := func(end int) {
		tok := text[start:end]
		if len(tok) > maxToken {
			tok = tok[:maxToken]
			for !isUTF8Start(tok) && len(tok) > 0 { // do not cut a rune in half
				tok = tok[:len(tok)-1]
			}
		}
		f(tok)
	}
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		switch {
		case word && start < 0:
			start = i
		case !word && start >= 0:
			emit(i)
			start = -1
		}
	}
	if start >= 0 {
		emit(len(text))
	}
}

// stem returns the token a folded word is indexed under: its English stem
// if it is made of ASCII letters only, else the word itself.
func stem(word string) string {
	if len(word) <= 2 {
		return word
	}
	for i := 0; i < len(word); i++ {
		if c := word[i]; c < 'a' || c > 'z' {
			return word
		}
	}
	stems.Lock()
	s, ok := stems.m[word]
	stems.Unlock()
	if ok {
		return s
	}
	s = english.Stem(word, true)
	stems.Lock()
	if len(stems.m) >= maxStems {
		clear(stems.m)
	}
	stems.m[strings.Clone(word)] = s // word may be part of a long text
	stems.Unlock()
	return s
}

// stems caches stem's answers. Snowball's stemmer allocates and walks a
// word's runes: it was an eighth of Lore's CPU time in an import of 100k
// nodes into PostgreSQL, and the words of a store's text repeat. It keeps
// up to maxStems words, and starts again empty when full.
var stems = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxStems = 1 << 16

// tokenize splits text into tokens (folded and stemmed), stopwords
// included.
func tokenize(text string, f func(tok string)) {
	words(text, func(w string) { f(stem(w)) })
}

func isUTF8Start(s string) bool {
	if s == "" {
		return true
	}
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			// s[i] starts a rune: it is whole if enough bytes follow it.
			need := 1
			switch c := s[i]; {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			case c >= 0xC0:
				need = 2
			}
			return len(s)-i >= need
		}
	}
	return false
}

// queryTerms returns the distinct search terms of a query's text (quotes
// and field names included, see parseQuery), stopwords dropped unless
// nothing else is left.
func queryTerms(text string) []string {
	var terms []string
	for _, c := range parseQuery(text).clauses {
		if !slices.Contains(terms, c.term) {
			terms = append(terms, c.term)
		}
	}
	return terms
}

// searchText visits the text of a node's searchable properties, each value
// with its property and weight.
func searchText(nt *schema.NodeType, props Props, f func(prop, text string, weight int)) {
	for _, p := range nt.Search {
		w := ordinaryWeight
		if p == nt.Display {
			w = displayWeight
		}
		eachString(props[p], func(s string) { f(p, s, w) })
	}
}

func eachString(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case json.Number:
		f(string(x))
	case []any:
		for _, e := range x {
			eachString(e, f)
		}
	}
}

// NodeTokens returns the tokens of a node that the text-search index holds
// (see Store.Postings), each with its impact (1..255, see TokenizerVersion).
func NodeTokens(nt *schema.NodeType, props Props) map[string]byte {
	if len(nt.Search) == 0 {
		return nil
	}
	tf := map[string]int{}
	length := 0
	searchText(nt, props, func(_, text string, w int) {
		tokenize(text, func(tok string) {
			if stopwords[tok] || tok == "" {
				return
			}
			length += w
			if _, ok := tf[tok]; ok || len(tf) < maxNodeTokens {
				tf[tok] += w
			}
		})
	})
	toks := make(map[string]byte, len(tf))
	for tok, n := range tf {
		toks[tok] = impact(n, length)
	}
	return toks
}

// impact is BM25's term-frequency part of a token that occurs tf times
// (weighted) in a text of length (weighted) tokens, quantised to 1..255.
func impact(tf, length int) byte {
	x := float64(tf) * (bm25K1 + 1) / (float64(tf) + bm25K1*(1-bm25B+bm25B*float64(length)/bm25AvgLen))
	q := math.Round(x / (bm25K1 + 1) * maxImpact)
	return byte(min(max(q, 1), maxImpact))
}
