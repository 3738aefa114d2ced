package schema

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidName checks ValidName against the regular expression it
// stands for, on every string of up to two bytes and on some longer ones.
func TestValidName(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
	want := func(s string) bool { return len(s) <= MaxNameLen && re.MatchString(s) }
	check := func(s string) {
		if got := ValidName(s); got != want(s) {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want(s))
		}
	}
	check("")
	for a := range 256 {
		check(string([]byte{byte(a)}))
		for b := range 256 {
			check(string([]byte{byte(a), byte(b)}))
		}
	}
	for _, s := range []string{"dependsOn", "memberOf", "a_1", "_a", "1a", "a-b", "a b", "é", "aé", "a\n",
		strings.Repeat("a", MaxNameLen), strings.Repeat("a", MaxNameLen+1), "Z" + strings.Repeat("9_", 31)} {
		check(s)
	}
}
