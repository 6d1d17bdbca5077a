package transport

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// DefaultKeepAlive is how often an idle SSE stream gets a comment
	// line, so proxies and clients do not take a long run for a dead
	// connection.
	DefaultKeepAlive = 15 * time.Second
	// maxBodyBytes caps an MCP request body (413 beyond).
	maxBodyBytes = 4 << 20
	// SessionIdleTimeout closes an HTTP session nobody has used for this
	// long. Sessions cost memory and goroutines, and a client that goes
	// away without a DELETE would otherwise hold its session for the life
	// of the process; a session with a request in progress is not idle.
	SessionIdleTimeout = 10 * time.Minute
	// DefaultBodyTimeout bounds how long a request body may take to arrive
	// once its headers have: 4 MiB (the body cap) in 30 s is about 1.1
	// Mbit/s, slower than any client an MCP server expects, and a client
	// that trickles a body (a slow-loris, authenticated or not) holds its
	// connection and goroutine no longer than that.
	DefaultBodyTimeout = 30 * time.Second
	// readHeaderTimeout bounds how long a connection may take to send its
	// request headers (a slow-loris defence).
	readHeaderTimeout = 10 * time.Second
	// idleConnTimeout closes a keep-alive connection that carries no
	// request for this long; open SSE responses are not idle.
	idleConnTimeout = 2 * time.Minute

	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
)

// ErrMissingToken is the HTTP transport refusing to start without
// [server].api_key: an MCP endpoint on the network must authenticate.
var ErrMissingToken = errors.New("[server].api_key is required to serve over http: set it in prompts.toml (a value such as \"${PROMPTFORGE_MCP_API_KEY}\" counts as unset while that variable is not exported), or serve over stdio with serve --stdio")

// HTTPOptions configure the streamable HTTP transport.
type HTTPOptions struct {
	// APIKey is the bearer token every request to /mcp and /metrics must
	// present (required). Surrounding whitespace is ignored, on the
	// configured token as on the presented one.
	APIKey string
	// AllowedHosts are the Host authorities requests may name (required;
	// see ResolveAllowedHosts). An entry without a port matches any port.
	AllowedHosts []string
	// AllowedOrigins are the browser origins ("scheme://host[:port]") a
	// request's Origin may be besides the server's own (the request's Host
	// and port). See originPolicy.
	AllowedOrigins []string
	// KeepAlive is the SSE comment interval; 0 means DefaultKeepAlive.
	KeepAlive time.Duration
	// MaxSessions caps the live stateful sessions; 0 means
	// DefaultMaxSessions. See sessionLimit.
	MaxSessions int
	// BodyTimeout bounds each request body's arrival; 0 means
	// DefaultBodyTimeout. See bodyDeadline.
	BodyTimeout time.Duration
	// DrainTimeout bounds a graceful shutdown's wait for calls in flight;
	// 0 means DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Metrics serves /metrics, behind the same checks as /mcp; nil
	// answers 404 there.
	Metrics http.Handler
	// Health, when set, is the shared run store's check, which /healthz
	// reports (see healthz).
	Health func(context.Context) error
	// Status serves the status page under StatusPath (/status/), behind
	// the Host check and the bearer token or the login form's cookie
	// (status.go); nil answers 404 there.
	Status http.Handler
}

// ResolveAllowedHosts applies mcp-server §9.3: a configured list is used as
// given; an empty list is the loopback names on a loopback bind, and a
// refusal on any other bind, since a server reachable from the network
// must know the names it is reached by.
func ResolveAllowedHosts(bind netip.AddrPort, configured []string) ([]string, error) {
	if len(configured) > 0 {
		return append([]string(nil), configured...), nil
	}
	if bind.Addr().IsLoopback() {
		return []string{"localhost", "127.0.0.1", "::1"}, nil
	}
	return nil, fmt.Errorf("[server].bind %s is not loopback, so [server].allowed_hosts must enumerate the authorities clients reach it by", bind)
}

