package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/mcp"
)

// TestErrorKinds: the one table gives every code one HTTP status and one
// GraphQL code, and every graph category, deadlines and cancellations a
// row; errors outside it are nil (the surface logs them as internal).
func TestErrorKinds(t *testing.T) {
	codes, gqlCodes := map[string]bool{}, map[string]bool{}
	for _, k := range mcp.ErrorKinds {
		if codes[k.Code] || gqlCodes[k.GraphQL] {
			t.Errorf("%s: code or GraphQL code %q given twice", k.Code, k.GraphQL)
		}
		codes[k.Code], gqlCodes[k.GraphQL] = true, true
		if k.Status < 400 || k.GraphQL == "" || mcp.KindOf(k.Code).Title == "" {
			t.Errorf("%s: incomplete row %+v", k.Code, k)
		}
	}
	for _, tc := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("node %q: %w", "x", graph.ErrNotFound), mcp.CodeNotFound},
		{fmt.Errorf("bad: %w", graph.ErrInvalid), mcp.CodeInvalid},
		{fmt.Errorf("stale: %w", graph.ErrConflict), mcp.CodeConflict},
		{fmt.Errorf("reading: %w", context.DeadlineExceeded), mcp.CodeDeadline},
		{context.Canceled, mcp.CodeCancelled},
		{&mcp.Error{Code: mcp.CodeForbidden, Message: "no"}, mcp.CodeForbidden},
	} {
		e := mcp.ErrorOf(tc.err)
		if e == nil || e.Code != tc.code {
			t.Errorf("ErrorOf(%v) = %v, want code %s", tc.err, e, tc.code)
		}
	}
	if e := mcp.ErrorOf(errors.New("disk on fire")); e != nil {
		t.Errorf("an error outside the table became %+v", e)
	}
	if k := mcp.KindOf("nope"); k.Code != mcp.CodeInternal {
		t.Errorf("an unknown code is %s, want internal", k.Code)
	}
}
