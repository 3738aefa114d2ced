package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/lore-dev/lore/graph"
	"github.com/lore-dev/lore/schema"
)

// Error codes of tool errors, one per row of ErrorKinds.
const (
	CodeInvalid   = "invalid_argument"      // the arguments break the input schema or a model rule
	CodeNotFound  = "not_found"             // a node or edge named by the call does not exist
	CodeConflict  = "conflict"              // a stale revision or a reused idempotency key
	CodeForbidden = "forbidden"             // the caller lacks a scope
	CodeConfirm   = "confirmation_required" // a destructive call without confirm: true
	CodeDeadline  = "deadline_exceeded"     // the call ran past its deadline
	CodeCancelled = "cancelled"             // the caller gave up, or the user declined the confirmation
	CodeInternal  = "internal"              // anything else; the server log has the details
	// HTTP-level codes: the request never reached a tool.
	CodeMethod   = "method_not_allowed"
	CodeTooLarge = "too_large" // the request body is over the server's limit
	CodeTimeout  = "timeout"   // the request body did not arrive in time
)

// An ErrorKind is one kind of failure as every surface reports it: MCP
// (a tool result with isError and the text "code: message"), REST (an RFC
// 9457 problem with the code and the HTTP status) and GraphQL (the message
// with extensions.code). One failure reads the same everywhere.
type ErrorKind struct {
	Code    string // Error.Code: the MCP text's prefix and REST's problem code
	Status  int    // the HTTP status of REST (and of a GraphQL request refused whole)
	Title   string // the HTTP reason phrase
	GraphQL string // GraphQL's extensions.code
	// err is the error category matched with errors.Is, nil for kinds
	// only Lore raises.
	err error
	// message replaces the error's own text where that text says nothing
	// to the caller (context errors).
	message string
}

// ErrorKinds is the one error table, most specific category first.
var ErrorKinds = []ErrorKind{
	{Code: CodeInvalid, Status: http.StatusBadRequest, GraphQL: "INVALID_ARGUMENT", err: graph.ErrInvalid},
	{Code: CodeConflict, Status: http.StatusConflict, GraphQL: "CONFLICT", err: graph.ErrConflict},
	{Code: CodeNotFound, Status: http.StatusNotFound, GraphQL: "NOT_FOUND", err: graph.ErrNotFound},
	{Code: CodeDeadline, Status: http.StatusGatewayTimeout, GraphQL: "DEADLINE_EXCEEDED", err: context.DeadlineExceeded,
		message: "the call ran past its deadline; ask for less (smaller limits, fewer hops) or raise the server's --timeout"},
	// 499 is the de facto "client closed request" (nginx, gRPC gateways).
	{Code: CodeCancelled, Status: 499, Title: "Client Closed Request", GraphQL: "CANCELLED", err: context.Canceled,
		message: "the call was cancelled"},
	{Code: CodeForbidden, Status: http.StatusForbidden, GraphQL: "FORBIDDEN"},
	{Code: CodeConfirm, Status: http.StatusBadRequest, GraphQL: "CONFIRMATION_REQUIRED"},
	{Code: CodeMethod, Status: http.StatusMethodNotAllowed, GraphQL: "METHOD_NOT_ALLOWED"},
	{Code: CodeTooLarge, Status: http.StatusRequestEntityTooLarge, GraphQL: "TOO_LARGE"},
	{Code: CodeTimeout, Status: http.StatusRequestTimeout, GraphQL: "TIMEOUT"},
	{Code: CodeInternal, Status: http.StatusInternalServerError, GraphQL: "INTERNAL", message: internalMessage},
}

// KindOf returns the kind of an error code; an unknown code is internal.
func KindOf(code string) ErrorKind {
	for _, k := range ErrorKinds {
		if k.Code == code {
			if k.Title == "" {
				k.Title = http.StatusText(k.Status)
			}
			return k
		}
	}
	return KindOf(CodeInternal)
}

// An Error is a tool error: the call was understood and refused, and the
// message says how to fix it. Every surface shows it to the caller as is.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Violations lists every broken rule, each at its JSON pointer into
	// the arguments.
	Violations []schema.Violation `json:"violations,omitempty"`
	// Scope is the scope the caller lacks (CodeForbidden): HTTP surfaces
	// answer it as RFC 6750's insufficient_scope.
	Scope string `json:"scope,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Violations) == 0 {
		return e.Message
	}
	var b strings.Builder
	b.WriteString(e.Message)
	for _, v := range e.Violations {
		b.WriteString("\n- ")
		b.WriteString(v.String())
	}
	return b.String()
}

// ErrorOf translates any error into a tool error from the one table: an
// *Error as it is, a batch's or a query's problems as violations, graph's
// categories and context errors by kind. It returns nil for an error
// outside the table, which the surface logs and reports as internal
// .
func ErrorOf(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	var be *graph.BatchError
	if errors.As(err, &be) {
		e := &Error{Code: CodeInvalid, Message: fmt.Sprintf("nothing was written: %d problem(s); fix them and send the whole batch again", len(be.Problems))}
		if k, ok := kindOfErr(err); ok {
			e.Code = k.Code
		}
		for _, p := range be.Problems {
			e.Violations = append(e.Violations, schema.Violation{Pointer: p.Pointer, Rule: p.Rule, Message: p.Element + ": " + p.Message})
		}
		return e
	}
	var qe *graph.QueryError
	if errors.As(err, &qe) {
		return &Error{Code: CodeInvalid, Message: "the query is not valid", Violations: qe.Violations}
	}
	if k, ok := kindOfErr(err); ok {
		return &Error{Code: k.Code, Message: cmpOrString(k.message, err.Error())}
	}
	return nil
}

func kindOfErr(err error) (ErrorKind, bool) {
	for _, k := range ErrorKinds {
		if k.err != nil && errors.Is(err, k.err) {
			return k, true
		}
	}
	return ErrorKind{}, false
}

func cmpOrString(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Outcome names how a call ended, for metrics: "ok" for nil, the *Error's
// Code, "unknown_tool" for ErrUnknownTool, else CodeInternal.
func Outcome(err error) string {
	var te *Error
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &te):
		return te.Code
	case errors.Is(err, ErrUnknownTool):
		return "unknown_tool"
	}
	return CodeInternal
}
