package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
)

// statefulCalls answers a tools/call POST on an established stateful
// session itself, by calling the server's receiving method-handler chain
// (every middleware, then the SDK's own tools/call handler, captured as
// the stdio fast lane captures it: captureChain) with the session the
// request names, and hands every other stateful request to the SDK's
// stateful handler (next) unchanged.
//
// Why: go-sdk v1.8.0 serves such a POST by decoding its body about five
// times (streamableServerConn.servePOST: readBatch, checkRequest,
// extractRequestMeta; ServerSession.handle: validateRequestMeta,
// extractRequestMeta; handleReceive: unmarshalParams; mcp/streamable.go,
// server.go, shared.go), each decode a new segmentio decoder with a 32 KiB
// buffer, and hands the request between goroutines twice (the session's
// incoming channel, jsonrpc2's handler goroutine). That made a stateful
// run_prompt cost 1.2 times the go-sdk constant tool over HTTP
// (docs/benchmarks.md, "The stateful HTTP path"). Here the body is read
// once (oneCall, plainCallParams) and the chain runs on the POST's own
// goroutine. No upstream issue found.
//
// What the SDK does for such a POST is kept: the reply as one SSE
// "message" event, with the SDK's headers and no event id (HTTPHandler
// gives the stateful handler no EventStore and no JSONResponse, so the SDK
// writes neither ids nor a priming event, and never answers in JSON); the
// notifications the call sends in its course on the same stream before it
// (routeToCall: the SDK tells them by the request id it puts in the
// handler's context under its unexported idContextKey, which cannot be set
// here, so the call's context carries the stream instead and a sending
// middleware puts them on it); what the SDK attaches to the request
// (RequestExtra: the POST's headers, CloseSSEStream); cancellation by a
// notifications/cancelled on another POST of the session (passOn), by
// the POST going away (as cancelOnDisconnect makes the SDK do), and by a
// DELETE or an idle close ([Calls.CancelSession]); a request id already in
// flight on the session refused with 400 as servePOST refuses it.
//
// Only a plain call comes here: one request (oneCall) whose params are a
// plain name, object arguments and at most a progressToken in _meta
// (plainCallParams, the stdio lane's rule), on a session this handler
// opened and has not closed (sessionLimit.session) whose initialize
// declared the protocol version the request's Mcp-Protocol-Version header
// names (one the SDK supports, before 2026-07-28: no header checks
// apply), without a token's user to match (auth.TokenInfo; the SDK checks
// it against the session's). Everything else is the SDK's, as before.
//
// Two differences, neither reachable from this server's tools: a request
// to the client (roots, sampling, elicitation) made in the course of such
// a call is refused with jsonrpc2.ErrRejected's code instead of going on
// the POST's stream (its answer would come back to the SDK's connection,
// which did not send it); and CloseSSEStream ends the stream's events but
// not the HTTP response, which ends when the handler returns.
type statefulCalls struct {
	chain mcp.MethodHandler
	// direct is Backend.Direct: the calls it takes skip the chain
	// (callReply).
	direct func(context.Context, DirectCall) (DirectReply, bool)
	limit  *sessionLimit
	next   http.Handler

	mu sync.Mutex
	// inflight holds the cancel func of each call answered here, by
	// session id and idKey.
	inflight map[string]map[string]context.CancelCauseFunc
	// sdk counts the calls in the POSTs being handed to the SDK, by
	// session id and idKey: a call here under one of those ids is the
	// SDK's to refuse.
	sdk map[string]map[string]int
	// taken counts the calls answered here (tests; nil: not counted).
	taken *atomic.Int64
}

// statefulPath is the handler of stateful requests: statefulCalls in front
// of the SDK's stateful handler (b.MCP's sending middlewares must include
// routeToCall). Without a server (a Backend built for /healthz alone) it
// is the SDK's handler.
func statefulPath(b Backend, limit *sessionLimit, stateful http.Handler, knobs pathKnobs) http.Handler {
	if b.MCP == nil || knobs.sdkOnly {
		return stateful
	}
	s := &statefulCalls{
		chain:    captureChain(b.MCP),
		direct:   b.Direct,
		limit:    limit,
		next:     stateful,
		inflight: map[string]map[string]context.CancelCauseFunc{},
		sdk:      map[string]map[string]int{},
		taken:    knobs.taken,
	}
	limit.cancelCalls = s.cancelSession
	return s
}

