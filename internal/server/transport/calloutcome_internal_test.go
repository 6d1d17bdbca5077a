package transport

import (
	"errors"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallOutcomeIsJSONRPC2s holds callOutcome, which both the stdio lane
// and the HTTP paths reply through, to what jsonrpc2's handleAsync and
// processResult make of a handler's answer: a method the chain did not
// handle is method-not-found naming tools/call, nothing at all is an
// internal error, a failed call's result is dropped, and a typed nil
// result is kept.
func TestCallOutcomeIsJSONRPC2s(t *testing.T) {
	wantErr := func(name string, err error, code int64, msg string) {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != code || err.Error() != msg {
			t.Errorf("%s: error %v, want code %d and %q", name, err, code, msg)
		}
	}

	res, err := callOutcome(nil, fmt.Errorf("wrapped: %w", errMethodNotFound))
	if res != nil {
		t.Errorf("method not found: result %v, want none", res)
	}
	wantErr("method not found", err, jsonrpc.CodeMethodNotFound, `method not found: "tools/call"`)

	res, err = callOutcome(nil, errors.New("JSON RPC not handled"))
	if res != nil {
		t.Errorf("not handled: result %v, want none", res)
	}
	wantErr("not handled", err, jsonrpc.CodeMethodNotFound, `method not found: "tools/call"`)

	_, err = callOutcome(nil, nil)
	wantErr("nothing", err, jsonrpc.CodeInternalError, "internal error: the tools/call handler returned a nil result and nil error")

	failed := errors.New("boom")
	res, err = callOutcome(&mcp.CallToolResult{}, failed)
	if res != nil || err != failed {
		t.Errorf("failed call: %v, %v; want no result and its error", res, err)
	}

	var typedNil *mcp.CallToolResult
	res, err = callOutcome(typedNil, nil)
	if res == nil || err != nil {
		t.Errorf("typed nil result: %v, %v; want it kept, no error", res, err)
	}
}
