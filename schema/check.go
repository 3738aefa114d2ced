package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// DefaultMaxDepth is the nesting limit of JSON input when a surface sets
// none: far more than any tool call, query or property needs, and small
// enough that no decoder slows down on it.
const DefaultMaxDepth = 64

// A JSONError says why input is not acceptable JSON, and where: Pointer
// locates the offending value ("" for the whole document) and Offset the
// byte it starts at.
type JSONError struct {
	Pointer string
	Offset  int64
	Reason  string
}

func (e *JSONError) Error() string {
	where := "at byte " + fmt.Sprint(e.Offset)
	if e.Pointer != "" {
		where = "at " + e.Pointer + " (byte " + fmt.Sprint(e.Offset) + ")"
	}
	return e.Reason + " " + where
}

// CheckJSON scans data once, without decoding it, and refuses what a
// decoder would accept silently or slowly: nesting deeper than maxDepth
// (0 means DefaultMaxDepth), invalid UTF-8 (which decoders replace with
// U+FFFD), an object with the same key twice (decoders keep the last),
// and anything that is not one JSON value. Its cost is linear in len(data)
// and it stops at the first problem, so hostile input costs no more than
// reading it.
func CheckJSON(data []byte, maxDepth int) error {
	c, _ := checkers.Get().(*checker)
	if c == nil {
		c = &checker{}
		c.d = jsontext.NewDecoder(&c.r)
	}
	err := c.check(data, maxDepth)
	if len(data) <= maxPooledInput { // a decoder that read a large input keeps a large buffer
		c.r.Reset(nil)
		c.d.Reset(&c.r)
		checkers.Put(c)
	}
	return err
}

// A checker is a tokenizer kept for the next input: making one costs four
// times the scan of a 200-byte line (an import checks millions of lines).
type checker struct {
	r bytes.Reader
	d *jsontext.Decoder
}

var checkers sync.Pool

// maxPooledInput is the largest input whose checker is kept for reuse.
const maxPooledInput = 64 << 10

func (c *checker) check(data []byte, maxDepth int) error {
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	c.r.Reset(data)
	c.d.Reset(&c.r)
	d := c.d
	for {
		_, err := d.ReadToken()
		if err == io.EOF {
			return &JSONError{Offset: d.InputOffset(), Reason: "no JSON value"}
		}
		if err != nil {
			return jsonError(d, err)
		}
		if d.StackDepth() > maxDepth {
			return &JSONError{Pointer: string(d.StackPointer()), Offset: d.InputOffset(),
				Reason: fmt.Sprintf("nested deeper than %d levels", maxDepth)}
		}
		if d.StackDepth() == 0 { // the value is complete: only whitespace may follow
			if _, err := d.ReadToken(); err != io.EOF {
				return &JSONError{Offset: d.InputOffset(), Reason: "data after the JSON value"}
			}
			return nil
		}
	}
}

// jsonError turns the tokenizer's error into a JSONError in plain words.
func jsonError(d *jsontext.Decoder, err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return &JSONError{Offset: d.InputOffset(), Reason: "unexpected end of JSON input"}
		}
		return &JSONError{Offset: d.InputOffset(), Reason: err.Error()}
	}
	reason := se.Err.Error()
	switch {
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		reason = "the same key appears twice in one object"
	case strings.Contains(reason, "UTF-8"):
		reason = "invalid UTF-8 in a string"
	case strings.Contains(reason, "surrogate"):
		reason = "an unpaired UTF-16 surrogate in a string escape"
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		reason = "unexpected end of JSON input"
	}
	return &JSONError{Pointer: string(se.JSONPointer), Offset: se.ByteOffset, Reason: reason}
}
