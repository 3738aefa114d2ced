package graph_test

import (
	"slices"
	"testing"

	"github.com/lore-dev/lore/graph"
)

func TestTokens(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"Parsers and the parser", []string{"parser", "and", "the", "parser"}},
		{"Café CAFÉ cafe", []string{"cafe", "cafe", "cafe"}},             // accents and case
		{"Straße", []string{"strass"}},                                   // ß folds to ss, then stems
		{"ﬁle ＡＰＩ", []string{"file", "api"}},                             // compatibility forms
		{"naïve Zürich", []string{"naiv", "zurich"}},                     // combining marks removed
		{"retries retrying retry", []string{"retri", "retri", "retri"}},  // Porter2
		{"v2 h2o 2024-08-12", []string{"v2", "h2o", "2024", "08", "12"}}, // words with digits are not stemmed
		{"Ελληνικά МОСКВА", []string{"ελληνικα", "москва"}},              // other scripts fold, unstemmed
	} {
		if got := graph.Tokens(tt.text); !slices.Equal(got, tt.want) {
			t.Errorf("Tokens(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestParseQuery(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"parsers", "parser*"},
		{"the parsers of", "parser*"},                         // stopwords dropped; the last word kept is a prefix
		{"the of", "the of*"},                                 // unless nothing else is left
		{"alpha beta alpha", "beta alpha*"},                   // each once, at its last place
		{`"rate limit" api`, `rate limit api* :"rate limit"`}, // a phrase, and its words
		{`title:onboarding guide`, "title:onboard guid*"},
		{`title:"rate limits"`, `title:rate title:limit title:"rate limit"`},
		{`http://x "unclosed phrase`, `http x unclos phrase :"unclos phrase"`},
		{`:colon a:`, `colon*`},
		{`name:Zürich`, `name:zurich`}, // a field's word is not a prefix
	} {
		if got := graph.ParsedQuery(tt.text); got != tt.want {
			t.Errorf("parse %q = %q, want %q", tt.text, got, tt.want)
		}
	}
}
