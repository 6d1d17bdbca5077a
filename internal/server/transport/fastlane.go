package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/jsonwire"
)

// Method names the fast lane reads.
const (
	methodCallTool   = "tools/call"
	methodInitialize = "initialize"
	methodCancelled  = "notifications/cancelled"
	methodSetLevel   = "logging/setLevel"
)

// fastLane answers the stdio tools/call requests of the plain common shape
// itself, each on a goroutine of its own, instead of handing them to the
// SDK's connection. It calls the server's own receiving method-handler chain
// (every middleware, then the SDK's tools/call handler with its tool lookup
// and input validation), so what runs is the SDK's, not a copy; what it
// stands in for is only the SDK's per-request machinery around that chain,
// which cost more than the call itself over stdio (docs/benchmarks.md,
// "Where the time goes now"): in go-sdk v1.8.0,
//
//   - jsonrpc2's Connection.acceptRequest, canceller.Preempt,
//     handleAsync and processResult (internal/jsonrpc2/conn.go,
//     mcp/transport.go): the request's context, its cancellation by
//     notifications/cancelled, a handler goroutine plus a queue hand-off,
//     and the error and result encoding of the reply;
//   - ServerSession.handle (mcp/server.go): validateRequestMeta and
//     extractRequestMeta, each decoding the params again with a new
//     decoder, and the initialization gate;
//   - handleReceive (mcp/shared.go): checkRequest, and
//     methodInfo.unmarshalParams decoding the params into
//     *mcp.CallToolParamsRaw with a new decoder.
//
// A request takes the lane only when that machinery would do nothing
// particular with it (plainCallParams, take): a 2025-era session whose
// initialize has been answered, no per-request protocol version in _meta,
// params an object of exactly a plain string name, an object or no
// arguments and a _meta of at most a progressToken, and an id no request
// in flight holds; or a 2026-07-28 call of the same shape whose _meta
// carries the protocol triple as fastlane_era.go describes (newEraMeta,
// callShape), its result annotated as the SDK annotates it. Everything
// else goes to the SDK unchanged, and
// TestStdioFastLaneMatchesTheSDK holds the two paths to the same replies
// and notifications. Two things of the SDK's request context are not
// reproduced, as nothing on this path reads them: jsonrpc2's Async
// releaser (a no-op when absent) and mcp's idContextKey (read only by
// subscribe, subscriptions/listen and the streamable transport).
//
// Goroutines: the lane's workers read stdin, one at a time (tok, the
// right to read), and each call taken runs on the worker that read it
// (worker, readOne), while another reads on: an idle one, or a new one
// the reader starts; what is the SDK's goes to its read loop (toSDK).
// With Backend.LazyRead the reader keeps tok while its call runs and
// reads the next line itself after writing the reply, handing tok on
// (handOn) only when the call is about to wait (DirectCall.Wait), goes
// to the chain, or has a reply whose write might block
// (stdioConn.writeEncoded): so nothing the peer sends, a
// notifications/cancelled for that call included, is read before one of
// those or the call's end, a trade taken for calls the server keeps
// short (Backend.LazyRead). At
// most maxIdleWorkers wait idle, and they return when the lane ends (end,
// which closes stop); the read loop then reads for itself
// (stdioConn.Read). A call ends early through its context: a
// notifications/cancelled naming its id, the end of input (after the
// drain, as the SDK cancels its own requests in readIncoming), a failed
// write to stdout, or the connection closing. ServeStdio waits for all of
// them (wait) before it returns.
type fastLane struct {
	chain mcp.MethodHandler // the server's receiving chain, captured by captureChain
	// direct is Backend.Direct: the calls it takes skip the chain.
	direct func(context.Context, DirectCall) (DirectReply, bool)
	// lazy is Backend.LazyRead (with direct set): a worker keeps tok
	// while its call runs (reader).
	lazy  bool
	base  context.Context // the session's context, without its cancellation (jsonrpc2's notDone)
	conn  *stdioConn
	calls *Calls
	log   *slog.Logger
	// meta checks the 2026-07-28 calls' _meta (callShape).
	meta metaMemo
	// session is set once Connect returns (setSession); nil keeps the
	// lane closed. stored is closed then: the SDK's read loop may read
	// the first calls before Connect has returned, and they wait for it
	// rather than go to the SDK by the luck of the scheduling.
	session atomic.Pointer[mcp.ServerSession]
	stored  chan struct{}
	// ready is set once the reply to initialize is written: before it,
	// the SDK orders calls after the initialize handler, which the lane
	// would not.
	ready atomic.Bool
	// taken counts the calls the lane took (for tests; nil: not counted).
	taken *atomic.Int64
	// workers counts the workers started (for tests; nil: not counted).
	workers *atomic.Int64
	// impl is Backend.Impl: nil keeps the lane closed to 2026-07-28
	// calls, whose results carry it.
	impl *mcp.Implementation
	// newOK is set once the SDK has answered a 2026-07-28 call with a
	// result (probe, answered): the server supports that version and the
	// session's InitializeParams are set (fastlane_era.go).
	newOK atomic.Bool
	// leveled is set once a logging/setLevel has been read: the session's
	// log level may then differ from the "" a 2026-07-28 call without one
	// gets, so such calls are the SDK's from then on.
	leveled atomic.Bool

	mu       sync.Mutex
	initID   string                             // idKey of the first initialize read
	probes   map[string]bool                    // by idKey: SDK calls naming 2026-07-28 (newOK)
	inflight map[string]context.CancelCauseFunc // by idKey
	// tok is the right to read stdin (capacity 1, full while nobody
	// reads): one worker at a time holds it (readOne).
	tok chan struct{}
	// toSDK carries what a worker read for the SDK to its read loop,
	// waiting in stdioConn.Read.
	toSDK chan readResult
	stop  chan struct{} // closed by end: idle workers return
	idle  atomic.Int32  // workers waiting for tok
	ended error         // non-nil: no more replies (the SDK's shuttingDown)
	wg    sync.WaitGroup
}