// HTTPHandler routes /mcp (streamable HTTP in both protocol eras, behind
// the bearer and Host checks: see byEra), /metrics (the same checks) and /healthz (open).
func HTTPHandler(b Backend, opts HTTPOptions) (http.Handler, error) {
	return httpHandler(b, opts, pathKnobs{})
}

// pathKnobs are the tests' view of the paths that answer calls without
// the SDK's handlers: whether statefulCalls answers at all, how many calls
// it took, and how many 2026-07-28 calls stateless answered on a stand-in
// session (nil: not counted).
type pathKnobs struct {
	sdkOnly  bool
	taken    *atomic.Int64
	standIns *atomic.Int64
}

func httpHandler(b Backend, opts HTTPOptions, knobs pathKnobs) (http.Handler, error) {
	token := strings.TrimSpace(opts.APIKey)
	if token == "" {
		return nil, ErrMissingToken
	}
	hosts, err := parseAllowedHosts(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	origins, err := parseAllowedOrigins(opts.AllowedOrigins)
	if err != nil {
		return nil, err
	}
	keepAlive := opts.KeepAlive
	if keepAlive <= 0 {
		keepAlive = DefaultKeepAlive
	}
	log := b.logger()
	getServer := func(*http.Request) *mcp.Server { return b.MCP }
	stateful := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Logger:              SDKLogger(log, "mcp-http"),
		MaxRequestBodyBytes: maxBodyBytes,
		// No SessionTimeout: sessionLimit closes idle sessions itself
		// (idleTimeout), since the SDK's timer never hears of the
		// tools/call POSTs statefulCalls answers.
		// Our Host check below replaces the SDK's loopback-only rule
		// (StreamableHTTPHandler.ServeHTTP, mcp/streamable.go), which
		// would refuse an operator's allowed_hosts on a loopback bind.
		DisableLocalhostProtection: true,
	})
	stateless := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		Logger:                     SDKLogger(log, "mcp-http"),
		MaxRequestBodyBytes:        maxBodyBytes,
		DisableLocalhostProtection: true,
		// A 2026-07-28 call lives exactly as long as its POST: a client
		// that drops the request cancels the handler, so the run stops
		// and frees its slot (the SDK's answer to go-sdk#1093).
		PropagateRequestCancellation: true,
	})
	bodyTimeout := opts.BodyTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	guard := func(h http.Handler) http.Handler {
		return bearer([]byte(token), hostCheck(hosts, origins, h))
	}
	metrics := opts.Metrics
	if metrics == nil {
		metrics = http.NotFoundHandler()
	}
	mux := http.NewServeMux()
	// taskNameHeader reads only 2026-07-28 requests (the era with routing
	// headers), so the stateful path's body stays unread for
	// cancelOnDisconnect.
	// crossOrigin answers a listed origin's CORS preflight before the
	// bearer check (a browser sends no credentials on one) and marks every
	// other reply to a listed origin readable (cors.go).
	if b.MCP != nil {
		// What a call answered without the SDK's session machinery
		// sends in its course goes on its POST's stream (statefulCalls,
		// stateless).
		b.MCP.AddSendingMiddleware(routeToCall)
	}
	limit := newSessionLimit(b.MCP, b.Calls, log, opts.MaxSessions)
	mux.Handle("/mcp", crossOrigin(hosts, origins, guard(bufferBody(taskNameHeader(byEra(
		cancelOnDisconnect(b.Calls, log, exactIDs(limit.wrap(keepAliveSSE(keepAlive, statefulPath(b, limit, stateful, knobs))))),
		exactIDs(keepAliveSSE(keepAlive, statelessPath(b, log, stateless, knobs))),
	))))))
	mux.Handle("/metrics", guard(metrics))
	if opts.Status != nil {
		mountStatus(mux, []byte(token), hosts, origins, opts.Status)
	}
	mux.Handle("/healthz", healthz(opts.Health))
	mux.HandleFunc("/", http.NotFound)
	// Every route: net/http discards a body nobody read (an unauthenticated
	// one, one sent to /healthz) after the handler, within the deadline.
	return bodyDeadline(bodyTimeout, mux), nil
}

