package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessCalls answers a 2026-07-28 tools/call POST itself, through a
// session of its own over its own mcp.Connection (callConn), and hands
// every other stateless request to the SDK's stateless handler (next).
//
// Why: go-sdk v1.8.0 serves a stateless POST by decoding its body six
// times before the session sees it (StreamableHTTPHandler.serveStateless:
// ephemeralConnectOpts' readBatch, twice; streamableServerConn.servePOST:
// readBatch again, twice, extractRequestMeta, and validateMcpHeaders'
// extractName; mcp/streamable.go, streamable_headers.go), plus a walk of
// the tool's input schema for x-mcp-header, each decode building a
// segmentio decoder with a 32 KiB buffer (internal/json.Unmarshal). That
// made a stateless run_prompt cost 1.5 to 1.7 times the server CPU of a
// stateful one (docs/benchmarks.md). Here
// the body is read once (scanEnvelope, as the stdio path reads a line)
// and the request is handed to the session already decoded. No upstream
// issue found.
//
// What the SDK does for such a POST is kept, step for step: a throwaway
// server session per POST with the state the SDK gives a new-protocol one
// (no initialize, so each request's _meta is its client info and
// capabilities: ServerSession.handle, validateRequestMeta); the reply as
// one SSE "message" event, or, for the codes SEP-2575 maps to an HTTP
// status, as that status with the bare JSON-RPC response
// (extractErrorStatus, stream.deliverLocked); the request's progress
// notifications on the same stream before it; server-to-client requests
// and notifications about nothing this request asked for refused as the
// SDK's stateless connection refuses them (jsonrpc2.ErrRejected); the
// call cancelled when its POST goes away
// (StreamableHTTPOptions.PropagateRequestCancellation), with the
// request's own cancellation cause.
//
// Only the common spelling of a call comes here: one request (not a
// batch, not a notification) whose envelope, params and _meta members are
// plain and unique, with Content-Type and Accept as the SDK requires, no
// Last-Event-ID, and the headers the SDK checks (Mcp-Protocol-Version
// equal to _meta's protocol version, Mcp-Method, Mcp-Name) already
// matching. Anything else, and so every refusal those checks make, is the
// SDK's to answer, as before. The x-mcp-header check (SEP-2243) needs the
// tool's input schema, which mcp.Server does not export, so this path runs
// only for a Backend whose tools declare none (Backend.NoParamHeaders).
func statelessCalls(b Backend, log *slog.Logger, next http.Handler, standIns *atomic.Int64) http.Handler {
	return &stateless{srv: b.MCP, impl: b.Impl, chain: captureChain(b.MCP), direct: b.Direct, log: log, next: next,
		clients: map[string]client{}, standIns: standIns}
}

// stateless is statelessCalls' handler. Once the SDK has answered one
// call with a result on a session of serveCall's (which proves the server
// serves 2026-07-28: mcp.Server does not export its versions), a call
// whose _meta the stdio lane would take (newEraCallParams: the version,
// client capabilities, optionally client info and a progressToken, no log
// level) skips even that session: the chain is called on the POST's
// goroutine (serveDirect) with a session standing for the request's
// client, as the stateful path calls it (statefulCalls).
type stateless struct {
	srv   *mcp.Server
	impl  *mcp.Implementation // nil: every call goes through serveCall
	chain mcp.MethodHandler
	// direct is Backend.Direct: the calls it takes skip the chain
	// (callReply).
	direct func(context.Context, DirectCall) (DirectReply, bool)
	log    *slog.Logger
	next   http.Handler
	// newOK is set once serveCall's session answered a call with a result.
	newOK atomic.Bool
	// standIns counts the calls serveDirect answered (tests; nil: not
	// counted).
	standIns *atomic.Int64

	mu sync.Mutex
	// clients are the stand-in sessions by the raw bytes of a client's
	// capabilities and info (standIn).
	clients map[string]client
}

func (s *stateless) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.impl != nil && s.newOK.Load() {
		if call, params, ss, ok := s.standInCall(r); ok {
			if s.standIns != nil {
				s.standIns.Add(1)
			}
			s.serveDirect(w, r, ss, call, params)
			return
		}
	}
	call, ok := directCall(r)
	if !ok {
		s.next.ServeHTTP(w, r)
		return
	}
	if serveCall(w, r, s.srv, s.log, call) {
		s.newOK.Store(true)
	}
}