// captureChain returns the receiving method-handler chain s has now, all
// middlewares included, without changing it: a middleware that returns
// the next handler it is given adds no layer.
func captureChain(s *mcp.Server) mcp.MethodHandler {
	var chain mcp.MethodHandler
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		chain = next
		return next
	})
	return chain
}

func newFastLane(ctx context.Context, b Backend, conn *stdioConn) *fastLane {
	return &fastLane{
		chain:    captureChain(b.MCP),
		direct:   b.Direct,
		lazy:     b.LazyRead && b.Direct != nil,
		base:     context.WithoutCancel(ctx),
		conn:     conn,
		calls:    b.Calls,
		log:      b.logger(),
		impl:     b.Impl,
		inflight: map[string]context.CancelCauseFunc{},
		probes:   map[string]bool{},
		stored:   make(chan struct{}),
		tok:      make(chan struct{}, 1),
		toSDK:    make(chan readResult),
		stop:     make(chan struct{}),
	}
}

// take is called by stdioConn.Read with each request read; it reports
// whether the lane consumed it (a tools/call it runs, a request under the
// id of one of its calls, which it drops as the SDK would, or a
// notifications/cancelled for one of its calls). The SDK
// gets everything else.
func (l *fastLane) take(req *jsonrpc.Request) (laneCall, bool) {
	if req.Method == methodSetLevel {
		l.leveled.Store(true)
	}
	if !req.IsCall() {
		return laneCall{}, req.Method == methodCancelled && l.cancel(req.Params)
	}
	key := idKey(req.ID)
	l.mu.Lock()
	_, dup := l.inflight[key]
	if req.Method == methodInitialize && l.initID == "" {
		l.initID = key
	}
	l.mu.Unlock()
	if dup {
		// The SDK would refuse this id as in use had it seen the first
		// (Connection.acceptRequest): it clears the id so as not to
		// misattribute its error, which makes processResult treat the
		// request as a notification and write nothing. So nothing here
		// either.
		l.log.Debug("dropped a request whose id is in use by a call in flight", "method", req.Method, "id", req.ID.Raw())
		return laneCall{}, true
	}
	if l.conn.calls.has(key) {
		// The SDK drops it (as above), and the reply under its id is
		// another request's: no probe either.
		return laneCall{}, false
	}
	if req.Method == methodCallTool {
		<-l.stored
	}
	ss := l.session.Load()
	if req.Method != methodCallTool || ss == nil {
		l.probe(req, key)
		return laneCall{}, false
	}
	params, newEra, ok := l.callShape(ss, req.Params)
	if !ok {
		l.probe(req, key)
		return laneCall{}, false
	}
	ctx, cancel := context.WithCancelCause(l.base)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended != nil {
		cancel(nil)
		return laneCall{}, false
	}
	l.inflight[key] = cancel
	l.conn.calls.asked(key)
	call := laneCall{ctx: ctx, cancel: cancel, id: req.ID, key: key, session: ss, params: params, newEra: newEra}
	// Counted until the reply is written (run leaves), not only while
	// the handler runs, so a shutdown's drain does not close the session
	// between the two. Not through holdReply, whose release func is an
	// allocation of every call (issue #12).
	l.calls.enter()
	if l.taken != nil {
		l.taken.Add(1)
	}
	// The reader runs the call itself; someone must read on meanwhile
	// (unless lazy: handOn starts them when needed). l.ended was checked
	// above, under l.mu.
	if !l.lazy {
		l.readOnLocked()
	}
	return call, true
}

