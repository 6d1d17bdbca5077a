package transport

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultMaxSessions is the live stateful HTTP sessions allowed when
	// HTTPOptions.MaxSessions is 0; [server].max_sessions' default
	// (config.DefaultMaxSessions) is the same value.
	DefaultMaxSessions = 512
	// SessionIdleUnderPressure is how long a session may sit unused once
	// three quarters of the session cap are taken: a new session then
	// closes those idle longer, so clients that went away without a DELETE
	// make room for live ones well before SessionIdleTimeout.
	SessionIdleUnderPressure = time.Minute
	// sessionRetryAfter is the Retry-After of a refused session, in
	// seconds: by then a session idle under pressure has been closed.
	sessionRetryAfter = 60
	// codeServerBusy is the JSON-RPC error of a refused session: in the
	// range JSON-RPC 2.0 reserves for implementation-defined server errors
	// (-32000 to -32099); MCP defines no code for it.
	codeServerBusy = -32000
)

// sessionLimit caps the stateful HTTP sessions, which go-sdk v1.8.0 does
// not: StreamableHTTPHandler.serveStatefulPOST (mcp/streamable.go) creates
// a session for every POST without Mcp-Session-Id and keeps it until
// StreamableHTTPOptions.SessionTimeout, with no limit on how many (no
// upstream issue found). Each costs memory and a goroutine, so a client
// looping on initialize could exhaust the process.
//
// The live sessions are the mcp.Server's sessions that have an id (the
// stateless era's throwaway sessions and stdio have none); the SDK offers
// no hook when its handler creates or expires one, so they are counted
// when a new one is asked for. Last use is what this handler sees: a
// request naming the session, with POSTs in progress keeping it busy, as
// the SDK's own idle timer counts it.
type sessionLimit struct {
	server *mcp.Server
	calls  *Calls
	log    *slog.Logger
	max    int
	// cancelCalls cancels the calls statefulCalls answers on a session
	// (statefulPath sets it; a no-op without statefulCalls). A closer
	// marks the session closed first, then cancels: statefulCalls files a
	// call first, then checks the session is still open, so each call is
	// either refused or cancelled.
	cancelCalls func(sid string)

	mu       sync.Mutex
	pending  int                    // session-opening POSTs being served
	use      map[string]*sessionUse // by session id
	closed   map[string]bool        // closed here, until the SDK drops them
	lastWarn time.Time
}

type sessionUse struct {
	last  time.Time
	posts int
	// ss is the session, when this handler opened it (opened): only such
	// a session is idle-timed here and answered by statefulCalls.
	ss *mcp.ServerSession
	// idle closes ss once no POST has named it for SessionIdleTimeout
	// (see idleTimeout); stopped while a POST is in progress.
	idle *time.Timer
	// lastPost is when the last POST naming ss ended.
	lastPost time.Time
}

func newSessionLimit(server *mcp.Server, calls *Calls, log *slog.Logger, max int) *sessionLimit {
	if max <= 0 {
		max = DefaultMaxSessions
	}
	return &sessionLimit{server: server, calls: calls, log: log, max: max,
		cancelCalls: func(string) {},
		use:         map[string]*sessionUse{}, closed: map[string]bool{}}
}

// wrap serves next (the stateful handler) under the cap. A POST without a
// session id opens a session only when it is an initialize; any other call
// there is refused as the transport spec asks (400), with a valid JSON-RPC
// error: the SDK would answer it inside a throwaway session with code 0
// ("method is invalid during session initialization", ServerSession.handle
// in mcp/server.go, which runs before any middleware; no upstream issue
// found).
func (l *sessionLimit) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sid := r.Header.Get(headerSessionID); sid != "" {
			l.touch(sid, r.Method == http.MethodPost, 1)
			defer l.touch(sid, r.Method == http.MethodPost, -1)
			if r.Method != http.MethodDelete {
				next.ServeHTTP(w, r)
				return
			}
			// The SDK answers a DELETE before the session leaves
			// Server.Sessions (the session's close finishes after the
			// reply), so a client that ends one session and opens
			// another at once would be refused; an ended session stops
			// counting as soon as its DELETE succeeded.
			// It is closed to statefulCalls, and its calls there
			// cancelled, before the SDK closes it: the close waits for
			// the SDK's calls (cancelled first: cancelOnDisconnect), and
			// a plain call POSTed meanwhile would otherwise run on after
			// the session ended, where the SDK refuses a call on a
			// closing connection. A DELETE the SDK refuses (an unknown
			// session) reopens nothing this did not close.
			was := l.closing(sid)
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			next.ServeHTTP(sw, r)
			if sw.status >= 300 && !was {
				l.mu.Lock()
				delete(l.closed, sid)
				l.mu.Unlock()
			}
			return
		}
		v, ok := postView(w, r, next)
		if !ok {
			return
		}
		msgs := v.messages()
		opens, stray := sessionlessCalls(msgs)
		if stray != nil {
			writeRPCError(w, http.StatusBadRequest, stray, jsonrpc.CodeInvalidRequest,
				"no session: send initialize first and name the session it returns in the Mcp-Session-Id header (or speak protocol 2026-07-28, which needs no session)")
			return
		}
		if !opens {
			next.ServeHTTP(w, r)
			return
		}
		if !l.reserve() {
			w.Header().Set("Retry-After", strconv.Itoa(sessionRetryAfter))
			writeRPCError(w, http.StatusServiceUnavailable, initializeID(msgs), codeServerBusy,
				fmt.Sprintf("the server has %d live MCP sessions, its limit ([server].max_sessions): end sessions you no longer use (HTTP DELETE), retry later, or ask the operator to raise the limit", l.max))
			return
		}
		// The reservation ends when the reply's header goes out (the
		// session is in Server.Sessions by then), not when the handler
		// returns: a client holding the reply could otherwise open its
		// next session while this one still counts twice.
		ow := &openingWriter{ResponseWriter: w, l: l}
		defer ow.done()
		next.ServeHTTP(ow, r)
	})
}

