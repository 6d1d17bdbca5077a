package server

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// The direct answer to a tools/call (issue #12): what the SDK's receiving
// chain does for a call of one of the built-in tools, without its
// machinery, for a transport that has already decoded the call
// (transport.Backend.Direct; the stdio fast lane). What the chain does,
// outermost first, and how AnswerCall does the same:
//
//   - transport.ErrorCodes codes an uncoded error: the transport applies
//     the same rule (its codedError) to the error AnswerCall returns.
//   - tasksMiddleware files a task for a run still going: withTaskSlot,
//     the middleware's own body.
//   - promptsGetMiddleware and toolsListMiddleware pass a tools/call on.
//   - go-sdk v1.8.0's serverMultiRoundTripMiddleware (mcp/mrtr.go) acts
//     only on a result with inputRequests, which no built-in tool returns.
//   - its Server.callTool (mcp/server.go) looks the tool up under the
//     server's lock: AnswerCall reads s.direct, the same tracked handlers
//     New registered, fixed since. It validates nothing (a tool added
//     with Server.AddTool gets its arguments raw: parseArguments is the
//     only argument check on both paths, so the errors are the same
//     errors). After the handler, handleMultiRoundTripResult marks the
//     result "complete" for a session initialized at 2026-07-28 or later,
//     and a nil Content becomes [].
//   - ServerSession.handle annotates a 2026-07-28 request's result with
//     the server's Implementation (transport.AnnotateServerInfo).
//
// The result is then written by hand (encodeCallResult) as the SDK's
// CallToolResult.MarshalJSON writes it, HTML escapes included, instead of
// by reflection. TestStdioFastLaneMatchesTheSDK and FuzzDirectAnswer (in
// transport) hold the two paths to the same bytes, and FuzzCallResultWire
// holds the encoding to the SDK's.

// AnswerCall answers call if it names a built-in tool (list_prompts,
// run_prompt, need_prompt when published, check_run) and reports false for
// any other name, which the transport then hands to the SDK's chain. It is
// transport.Backend.Direct; ctx is the call's (cancelled by the client's
// notifications/cancelled).
func (s *Server) AnswerCall(ctx context.Context, call transport.DirectCall) (transport.DirectReply, bool) {
	h, ok := s.direct[call.Params.Name]
	if !ok {
		return transport.DirectReply{}, false
	}
	req := &mcp.CallToolRequest{Session: call.Session, Params: call.Params}
	var slot *pageSlot
	if call.Wait != nil {
		// The lane reads stdin on this goroutine once the call is
		// answered, unless it is told that the call is about to wait.
		switch call.Params.Name {
		case ToolRunPrompt:
			// The registry announces its waits (runs.WithBeforeWait),
			// and the run may be attempted here (runner.go, speculate).
			ctx = context.WithValue(ctx, inlineCallKey{}, call.Wait)
		case ToolNeedPrompt:
			// Retrieval may ask an embedding model.
			call.Wait()
		}
		// list_prompts and check_run wait for nothing: they read the
		// catalog and the in-memory run store (Backend's LazyRead).
	}
	if call.Params.Name == ToolListPrompts {
		// listPrompts leaves its kept page here, as for pagesMiddleware.
		slot = &pageSlot{}
		ctx = context.WithValue(ctx, pageSlotKey{}, slot)
	}
	handle := func(ctx context.Context) (mcp.Result, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil {
			// The chain drops a failed call's result; a nil result and
			// nil error is the transport's to refuse, as from the SDK.
			return nil, err
		}
		return res, nil
	}
	var res mcp.Result
	var err error
	if mayFileTask(req) {
		res, err = withTaskSlot(ctx, handle)
	} else {
		// answerRun files a task only for a caller that declared the
		// extension: without it the slot (and the context carrying it)
		// would be two allocations for nothing (issue #12).
		res, err = handle(ctx)
	}
	if err != nil {
		return transport.DirectReply{Err: err}, true
	}
	ctr, ok := res.(*mcp.CallToolResult)
	if !ok {
		// A task (or nothing): encoded and annotated by the transport,
		// as the chain's are.
		return transport.DirectReply{Result: res}, true
	}
	var wire []byte
	if slot != nil && slot.page != nil && ctr.Meta == nil && slot.page.answers(ctr) {
		wire = s.pageWire(slot.page, completeResult(call.Session), call.ServerInfo)
	} else {
		wire, err = s.encodeCallResult(ctr, completeResult(call.Session), call.ServerInfo)
	}
	if err != nil {
		return transport.DirectReply{Err: internalError("render the %s result: %v", call.Params.Name, err)}, true
	}
	return transport.DirectReply{Wire: wire}, true
}

