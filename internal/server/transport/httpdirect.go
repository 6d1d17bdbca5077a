package transport

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callReply is the encoded reply to one plain tools/call that an HTTP path
// answers itself (statefulCalls, stateless.serveDirect), on the caller's
// goroutine: Backend.Direct's answer when it takes the call, as the stdio
// fast lane takes it (fastLane.run), else the receiving chain's. impl,
// when set, is the Implementation a 2026-07-28 result carries in _meta
// (annotateServerInfo); nil for an earlier session's call.
//
// Why: the chain decodes the call's arguments, runs every middleware and
// encodes the result by reflection; Backend.Direct runs the built-in
// tool's handler and writes the result's bytes by hand, which cut the
// stdio lane's instructions per run_prompt call (docs/benchmarks.md). The
// bytes are the chain's: TestStatefulCallsOfTheServerAnswerAsTheSDK and
// TestStatelessCallsOfTheServerAnswerAsTheSDK compare both with the SDK's
// handlers' answers for the real server's tools.
//
// An error is coded as ErrorCodes, outermost in the chain, would code it;
// a result that cannot be encoded is an error, and gets no reply.
func callReply(ctx context.Context, direct func(context.Context, DirectCall) (DirectReply, bool), chain mcp.MethodHandler, req *mcp.CallToolRequest, id jsonrpc.ID, impl *mcp.Implementation) (*jsonrpc.Response, []byte, error) {
	var res mcp.Result
	var err error
	taken := false
	if direct != nil {
		var d DirectReply
		d, taken = direct(ctx, DirectCall{Session: req.Session, Params: req.Params, ServerInfo: impl != nil})
		switch {
		case !taken:
		case d.Err == nil && d.Wire != nil:
			return &jsonrpc.Response{ID: id}, wireResponse(id, d.Wire), nil
		case d.Err != nil:
			err = codedError(methodCallTool, d.Err)
		default:
			res = d.Result
		}
	}
	if !taken {
		res, err = chain(ctx, methodCallTool, req)
	}
	if err == nil && res != nil && impl != nil {
		AnnotateServerInfo(res, impl)
	}
	return encodeReply(id, res, err)
}
