package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// internalMessage is all a caller hears of a failure it cannot act on.
const internalMessage = "internal error; the server log has the details"

// internalError is the tool error of a failure the caller cannot act on.
func internalError() *Error { return &Error{Code: CodeInternal, Message: internalMessage} }

// internalRPCError is the JSON-RPC answer to a request whose handler
// failed in a way the caller cannot act on.
func internalRPCError() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: internalMessage}
}

// logPanic logs a recovered panic with the stack of the goroutine that
// panicked: called from a deferred function, debug.Stack still shows the
// frames between the panic and the recover.
func logPanic(ctx context.Context, log *slog.Logger, msg string, v any, attrs ...any) {
	log.ErrorContext(ctx, msg, append(attrs, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))...)
}

// logRecovered, deferred, stops a panic and logs it: for goroutines of
// ours whose work can be skipped, but must not end the process.
func logRecovered(ctx context.Context, log *slog.Logger, msg string, attrs ...any) {
	if v := recover(); v != nil {
		logPanic(ctx, log, msg, v, attrs...)
	}
}

// recoverMiddleware answers a request whose handler panicked (a tool,
// resource, prompt or completion handler of ours, or the SDK's own code
// around it) with a JSON-RPC internal error and logs the panic: the SDK
// runs each request in a goroutine of its own and recovers nothing, so
// without this one request could end the process.
func recoverMiddleware(log *slog.Logger) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (res mcpsdk.Result, err error) {
			defer func() {
				if v := recover(); v != nil {
					logPanic(ctx, log, "MCP handler panicked", v, "method", method)
					res, err = nil, internalRPCError()
				}
			}()
			return next(ctx, method, req)
		}
	}
}