// cancelSession cancels the calls answered here on session sid, which is
// closing (sessionLimit.cancelCalls).
func (s *statefulCalls) cancelSession(sid string) {
	s.mu.Lock()
	var cancels []context.CancelCauseFunc
	for _, cancel := range s.inflight[sid] {
		cancels = append(cancels, cancel)
	}
	s.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errSessionEnded)
	}
}

func (s *statefulCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get(headerSessionID)
	if r.Method != http.MethodPost || sid == "" {
		s.next.ServeHTTP(w, r)
		return
	}
	req, params, ss, ok := s.plain(r, sid)
	if !ok {
		s.passOn(w, r, sid)
		return
	}
	s.serve(w, r, sid, ss, req, params)
}

// plain is r's call when statefulCalls may answer it (see there).
func (s *statefulCalls) plain(r *http.Request, sid string) (*jsonrpc.Request, *mcp.CallToolParamsRaw, *mcp.ServerSession, bool) {
	version := r.Header.Get(headerProtocolVersion)
	if version == "" || version >= protocolStateless || !slices.Contains(mcp.SupportedProtocolVersions(), version) ||
		auth.TokenInfoFromContext(r.Context()) != nil {
		return nil, nil, nil, false
	}
	req, ok := oneCall(r)
	if !ok {
		return nil, nil, nil, false
	}
	params, ok := plainCallParams(req.Params)
	if !ok {
		return nil, nil, nil, false
	}
	ss := s.limit.session(sid)
	if ss == nil {
		return nil, nil, nil, false
	}
	if ip := ss.InitializeParams(); ip == nil || ip.ProtocolVersion != version {
		return nil, nil, nil, false
	}
	return req, params, ss, true
}

// serve answers one plain call on ss, on the POST's goroutine, and
// returns once its reply is written or the POST has gone and the call
// has returned.
func (s *statefulCalls) serve(w http.ResponseWriter, r *http.Request, sid string, ss *mcp.ServerSession, req *jsonrpc.Request, params *mcp.CallToolParamsRaw) {
	key := idKey(req.ID)
	// The call's context: the POST's, so cancelled when the POST goes
	// away (the SDK's handler context outlives the POST, and
	// cancelOnDisconnect's notifications/cancelled would end it after the
	// SDK's handler returned; this one returns with the call), or by a
	// notifications/cancelled naming it (passOn), or by the session
	// ending (cancelSession, and Calls.CancelSession through the
	// callStream: Calls.Track makes no context of its own for it). It is
	// one context a waiting run holds, where a WithoutCancel copy with an
	// AfterFunc on the POST's and Track's own were three (about 0.5 KB
	// per run in flight, docs/benchmarks.md "mem5"); the POST's context
	// ends with context.Canceled as cause, as cancel(nil) did.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	s.mu.Lock()
	if s.sdk[sid][key] > 0 {
		s.mu.Unlock()
		s.passOn(w, r, sid)
		return
	}
	if _, dup := s.inflight[sid][key]; dup {
		s.mu.Unlock()
		writeDuplicateID(w, req.ID)
		return
	}
	if s.inflight[sid] == nil {
		s.inflight[sid] = map[string]context.CancelCauseFunc{}
	}
	s.inflight[sid][key] = cancel
	s.mu.Unlock()
	if s.limit.session(sid) != ss {
		// Closed since plain looked, perhaps after the closer cancelled
		// the calls here (sessionLimit.cancelCalls): the SDK's to refuse.
		s.done(sid, key)
		s.passOn(w, r, sid)
		return
	}
	if s.taken != nil {
		s.taken.Add(1)
	}
	defer s.done(sid, key)

	st := &callStream{w: w, version: r.Header.Get(headerProtocolVersion), done: ctx.Done(), cancel: cancel, headersDue: true}
	defer st.finish()
	ctx = context.WithValue(ctx, callStreamKey{}, st)
	resp, data, err := callReply(ctx, s.direct, s.chain, &mcp.CallToolRequest{Session: ss, Params: params, Extra: &mcp.RequestExtra{
		Header:         r.Header,
		CloseSSEStream: st.close,
	}}, req.ID, nil)
	if err != nil {
		// processResult writes nothing for a result it cannot encode.
		return
	}
	st.reply(resp, data)
}