// bearer refuses a request whose Authorization is not "Bearer <token>"
// (scheme case-insensitive, one space, credential trimmed), comparing in
// constant time. Every request is checked, including those on an
// established session.
func bearer(token []byte, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !presents(r.Header.Get("Authorization"), token) {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func presents(header string, token []byte) bool {
	for i := 0; i < len(header); i++ {
		if c := header[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	scheme, credential, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	credential = strings.TrimSpace(credential)
	if credential == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(credential), token) == 1
}

// authority is a Host value split into a lowercase host (IPv6 without
// brackets) and its port, "" when none.
type authority struct{ host, port string }

func parseAuthority(a string) (authority, bool) {
	a = strings.ToLower(strings.TrimSpace(a))
	if a == "" {
		return authority{}, false
	}
	var host, port string
	switch {
	case strings.HasPrefix(a, "["):
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return authority{}, false
		}
		host = a[1:end]
		rest := a[end+1:]
		if rest != "" {
			if rest[0] != ':' {
				return authority{}, false
			}
			port = rest[1:]
			if port == "" {
				return authority{}, false
			}
		}
	case strings.Count(a, ":") == 1:
		host, port, _ = strings.Cut(a, ":")
		if port == "" {
			return authority{}, false
		}
	default:
		// A bare IPv6 address (an allowed_hosts entry such as "::1") or a
		// name without a port.
		host = a
	}
	if host == "" || strings.ContainsAny(host, "/@ ") {
		return authority{}, false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return authority{}, false
		}
	}
	return authority{host, port}, true
}

func parseAllowedHosts(entries []string) ([]authority, error) {
	if len(entries) == 0 {
		return nil, errors.New("no allowed Host authorities: set [server].allowed_hosts, or bind to a loopback address")
	}
	out := make([]authority, 0, len(entries))
	for _, e := range entries {
		a, ok := parseAuthority(e)
		if !ok {
			return nil, fmt.Errorf("[server].allowed_hosts entry %q is not a host or host:port", e)
		}
		out = append(out, a)
	}
	return out, nil
}

// hostCheck is the DNS-rebinding defence: a browser page that rebinds its
// own name to this server still sends its own name as Host, and a page of
// another site sends its own Origin (originPolicy).
func hostCheck(allowed []authority, origins originPolicy, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := parseAuthority(r.Host)
		if !ok {
			http.Error(w, "Bad Request: missing or malformed Host header", http.StatusBadRequest)
			return
		}
		if !allows(allowed, got) {
			http.Error(w, "Forbidden: Host header is not allowed", http.StatusForbidden)
			return
		}
		if !origins.allows(got, r) {
			http.Error(w, "Forbidden: Origin is not allowed", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func allows(allowed []authority, got authority) bool {
	for _, a := range allowed {
		if a.host == got.host && (a.port == "" || a.port == got.port) {
			return true
		}
	}
	return false
}

// cancelOnDisconnect makes a client that drops its POST cancel the calls
// it carried. go-sdk v1.8.0's stateful transport keeps a call's handler
// running when its POST goes away, since the response could be resumed:
// streamableServerConn.servePOST (mcp/streamable.go) hands the messages to
// the session without tying them to the request's context, and
// StreamableHTTPOptions.PropagateRequestCancellation applies only to the
// 2026-07-28 protocol, which stateful sessions do not speak (upstream
// modelcontextprotocol/go-sdk#1093 asked for it on stateless servers). A
// disconnect would otherwise leave the run holding its slot until the
// reply deadline. After the SDK returns from a POST whose request context
// ended, each tools/call it carried gets a notifications/cancelled on the
// same session, which the SDK routes to the handler's context like a
// client's own cancellation. Those calls' ids come from the body's view
// (readView: the body buffered once, by the first layer that asks, and
// handed on unread to the SDK).
//
// A DELETE ends its session: go-sdk v1.8.0's serveStatefulDELETE
// (mcp/streamable.go) calls ServerSession.Close, which waits for the calls
// in flight rather than cancelling them (internal/jsonrpc2/conn.go,
// Connection.Close; no upstream issue found for tools/call, the same wait
// is behind modelcontextprotocol/go-sdk#1160), so they are cancelled first
// and the DELETE is answered as soon as their runs have stopped.
func cancelOnDisconnect(calls *Calls, log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			if n := calls.CancelSession(r.Header.Get(headerSessionID)); n > 0 {
				log.Debug("cancelled the calls of a session the client ended", "calls", n)
			}
		}
		v, ok := postView(w, r, next)
		if !ok {
			return
		}
		ids := callIDs(v.messages())
		if len(ids) > 0 {
			defer calls.holdReply()()
		}
		next.ServeHTTP(w, r)
		session := r.Header.Get(headerSessionID)
		if r.Context().Err() == nil || session == "" {
			return
		}
		for _, id := range ids {
			injectCancel(log, next, r, session, id)
		}
	})
}

// bodyDeadline bounds how long r's body may take to arrive (net/http's
// ReadTimeout would also bound the SSE responses' background read, ending
// long calls): the connection's read deadline is set when the headers are
// in and cleared once the body has been read to its end. Unauthenticated
// requests are covered too: net/http discards an unread body after the
// handler, within the same deadline.
func bodyDeadline(timeout time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			rc := http.NewResponseController(w)
			if rc.SetReadDeadline(time.Now().Add(timeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, timeout: timeout}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// deadlineBody clears the read deadline at the body's end, so that the
// connection's later reads (net/http's watch for a client going away
// during a long SSE response) are not cut off. A failed read keeps the
// deadline, so nothing afterwards waits on a trickling client.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done {
		b.done = true
		b.rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = fmt.Errorf("%w: %w", errBodyTimeout{b.timeout}, err)
	}
	return n, err
}

// errBodyTimeout is a body that did not arrive within its deadline.
type errBodyTimeout struct{ timeout time.Duration }

func (e errBodyTimeout) Error() string {
	return fmt.Sprintf("the request body did not arrive within %s: send the whole body with its headers", e.timeout)
}

// bufferBody reads every POST's body once, within the body deadline and
// the body cap, before any handler (ours or the SDK's) sees it.
func bufferBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if _, ok := readBody(w, r); !ok {
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// readBody reads r's body, at most maxBodyBytes (413 beyond), and puts it
// back for the handler after it; false means the answer is written (408
// for a body that did not arrive in time). A body an outer layer already
// read and nobody has read since is handed back as it is: the /mcp chain
// (bufferBody, byEra, the session cap, cancel-on-disconnect, the id and
// task-header checks) reads it in each layer, and copying it each time
// cost a 4 MiB POST about 24 MiB. The layers read its one scan (readView,
// bodyView), not the bytes.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if b, ok := r.Body.(*readBack); ok && b.Len() == len(b.body) {
		return b.body, true
	}
	body, err := readAllOf(r)
	var slow errBodyTimeout
	if errors.As(err, &slow) {
		w.Header().Set("Connection", "close")
		http.Error(w, slow.Error(), http.StatusRequestTimeout)
		return nil, false
	}
	if err != nil {
		http.Error(w, "failed to read body", http.StatusBadRequest)
		return nil, false
	}
	if len(body) > maxBodyBytes {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBodyBytes), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	rb := &readBack{body: body}
	rb.Reset(body)
	r.Body = rb
	return body, true
}

