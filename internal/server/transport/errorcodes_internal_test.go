package transport

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call cancelled before its handler started is answered by the SDK's
// jsonrpc2 layer with the bare "context canceled" and code 0
// (Connection.handleAsync), beyond any middleware and too racy to provoke
// through a client: these are its bytes as the stateful transport writes
// them, and what reaches the client instead.
func TestValidCodesOnTheWire(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":0,\"message\":\"context canceled\"}}\n\n",
			"event: message\ndata: {\"error\":{\"code\":-32001,\"message\":\"context canceled\"},\"id\":7,\"jsonrpc\":\"2.0\"}\n\n"},
		{`{"jsonrpc":"2.0","id":"a","error":{"code":0,"message":"duplicate \"initialize\" received","data":1}}`,
			`{"error":{"code":-32600,"data":1,"message":"duplicate \"initialize\" received"},"id":"a","jsonrpc":"2.0"}`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":0,"message":"boom"}}`,
			`{"error":{"code":-32603,"message":"boom"},"id":1,"jsonrpc":"2.0"}`},
		// Coded errors, results that merely mention a code 0, and keep-alive
		// comments pass byte for byte.
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":{\"code\":0}}}\n\n", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"x\":{\"code\":0}}}\n\n"},
		{": keep-alive\n\n", ": keep-alive\n\n"},
	} {
		if got := string(validCodes([]byte(tc.in))); got != tc.want {
			t.Errorf("validCodes(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
		}
	}
}

// A handler's cancellation and a refused initialize get a valid code; a
// coded error, and any other (the SDK's own sentinels among them, which it
// must still recognise), pass unchanged.
func TestErrorCodesMiddleware(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		method string
		err    error
		want   int64 // 0: the error itself comes back
	}{
		{"tools/call", context.Canceled, CodeRequestCancelled},
		{"prompts/get", fmt.Errorf("wait for a run slot: %w", context.DeadlineExceeded), CodeRequestCancelled},
		{"initialize", errors.New(`duplicate "initialize" received`), jsonrpc.CodeInvalidRequest},
		{"tools/call", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad cursor"}, jsonrpc.CodeInvalidParams},
		{"foo/bar", boom, 0},
	} {
		h := ErrorCodes(func(context.Context, string, mcp.Request) (mcp.Result, error) { return nil, tc.err })
		_, err := h(context.Background(), tc.method, nil)
		if tc.want == 0 {
			if err != tc.err {
				t.Errorf("%s: %v became %#v, want it unchanged", tc.method, tc.err, err)
			}
			continue
		}
		var coded *jsonrpc.Error
		if !errors.As(err, &coded) || coded.Code != tc.want || coded.Message != tc.err.Error() {
			t.Errorf("%s: %v became %#v, want code %d and the same message", tc.method, tc.err, err, tc.want)
		}
	}
}