// callShape decodes a tools/call's params if the lane may take the call
// on session ss: a 2025-era call (no version in _meta) on a 2025-era
// session once its initialize is answered, or a 2026-07-28 call once
// newOK is set (fastlane_era.go); newEra says which.
func (l *fastLane) callShape(ss *mcp.ServerSession, raw []byte) (params *mcp.CallToolParamsRaw, newEra, ok bool) {
	ip := ss.InitializeParams()
	if ip == nil {
		return nil, false, false
	}
	if l.ready.Load() && ip.ProtocolVersion < protocolStateless {
		if params, ok = plainCallParams(raw); ok {
			return params, false, true
		}
	}
	// An initialize read and not yet answered orders the calls after it
	// in the SDK, whatever their era.
	if !l.newOK.Load() || l.leveled.Load() || l.impl == nil || (!l.ready.Load() && l.initRead()) {
		return nil, false, false
	}
	params, ok = l.meta.newEraCallParams(raw)
	return params, true, ok
}

// initRead reports whether an initialize has been read.
func (l *fastLane) initRead() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.initID != ""
}

// probe notes a call the SDK gets that names 2026-07-28 in its _meta,
// until the SDK has answered one with a result (newOK).
func (l *fastLane) probe(req *jsonrpc.Request, key string) {
	if l.newOK.Load() || l.impl == nil || !newEraProbe(req.Params) {
		return
	}
	l.mu.Lock()
	l.probes[key] = true
	l.mu.Unlock()
}

// setSession gives the lane its session once Connect has returned (nil
// when it failed: the lane stays closed).
func (l *fastLane) setSession(ss *mcp.ServerSession) {
	l.session.Store(ss)
	close(l.stored)
}

// laneCall is one call the lane took, with what ends it; the zero value
// (ctx nil) is none. It is passed by value, and the request the chain
// takes is made only for a call Backend.Direct does not answer: two
// allocations of every call fewer (issue #12).
type laneCall struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	id      jsonrpc.ID
	key     string
	session *mcp.ServerSession
	params  *mcp.CallToolParamsRaw
	newEra  bool // a 2026-07-28 call: its result is annotated
	// rd is the worker that read the call, still holding tok unless it
	// has handed it on; nil when the lane is not lazy.
	rd *reader
}

// reader is a lazy lane's worker's hold on tok (Backend.LazyRead): held
// while the call it read runs, until handOn. Only its worker's goroutine
// uses it, the call's.
type reader struct {
	l    *fastLane
	held bool
	// wait is handOn, made once per worker rather than once per call:
	// the calls' DirectCall.Wait.
	wait func()
}