// bodyFirstRead is the most readAllOf allocates for a body before any
// of it has arrived: a call's body is well under it (about 100 bytes for
// a plain run_prompt), and it is about what the connection itself holds.
const bodyFirstRead = 16 << 10

// readAllOf reads r's body, at most maxBodyBytes+1 of it. A body of a
// declared length is read into a slice of that length: the call holds its
// body until it answers (the params are views into it), and io.ReadAll's
// first 512-byte buffer was over three times a plain call's size, per
// call in flight (docs/benchmarks.md, "mem5"). net/http ends a body of a
// declared length there, and reports a shorter one as
// io.ErrUnexpectedEOF, as io.ReadAll returns it.
func readAllOf(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	// A readBack the handler has read from is what is left of it, not
	// the declared length.
	if _, back := r.Body.(*readBack); back || n <= 0 || n > maxBodyBytes {
		return io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	}
	// The declared length is the client's word, not bytes: the slice
	// grows as they arrive, from at most bodyFirstRead, doubling up to
	// the length, so a client that declares 4 MiB and stalls holds
	// bodyFirstRead or twice what it sent, not 4 MiB for the body
	// timeout, and a body of any length ends in a slice of exactly it.
	body := make([]byte, min(n, bodyFirstRead))
	for got := 0; ; {
		m, err := io.ReadFull(r.Body, body[got:])
		got += m
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // ended short of its length
		}
		if err != nil {
			return nil, err
		}
		if int64(got) == n {
			break
		}
		grown := make([]byte, min(n, 2*int64(len(body))))
		copy(grown, body)
		body = grown
	}
	// Read on to the body's EOF, which is what lifts its read deadline
	// (bodyDeadline) and lets net/http reuse the connection at once.
	if _, err := io.Copy(io.Discard, io.LimitReader(r.Body, 1)); err != nil {
		return nil, err
	}
	return body, nil
}