// mayFileTask reports whether answerRun could file a task for req: when
// the caller declared the Tasks extension (tasksDeclared). A request with
// a _meta is given the slot without asking, since reading capabilities
// from it decodes them, which answerRun does again only for a run still
// going.
func mayFileTask(req *mcp.CallToolRequest) bool {
	return req.Params.Meta != nil || tasksDeclared(req)
}

// completeResult reports whether the SDK marks a tools/call result of ss
// "complete" (go-sdk v1.8.0 clientSupportsMultiRoundTrip: a session
// initialized at 2026-07-28 or later, or not initialized at all).
func completeResult(ss *mcp.ServerSession) bool {
	version := "2026-07-28"
	if ip := ss.InitializeParams(); ip != nil {
		version = ip.ProtocolVersion
	}
	return version >= "2026-07-28"
}

// appendServerInfoMeta appends the _meta member a 2026-07-28 result
// carries the server's Implementation in, and its comma: it comes first,
// as the SDK writes it.
func (s *Server) appendServerInfoMeta(out []byte) []byte {
	out = append(out, `"_meta":`...)
	out = append(out, metaServerInfo...)
	out = append(out, s.serverInfo...)
	return append(out, `},`...)
}

// metaServerInfo is the _meta member a 2026-07-28 result's serverInfo is
// written under, with its quotes and colon.
const metaServerInfo = `{"` + mcp.MetaKeyServerInfo + `":`

// encodeCallResult writes res as go-sdk v1.8.0's CallToolResult.MarshalJSON
// writes it (encoding/json with its HTML escaping, the structuredContent
// compacted) after the SDK's handling: resultType "complete" when complete,
// and the server's Implementation in _meta when serverInfo. The built-in
// tools' results (text blocks and a json.RawMessage body) are written by
// hand; any other shape goes through the SDK's own encoding.
func (s *Server) encodeCallResult(res *mcp.CallToolResult, complete, serverInfo bool) ([]byte, error) {
	body, plainBody := res.StructuredContent.(json.RawMessage)
	if res.Meta != nil || res.InputRequests != nil || res.RequestState != "" || (res.StructuredContent != nil && !plainBody) || !plainTexts(res.Content) {
		return s.encodeBySDK(res, complete, serverInfo)
	}
	out := make([]byte, 0, 64+2*len(body)+len(s.serverInfo))
	out = append(out, '{')
	if serverInfo {
		out = s.appendServerInfoMeta(out)
	}
	out = append(out, `"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"text","text":`...)
		out = appendHTMLString(out, c.(*mcp.TextContent).Text)
		out = append(out, '}')
	}
	out = append(out, ']')
	if res.StructuredContent != nil {
		out = append(out, `,"structuredContent":`...)
		var err error
		if out, err = appendHTMLCompact(out, body); err != nil {
			return nil, err
		}
	}
	if res.IsError {
		out = append(out, `,"isError":true`...)
	}
	if complete {
		out = append(out, `,"resultType":"complete"`...)
	}
	return append(out, '}'), nil
}