// done forgets a call answered here.
func (s *statefulCalls) done(sid, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight[sid], key)
	if len(s.inflight[sid]) == 0 {
		delete(s.inflight, sid)
	}
}

// passOn hands r to the SDK, after cancelling the calls answered here that
// its notifications/cancelled name, and counts its calls as the SDK's
// while it is served; a call under the id of one answered here is refused
// as the SDK refuses an id in flight.
func (s *statefulCalls) passOn(w http.ResponseWriter, r *http.Request, sid string) {
	var msgs []message
	if v, ok := bufferedView(r); ok {
		msgs = v.messages()
	}
	var keys []string
	var ids []jsonrpc.ID
	for _, m := range msgs {
		if m.Method == methodCancelled {
			s.cancel(sid, m.Params)
			continue
		}
		if m.Method == "" || len(m.ID) == 0 || string(m.ID) == "null" {
			continue
		}
		if id, ok := rawID(m.ID); ok {
			keys = append(keys, idKey(id))
			ids = append(ids, id)
		}
	}
	if len(keys) > 0 {
		s.mu.Lock()
		for i, key := range keys {
			if _, dup := s.inflight[sid][key]; dup {
				s.mu.Unlock()
				writeDuplicateID(w, ids[i])
				return
			}
		}
		if s.sdk[sid] == nil {
			s.sdk[sid] = map[string]int{}
		}
		for _, key := range keys {
			s.sdk[sid][key]++
		}
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, key := range keys {
				if s.sdk[sid][key]--; s.sdk[sid][key] == 0 {
					delete(s.sdk[sid], key)
				}
			}
			if len(s.sdk[sid]) == 0 {
				delete(s.sdk, sid)
			}
		}()
	}
	s.next.ServeHTTP(w, r)
}

// cancel cancels the call answered here on session sid that the
// notifications/cancelled params name, reading them as the SDK's
// canceller.Preempt does (mcp/transport.go: its decoder into
// mcp.CancelledParams, then MakeID); the SDK still gets the notification.
func (s *statefulCalls) cancel(sid string, params json.RawMessage) {
	var p mcp.CancelledParams
	if sdkUnmarshal(params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	s.mu.Lock()
	cancel := s.inflight[sid][idKey(id)]
	s.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// rawID is the id the SDK makes of a request's raw id (its decoder, then
// MakeID, which turns any number into an int64 through float64).
func rawID(raw json.RawMessage) (jsonrpc.ID, bool) {
	var v any
	if sdkUnmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}

// writeDuplicateID is servePOST's refusal of a call whose id is in flight
// on the session, with the stream's headers it has set by then.
func writeDuplicateID(w http.ResponseWriter, id jsonrpc.ID) {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("duplicate in-flight request ID %v", id.Raw()),
	}})
	setStreamHeaders(w.Header(), "application/json")
	w.WriteHeader(http.StatusBadRequest)
	if err == nil {
		w.Write(data)
	}
}

// setStreamHeaders sets the headers servePOST sets on a POST's reply
// stream (an SSE stream, or a JSON refusal).
func setStreamHeaders(hdr http.Header, contentType string) {
	hdr.Set("Cache-Control", "no-cache, no-transform")
	hdr.Set("Content-Type", contentType)
	hdr.Set("Connection", "keep-alive")
}

// encodeReply is the response jsonrpc2 would write for the chain's
// answer (handleAsync, processResult), as the stdio lane builds it
// (callOutcome, fastLane.reply): a handler that answered nothing an
// internal error; an error when the result cannot be encoded, which gets
// no reply.
func encodeReply(id jsonrpc.ID, res mcp.Result, err error) (*jsonrpc.Response, []byte, error) {
	result, err := callOutcome(res, err)
	raw, merr := marshalResult(result)
	if merr != nil {
		return nil, nil, merr
	}
	// An error without a code goes out with code 0, as the SDK's does:
	// keepAliveWriter gives both a valid one (validCodes).
	resp := &jsonrpc.Response{ID: id, Result: raw, Error: err}
	data, err := jsonrpc.EncodeMessage(resp)
	return resp, data, err
}

// callStreamKey marks the context of a call statefulCalls answers; its
// value is the call's *callStream.
type callStreamKey struct{}