// readBack is a body readBody has read and put back. The layers only read
// body, or its view; the handler at the end reads the Reader.
type readBack struct {
	bytes.Reader
	body []byte
	// v is body's view (bodyView), made by the first layer that asks.
	v       bodyView
	scanned bool
}

func (*readBack) Close() error { return nil }

// view is the body's bodyView, scanned on the first call. The layers of
// one request call it in turn, on the request's goroutine.
func (b *readBack) view() *bodyView {
	if !b.scanned {
		b.scanned = true
		b.v.scan(b.body)
	}
	return &b.v
}

// callIDs returns the ids of the tools/call requests among an MCP POST
// body's messages (one message or a batch).
func callIDs(msgs []message) []json.RawMessage {
	var ids []json.RawMessage
	for _, m := range msgs {
		if m.Method == "tools/call" && len(m.ID) > 0 && string(m.ID) != "null" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

func injectCancel(log *slog.Logger, next http.Handler, orig *http.Request, session string, id json.RawMessage) {
	note, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/cancelled",
		"params":  map[string]any{"requestId": id, "reason": "the client disconnected before the reply"},
	})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(orig.Context()), FinalCloseTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, orig.URL.String(), bytes.NewReader(note))
	if err != nil {
		return
	}
	req.Host = orig.Host
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(headerSessionID, session)
	if v := orig.Header.Get(headerProtocolVersion); v != "" {
		req.Header.Set(headerProtocolVersion, v)
	}
	next.ServeHTTP(discardResponse{header: http.Header{}}, req)
	log.Debug("cancelled a call whose client disconnected", "session", session)
}

// discardResponse absorbs the SDK's answer to an injected notification.
type discardResponse struct{ header http.Header }

func (d discardResponse) Header() http.Header         { return d.header }
func (d discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d discardResponse) WriteHeader(int)             {}