// handOn hands tok on if r holds it (nil: the lane is not lazy).
func (r *reader) handOn() {
	if r == nil || !r.held {
		return
	}
	r.held = false
	r.l.handOn()
}

// handOn hands tok on while its holder runs a call, as take and readOne
// do for every call when the lane is not lazy: to an idle worker, or to
// one started for it. Once the lane has ended none is started: the SDK's
// read loop takes tok (stdioConn.Read).
func (l *fastLane) handOn() {
	l.mu.Lock()
	if l.ended == nil {
		l.readOnLocked()
	}
	l.mu.Unlock()
	l.tok <- struct{}{}
}

// readOnLocked makes sure a worker will take tok next: an idle one, or
// one started now. The caller holds l.mu and has seen the lane not ended:
// end cannot then run between the check and the start (wg.Add while Wait
// may run).
func (l *fastLane) readOnLocked() {
	if l.idle.Load() == 0 {
		l.wg.Add(1)
		go l.worker()
	}
}

// maxIdleWorkers bounds the workers kept waiting for their turn to read.
const maxIdleWorkers = 16

// readResult is one message (or the read's error) for the SDK.
type readResult struct {
	msg jsonrpc.Message
	err error
}

// startReading starts the first worker, which reads the first line.
func (l *fastLane) startReading() {
	l.tok <- struct{}{}
	l.wg.Add(1)
	go l.worker()
}

// worker waits for its turn to read stdin, reads, and runs the call it
// read itself, until the lane ends or enough others wait (leader and
// followers). A call runs on the goroutine that read it, so no hand-off
// to another goroutine lies between the line and its handler: a
// hand-off from the reader woke a thread of its own for the handler in
// 8,025 of 8,040 calls (go tool trace; docs/benchmarks.md), as the
// reader went straight back to a blocking read of stdin. The next reader
// is woken instead, while the call runs. Workers are kept rather than
// started per call because the chain grows a new goroutine's stack
// several times a call (runtime.copystack was 12 to 17 % of the server's
// CPU in the profiles of docs/benchmarks.md). Each runs one call at a
// time, so every call still has a goroutine of its own.
//
// A lazy lane's worker (Backend.LazyRead) keeps tok while its call runs
// and, unless the call handed it on, reads the next line itself: handing
// it on readied another goroutine every call and, with the other CPU
// idle, woke a thread for it, most of what a call over stdio cost beyond
// the TypeScript SDK's at one client (issue #12).
func (l *fastLane) worker() {
	defer l.wg.Done()
	if l.workers != nil {
		l.workers.Add(1)
	}
	var r *reader
	if l.lazy {
		r = &reader{l: l}
		r.wait = r.handOn
	}
	for {
		if r == nil || !r.held {
			if l.idle.Add(1) > maxIdleWorkers {
				l.idle.Add(-1)
				return
			}
			select {
			case <-l.tok:
			case <-l.stop:
				l.idle.Add(-1)
				return
			}
			l.idle.Add(-1)
		}
		call, more := l.readOne(r)
		if call.ctx != nil {
			l.run(call)
		}
		if !more {
			return
		}
		if r != nil && r.held {
			select {
			case <-l.stop:
				// Ended: the SDK's read loop reads from now on.
				r.handOn()
				return
			default:
			}
		}
	}
}

// readOne reads stdin while holding tok, as stdioConn.Read did on the
// SDK's read loop: a call the lane takes is returned to run (tok passed
// on first, or kept in r when the lane is lazy); a message for the SDK
// goes to its read loop, in order (tok passed on after); at the end of
// input the requests read are drained first and the error goes to the
// SDK, and tok is kept: nobody reads after the end. more is false then.
func (l *fastLane) readOne(r *reader) (call laneCall, more bool) {
	c := l.conn
	for {
		msg, err := c.filter.next()
		if err != nil {
			c.calls.wait(c.drain)
			l.end(err)
			l.forward(readResult{err: err})
			return laneCall{}, false
		}
		req, ok := msg.(*jsonrpc.Request)
		if ok {
			if call, taken := l.take(req); taken {
				if r != nil && call.ctx != nil {
					r.held = true
					call.rd = r
					return call, true
				}
				l.tok <- struct{}{}
				if r != nil {
					r.held = false
				}
				return call, true
			}
		}
		if ok && req.IsCall() {
			c.calls.asked(idKey(req.ID))
		}
		l.forward(readResult{msg: msg})
		l.tok <- struct{}{}
		if r != nil {
			r.held = false
		}
		return laneCall{}, true
	}
}

