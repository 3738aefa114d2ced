package graph

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkIDBySegments is ID.Check as it was written first, segment by
// segment: the reference for the one-pass Check.
func checkIDBySegments(s string) error {
	if s == "" {
		return fmt.Errorf("empty ID: %w", ErrInvalid)
	}
	if len(s) > MaxIDLen {
		return fmt.Errorf("ID %.40q…: longer than %d bytes: %w", s, MaxIDLen, ErrInvalid)
	}
	for seg := range strings.SplitSeq(s, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("ID %q: empty, \".\" or \"..\" segment (write segments like service/billing): %w", s, ErrInvalid)
		}
		for i := 0; i < len(seg); i++ {
			c := seg[i]
			if unreserved(c) {
				continue
			}
			if c == '%' && i+2 < len(seg) && isHex(seg[i+1]) && isHex(seg[i+2]) {
				i += 2
				continue
			}
			return fmt.Errorf("ID %q: character %q not allowed (use letters, digits, . _ ~ - and /, or %%-escape it as %s): %w",
				s, c, EscapeSegment(string(c)), ErrInvalid)
		}
	}
	return nil
}

// ID.Check says what checkIDBySegments says, word for word, of random
// IDs made of the bytes that matter: separators, dots, escapes whole and
// cut, hex digits and bytes not allowed.
func TestIDCheckAgainstSegments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 12))
	parts := []string{"/", ".", "..", "%", "%2", "%2f", "%zz", "a", "B", "9", "-", "_", "~", "f", " ", "é", "\x00", "?"}
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(9) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		id := b.String()
		got, want := ID(id).Check(), checkIDBySegments(id)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("Check(%q) = %v; by segments: %v", id, got, want)
		}
	}
}
