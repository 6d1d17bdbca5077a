package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CodeRequestCancelled is the JSON-RPC error code of a request that ended
// because it was cancelled (the client's notifications/cancelled, a dropped
// connection, an ended session) before it was answered: in the range
// JSON-RPC 2.0 leaves to implementations (-32000 to -32099), since neither
// it nor MCP defines one (MCP asks for no reply at all, which go-sdk
// v1.8.0 does not honour).
const CodeRequestCancelled = -32001

// go-sdk v1.8.0 sends any error that is not a *jsonrpc.Error with code 0,
// which JSON-RPC 2.0 does not define (internal/jsonrpc2/messages.go,
// toWireError). Three such errors reach clients: a duplicate initialize
// (ServerSession.initialize, mcp/server.go: `duplicate "initialize"
// received`), a call on a session not yet initialized
// (ServerSession.handle: `method "tools/call" is invalid during session
// initialization`) and a call cancelled before its handler started
// (internal/jsonrpc2/conn.go, Connection.handleAsync, which answers with
// the bare "context canceled"). No upstream issue found. Two layers give
// them valid codes, by the same rule (codeFor): ErrorCodes for the errors
// a handler returns, on every transport; validCodes on the HTTP wire for
// the two the SDK makes before any middleware runs and for any other
// uncoded error.

// codeFor is the code of an uncoded error: a cancellation
// CodeRequestCancelled, a request the session's state refuses -32600
// (Invalid Request), anything else -32603 (Internal error).
func codeFor(msg string) int64 {
	switch {
	case strings.Contains(msg, context.Canceled.Error()), strings.Contains(msg, context.DeadlineExceeded.Error()):
		return CodeRequestCancelled
	case strings.Contains(msg, `duplicate "initialize"`), strings.Contains(msg, "invalid during session initialization"):
		return jsonrpc.CodeInvalidRequest
	default:
		return jsonrpc.CodeInternalError
	}
}

// ErrorCodes is a receiving middleware giving a valid JSON-RPC code to the
// uncoded errors it can judge: a cancellation (CodeRequestCancelled) and a
// refused initialize (-32600), on every transport, each keeping its
// message. Other errors pass unchanged: the SDK recognises its own
// sentinels after the middleware (jsonrpc2.ErrNotHandled, an unknown
// method, becomes -32601 in Connection.processResult), and validCodes
// codes what is left on HTTP. Register it last
// (mcp.Server.AddReceivingMiddleware wraps what is already there, so the
// last is outermost) so it sees every other middleware's errors.
func ErrorCodes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err == nil {
			return res, nil
		}
		if coded := codedError(method, err); coded != err {
			return nil, coded
		}
		return res, err
	}
}

// codedError is ErrorCodes' rule for one error a method's handler
// returned: the error with a valid code where the rule judges it, else
// err itself. The stdio fast lane applies it to what Backend.Direct
// returns, which no middleware sees.
func codedError(method string, err error) error {
	var coded *jsonrpc.Error
	if errors.As(err, &coded) && coded.Code != 0 {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &jsonrpc.Error{Code: CodeRequestCancelled, Message: err.Error()}
	case method == "initialize":
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: err.Error()}
	default:
		return err
	}
}

// validCodes rewrites the JSON-RPC error responses with code 0 in one
// write of the SDK's HTTP transport: a JSON body, or an SSE event whose
// data lines are JSON messages (the SDK writes each event with one Write).
// Anything else passes unchanged.
func validCodes(p []byte) []byte {
	if !bytes.Contains(p, []byte(`"code":0`)) {
		return p
	}
	if json.Valid(p) {
		return fixMessage(p)
	}
	lines := bytes.Split(p, []byte("\n"))
	for i, line := range lines {
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			lines[i] = append([]byte("data: "), fixMessage(data)...)
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// fixMessage gives one JSON-RPC response's code-0 error a code; any other
// message is returned as it was.
func fixMessage(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["error"] == nil {
		return msg
	}
	var e map[string]json.RawMessage
	if json.Unmarshal(m["error"], &e) != nil || string(e["code"]) != "0" {
		return msg
	}
	var text string
	if json.Unmarshal(e["message"], &text) != nil {
		return msg
	}
	code, err := json.Marshal(codeFor(text))
	if err != nil {
		return msg
	}
	e["code"] = code
	if m["error"], err = json.Marshal(e); err != nil {
		return msg
	}
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// withValidCode is validCodes' rule for a response not yet encoded (the
// stdio connection's): an error that would go out with code 0 (not a
// *jsonrpc.Error, or one with code 0; toWireError keeps a wrapped
// error's code) gets codeFor's. The response is copied, not changed.
func withValidCode(resp *jsonrpc.Response) *jsonrpc.Response {
	var coded *jsonrpc.Error
	if errors.As(resp.Error, &coded) && coded.Code != 0 {
		return resp
	}
	msg := resp.Error.Error()
	fixed := *resp
	fixed.Error = &jsonrpc.Error{Code: codeFor(msg), Message: msg}
	return &fixed
}