// standInCall is r's call, its params and the stand-in session it runs
// on, when serveDirect may answer it: directCall's checks, made in the
// one pass over the params that decodes them (callParams, whose plain
// shape is narrower than directCall's: only name, arguments and _meta,
// each once and unescaped; standIn's _meta, which holds the header's
// protocol version). directCall walked the params and their _meta into
// maps first, and callParams walked them again: every call on this path
// paid twice for what the stateful path (statefulCalls.plain) reads once.
func (s *stateless) standInCall(r *http.Request) (*jsonrpc.Request, *mcp.CallToolParamsRaw, *mcp.ServerSession, bool) {
	h := r.Header
	if h.Get(headerProtocolVersion) != protocolStateless || h.Get("Mcp-Method") != directCallMethod {
		return nil, nil, nil, false
	}
	call, ok := oneCall(r)
	if !ok {
		return nil, nil, nil, false
	}
	var ss *mcp.ServerSession
	params, ok := callParams(call.Params, func(raw []byte) (mcp.Meta, bool) {
		var meta mcp.Meta
		meta, ss = s.standIn(raw)
		return meta, ss != nil
	})
	if !ok || ss == nil || params.Name == "" || h.Get(headerMcpName) != params.Name {
		return nil, nil, nil, false
	}
	return call, params, ss, true
}

// maxClientSessions bounds the stand-in sessions kept (standIn): past it
// they are all dropped, and made again as calls need them.
const maxClientSessions = 64

// client is a stand-in session and the values of the _meta members it
// was made for, as the SDK's decoder made them.
type client struct {
	ss         *mcp.ServerSession
	caps, info any
	hasInfo    bool
}

// standIn decodes a 2026-07-28 call's _meta as newEraMeta does and
// returns the session the call runs on; a nil session for a _meta
// newEraMeta refuses or whose members do not decode (the SDK's to judge).
//
// The session stands for the request's client: the state
// ServerSession.handle gives a 2026-07-28 request's throwaway session
// (validateRequestMeta: InitializeParams of the version, the client
// capabilities and the client info, decoded as its decodeMetaValue
// decodes them; no log level), on a connection that has already ended.
// Nothing reaches the connection: what the call sends in its course is
// routeToCall's, a request to the client is refused there, as the SDK's
// stateless connection refuses it, and a notification to every session
// does not reach an ended one, as a stateless POST has no stream for it.
// An ended session holds no goroutine.
//
// A client sends the same _meta with every call, so sessions are kept by
// the raw bytes of its capabilities and client info: bytes that decoded
// once decode the same again, and a call with them is answered without
// decoding them (its Meta shares their decoded values; the handlers
// read only the progressToken, which is decoded for each call).
func (s *stateless) standIn(raw []byte) (mcp.Meta, *mcp.ServerSession) {
	caps, info, tok, ok := newEraMembers(raw)
	if !ok {
		return nil, nil
	}
	var buf [512]byte
	key := append(append(append(buf[:0], caps...), 0), info...)
	s.mu.Lock()
	c, hit := s.clients[string(key)]
	s.mu.Unlock()
	if !hit {
		meta, ok := newEraMeta(raw)
		if !ok {
			return nil, nil
		}
		c.caps = meta[metaClientCapabilities]
		c.info, c.hasInfo = meta[metaClientInfo]
		if c.ss = s.connect(c.caps, c.info, c.hasInfo); c.ss == nil {
			return nil, nil
		}
		s.mu.Lock()
		if len(s.clients) >= maxClientSessions {
			clear(s.clients)
		}
		s.clients[string(key)] = c
		s.mu.Unlock()
	}
	meta := mcp.Meta{metaProtocolVersion: protocolStateless, metaClientCapabilities: c.caps}
	if c.hasInfo {
		meta[metaClientInfo] = c.info
	}
	if tok != nil {
		meta["progressToken"] = tok
	}
	return meta, c.ss
}

