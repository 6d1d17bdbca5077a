package transport

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultDrainTimeout bounds how long a shutdown waits for calls in
	// flight to be answered before their runs are cancelled.
	DefaultDrainTimeout = 10 * time.Second
	// FinalCloseTimeout bounds the last phase of a shutdown: cancelling
	// the runs still going and closing every session. A host bounds its
	// own closing steps after serving (the server's runs, the watcher)
	// with it too.
	FinalCloseTimeout = 5 * time.Second
)

// Backend is what a transport serves: the SDK server sessions connect to,
// the tracker its tool handlers were registered through, and what stops
// the work behind them at shutdown. The transports import nothing of the
// server that builds it; server.(*Server).Backend returns one.
type Backend struct {
	// MCP is the SDK server every session connects to (required).
	MCP *mcp.Server
	// Calls is the tracker MCP's tool handlers were registered through
	// with Calls.Track (required): a shutdown waits on it, and an HTTP
	// DELETE cancels the session's calls through it.
	Calls *Calls
	// CloseRuns stops the work behind the calls still in flight once the
	// drain timeout has passed, so those calls answer at once; it waits
	// for that work, bounded by ctx. nil: there is nothing to stop.
	CloseRuns func(ctx context.Context) error
	// Logger receives the transport's lines; nil discards them.
	Logger *slog.Logger
	// NoParamHeaders promises that no tool of MCP declares a parameter
	// bound to an Mcp-Param-* header (x-mcp-header in its input schema,
	// SEP-2243). The SDK checks those headers against the tool's schema,
	// which the transport cannot read (mcp.Server exports no tool lookup),
	// so only with this promise does the HTTP transport answer a
	// 2026-07-28 tools/call itself (statelessCalls) instead of through the
	// SDK's slower stateless handler.
	NoParamHeaders bool
	// Impl is the Implementation MCP was created with: the SDK puts it in
	// the _meta of every 2026-07-28 result (annotateServerInfo), and
	// mcp.Server does not export it, so the stdio fast lane answers
	// 2026-07-28 calls itself only when it is given (nil: the SDK does).
	Impl *mcp.Implementation
	// Direct, when set, answers a tools/call the stdio fast lane or an
	// HTTP path (statefulCalls, statelessCalls' stand-in sessions) took
	// without the SDK's tools/call handler: the server's own tool
	// table, handler and reply encoding, each middleware's effect done
	// by the code the middleware runs (server.(*Server).AnswerCall). It
	// reports false for a call it does not answer (a tool not in its
	// table), which then goes through the SDK's chain as before. nil:
	// every call those paths take goes through the chain.
	Direct func(ctx context.Context, call DirectCall) (DirectReply, bool)
	// LazyRead promises that Direct does not block except after calling
	// the DirectCall's Wait: set it only when nothing Direct does before
	// Wait waits (the server sets it only over its in-memory run store,
	// whose calls never wait). The stdio fast
	// lane then keeps the right to read stdin while Direct runs, and the
	// worker that read the call reads the next line itself once the reply
	// is written, with no other goroutine readied (fastLane.worker):
	// without it, every call hands that right to another worker first.
	// What the peer sends meanwhile, a notifications/cancelled for the
	// call included, is read only once the call has ended, called Wait
	// or has a reply whose write might block (stdioConn.lockWrite).
	LazyRead bool
}

// DirectCall is one tools/call for Backend.Direct: decoded once by the
// transport, exactly as the SDK's handler would have received it.
type DirectCall struct {
	Session *mcp.ServerSession
	Params  *mcp.CallToolParamsRaw
	// ServerInfo: the request named 2026-07-28 in its _meta, so its
	// result carries the server's Implementation in _meta, as the SDK's
	// annotateServerInfo puts it there (fastlane_era.go).
	ServerInfo bool
	// Wait is nil unless Backend.LazyRead is set. Then Direct calls it
	// before anything that may block (waiting for a run slot or a run,
	// a file system call, a progress notification's write): it hands the right to read stdin on, so the peer's
	// next lines, a notifications/cancelled for this call among them,
	// are read while this call waits. Calling it again does nothing; it
	// may be called only from the goroutine Direct was called on.
	Wait func()
}

// DirectReply is Backend.Direct's answer: either the result's wire bytes
// (Wire: compact JSON, byte for byte what the SDK's encoding of the same
// result gives, _meta annotation included), or a result the transport
// encodes and annotates as it does the chain's (Result), or an error,
// which the transport codes as ErrorCodes does.
type DirectReply struct {
	Wire   json.RawMessage
	Result mcp.Result
	Err    error
}

func (b Backend) logger() *slog.Logger {
	if b.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Logger
}

// stopSessions waits up to drain for tools/call handlers to answer, then
// cancels the runs still going (so their calls answer at once) and closes
// every stateful HTTP session.
//
// The sessions are closed one by one through mcp.Server.Sessions because
// go-sdk v1.8.0 has no exported way to close a StreamableHTTPHandler's
// sessions (its closeAll, mcp/streamable.go, is unexported; upstream
// proposal modelcontextprotocol/go-sdk#440), and http.Server.Shutdown does
// not end an open SSE response: the SDK holds it until the session ends
// (streamableServerConn.hangResponse, mcp/streamable.go). The calls are
// drained first because ServerSession.Close waits for handlers rather
// than cancelling them (see [Calls]).
func (b Backend) stopSessions(drain time.Duration) {
	log := b.logger()
	drainCtx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := b.Calls.Wait(drainCtx); err != nil {
		log.Warn("calls still in flight after the drain timeout; cancelling their runs", "error", err)
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), FinalCloseTimeout)
	defer cancelClose()
	if b.CloseRuns != nil {
		if err := b.CloseRuns(closeCtx); err != nil {
			log.Warn("runs did not stop in time", "error", err)
		}
	}
	if err := b.Calls.Wait(closeCtx); err != nil {
		log.Warn("calls did not answer in time", "error", err)
	}
	for ss := range b.MCP.Sessions() {
		// A session without an id is a 2026-07-28 request's throwaway
		// session, which ends with its own POST (StreamableHTTPHandler.
		// serveStateless, or serveCall, closes it once the POST is answered, and
		// http.Server.Shutdown waits for that): closed here, it could cut
		// off the reply a drained call is still writing. Or it is the
		// stdio session, which ServeStdio closes itself.
		if ss.ID() == "" {
			continue
		}
		ss.Close()
	}
}

// SDKLogger is the logger to hand the SDK (mcp.ServerOptions.Logger,
// mcp.StreamableHTTPOptions.Logger): only its warnings and errors pass,
// tagged with component.
//
// go-sdk v1.8.0 logs every session's lifecycle at INFO ("server
// connecting", "server session connected", "server session disconnected"
// and "session initialized" in mcp/server.go: Server.Connect, Server.bind,
// Server.disconnect, ServerSession.initialized), which on a busy server is noise
// outside the server's own log policy (upstream
// modelcontextprotocol/go-sdk#1204).
func SDKLogger(l *slog.Logger, component string) *slog.Logger {
	return slog.New(minLevel{l.Handler(), slog.LevelWarn}).With("component", component)
}

// minLevel drops records below min on top of what the wrapped handler drops.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(a), m.min}
}
func (m minLevel) WithGroup(n string) slog.Handler { return minLevel{m.Handler.WithGroup(n), m.min} }