// forward hands r to the SDK's read loop, unless the connection closes
// first (the loop has stopped reading).
func (l *fastLane) forward(r readResult) {
	select {
	case l.toSDK <- r:
	case <-l.conn.closed:
	}
}

// run answers the call through Backend.Direct when it takes it, else
// through the chain, and writes its reply, as jsonrpc2's handleAsync and
// processResult would.
func (l *fastLane) run(call laneCall) {
	defer l.calls.leave() // entered in take
	defer call.cancel(nil)
	if l.direct != nil {
		dc := DirectCall{Session: call.session, Params: call.params, ServerInfo: call.newEra}
		if call.rd != nil {
			dc.Wait = call.rd.wait
		}
		d, ok := l.direct(call.ctx, dc)
		switch {
		case !ok:
		case d.Err == nil && d.Wire != nil:
			l.settled(call.key)
			l.replyWire(call.rd, call.id, d.Wire)
			return
		case d.Err != nil:
			// What ErrorCodes, outermost in the chain, would make of it.
			l.finish(call, nil, codedError(methodCallTool, d.Err))
			return
		default:
			l.finish(call, d.Result, nil)
			return
		}
	}
	// The chain may block anywhere.
	call.rd.handOn()
	res, err := l.chain(call.ctx, methodCallTool, &mcp.CallToolRequest{Session: call.session, Params: call.params})
	l.finish(call, res, err)
}

// settled forgets a call whose reply is about to be written: a
// notifications/cancelled naming it from now on cancels nothing.
func (l *fastLane) settled(key string) {
	l.mu.Lock()
	delete(l.inflight, key)
	l.mu.Unlock()
}

// finish writes the reply to a call the chain (or Backend.Direct, with
// a result left to encode) answered with res and err.
func (l *fastLane) finish(call laneCall, res mcp.Result, err error) {
	if err == nil && res != nil && call.newEra {
		AnnotateServerInfo(res, l.impl)
	}
	result, err := callOutcome(res, err)
	l.settled(call.key)
	l.reply(call.rd, call.id, result, err)
}

// callOutcome is the result and error jsonrpc2 replies with for the
// tools/call chain's answer res, err (handleAsync, processResult), as
// both the stdio lane (fastLane.finish) and the HTTP paths (encodeReply)
// reply: a handler that answered nothing an internal error, one the
// chain did not handle method-not-found.
func callOutcome(res mcp.Result, err error) (any, error) {
	var result any
	if err == nil && res != nil {
		// handleReceive drops the result of a call that failed; a typed
		// nil result is kept, and goes out as null, as through the SDK.
		result = res
	}
	if err != nil && (isNotHandled(err) || errors.Is(err, errMethodNotFound)) {
		err = fmt.Errorf("%w: %q", errMethodNotFound, methodCallTool)
	}
	if result == nil && err == nil {
		err = fmt.Errorf("%w: the tools/call handler returned a nil result and nil error", errInternal)
	}
	return result, err
}

// reply writes one response unless the connection is shutting down (the
// SDK's Connection.write refuses then). It is encoded by
// jsonrpc.EncodeMessage, with stdioConn.Write's code for an uncoded error;
// one that cannot be encoded gets no reply, as in processResult. rd is
// the call's reader (laneCall.rd).
func (l *fastLane) reply(rd *reader, id jsonrpc.ID, result any, err error) {
	key := idKey(id)
	raw, merr := marshalResult(result)
	var data []byte
	resp := &jsonrpc.Response{ID: id, Result: raw, Error: err}
	if merr == nil {
		if err != nil {
			resp = withValidCode(resp)
		}
		data, merr = jsonrpc.EncodeMessage(resp)
	}
	if merr != nil {
		l.log.Error("a tools/call result cannot be encoded; no reply sent", "error", merr)
		l.conn.calls.answered(key)
		return
	}
	l.write(rd, resp, data)
}