// connect makes the stand-in session for a client's decoded capabilities
// and info (see standIn); nil when they do not decode as the SDK decodes
// them.
func (s *stateless) connect(capsValue, infoValue any, hasInfo bool) *mcp.ServerSession {
	caps, err := json.Marshal(capsValue)
	if err != nil {
		return nil
	}
	ip := &mcp.InitializeParams{ProtocolVersion: protocolStateless}
	var v2 *clientCapabilitiesV2
	if sdkUnmarshal(caps, &v2) != nil || v2 == nil {
		return nil
	}
	ip.Capabilities = &v2.ClientCapabilities
	// clientCapabilitiesV2.toV1 (mcp/protocol.go).
	ip.Capabilities.RootsV2 = v2.Roots
	if v2.Roots != nil {
		ip.Capabilities.Roots = *v2.Roots
	}
	if hasInfo {
		info, err := json.Marshal(infoValue)
		if err != nil || sdkUnmarshal(info, &ip.ClientInfo) != nil {
			return nil
		}
	}
	ss, err := s.srv.Connect(context.Background(), endedTransport{}, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{InitializeParams: ip}})
	if err != nil {
		return nil
	}
	// Its read loop ends at once (endedConn.Read): waited for, so that no
	// goroutine of it outlives this call.
	ss.Wait()
	return ss
}

// serveDirect answers one call on ss, on the POST's goroutine, as
// serveCall's session would: its notifications then its reply on the
// POST's stream, the reply with the HTTP status SEP-2575 gives its error
// (errorStatus), the result annotated with the server's Implementation
// (annotateServerInfo), the call cancelled when its POST goes.
func (s *stateless) serveDirect(w http.ResponseWriter, r *http.Request, ss *mcp.ServerSession, req *jsonrpc.Request, params *mcp.CallToolParamsRaw) {
	st := &callStream{w: w, version: protocolStateless, statuses: true, done: r.Context().Done(), headersDue: true}
	defer st.finish()
	ctx := context.WithValue(r.Context(), callStreamKey{}, st)
	resp, data, err := callReply(ctx, s.direct, s.chain, &mcp.CallToolRequest{Session: ss, Params: params, Extra: &mcp.RequestExtra{
		TokenInfo:      auth.TokenInfoFromContext(r.Context()),
		Header:         r.Header,
		CloseSSEStream: func(mcp.CloseSSEStreamArgs) {},
	}}, req.ID, s.impl)
	if err != nil {
		return
	}
	st.reply(resp, data)
}

// endedTransport connects a session to a connection that has ended.
type endedTransport struct{}

func (endedTransport) Connect(context.Context) (mcp.Connection, error) { return endedConn{}, nil }

// endedConn is a connection whose peer has gone: nothing to read, nothing
// delivered.
type endedConn struct{}

func (endedConn) Read(context.Context) (jsonrpc.Message, error) { return nil, io.EOF }
func (endedConn) Write(_ context.Context, msg jsonrpc.Message) error {
	return fmt.Errorf("%w: the connection has ended", errRejected)
}
func (endedConn) Close() error      { return nil }
func (endedConn) SessionID() string { return "" }

// directCallMethod is the one method statelessCalls answers itself.
const directCallMethod = "tools/call"

// directCall is r's tools/call request when statelessCalls may answer it
// itself (see there); ok is false for everything the SDK must see.
func directCall(r *http.Request) (req *jsonrpc.Request, ok bool) {
	h := r.Header
	if h.Get(headerProtocolVersion) != protocolStateless || h.Get("Mcp-Method") != directCallMethod {
		return nil, false
	}
	if req, ok = oneCall(r); !ok {
		return nil, false
	}
	// params: exactly the members CallToolParams decodes without fail
	// whatever their value (extractName decodes the whole of it), _meta
	// an object carrying the header's protocol version, name the header's.
	params, ok := plainMembers(req.Params)
	if !ok {
		return nil, false
	}
	for k := range params {
		if k != "_meta" && k != "name" && k != "arguments" {
			return nil, false
		}
	}
	meta, ok := plainMembers(params["_meta"])
	if !ok || string(meta[metaProtocolVersion]) != newEraVersion {
		return nil, false
	}
	name := params["name"]
	if !plainString(name) || len(name) == 2 || h.Get(headerMcpName) != string(name[1:len(name)-1]) {
		return nil, false
	}
	return req, true
}

// oneCall is the one tools/call request of r, a POST in the common
// spelling whose Content-Type and Accept the SDK accepts and that carries
// no Last-Event-ID, decoded from its body as bufferBody read it; false
// for anything else (a batch, a notification, another method, an escaped
// or repeated envelope member), which the SDK must see.
func oneCall(r *http.Request) (*jsonrpc.Request, bool) {
	h := r.Header
	if r.Method != http.MethodPost || len(h.Values("Last-Event-ID")) > 0 {
		return nil, false
	}
	if ct, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || ct != "application/json" {
		return nil, false
	}
	if jsonOK, streamOK := acceptsBoth(h.Values("Accept")); !jsonOK || !streamOK {
		return nil, false
	}
	v, ok := bufferedView(r)
	if !ok {
		return nil, false
	}
	return v.call()
}

