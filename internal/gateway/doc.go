// Package gateway is the HTTP client for the gateway contract
// (gateway-picker-webfetch §1.14): GET /models, POST
// /chat/completions without streaming, with tool calls in the openai and
// gemma3_tool_code dialects, and POST /tools/web_search ([Client.Search], which
// the web_search tool adapts). It is the only package that speaks the
// contract, so auth, base URL, timeouts, body caps, error kinds and
// redaction are decided once. POST /embeddings ([Client.Embed]) serves the
// embedding ranker of internal/match (gateway-picker-webfetch §1.6).
//
// It owns everything about the wire so the engine does not: the exact
// request body, reply parsing and validation (choices[0], tool-call
// checks, the reasoning side channel), body caps (16 MiB), auth, timeouts,
// and the Gemma 3 tool_code emulation, which is done entirely here
// (requests rewritten, fences parsed into ToolCalls, [EchoToolResults] for
// the history) so the engine stays dialect-agnostic.
//
// Catalog. A plain OpenAI-compatible /v1/models list (id, object,
// created, owned_by) loads without error: description, context and
// thinking may come from [models."<id>"] overrides instead, and an entry
// that no source completes is returned in [Catalog.Skipped] with what to
// add, not used for binding (design §3.3; the reference rejects the whole
// catalog). Fields that are present but wrong still make the catalog
// malformed. What real servers send besides is read too (issue 10): a
// null data list is empty, a context window comes from max_model_len,
// meta.n_ctx or context_length, and an override no served id matches is
// returned in [Catalog.Unmatched] with the closest served id.
//
// Replies. Besides the reference gateway's shape, the client reads what
// real servers send (recorded in gatewaytest's wire shapes): an inline
// <think> block is reasoning, a refusal is a [KindRefused] error, tool
// calls with no arguments or no type are {} and "function". The thinking
// switch goes out as the model's [ThinkingSwitch] says.
//
// Timeouts. Each request gets its own deadline: [Options.Timeout] for chat
// (default 120s; [gateway].request_timeout), [Options.ModelsTimeout] for the models list (default
// 10s, so boot never hangs: design §3.2) and [SearchTimeout] (30s) for a
// search, all inside the caller's ctx. Through a [Transport] (or a
// wrapper of one with an Unwrap method) the deadline is the direct
// connection's, carried in the request's context, and a request goes to
// the transport itself, a redirect alone to the http.Client; any other
// transport gets a context with the deadline and http.Client.Do, as
// before.
// Running past the client's deadline is a retryable [KindTransport] error
// ([Error.Timeout] reports it); the caller's ctx ending is [KindCancelled] and
// wraps ctx.Err().
//
// Errors. Every failure is an [*Error] with a [Kind]. Error() says what failed
// and what to do and never includes the key. A KindStatus message quotes the
// server's own reason (error.message, error or detail), with credentials cut
// out and capped at 300 characters, because it is often the only place the
// cause is named; Search's quotes its sanitized body for the model. The start
// of a non-2xx body is available, escaped and capped at 2,000 characters,
// through [Error.Body] for debug logs. The key never appears in %v, %#v or
// slog output of a [Client] or [Options].
//
// Connections. The package starts no goroutine of its own, and for the
// usual gateway (a model server on loopback or a LAN over plain http, no
// proxy) none runs per connection either: [Transport] makes such a round
// trip on the caller's goroutine (direct.go), over keep-alive connections
// it pools itself, reading each reply with the standard library's
// http.ReadResponse. A connection goes back to the pool only when its
// reply was read to the end and neither side asked to close; one the
// server closed while idle is noticed before use (a non-blocking peek),
// and a request that met one anyway is sent again exactly when net/http
// would send it again (never a POST the server may have acted on). The
// request's context ending moves the connection's deadline into the past
// (context.AfterFunc), which ends any wait, and the connection is closed.
// No buffer is held while a connection is idle or waiting for the model:
// requests are assembled in a pooled buffer and written in one write, the
// buffer given back as soon as the request is written unless it may be
// sent again (a replayable one keeps it for that), and replies read
// through a pooled 1 KiB reader taken when the reply starts to arrive.
// No Accept-Encoding is sent, so replies come uncompressed.
// Everything else (https, a proxy from the environment, a request net/http
// would treat specially, every request on a platform without the peek,
// Windows among them) goes to [Transport.Fallback], net/http's
// transport, whose read and write loops run two goroutines per open
// connection. [NewTransportFor] keeps as many idle connections on each
// path as the host runs model turns at once (serve: one per run slot), so
// a busy server reuses them instead of dialling per turn; idle ones close
// after 90 s (a timer per connection, no goroutine), or on
// [Client.CloseIdleConnections], which the host calls when it replaces or
// closes its client.
package gateway