// pageWire is encodeCallResult for a list_prompts result that is still
// exactly its kept page (encodedPage.answers): the page's members were
// encoded once, when it was rendered, as CallToolResult.MarshalJSON writes
// them, so a call copies them instead of escaping the text block and
// scanning the structured half again (for a 10,000-prompt catalog's page,
// about 50 KB each time: docs/benchmarks.md, "The 10,000-prompt
// list_prompts page"). TestPageWireIsTheEncodedResult holds the two to the
// same bytes.
func (s *Server) pageWire(p *encodedPage, complete, serverInfo bool) []byte {
	out := make([]byte, 0, 48+len(p.members)+len(s.serverInfo))
	out = append(out, '{')
	if serverInfo {
		out = s.appendServerInfoMeta(out)
	}
	out = append(out, p.members...)
	if complete {
		out = append(out, `,"resultType":"complete"`...)
	}
	return append(out, '}')
}

// plainTexts reports whether every block is a text block with nothing but
// its text.
func plainTexts(content []mcp.Content) bool {
	for _, c := range content {
		t, ok := c.(*mcp.TextContent)
		if !ok || t == nil || t.Meta != nil || t.Annotations != nil {
			return false
		}
	}
	return true
}

// encodeBySDK is encodeCallResult for any other shape: the SDK's handling
// of the result, then its MarshalJSON. resultType, an unexported field, is
// written after it: MarshalJSON writes it last when there are no
// inputRequests (which this path is never given with complete: the
// multi-round-trip results are not the built-in tools').
func (s *Server) encodeBySDK(res *mcp.CallToolResult, complete, serverInfo bool) ([]byte, error) {
	if res.Content == nil {
		res2 := *res
		res2.Content = []mcp.Content{}
		res = &res2
	}
	if serverInfo {
		transport.AnnotateServerInfo(res, s.impl)
	}
	out, err := res.MarshalJSON()
	if err != nil || !complete || res.InputRequests != nil {
		return out, err
	}
	return append(out[:len(out)-1], `,"resultType":"complete"}`...), nil
}

// appendHTMLString appends s as a JSON string the way encoding/json's
// Marshal writes it, HTML escapes included: jsonwire's encoding, then <, >
// and & as \u003c, \u003e and \u0026.
func appendHTMLString(dst []byte, s string) []byte {
	start := len(dst)
	dst = jsonwire.AppendString(dst, s)
	if !htmlSpecial(dst[start:]) {
		return dst
	}
	return htmlEscapeTail(dst, start)
}

// htmlSpecial reports whether b may hold what json.HTMLEscape changes:
// <, > or &, or the lead byte of U+2028 and U+2029 (0xE2, which other
// characters share; HTMLEscape then leaves them). One pass over bytes:
// bytes.ContainsAny with a multi-byte set decodes every rune.
func htmlSpecial(b []byte) bool {
	for _, c := range b {
		if c == '<' || c == '>' || c == '&' || c == 0xE2 {
			return true
		}
	}
	return false
}

// appendHTMLCompact appends the JSON value raw as encoding/json embeds a
// json.RawMessage (compacted, with HTML escapes). The built-in tools write
// their bodies compact already (jsonwire), so the common case is a copy
// after one scan; anything else is compacted by encoding/json itself.
func appendHTMLCompact(dst, raw []byte) ([]byte, error) {
	start := len(dst)
	if compactJSON(raw) {
		dst = append(dst, raw...)
	} else {
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, raw); err != nil {
			return nil, err
		}
		dst = buf.Bytes()
	}
	if !htmlSpecial(dst[start:]) {
		return dst, nil
	}
	return htmlEscapeTail(dst, start), nil
}

// htmlEscapeTail HTML-escapes dst[start:], JSON already (json.HTMLEscape:
// <, >, &, U+2028 and U+2029, which occur only inside strings).
func htmlEscapeTail(dst []byte, start int) []byte {
	var b bytes.Buffer
	json.HTMLEscape(&b, dst[start:])
	return append(dst[:start], b.Bytes()...)
}

// compactJSON reports whether raw, a JSON value, is a single value with
// no whitespace outside its strings, which encoding/json would copy as it
// is. It does not validate: a body that is not JSON fails in
// json.Compact, on the other branch, only if it has whitespace; the
// built-in tools' bodies are encoding/json's or jsonwire's output.
func compactJSON(raw []byte) bool {
	if len(raw) == 0 {
		return false
	}
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return false
		}
	}
	return !inString
}
