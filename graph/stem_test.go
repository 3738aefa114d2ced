package graph

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"
)

// TestStemCache checks that stem answers as Snowball does, whether the
// word is cached or not, and after the cache fills and starts again.
func TestStemCache(t *testing.T) {
	words := []string{"parsers", "parser", "retries", "retrying", "generated", "benchmark", "running", "runs", "ab", "v2"}
	for round := range 2 { // the second round answers from the cache
		for _, w := range words {
			want := w
			if len(w) > 2 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyz") == "" {
				want = english.Stem(w, true)
			}
			if got := stem(w); got != want {
				t.Errorf("round %d: stem(%q) = %q, want %q", round, w, got, want)
			}
		}
	}
	// Fill the cache past its size: it starts again, and still answers.
	letters := func(i int) string {
		return strings.Map(func(r rune) rune { return 'a' + (r - '0') }, strconv.Itoa(i)) + "ings"
	}
	for i := range maxStems + 10 {
		if w := letters(i); stem(w) != english.Stem(w, true) {
			t.Fatalf("stem(%q) = %q, want %q", w, stem(w), english.Stem(w, true))
		}
	}
	stems.Lock()
	n := len(stems.m)
	stems.Unlock()
	if n > maxStems {
		t.Errorf("the cache holds %d words, more than %d", n, maxStems)
	}
	for _, w := range words {
		if got, want := stem(w), english.Stem(w, true); len(w) > 2 && got != want {
			t.Errorf("after a refill: stem(%q) = %q, want %q", w, got, want)
		}
	}
}