// replyWire writes the response whose result is wire (wireResponse).
func (l *fastLane) replyWire(rd *reader, id jsonrpc.ID, wire json.RawMessage) {
	l.write(rd, &jsonrpc.Response{ID: id}, wireResponse(id, wire))
}

// wireResponse is the response whose result is wire, already the compact
// JSON jsonrpc.EncodeMessage would embed, with the envelope EncodeMessage
// would put around it: {"jsonrpc":"2.0","id":…,"result":…} (the id as
// encoding/json writes an int64 or, without HTML escaping, a string).
func wireResponse(id jsonrpc.ID, wire json.RawMessage) []byte {
	data := make([]byte, 0, len(wire)+48)
	data = append(data, `{"jsonrpc":"2.0","id":`...)
	switch v := id.Raw().(type) {
	case int64:
		data = strconv.AppendInt(data, v, 10)
	case string:
		data = jsonwire.AppendString(data, v)
	}
	data = append(data, `,"result":`...)
	data = append(data, wire...)
	data = append(data, '}')
	return data
}

// write writes one encoded response unless the connection is shutting
// down; rd, while it holds tok, hands it on first if the write might
// block (stdioConn.writeEncoded).
func (l *fastLane) write(rd *reader, resp *jsonrpc.Response, data []byte) {
	l.mu.Lock()
	ended := l.ended
	l.mu.Unlock()
	if ended != nil {
		l.conn.calls.answered(idKey(resp.ID))
		return
	}
	if l.conn.writeEncoded(resp, data, rd) != nil {
		l.conn.abandon()
	}
}

// answered is told of every response written: the one to initialize opens
// the lane to 2025-era calls, a result to a 2026-07-28 call of the SDK's
// to 2026-07-28 ones.
func (l *fastLane) answered(resp *jsonrpc.Response) {
	if l.ready.Load() && l.newOK.Load() {
		return
	}
	key := idKey(resp.ID)
	l.mu.Lock()
	open := l.initID != "" && key == l.initID
	probed := l.probes[key]
	delete(l.probes, key)
	l.mu.Unlock()
	if open {
		l.ready.Store(true)
	}
	if probed && resp.Error == nil {
		l.newOK.Store(true)
	}
}

// cancel cancels the lane's call that the notifications/cancelled params
// name, reading them as the SDK's canceller.Preempt does (mcp/transport.go:
// the SDK's decoder into mcp.CancelledParams, then MakeID; params it
// cannot decode, such as a reason that is not a string, cancel nothing).
// It reports whether the call was the lane's.
func (l *fastLane) cancel(params json.RawMessage) bool {
	var p mcp.CancelledParams
	if sdkUnmarshal(params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return false
	}
	l.mu.Lock()
	cancel, ok := l.inflight[idKey(id)]
	l.mu.Unlock()
	if ok {
		cancel(nil)
	}
	return ok
}

// end stops the lane: its calls are cancelled with cause and no reply is
// written after (the SDK's readIncoming and Connection.write, once the
// read or a write has failed or the connection is closing).
func (l *fastLane) end(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended != nil {
		return
	}
	l.ended = cause
	for _, cancel := range l.inflight {
		cancel(cause)
	}
	close(l.stop) // the idle workers return
}

// wait returns once every call the lane started has returned and its
// workers have ended (end has been called).
func (l *fastLane) wait() { l.wg.Wait() }