// keepAliveSSE sends an SSE comment on any event stream that has been
// quiet for interval. go-sdk v1.8.0 writes nothing on an idle event
// stream (its ServerOptions.KeepAlive sends JSON-RPC pings, which the
// client must answer, and are not per stream), so a proxy or client may
// take a long run for a dead connection (upstream
// modelcontextprotocol/go-sdk#1229, whose StreamKeepAlive covers only
// subscriptions/listen streams). The SDK writes each event with one Write
// followed by a Flush; the lock keeps a comment from landing inside one.
// The pings run on a timer (time.AfterFunc), not a goroutine per stream: a
// stateful tools/call is answered on an event stream, so a goroutine there
// was one more per call in flight.
func keepAliveSSE(interval time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kw := &keepAliveWriter{ResponseWriter: w, interval: interval}
		defer kw.stopPinging()
		next.ServeHTTP(kw, r)
	})
}

type keepAliveWriter struct {
	http.ResponseWriter
	interval time.Duration

	mu          sync.Mutex
	wroteHeader bool
	last        time.Time
	failed      bool
	timer       *time.Timer // the next ping; nil unless an event stream is open
	stopped     bool
}

func (k *keepAliveWriter) WriteHeader(code int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writeHeaderLocked(code)
}

func (k *keepAliveWriter) writeHeaderLocked(code int) {
	if k.wroteHeader {
		return
	}
	k.wroteHeader = true
	k.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK && strings.HasPrefix(k.Header().Get("Content-Type"), "text/event-stream") {
		k.last = time.Now()
		k.timer = time.AfterFunc(k.interval, k.ping)
	}
}

// Write also gives the SDK's code-0 JSON-RPC errors a valid code
// (validCodes): every MCP reply over HTTP passes here.
func (k *keepAliveWriter) Write(p []byte) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writeHeaderLocked(http.StatusOK)
	k.last = time.Now()
	fixed := validCodes(p)
	if _, err := k.ResponseWriter.Write(fixed); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (k *keepAliveWriter) Flush() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.writeHeaderLocked(http.StatusOK)
	http.NewResponseController(k.ResponseWriter).Flush()
}

func (k *keepAliveWriter) Unwrap() http.ResponseWriter { return k.ResponseWriter }

// ping is the timer's callback while the event stream is open: a comment
// if the stream has been quiet for the interval, then the next ping.
func (k *keepAliveWriter) ping() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped {
		return
	}
	if idle := time.Since(k.last); idle >= k.interval && !k.failed {
		if _, err := io.WriteString(k.ResponseWriter, ": keep-alive\n\n"); err != nil {
			k.failed = true
		} else {
			http.NewResponseController(k.ResponseWriter).Flush()
		}
		k.last = time.Now()
	}
	k.timer.Reset(max(k.interval-time.Since(k.last), time.Millisecond))
}

// stopPinging ends the pings before the handler returns: the
// ResponseWriter must not be written after that. A ping already waiting
// for the lock finds stopped and writes nothing.
func (k *keepAliveWriter) stopPinging() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
}

// ServeHTTP serves b over HTTP on ln until ctx ends, then shuts down
// gracefully: it stops accepting, lets the calls in flight answer (up to
// opts.DrainTimeout), cancels the runs that are still going, closes every
// session (which ends the open SSE streams) and waits for the connections
// to finish.
func ServeHTTP(ctx context.Context, ln net.Listener, b Backend, opts HTTPOptions) error {
	h, err := HTTPHandler(b, opts)
	if err != nil {
		return err
	}
	log := b.logger()
	srv := httpServer(h, log)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	log.Info("shutdown signal received; draining")
	drain := opts.DrainTimeout
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	shutCtx, cancelShut := context.WithTimeout(context.Background(), drain+FinalCloseTimeout)
	defer cancelShut()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(shutCtx) }()
	b.stopSessions(drain)
	if err := <-shut; err != nil {
		srv.Close()
	}
	<-served
	return nil
}

// httpServer is the listener-side configuration: bounded header reads and
// idle keep-alive connections, so unauthenticated sockets cannot pile up.
func httpServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleConnTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}