// call is the body's one tools/call request in the common spelling (see
// oneCall); false for anything else.
func (v *bodyView) call() (*jsonrpc.Request, bool) {
	// A batch is the SDK's to refuse; so is a body that is not an object.
	e, ok := v.single()
	if !ok {
		return nil, false
	}
	if code, _, _ := envelopeProblem(e.raw, e.env, true); code != 0 {
		return nil, false
	}
	req, ok := envelopeRequest(e.env)
	if !ok || !req.IsCall() || req.Method != directCallMethod {
		return nil, false
	}
	return req, true
}

// bufferedView is the view of r's body as bufferBody read it; false when
// it was not read there, or was read since.
func bufferedView(r *http.Request) (*bodyView, bool) {
	b, ok := r.Body.(*readBack)
	if !ok || b.Len() != len(b.body) || len(b.body) == 0 {
		return nil, false
	}
	return b.view(), true
}

// acceptsBoth is the SDK's reading of Accept (mcp/streamable.go,
// streamableAccepts): whether application/json and text/event-stream are
// both accepted, wildcards included.
func acceptsBoth(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// plainMembers returns the members of the JSON object raw (valid JSON) by
// name; false when raw is not an object or a name is escaped or repeated,
// where the SDK's decoder must judge.
func plainMembers(raw []byte) (map[string][]byte, bool) {
	it, ok := membersOf(raw)
	if !ok {
		return nil, false
	}
	members := make(map[string][]byte, 4)
	for {
		key, val, escaped, _, more := it.next()
		if !more {
			return members, true
		}
		if escaped {
			return nil, false
		}
		if _, dup := members[string(key)]; dup {
			return nil, false
		}
		members[string(key)] = val
	}
}

// serveCall answers one call on a throwaway session, as serveStateless
// does, and returns once the reply is written or the POST has gone; the
// session is closed (its handler done) before it returns. It reports
// whether the reply was a result.
func serveCall(w http.ResponseWriter, r *http.Request, srv *mcp.Server, log *slog.Logger, req *jsonrpc.Request) (result bool) {
	conn := &callConn{
		post:     r.Context(),
		w:        w,
		id:       req.ID,
		incoming: make(chan jsonrpc.Message, 1),
		answered: make(chan struct{}),
		closed:   make(chan struct{}),
	}
	// The state serveStateless gives a new-protocol POST
	// (ephemeralConnectOpts): empty, the request's _meta is its client.
	// Every handler context of the session derives from this one, so
	// Write knows a message sent in the course of the call by this key.
	ctx := context.WithValue(r.Context(), callKey{}, conn)
	ss, err := srv.Connect(ctx, callTransport{conn}, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{}})
	if err != nil {
		log.Error("connect a session for a 2026-07-28 call", "error", err)
		http.Error(w, "failed connection", http.StatusInternalServerError)
		return false
	}
	defer ss.Close()
	setStreamHeaders(w.Header(), "text/event-stream")
	// What servePOST attaches to every request (RequestExtra); closing the
	// SSE stream early does nothing in 2026-07-28.
	req.Extra = &mcp.RequestExtra{
		TokenInfo:      auth.TokenInfoFromContext(r.Context()),
		Header:         r.Header,
		CloseSSEStream: func(mcp.CloseSSEStreamArgs) {},
	}
	conn.incoming <- req
	select {
	case <-conn.answered:
	case <-r.Context().Done():
	}
	// Nothing is written to w once serveCall has returned: a notification
	// sent later (another goroutine's) finds the stream finished.
	defer conn.finish()
	conn.mu.Lock()
	defer conn.mu.Unlock()
	return conn.replied && conn.result
}

// callTransport hands a session its one callConn.
type callTransport struct{ conn *callConn }

