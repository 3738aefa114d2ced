package graph

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/lore-dev/lore/schema"
)

// Text search indexes the words of the properties a node type marks
// "search" in the model. A token is a maximal run of letters and digits,
// lower-cased; tokens longer than maxToken bytes are cut. A few English
// function words are not indexed (stopwords). Each token is indexed with a
// weight: displayWeight if it occurs in the type's display property, else 1.
const (
	maxToken        = 48
	maxNodeTokens   = 2000 // distinct tokens indexed per node
	displayWeight   = 3
	ordinaryWeight  = 1
	searchCountCap  = 500 // postings counted per term when choosing where to start
	searchCandidate = 20_000
)

var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "by": true, "for": true,
	"from": true, "in": true, "is": true, "it": true, "of": true, "on": true, "or": true, "that": true, "the": true,
	"this": true, "to": true, "was": true, "with": true,
}

// tokenize splits text into tokens, stopwords included.
func tokenize(text string, f func(tok string)) {
	start := -1
	emit := func(end int) {
		tok := strings.ToLower(text[start:end])
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

// queryTerms returns the distinct search terms of a query, stopwords
// dropped unless nothing else is left.
func queryTerms(text string) []string {
	var all, terms []string
	tokenize(text, func(tok string) {
		if !slices.Contains(all, tok) {
			all = append(all, tok)
			if !stopwords[tok] {
				terms = append(terms, tok)
			}
		}
	})
	if len(terms) == 0 {
		return all
	}
	return terms
}

// searchText visits the text of a node's searchable properties, each value
// with its weight.
func searchText(nt *schema.NodeType, props Props, f func(text string, weight int)) {
	for _, p := range nt.Search {
		w := ordinaryWeight
		if p == nt.Display {
			w = displayWeight
		}
		eachString(props[p], func(s string) { f(s, w) })
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
// (see Store.Postings), with their weights.
func NodeTokens(nt *schema.NodeType, props Props) map[string]byte {
	if len(nt.Search) == 0 {
		return nil
	}
	toks := map[string]byte{}
	searchText(nt, props, func(text string, w int) {
		tokenize(text, func(tok string) {
			if stopwords[tok] || tok == "" {
				return
			}
			if old, ok := toks[tok]; ok || len(toks) < maxNodeTokens {
				toks[tok] = max(old, byte(w))
			}
		})
	})
	return toks
}
