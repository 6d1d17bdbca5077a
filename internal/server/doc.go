// Package server is the MCP face of PromptForge: it publishes the four
// built-in tools (list_prompts, run_prompt, need_prompt, check_run) over the
// live catalog, every healthy prompt as an MCP prompt (prompts/get runs it),
// and, when [catalog].tools names them, prompts as tools of their own; it
// runs prompts through the run registry and the engine, checks their typed
// arguments, forwards progress, renders results, and answers tools/list in
// its own order and pages. The MCP prompts and prompt tools registered with
// the SDK follow the catalog after every reload (follow, called through
// catalog.Handle.OnPublish on the reloading goroutine), so the SDK sends
// the list_changed notifications. It builds nothing from prompts.toml: package app
// assembles the process and hands a [Server] everything in [Options].
//
// The transports (streamable HTTP and stdio) and the go-sdk workarounds
// they need live in the transport subpackage, which imports nothing of
// server: the server registers its tool handlers through a
// transport.Calls and hands the transports a transport.Backend
// ([Server.Backend]).
//
// Why the rest is one package: the tool surface shares one Server value
// (catalog handle, run registry, gateway client and model catalog, live
// tools, file roots, metrics), and the wire contract it implements
// (mcp-server §4, §6) is easier to keep exact in one place.
//
// Run traces (traces.go, status.go): each run's engine tracer feeds the
// metrics (tokens by model, gateway errors by kind) and, with
// Options.Tracing, a recorder the registry keeps in the run's record (over
// a shared run store, which cannot hold it, the trace book keeps it, with
// the registry's retention); check_run's include_trace, the trace JSON and
// the status page (StatusHandler, mounted by the transport behind its
// token) read it there. The page is server-rendered and refreshes itself; it
// starts no goroutine.
//
// list_prompts pages (listing.go) are rendered once per catalog
// generation, model list and tool set and kept with the bytes the SDK
// would write for them; a receiving middleware (pagesMiddleware) hands
// the SDK those bytes instead of a result to encode again. The cache is
// emptied by the next listing under other inputs; it starts no goroutine.
//
// Decisions that differ from the reference server (design §3 wins):
//
//   - A call that is cancelled (notifications/cancelled, or an HTTP client
//     that disconnects before its reply) cancels its run: the slot comes
//     back and the record says the caller cancelled. On streamable HTTP a
//     dropped POST is turned into a notifications/cancelled for the calls
//     it carried, because the SDK's stateful transport does not end the
//     handler on its own (see the transport package).
//   - A DELETE of an HTTP session cancels the calls in flight on it before
//     the SDK closes it (the SDK's close waits for handlers), so their runs
//     stop, their slots come back and the DELETE is answered promptly.
//   - input_file and output_file must resolve, symlinks evaluated (a
//     dangling link is judged by where it points), inside one of
//     [paths].files; the file is then opened through os.Root so a symlink
//     swapped in after the check cannot escape either. Whatever the roots
//     (the default is the working directory, which usually holds them),
//     input_file may never be prompts.toml or its env file (the gateway
//     key), and output_file may never be those nor anything inside
//     [paths].prompts, so a caller cannot rewrite what the watcher
//     publishes to every caller. Those files are also judged by identity
//     (os.SameFile), at the check and on the opened handle, so a hard
//     link to them inside a root is refused; an existing output_file with
//     more than one hard link is refused before it is truncated, since it
//     may be a published prompt. app.Boot warns when a root is / or the
//     home directory. An existing output_file must be a regular file and is
//     opened without blocking (a FIFO would otherwise hold the run in
//     open(2) forever). output_file on a prompt that declares no output is
//     ignored, unchecked (mcp-server §4.6 step 6).
//   - At the end of stdin the session is not closed until every request
//     already read has been answered (at most the drain timeout): piped
//     use, requests then EOF, gets every reply.
//   - Unknown argument keys are refused with -32602, as the schemas'
//     additionalProperties:false advertises; a tools/call for a name we do
//     not publish gets the SDK's -32602.
//   - Tools carry an outputSchema for their structuredContent.
//   - The running reply does not wait out the progress grace period: the
//     progress queue is closed as soon as the call has its answer.
//   - Progress has a heartbeat: at least every 10 s a frame says what the
//     run is waiting on (a model turn, a tool call), not only at section
//     starts (mcp-server §6.2).
//   - The default reply_deadline is 45 s, not 240 s: below the 60 s after
//     which TypeScript-SDK clients cancel a call (mcp-server §2.2).
//   - HTTP-only settings ([server].api_key, allowed_hosts) are checked
//     right after the configuration loads, not after the catalog, the
//     gateway and the watcher have been prepared.
//   - Lines on stdio that are not JSON-RPC are dropped (as the reference
//     does) and counted in the log at debug level; the session continues.
//   - The Tasks extension (io.modelcontextprotocol/tasks, SEP-2663) is
//     advertised, and for a caller that declared it a run still going at
//     the reply deadline is answered with a CreateTaskResult instead of the
//     running record (mcp-server §4.12, tasks.go). A task is a run: its id
//     is the run id and the registry's record is its only state, so
//     tasks/get and check_run read the same run, and tasks/cancel cancels
//     it as notifications/cancelled would. The go-sdk v1.8.0 routes the
//     tasks/* methods as custom methods, but a tool handler cannot return
//     anything but a CallToolResult: a receiving middleware swaps in the
//     task the handler filed in its context (see answerRun, which every
//     tool that launches runs answers through).
//
// Runs reuse the prompt the catalog parsed: a generation is immutable, so a
// file saved half-written while a run is going cannot reach that run; the
// next call sees the reloaded (possibly broken) entry.
//
// Goroutines: each run is the registry's (a stdio run_prompt's is first
// attempted on its call's goroutine, runs.Registry.LaunchInline, and
// started on a run goroutine if the attempt stops: runner.go, speculate);
// each call with a progress token owns one pump goroutine (which also
// sends the heartbeats, on its own timer) that it stops before replying.
// The transport package documents the goroutines it owns (the listener, the shutdown,
// one keep-alive goroutine per open SSE response, the stdio session's
// waiter). app.Boot owns the watcher and the transport it serves on, and
// stops both on shutdown by cancelling their context.
package server