func (t callTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

// callConn is the connection of one 2026-07-28 call's session: Read gives
// the session the one request, Write puts the session's messages about it
// on the POST's response. Its read ending with the POST's cause is what
// cancels the call when the POST goes away (the SDK's jsonrpc2 layer
// cancels every request in flight when its reader fails).
type callConn struct {
	post     context.Context
	id       jsonrpc.ID
	incoming chan jsonrpc.Message
	answered chan struct{} // closed once the reply is written
	closed   chan struct{}
	once     sync.Once

	mu       sync.Mutex
	w        http.ResponseWriter
	replied  bool
	result   bool // the reply was a result
	finished bool // serveCall has returned: w is no longer ours
}

func (c *callConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.incoming:
		return m, nil
	case <-c.post.Done():
		return nil, context.Cause(c.post)
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// errRejected is the SDK's jsonrpc2.ErrRejected (code -32005, matched by
// code through WireError.Is): a message the transport could not deliver,
// which does not break the connection.
var errRejected = &jsonrpc.Error{Code: -32005, Message: "rejected by transport"}

func (c *callConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.IsCall() {
			return fmt.Errorf("%w: stateless servers cannot make requests", errRejected)
		}
		if ctx.Value(callKey{}) != c {
			// Not sent in the course of the call (a list_changed to
			// every session): the SDK puts it on the standalone stream,
			// which a stateless POST has not got.
			return fmt.Errorf("%w: no stream for %s", errRejected, m.Method)
		}
	case *jsonrpc.Response:
		if m.ID != c.id {
			return fmt.Errorf("%w: no request %v", errRejected, m.ID.Raw())
		}
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	status := errorStatus(msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.finished || c.replied {
		return fmt.Errorf("%w: write to closed stream", errRejected)
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.replied, c.result = true, resp.Error == nil
		defer close(c.answered)
	}
	// A failed write is the client gone, which the POST's context reports;
	// the connection itself is not broken (stream.deliverLocked's errors
	// are ErrRejected too).
	// Flushed, the reply too: serveCall returns only after the session's
	// close.
	if err := writeMessage(c.w, data, status, false); err != nil {
		return fmt.Errorf("%w: %w", errRejected, err)
	}
	return nil
}

// writeMessage writes one encoded message: as one SSE event, or, with a
// status, as the whole response (a SEP-2575 error reply: that status and
// the bare JSON-RPC response, as stream.deliverLocked writes it). final
// marks the last message of a response whose handler returns as soon as it
// is written: its event is left to net/http to send (see writeSSE).
func writeMessage(w http.ResponseWriter, data []byte, status int, final bool) error {
	if status == 0 {
		return writeSSE(w, data, !final)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(data)
	return err
}

// callKey marks the contexts of a callConn's session (the value is the
// conn). The SDK tells a message sent in the course of a request by the
// request id it puts in the handler's context (idContextKey, unexported,
// set in ServerSession.handle); the session of a callConn has one request,
// so a context derived from its own is that request's.
type callKey struct{}

// finish ends writing to the response: serveCall is returning.
func (c *callConn) finish() {
	c.mu.Lock()
	c.finished = true
	c.mu.Unlock()
}

func (c *callConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (*callConn) SessionID() string { return "" }

// errorStatus is the HTTP status SEP-2575 gives a JSON-RPC error reply
// (go-sdk v1.8.0, extractErrorStatus): 404 for an unknown method, 400 for
// invalid params, an unsupported protocol version or a missing client
// capability; 0 for anything else, which goes out as an SSE event.
func errorStatus(msg jsonrpc.Message) int {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return 0
	}
	var jerr *jsonrpc.Error
	if !errors.As(resp.Error, &jerr) {
		return 0
	}
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// writeSSE writes data as one SSE "message" event, as the SDK's
// writeEvent does (mcp/event.go) without an event id (no event store, and
// none in 2026-07-28), and flushes it when flush is set.
//
// A call's reply, the last event of its stream, is not flushed when the
// handler returns right after it (callStream.reply): net/http then sends
// the whole response at once when the handler returns, with a
// Content-Length when it is under its 2 KiB chunking buffer, where a flush
// sent the event as one chunk and the chunked body's end in a second write
// once the handler returned. Each call so costs the server one write
// syscall and the client one read less, and the client's SSE reader finds
// the body's end without waiting for another packet. The event's bytes,
// its Content-Type and the other headers stay the SDK's.
func writeSSE(w http.ResponseWriter, data []byte, flush bool) error {
	buf := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, err := w.Write(buf)
	if flush {
		http.NewResponseController(w).Flush()
	}
	return err
}

// statelessPath is the handler of 2026-07-28 requests: statelessCalls in
// front of the SDK's stateless handler when b's tools allow it (see
// Backend.NoParamHeaders), the SDK's handler alone otherwise.
func statelessPath(b Backend, log *slog.Logger, stateless http.Handler, knobs pathKnobs) http.Handler {
	if !b.NoParamHeaders {
		return stateless
	}
	return statelessCalls(b, log, stateless, knobs.standIns)
}
