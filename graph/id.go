package graph

import (
	"fmt"
	"hash/maphash"
	"strings"
	"unicode/utf8"

	"github.com/lore-dev/lore/schema"
)

// An ID names a node: a readable, URL-safe key of one or more segments
// separated by "/", such as "service/billing". A segment holds letters,
// digits, ".", "_", "~", "-" and percent-escapes ("%20"); "." and ".." are
// not segments. IDs are at most MaxIDLen bytes.
type ID string

// MaxIDLen is the longest ID, in bytes.
const MaxIDLen = 256

// MaxKeyLen is the longest edge key, in bytes.
const MaxKeyLen = 512

// Check reports why id is not a valid ID, or nil.
func (id ID) Check() error {
	s := string(id)
	if s == "" {
		return fmt.Errorf("empty ID: %w", ErrInvalid)
	}
	if len(s) > MaxIDLen {
		return fmt.Errorf("ID %.40q…: longer than %d bytes: %w", s, MaxIDLen, ErrInvalid)
	}
	// One pass, segment by segment: a segment's bytes, then the segment
	// when its end comes (an import checks three IDs per edge).
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '/' {
			if seg := s[start:i]; seg == "" || seg == "." || seg == ".." {
				return fmt.Errorf("ID %q: empty, \".\" or \"..\" segment (write segments like service/billing): %w", s, ErrInvalid)
			}
			start = i + 1
			continue
		}
		c := s[i]
		if unreservedByte[c] {
			continue
		}
		// A '/' is not a hex digit: an escape stays in its segment.
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			i += 2
			continue
		}
		return fmt.Errorf("ID %q: character %q not allowed (use letters, digits, . _ ~ - and /, or %%-escape it as %s): %w",
			s, c, EscapeSegment(string(c)), ErrInvalid)
	}
	return nil
}

// unreservedByte says which bytes unreserved accepts.
var unreservedByte = func() (t [256]bool) {
	for c := range t {
		t[c] = unreserved(byte(c))
	}
	return t
}()

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// EscapeSegment percent-encodes every byte of s that may not appear in an ID
// segment, so any text (an entity name, say) becomes one valid segment.
func EscapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) && !(c == '.' && (s == "." || s == "..")) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// UnescapeSegment reverses EscapeSegment.
func UnescapeSegment(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("bad escape in %q: %w", s, ErrInvalid)
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// An EdgeKey identifies an edge: its endpoints, its label and, for keyed
// edge types, its key. Its string form, also its ID, reads like a fact:
// "memberOf(person/ada,team/core)" or "relation(entity/Ada,entity/Acme,works_at)".
type EdgeKey struct {
	From  ID     `json:"from"`
	Label string `json:"label"`
	To    ID     `json:"to"`
	Key   string `json:"key,omitempty"`
}

// String returns the edge's ID.
func (k EdgeKey) String() string {
	s := k.Label + "(" + string(k.From) + "," + string(k.To)
	if k.Key != "" {
		s += "," + EscapeSegment(k.Key)
	}
	return s + ")"
}

// Hash writes the key into h, its parts separated by NUL bytes (which no
// part of a valid key holds), so that two keys hash alike only if they are
// equal or h collides.
func (k EdgeKey) Hash(h *maphash.Hash) {
	h.WriteString(string(k.From))
	h.WriteByte(0)
	h.WriteString(k.Label)
	h.WriteByte(0)
	h.WriteString(string(k.To))
	h.WriteByte(0)
	h.WriteString(k.Key)
}

// Check reports why k is malformed, or nil. It does not consult a model.
func (k EdgeKey) Check() error {
	if err := k.From.Check(); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := k.To.Check(); err != nil {
		return fmt.Errorf("to: %w", err)
	}
	if !schema.ValidName(k.Label) {
		return fmt.Errorf("label %q is not an identifier: %w", k.Label, ErrInvalid)
	}
	if len(k.Key) > MaxKeyLen || !utf8.ValidString(k.Key) || strings.ContainsFunc(k.Key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("key %.40q: must be UTF-8 text without control characters, at most %d bytes: %w", k.Key, MaxKeyLen, ErrInvalid)
	}
	return nil
}

// ParseEdgeKey parses an edge ID such as "memberOf(person/ada,team/core)".
func ParseEdgeKey(s string) (EdgeKey, error) {
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") {
		return EdgeKey{}, fmt.Errorf("edge ID %q: want label(from,to) or label(from,to,key): %w", s, ErrInvalid)
	}
	parts := strings.Split(s[open+1:len(s)-1], ",")
	if len(parts) < 2 || len(parts) > 3 {
		return EdgeKey{}, fmt.Errorf("edge ID %q: want label(from,to) or label(from,to,key): %w", s, ErrInvalid)
	}
	k := EdgeKey{Label: s[:open], From: ID(parts[0]), To: ID(parts[1])}
	if len(parts) == 3 {
		key, err := UnescapeSegment(parts[2])
		if err != nil || key == "" {
			return EdgeKey{}, fmt.Errorf("edge ID %q: bad key: %w", s, ErrInvalid)
		}
		k.Key = key
	}
	return k, k.Check()
}

// Bytes returns the edge key as bytes: from, label, to and key joined by
// NUL, which sort as ScanEdges lists edges. EdgeKeyFromBytes reverses it.
func (k EdgeKey) Bytes() []byte {
	b := make([]byte, 0, len(k.From)+len(k.Label)+len(k.To)+len(k.Key)+3)
	b = append(b, k.From...)
	b = append(b, 0)
	b = append(b, k.Label...)
	b = append(b, 0)
	b = append(b, k.To...)
	b = append(b, 0)
	return append(b, k.Key...)
}

// EdgeKeyFromBytes returns the edge key that Bytes encoded as b.
func EdgeKeyFromBytes(b []byte) EdgeKey {
	parts := strings.SplitN(string(b), "\x00", 4)
	if len(parts) != 4 {
		return EdgeKey{}
	}
	return EdgeKey{From: ID(parts[0]), Label: parts[1], To: ID(parts[2]), Key: parts[3]}
}