// callStream is the POST stream of one call statefulCalls answers: its
// notifications, then its reply, each one SSE event; nothing after the
// reply, after CloseSSEStream, or once the POST's handler has returned.
type callStream struct {
	version string // the stream's protocol version (the request's header)
	// statuses: a 2026-07-28 stream, whose error replies SEP-2575 maps to
	// an HTTP status (errorStatus) go out as that status and the bare
	// response.
	statuses bool
	// done is the Done channel of the call's context, which the
	// transport ends once the call returns (or sooner, the POST gone);
	// cancel cancels it (nil: the POST's own context, which only net/http
	// cancels). Calls.Track runs a handler whose context has this done in
	// it and files cancel for its session, instead of deriving a context
	// of its own (callContext).
	done   <-chan struct{}
	cancel context.CancelCauseFunc
	// headersDue: the stream's headers (setStreamHeaders, an event
	// stream's) are not set yet. They are set at its first write, or when
	// the handler returns having written nothing, rather than when the
	// call starts: a call waiting on its run holds no header map then
	// (about 400 bytes per run in flight, docs/benchmarks.md "mem5").
	headersDue bool

	mu     sync.Mutex
	w      http.ResponseWriter
	ended  bool // the reply is written, or the handler returned
	closed bool // CloseSSEStream
}

// reply puts the call's encoded reply on the stream, the last thing on it.
func (st *callStream) reply(resp *jsonrpc.Response, data []byte) {
	status := 0
	if st.statuses {
		status = errorStatus(resp)
	}
	st.write(data, true, status)
}

// write puts one encoded message on the stream, or, with a status, as the
// whole response; last marks the reply.
func (st *callStream) write(data []byte, last bool, status int) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return fmt.Errorf("%w: write to closed stream", errRejected)
	}
	st.ended = last
	if st.closed {
		return fmt.Errorf("%w: undelivered message: stream not connected or already closed", errRejected)
	}
	st.headersLocked()
	if err := writeMessage(st.w, data, status, last); err != nil {
		return fmt.Errorf("%w: undelivered message: %w", errRejected, err)
	}
	return nil
}

// finish ends writing: the POST's handler is returning, with the
// stream's headers set whatever it wrote, as they were set before the
// call.
func (st *callStream) finish() {
	st.mu.Lock()
	st.ended = true
	st.headersLocked()
	st.mu.Unlock()
}

// headersLocked sets the stream's headers if they are due; st.mu is held.
func (st *callStream) headersLocked() {
	if st.headersDue {
		st.headersDue = false
		setStreamHeaders(st.w.Header(), "text/event-stream")
	}
}

// close is the request's CloseSSEStream (servePOST's, then stream.close):
// a "close" event with the retry delay for protocol 2025-11-25 and later,
// then no more events on this stream.
func (st *callStream) close(args mcp.CloseSSEStreamArgs) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended || st.closed {
		return
	}
	st.closed = true
	st.headersLocked()
	if st.version >= "2025-11-25" && args.RetryAfter > 0 {
		// writeEvent's bytes (mcp/event.go): an empty data line too.
		event := "event: close\nretry: " + strconv.FormatInt(args.RetryAfter.Milliseconds(), 10) + "\ndata: \n\n"
		if _, err := st.w.Write([]byte(event)); err == nil {
			http.NewResponseController(st.w).Flush()
		}
	}
}

// routeToCall is a sending middleware: a notification sent in the course
// of a call statefulCalls answers (its context carries the call's stream)
// goes on that call's stream, encoded as jsonrpc2's Connection.Notify
// encodes it (its params by encoding/json without HTML escaping); what
// the SDK would route by its idContextKey (see statefulCalls). A request
// to the client from such a call is refused (see statefulCalls);
// everything else goes on to the SDK.
func routeToCall(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		st, _ := ctx.Value(callStreamKey{}).(*callStream)
		if st == nil {
			return next(ctx, method, req)
		}
		if !strings.HasPrefix(method, "notifications/") {
			if st.statuses {
				return nil, fmt.Errorf("%w: stateless servers cannot make requests", errRejected)
			}
			return nil, fmt.Errorf("%w: %s cannot reach the client from a call answered without the SDK's stream", errRejected, method)
		}
		var params json.RawMessage
		if p := req.GetParams(); p != nil {
			raw, err := jsonwire.Marshal(p)
			if err != nil {
				return nil, fmt.Errorf("marshaling notify parameters: %v", err)
			}
			params = raw
		}
		data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: method, Params: params})
		if err != nil {
			return nil, err
		}
		return nil, st.write(data, false, 0)
	}
}
