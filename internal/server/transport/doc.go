// Package transport serves an MCP server over streamable HTTP and stdio,
// and owns every adaptation of the go-sdk (v1.8.0) that serving needs.
//
// What it owns: the tools/call tracker ([Calls]) that a shutdown waits on
// and an HTTP DELETE cancels through; the HTTP face ([ServeHTTP],
// [HTTPHandler]: the bearer check, the Host check and [ResolveAllowedHosts],
// the Origin check (originPolicy, [CheckAllowedOrigins]), CORS for the
// listed origins on /mcp (crossOrigin, cors.go), the body cap and
// the body read deadline (bodyDeadline), the session cap (sessionLimit),
// /healthz and the routing of /metrics and of the status page with its
// login form and cookie (status.go), graceful shutdown);
// the routing of each /mcp request to the handler of its protocol era
// (byEra); the stdio face ([ServeStdio]: line framing, the drain at the end of
// input, and the fast lane for plain tools/call requests); and the filter on the SDK's own log lines ([SDKLogger]).
//
// Why it is a package of its own: this code deals in bytes and sessions,
// not prompts, and nearly every piece of it exists because of one specific
// SDK behaviour. Kept together, each with a comment naming that behaviour,
// an SDK upgrade can delete them one at a time: remove the workaround, run
// this package's tests and the e2e suite. It imports nothing of the server:
// it takes the *mcp.Server, the tracker and what stops the runs as a
// [Backend], which server.(*Server).Backend returns.
//
// The workarounds, each against go-sdk v1.8.0 (file and function in the
// SDK; upstream issue where one was found):
//
//   - Two protocol eras on one /mcp (byEra): a StreamableHTTPHandler
//     serves one era. A stateful one refuses every 2026-07-28 request
//     (mcp/streamable.go, streamableServerConn.servePOST: "this server is
//     stateful"); a stateless one (StreamableHTTPOptions.Stateless) gives
//     each POST a throwaway session (StreamableHTTPHandler.serveStateless),
//     which would take sessions, notifications/cancelled on another POST,
//     GET and DELETE from 2025-11-25 clients. byEra sends a request with a
//     session id, or declaring an older version, to the stateful handler,
//     and one declaring 2026-07-28 (Mcp-Protocol-Version, server/discover,
//     or _meta's protocol version) to the stateless one. No upstream issue
//     found; the SDK's docs/protocol.md presents the two as alternatives.
//   - A 2026-07-28 tools/call is answered on a session of our own
//     (statelessCalls, statelesscall.go), for speed rather than a defect:
//     the stateless handler decodes a POST's body six times before the
//     session sees it, and walks the tool's input schema
//     (StreamableHTTPHandler.serveStateless, ephemeralConnectOpts;
//     streamableServerConn.servePOST, readBatch, extractRequestMeta,
//     validateMcpHeaders), each decode a new segmentio decoder with a
//     32 KiB buffer, which made a stateless run_prompt cost 1.5 to 1.7
//     times the server CPU of a stateful one. statelessCalls reads the body once
//     (scanEnvelope), hands the decoded request to a throwaway
//     mcp.ServerSession over its own mcp.Connection (callConn) with the
//     state the SDK gives it, and writes what the SDK would: the reply as
//     one SSE event or, for the codes SEP-2575 maps to a status, that
//     status with the bare response (extractErrorStatus); the call's own
//     notifications before it (told by a context key, as the SDK tells
//     them by its unexported idContextKey); every other message refused
//     as jsonrpc2.ErrRejected. It takes only the common spelling of a call
//     whose headers the SDK would accept, and only for a Backend whose
//     tools bind no Mcp-Param-* header (Backend.NoParamHeaders: that check
//     needs the tool's schema, which mcp.Server does not export);
//     everything else, every refusal included, is the stateless handler's.
//     TestStatelessCallsAnswerAsTheSDK holds the two to the same bytes.
//     Once that session has answered one call with a result (which proves
//     the server serves 2026-07-28), a call whose _meta the stdio lane
//     would take skips even the throwaway session: the handler chain runs
//     on the POST's goroutine with a stand-in session per client, one
//     already ended with the InitializeParams ServerSession.handle would
//     set (stateless.clientSession), so neither Server.Connect nor
//     validateRequestMeta's second decode of _meta is paid per call.
//     With an SDK that decodes a stateless POST once, it can go.
//   - A plain tools/call on an established stateful session is answered
//     without the SDK's stateful handler (statefulCalls, statefulcall.go),
//     for speed rather than a defect: the handler decodes the body about
//     five times and hands the request between two goroutines
//     (streamableServerConn.servePOST, ServerSession.handle,
//     handleReceive). statefulCalls reads it once (oneCall,
//     plainCallParams) and calls the server's receiving chain
//     (captureChain) on the POST's goroutine with the session
//     sessionLimit found for the id, writing the SDK's SSE event (no
//     EventStore, no JSONResponse: no event ids). What the call sends in
//     its course goes on its POST's stream through a sending middleware
//     (routeToCall), since the SDK's routing key (idContextKey) is
//     unexported; a notifications/cancelled on another POST, a dropped
//     POST, a DELETE and an idle close cancel it; an id in flight is
//     refused as servePOST refuses it. TestStatefulCallsAnswerAsTheSDK,
//     TestStatefulCallsCancelAsTheSDK and FuzzStatefulCallsAnswerAsTheSDK
//     hold it to the SDK's bytes. No upstream issue found.
//   - Idle stateful sessions are closed by sessionLimit (idleTimeout), not
//     by the SDK's StreamableHTTPOptions.SessionTimeout: the SDK's timer
//     pauses only for the POSTs its own handler serves
//     (sessionInfo.startPOST, endPOST), so a session busy with calls
//     statefulCalls answers would have been closed as idle.
//   - A dropped 2026-07-28 POST ends its call through the SDK itself
//     (StreamableHTTPOptions.PropagateRequestCancellation on the stateless
//     handler): the request's context is the call's life. For a call
//     statelessCalls answers, the session's read ends with the POST's
//     cause, and the SDK's jsonrpc2 layer cancels the requests in flight
//     when its reader fails (internal/jsonrpc2/conn.go, readIncoming).
//   - A dropped POST ends its calls (cancelOnDisconnect, injectCancel): the
//     stateful streamable handler does not end a call's handler when its
//     POST goes away (mcp/streamable.go, streamableServerConn.servePOST;
//     StreamableHTTPOptions.PropagateRequestCancellation covers only the
//     2026-07-28 protocol, which stateful sessions do not speak; upstream
//     modelcontextprotocol/go-sdk#1093 for stateless servers). Each
//     tools/call of a dropped POST gets a synthetic
//     notifications/cancelled.
//   - A DELETE cancels its session's calls first (cancelOnDisconnect,
//     [Calls.CancelSession]): ServerSession.Close waits for the handlers in
//     flight instead of cancelling them (mcp/server.go, ServerSession.Close;
//     internal/jsonrpc2/conn.go, Connection.Close). No upstream issue found
//     for tools/call; the same wait is behind
//     modelcontextprotocol/go-sdk#1160.
//   - A shutdown drains, cancels, then closes each session (stopSessions):
//     the same wait, plus no exported way to close a StreamableHTTPHandler's
//     sessions (mcp/streamable.go, the unexported closeAll; upstream
//     proposal modelcontextprotocol/go-sdk#440), and http.Server.Shutdown
//     does not end an SSE response the SDK holds open until its session ends
//     (mcp/streamable.go, streamableServerConn.hangResponse).
//   - A shutdown waits for the replies of drained calls to be written, not
//     only for their handlers (Calls.holdReply in cancelOnDisconnect): the
//     stateful transport writes a reply to its POST's stream after the
//     handler returns (mcp/streamable.go, streamableServerConn.servePOST),
//     and closing the session in between ended the stream without it
//     ("request terminated without response"; a flake of
//     TestShutdownDrainsCallsInFlight under -race, 2 in 40 runs on main).
//     2026-07-28 throwaway sessions are not closed at shutdown at all: each
//     ends with its own POST (StreamableHTTPHandler.serveStateless, or
//     serveCall for the calls statelessCalls answers). No upstream issue
//     found.
//   - Idle event streams get a comment line (keepAliveSSE): the SDK writes
//     nothing on a quiet SSE stream (ServerOptions.KeepAlive sends JSON-RPC
//     pings instead; upstream modelcontextprotocol/go-sdk#1229, whose
//     StreamKeepAlive covers only subscriptions/listen streams).
//   - Our Host check replaces the SDK's (StreamableHTTPOptions.
//     DisableLocalhostProtection): its rule (mcp/streamable.go,
//     StreamableHTTPHandler.ServeHTTP) refuses any non-loopback Host on a
//     loopback bind, so an operator's allowed_hosts could not work there.
//     This is a configuration choice, not a defect; no upstream issue.
//   - A bad stdio line is answered, not fatal (lineFilter): the SDK's stdio
//     reader ends the session on the first line it cannot decode or that is
//     too long (mcp/transport.go, newIOConnLimited and ioConn.Read;
//     internal/jsonrpc2/conn.go, readIncoming; upstream
//     modelcontextprotocol/go-sdk#1209), so the filter answers such a line
//     itself (-32700 or -32600) and the SDK never sees it.
//   - A numeric id the SDK would answer under another id is refused
//     (idProblem; lineFilter on stdio, exactIDs over HTTP with 400): the
//     SDK converts it through float64 to int64 (internal/jsonrpc2/
//     messages.go, MakeID), so 1.5 comes back as 1 and 2^70 as -2^63. No
//     upstream issue found.
//   - The end of stdin waits for the replies owed (replyTracker,
//     stdioConn): at EOF the SDK cancels the requests in flight and drops
//     replies not yet written (internal/jsonrpc2/conn.go, readIncoming;
//     upstream modelcontextprotocol/go-sdk#1061).
//   - stdio is served through our own mcp.Connection (stdioConn), not the
//     SDK's IOTransport, for speed rather than a defect: the IOTransport
//     decodes each message three times and hands it between goroutines
//     (mcp/transport.go, newIOConnLimited, ioConn.Read, readBatch), and
//     internal/json.Unmarshal builds a new streaming decoder per message
//     (docs/benchmarks.md, "Through the process boundary"). With an SDK
//     that reads stdio cheaply it can go, with lineFilter's answers kept.
//   - stdio tools/call requests of the plain common shape skip the SDK's
//     per-request machinery (fastLane, fastlane.go), for speed rather
//     than a defect: on a 2025-era session, a tools/call whose params are
//     a plain name, object arguments and at most a progressToken in _meta;
//     and a 2026-07-28 (SEP-2575) one, once the SDK has answered one call
//     of that version with a result on the connection, whose _meta holds
//     exactly the version 2026-07-28, clientCapabilities and optionally
//     clientInfo that decode as validateRequestMeta decodes them, and a
//     progressToken, no logLevel (its unexported context key cannot be
//     set) and no logging/setLevel read before (fastlane_era.go), its
//     result annotated with Backend.Impl as annotateServerInfo does;
//     each is decoded once and handed straight to the server's receiving
//     method-handler chain (every middleware, then the SDK's own
//     tools/call handler), on a goroutine of its own, with its reply
//     encoded by jsonrpc.EncodeMessage. It stands in for jsonrpc2's
//     Connection.acceptRequest, handleAsync and processResult and the
//     canceller's notifications/cancelled (internal/jsonrpc2/conn.go,
//     mcp/transport.go), ServerSession.handle with validateRequestMeta
//     and extractRequestMeta (mcp/server.go, mcp/shared.go), and
//     handleReceive with checkRequest and unmarshalParams (mcp/shared.go),
//     which together cost more than the call over stdio
//     (docs/benchmarks.md). Anything else takes the SDK's path;
//     TestStdioFastLaneMatchesTheSDK holds the two to the same replies and
//     notifications, so with an SDK whose per-request path is cheap the
//     lane can be deleted and that test shows nothing changed. No
//     upstream issue found. A call of a tool the server answers itself
//     (Backend.Direct: server.(*Server).AnswerCall, the built-in tools)
//     skips the chain and the SDK's tools/call handler too: the server
//     runs each middleware's effect from the middleware's own code and
//     returns the result's bytes, written as the SDK's
//     CallToolResult.MarshalJSON writes them; the lane puts the envelope
//     around them (replyWire) and codes an error as ErrorCodes does
//     (codedError). The same test runs every corpus with and without it.
//   - tasks/get, tasks/update and tasks/cancel need Mcp-Name equal to
//     params.taskId (taskNameHeader; the Tasks extension's routing header,
//     mcp-server §4.12): the SDK checks Mcp-Name only for tools/call,
//     resources/read and prompts/get (mcp/streamable_headers.go,
//     validateMcpHeaders). The refusal is the SDK's own for those: HTTP 400
//     with JSON-RPC -32020. No upstream issue found.
//   - Live stateful sessions are capped (sessionLimit): the SDK creates a
//     session for every initialize POST and keeps it until
//     StreamableHTTPOptions.SessionTimeout, without limit and without a
//     hook on creation or expiry (StreamableHTTPHandler.serveStatefulPOST,
//     mcp/streamable.go). They are counted through mcp.Server.Sessions
//     when a new one is asked for, and closed idle ones the way a DELETE
//     closes them. No upstream issue found.
//   - No JSON-RPC error goes out with code 0 (ErrorCodes, validCodes,
//     withValidCode, sessionLimit): the SDK sends every error that is not a
//     *jsonrpc.Error with code 0 (internal/jsonrpc2/messages.go,
//     toWireError): a duplicate initialize (ServerSession.initialize), a
//     call cancelled before its handler started (internal/jsonrpc2/conn.go,
//     Connection.handleAsync) and a call on a session never initialized
//     (ServerSession.handle; over HTTP a POST without Mcp-Session-Id, which
//     sessionLimit answers with 400 and -32600 itself). ErrorCodes, a
//     receiving middleware the server registers last, codes cancellations
//     and a refused initialize on every transport; validCodes, in
//     keepAliveWriter.Write, codes every code-0 error the SDK writes on
//     HTTP, before or after any middleware; withValidCode, in
//     stdioConn.Write, does the same on stdio. No upstream issue found.
//   - The SDK's INFO lines are dropped (SDKLogger): it logs every session's
//     lifecycle at INFO (mcp/server.go: Server.Connect, Server.bind,
//     Server.disconnect, ServerSession.initialized; upstream
//     modelcontextprotocol/go-sdk#1204).
//
// Goroutines: [ServeHTTP] owns the http.Server's Serve goroutine and, at
// shutdown, one Shutdown goroutine, and waits for both before it returns;
// net/http owns one goroutine per connection and Shutdown stops them. The
// HTTP handler owns one keep-alive timer per open SSE response (its
// callback runs only when it fires) and stops it before the response ends,
// and, for each 2026-07-28 call it answers on a throwaway session
// (serveCall), that session's goroutines (the SDK's read loop and the
// call's handler), which it closes, waiting for them, before the POST's
// handler returns. The calls statefulCalls and serveDirect answer run on
// their POST's own goroutine; a stand-in session's read loop ends at
// once, and is waited for when the session is made (clientSession).
// sessionLimit owns, per session it opened, one idle timer (time.AfterFunc:
// no goroutine until it fires) and one goroutine waiting for the session's
// end (ServerSession.Wait), which a DELETE, the idle timer, the session
// cap or the shutdown (stopSessions) brings; the timer stops then too.
// [ServeStdio] owns one goroutine waiting on its session and returns only
// after the session has ended; stdin is read by the stdio fast lane's
// workers, one at a time, which hand the SDK's messages to its own read
// loop (stdioConn), or by that loop itself without the lane or once the
// lane has ended; reading ends when the session closes the connection,
// closing stdin. The lane runs each tools/call it takes on the worker
// that read it (fastLane.worker), one at a time, another worker reading
// meanwhile (with Backend.LazyRead, only from when the call calls
// DirectCall.Wait, goes to the chain or has a reply whose write could
// block; until then nothing more is read, and the worker reads the next
// line itself once the reply is written), and keeps up to maxIdleWorkers
// of them waiting for their turn to read until the lane ends; a
// call is cancelled by a notifications/cancelled naming it, by the end of
// input once the drain is over, by a failed write to stdout (a failed
// write of the lane's own closes stdin too, so the SDK ends its calls as
// after one of its own: stdioConn.abandon) or by the connection closing,
// and ServeStdio waits for all of them and the workers (after its
// session has ended, bounded by FinalCloseTimeout at a shutdown) before
// it returns. A stdin whose read Close cannot interrupt (a blocking file
// descriptor whose peer keeps it open) is waited for at most
// FinalCloseTimeout after the drain; its read loop, and the session close
// waiting on it, are then left to the process's exit. Whoever calls
// ServeHTTP or ServeStdio stops all of them by cancelling ctx.
package transport