// touch records a request on session sid; posts counts the POSTs in
// progress, which keep a session from being idle.
func (l *sessionLimit) touch(sid string, post bool, delta int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use[sid]
	if u == nil {
		// Ids the SDK does not know (it answers them 404) must not pile
		// up: past twice the cap, the ended and unknown ones are dropped.
		if len(l.use) >= 2*l.max {
			l.liveLocked()
		}
		u = &sessionUse{}
		l.use[sid] = u
	}
	u.last = time.Now()
	if !post {
		return
	}
	u.posts += delta
	if u.idle == nil || u.ss == nil {
		return
	}
	switch {
	case delta > 0 && u.posts == 1:
		u.idle.Stop()
	case delta < 0 && u.posts == 0:
		u.lastPost = u.last
		u.idle.Reset(SessionIdleTimeout)
	}
}

// idleTimeout closes session sid, which this handler opened, once no POST
// has named it for SessionIdleTimeout, as go-sdk v1.8.0's own timer does
// (StreamableHTTPOptions.SessionTimeout; sessionInfo.startPOST and
// endPOST in mcp/streamable.go pause it while a POST is in progress).
// The SDK's timer is off (HTTPHandler) because statefulCalls answers
// tools/call POSTs without the SDK's handler, which therefore never
// restarts its timer for them: a session busy with such calls would
// have been closed ten minutes after its last other POST. The calls are
// cancelled first, as for a DELETE (see [Calls]).
func (l *sessionLimit) idleTimeout(sid string) {
	l.mu.Lock()
	u := l.use[sid]
	if u == nil || u.ss == nil || u.posts > 0 || l.closed[sid] {
		l.mu.Unlock()
		return
	}
	// A POST that ended while this callback waited for the lock has
	// already reset the timer; one that ended just before it fired has
	// not, and the session has time left.
	if left := SessionIdleTimeout - time.Since(u.lastPost); left > 0 {
		u.idle.Reset(left)
		l.mu.Unlock()
		return
	}
	l.closed[sid] = true
	ss := u.ss
	l.mu.Unlock()
	l.calls.CancelSession(sid)
	l.cancelCalls(sid)
	ss.Close()
}

// closing closes session sid to statefulCalls and cancels its calls
// there; was reports whether it was closed already.
func (l *sessionLimit) closing(sid string) (was bool) {
	l.mu.Lock()
	was = l.closed[sid]
	l.closed[sid] = true
	l.mu.Unlock()
	l.cancelCalls(sid)
	return was
}

// session is the live session sid when this handler opened it and has
// not closed it (DELETE, idle, pressure); nil otherwise, and for ids the
// SDK's handler would answer 404.
func (l *sessionLimit) session(sid string) *mcp.ServerSession {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.use[sid]; u != nil && !l.closed[sid] {
		return u.ss
	}
	return nil
}

// reserve admits one new session, closing sessions idle for
// SessionIdleUnderPressure first when three quarters of the cap are
// taken; false means the cap is reached.
func (l *sessionLimit) reserve() bool {
	l.mu.Lock()
	live := l.liveLocked()
	var idle []string
	if len(live)+l.pending >= l.max*3/4 {
		now := time.Now()
		for _, sid := range live {
			if u := l.use[sid]; u.posts == 0 && now.Sub(u.last) >= SessionIdleUnderPressure {
				idle = append(idle, sid)
				l.closed[sid] = true
			}
		}
	}
	ok := len(live)-len(idle)+l.pending < l.max
	if ok {
		l.pending++
	}
	warn := !ok && time.Now().Sub(l.lastWarn) >= time.Minute
	if warn {
		l.lastWarn = time.Now()
	}
	l.mu.Unlock()
	if len(idle) > 0 {
		l.closeSessions(idle)
	}
	if warn {
		l.log.Warn("refused a new HTTP session: the session limit is reached; raise [server].max_sessions if these clients are expected",
			"max_sessions", l.max)
	}
	return ok
}