// plainCallParams decodes tools/call params of the plain shape into what
// the SDK's methodInfo.unmarshalParams makes of them, or reports false for
// any other shape (which then takes the SDK's path): an object whose
// member names are exact and unescaped and each given once, of a "name"
// that is a plain string (required), an "arguments" that is an object
// (kept as its raw bytes, as the SDK's json.RawMessage), and a "_meta"
// holding at most a "progressToken" that is a plain string or an integer
// (a float64 in Meta, as the SDK's decoder makes any JSON number).
func plainCallParams(raw []byte) (*mcp.CallToolParamsRaw, bool) {
	return callParams(raw, plainMeta)
}

// callParams is plainCallParams with the _meta decoded by meta.
func callParams(raw []byte, meta func([]byte) (mcp.Meta, bool)) (*mcp.CallToolParamsRaw, bool) {
	it, ok := membersOf(raw)
	if !ok {
		return nil, false
	}
	p := &mcp.CallToolParamsRaw{}
	var name, args, hasMeta bool
	for {
		key, val, escaped, _, more := it.next()
		if !more {
			break
		}
		if escaped {
			return nil, false
		}
		switch string(key) {
		case "name":
			if name || !plainString(val) {
				return nil, false
			}
			p.Name, name = string(val[1:len(val)-1]), true
		case "arguments":
			if args || val[0] != '{' {
				return nil, false
			}
			p.Arguments, args = val, true
		case "_meta":
			if hasMeta {
				return nil, false
			}
			if p.Meta, ok = meta(val); !ok {
				return nil, false
			}
			hasMeta = true
		default:
			return nil, false
		}
	}
	return p, name
}

// plainMeta decodes a _meta of at most a progressToken (see
// plainCallParams).
func plainMeta(raw []byte) (mcp.Meta, bool) {
	it, ok := membersOf(raw)
	if !ok {
		return nil, false
	}
	m := mcp.Meta{}
	for {
		key, val, escaped, _, more := it.next()
		if !more {
			return m, true
		}
		if escaped || string(key) != "progressToken" || len(m) > 0 {
			return nil, false
		}
		if m["progressToken"], ok = plainToken(val); !ok {
			return nil, false
		}
	}
}

// plainToken decodes a progressToken that is a plain string or an integer
// (a float64, as the SDK's decoder makes any JSON number).
func plainToken(val []byte) (any, bool) {
	if plainString(val) {
		return string(val[1 : len(val)-1]), true
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil || int64(float64(n)) != n {
		return nil, false
	}
	return float64(n), true
}

// The errors jsonrpc2 wraps (internal/jsonrpc2/wire.go): a *jsonrpc.Error
// matches another by code alone (WireError.Is), so these match the SDK's
// own sentinels in errors.Is and give the same code on the wire.
var (
	errMethodNotFound = &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}
	errInternal       = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	errServerClosing  = &jsonrpc.Error{Code: -32004, Message: "server is closing"}
)

// plainErrorType is the type errors.New returns.
var plainErrorType = reflect.TypeOf(errors.New(""))

// isNotHandled reports whether err wraps jsonrpc2.ErrNotHandled, which
// processResult turns into -32601: an unexported errors.New sentinel, so
// it is recognised by its type and text.
func isNotHandled(err error) bool {
	for _, e := range unwrapAll(err) {
		if reflect.TypeOf(e) == plainErrorType && e.Error() == "JSON RPC not handled" {
			return true
		}
	}
	return false
}

// unwrapAll lists err and everything it wraps, depth first.
func unwrapAll(err error) []error {
	if err == nil {
		return nil
	}
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = append(out, unwrapAll(u.Unwrap())...)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}

// marshalResult encodes a result as jsonrpc2's NewResponse does (its
// jsonMarshal: encoding/json without HTML escaping, no trailing newline),
// except that a json.Marshaler's output (every MCP result's) is taken as
// it is: encoding/json would compact it, and jsonrpc.EncodeMessage, which
// every reply goes through, compacts and checks it again, so compacting it
// here too changed nothing but cost a pass over the reply.
func marshalResult(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if m, ok := v.(json.Marshaler); ok {
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return json.RawMessage("null"), nil
		}
		return m.MarshalJSON()
	}
	return jsonwire.Marshal(v)
}