// opened ends a reservation; sid is the session the POST opened, if any,
// which is found in the server's sessions (it is there before its id goes
// out) and idle-timed from now.
func (l *sessionLimit) opened(sid string) {
	var ss *mcp.ServerSession
	if sid != "" {
		for s := range l.server.Sessions() {
			if s.ID() == sid {
				ss = s
				break
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending--
	if sid == "" {
		return
	}
	u := l.use[sid]
	if u == nil {
		// liveLocked may have seen the session first, without its owner.
		u = &sessionUse{last: time.Now()}
		l.use[sid] = u
	}
	if ss != nil && u.ss == nil {
		u.ss = ss
		u.lastPost = time.Now()
		u.idle = time.AfterFunc(SessionIdleTimeout, func() { l.idleTimeout(sid) })
		// However the session ends (a DELETE, idle, the shutdown, the
		// SDK's own close), statefulCalls must stop answering on it: the
		// SDK answers 404 then. This goroutine ends with the session.
		go func() {
			ss.Wait()
			l.ended(sid, ss)
		}()
	}
}

// ended forgets session ss, which has closed, and stops its idle timer.
func (l *sessionLimit) ended(sid string, ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.use[sid]; u != nil && u.ss == ss {
		u.ss = nil
		u.idle.Stop()
	}
}

// liveLocked lists the open sessions' ids and forgets the ones that are
// gone; l.mu is held.
func (l *sessionLimit) liveLocked() []string {
	var live []string
	present := map[string]bool{}
	for ss := range l.server.Sessions() {
		sid := ss.ID()
		if sid == "" {
			continue
		}
		present[sid] = true
		if l.closed[sid] {
			continue
		}
		if l.use[sid] == nil {
			l.use[sid] = &sessionUse{last: time.Now()}
		}
		live = append(live, sid)
	}
	for sid, u := range l.use {
		if !present[sid] && u.posts == 0 {
			if u.idle != nil {
				u.idle.Stop()
			}
			delete(l.use, sid)
		}
	}
	for sid := range l.closed {
		if !present[sid] {
			delete(l.closed, sid)
		}
	}
	return live
}

// closeSessions ends idle sessions the way a DELETE does: calls first
// (ServerSession.Close waits for them; see [Calls]), then the session,
// whose close removes it from the SDK's handler.
func (l *sessionLimit) closeSessions(ids []string) {
	want := map[string]bool{}
	for _, sid := range ids {
		want[sid] = true
		l.calls.CancelSession(sid)
		l.cancelCalls(sid)
	}
	for ss := range l.server.Sessions() {
		if want[ss.ID()] {
			ss.Close()
		}
	}
	l.log.Debug("closed HTTP sessions idle under session pressure", "sessions", len(ids), "idle_for", SessionIdleUnderPressure)
}

// sessionlessCalls reads the messages of a POST without a session id:
// opens is whether it carries an initialize, stray the id of its first
// other request (ping aside, which the SDK answers without a session), nil
// when none.
func sessionlessCalls(msgs []message) (opens bool, stray json.RawMessage) {
	for _, m := range msgs {
		switch {
		case m.Method == "initialize":
			opens = true
		case len(m.ID) > 0 && string(m.ID) != "null" && m.Method != "" && m.Method != "ping" && stray == nil:
			stray = m.ID
		}
	}
	return opens, stray
}

// initializeID is the id of the initialize among msgs, for its refusal.
func initializeID(msgs []message) json.RawMessage {
	for _, m := range msgs {
		if m.Method == "initialize" {
			return m.ID
		}
	}
	return nil
}

type message struct {
	Method string
	ID     json.RawMessage
	Params json.RawMessage // raw, nil when absent
}

// writeRPCError answers with a JSON-RPC error response under id (null
// when nil), as the transport spec's HTTP errors carry one.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": msg},
	})
	if err != nil {
		http.Error(w, msg, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// statusWriter records the status of a reply that carries no body worth
// wrapping (a DELETE's).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// openingWriter ends a session reservation at the reply's header.
type openingWriter struct {
	http.ResponseWriter
	l    *sessionLimit
	sent bool
}

func (o *openingWriter) done() {
	if !o.sent {
		o.sent = true
		o.l.opened(o.Header().Get(headerSessionID))
	}
}

func (o *openingWriter) WriteHeader(code int) {
	o.done()
	o.ResponseWriter.WriteHeader(code)
}

func (o *openingWriter) Write(b []byte) (int, error) {
	o.done()
	return o.ResponseWriter.Write(b)
}

func (o *openingWriter) Flush() {
	o.done()
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (o *openingWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }
