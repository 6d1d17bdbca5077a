package gateway

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Transport is the gateway's http.RoundTripper. A plain-http request that
// no proxy takes (the local model servers: Ollama, llama.cpp, vLLM,
// LiteLLM on loopback or a LAN) makes its round trip on the caller's own
// goroutine, over a pool of keep-alive connections this type owns (see
// direct.go); everything else (https, a proxied request, anything
// unusual) goes to [Transport.Fallback], net/http's transport, unchanged.
//
// Why: net/http runs two goroutines per open connection (its read and
// write loops, 6-12 KiB of stack between them) and a persistConn with two
// buffers, while the run that sent the request already waits on its own
// goroutine. At 1,000 prose runs in flight that was a third of the
// process's memory per run (docs/benchmarks.md, "Prose runs at scale").
// net/http speaks HTTP/1.1 only to a plain-http server too, so the direct
// path loses nothing there. The replies stay the standard library's:
// http.ReadResponse parses every one. Ours are the request's bytes
// (writeRequest, held to Request.Write by TestDirectWritesTheRequestAsNetHTTP),
// the pool and the connection's lifecycle.
//
// The direct path sends no Accept-Encoding, so replies come uncompressed
// (net/http would ask for gzip and decompress transparently): a local
// model server's replies are small and on a fast link, and a gateway that
// compresses anyway is read as the bytes it sent, which a JSON parse then
// refuses with a clear malformed-reply error.
//
// Build one with [NewTransport] or [NewTransportFor]; the exported fields
// may be changed before the first request, not after.
type Transport struct {
	// Fallback carries every request the direct path does not take. Its
	// dialer and proxy function are this Transport's, read at each use.
	Fallback *http.Transport
	// Proxy reports the proxy for a request, as http.Transport.Proxy
	// does; a request with a proxy goes to Fallback. NewTransportFor sets
	// http.ProxyFromEnvironment; nil means no proxy.
	Proxy func(*http.Request) (*url.URL, error)
	// DialContext dials the connections of both paths.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxIdleConnsPerHost is how many idle direct connections are kept
	// per host (Fallback has its own, set to the same value).
	MaxIdleConnsPerHost int
	// IdleConnTimeout closes a direct connection idle this long.
	IdleConnTimeout time.Duration

	// poolUnprobed keeps connections probeStale cannot look at (tests:
	// pipes on a fake clock; see export_test.go).
	poolUnprobed bool

	mu   sync.Mutex
	idle map[string][]*directConn // by dial address, most recently used last

	// readers holds the bufio.Readers a response is read through: a
	// connection takes one only once its reply starts to arrive and gives
	// it back when the body is read, so a run waiting on the model holds
	// no read buffer. writes holds the buffers a request is assembled in.
	readers sync.Pool
	writes  sync.Pool
}

// NewTransport returns the transport for gateway calls: a connect timeout
// like the reference gateway's (10s), 64 idle connections per host, enough
// for concurrent runs (and their fanout arms) against one gateway, and
// small buffers (see [NewTransportFor]). [New] uses it when
// [Options.HTTPClient] is nil; a host that wraps the transport (the server
// times every call: server.Metrics.GatewayTransport) builds on it, so
// every client of the gateway has the same limits.
//
// 64 is the serve path's value: the server built its own transport with
// it, while a client New built had 32 and web_search the default 2.
func NewTransport() *Transport { return NewTransportFor(0) }

// NewTransportFor is [NewTransport] for a host that runs up to runs model
// turns at once (serve: [server].max_concurrent_runs): it keeps an idle
// connection per run, at least 64, on both paths.
//
// The idle pool is what keeps a busy server from dialling: with fewer idle
// places than runs, every turn that ends while the pool is full closes its
// connection and a later turn dials a new one, which at 1,000 runs in
// flight was half of them (a TCP connect and close on both sides: about
// 10 % of the server's CPU in its profile, and the gateway's own). The
// default transport's MaxIdleConns (100 over all hosts) is raised with
// it, or it would cap Fallback's pool first. Idle connections close after
// 90 s.
//
// Fallback's read and write buffers are 1 KiB, not net/http's 4 KiB: each
// of its connections keeps both for its life, while a chat request is
// written once and a reply read once. The direct path holds no buffer
// while a connection is idle or waiting for the model (see direct.go).
func NewTransportFor(runs int) *Transport {
	idle := max(64, runs)
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         d.DialContext,
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     idleConnTimeout,
	}
	fb := http.DefaultTransport.(*http.Transport).Clone()
	fb.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return t.DialContext(ctx, network, addr)
	}
	fb.Proxy = t.proxy
	fb.MaxIdleConnsPerHost = idle
	fb.MaxIdleConns = max(fb.MaxIdleConns, idle)
	fb.IdleConnTimeout = idleConnTimeout
	fb.ReadBufferSize, fb.WriteBufferSize = transportBuffer, transportBuffer
	t.Fallback = fb
	return t
}

const (
	// transportBuffer is the size of Fallback's per-connection buffers
	// and of the direct path's pooled read buffers.
	transportBuffer = 1 << 10
	// idleConnTimeout is net/http's default, kept on both paths.
	idleConnTimeout = 90 * time.Second
)

func (t *Transport) proxy(req *http.Request) (*url.URL, error) {
	if t.Proxy == nil {
		return nil, nil
	}
	return t.Proxy(req)
}

// RoundTrip implements http.RoundTripper. A request a [Client] sends
// carries its timeout in its context (requestDeadline), which bounds it
// on both paths.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	dl := requestDeadline(req.Context())
	if !t.direct(req) {
		if dl != nil {
			return t.fallbackBounded(req, dl)
		}
		return t.Fallback.RoundTrip(req)
	}
	return t.roundTrip(req, dl)
}

// deadlineKey is the context key of a request's timeout, an *errTimeout,
// which Client.send puts in the request's context instead of a context
// with a deadline when its transport bounds the request by it
// (boundsDeadlines): the direct path makes it the connection's deadline,
// one that the poller keeps, where a context.WithTimeout was a timer, a
// context and an entry in the run's context, and the direct path's
// AfterFunc on it another context and a map, all held while a run waits
// on the model. A redirect's request carries the same value, so the
// timeout bounds the whole exchange, as the context's did.
type deadlineKey struct{}

// requestDeadline is the timeout ctx carries (deadlineKey), or nil.
func requestDeadline(ctx context.Context) *errTimeout {
	dl, _ := ctx.Value(deadlineKey{}).(*errTimeout)
	return dl
}

// boundsDeadlines reports whether hc's transport is a *Transport, or
// wraps one (an Unwrap() http.RoundTripper method, as the server's timing
// wrapper has), so that it bounds a request by the deadline its context
// carries. Any other transport gets a context with the deadline.
func boundsDeadlines(hc *http.Client) bool {
	if hc == nil || hc.Timeout != 0 {
		return false
	}
	rt := hc.Transport
	// A bounded walk: a wrapper that unwraps to itself, or a chain deeper
	// than any a host builds (the server's is one deep), is taken for a
	// transport that does not bound, and gets the context's deadline.
	for range 8 {
		switch t := rt.(type) {
		case *Transport:
			return true
		case interface{ Unwrap() http.RoundTripper }:
			rt = t.Unwrap()
		default:
			return false
		}
	}
	return false
}

// fallbackBounded sends req through Fallback under a context with its
// deadline, whose end fails the request, or a read of its body, with the
// timeout itself (dl), as the direct path's deadline does.
func (t *Transport) fallbackBounded(req *http.Request, dl *errTimeout) (*http.Response, error) {
	ctx, cancel := context.WithDeadlineCause(req.Context(), dl.at, dl)
	resp, err := t.Fallback.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if context.Cause(ctx) == dl {
			return nil, dl
		}
		return nil, err
	}
	resp.Body = &boundedBody{ReadCloser: resp.Body, ctx: ctx, dl: dl, cancel: cancel}
	return resp, nil
}

// boundedBody is a Fallback reply's body under its request's deadline.
type boundedBody struct {
	io.ReadCloser
	ctx    context.Context
	dl     *errTimeout
	cancel context.CancelFunc
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF && context.Cause(b.ctx) == b.dl {
		err = b.dl
	}
	return n, err
}

func (b *boundedBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// direct reports whether req takes the direct path: plain http, no proxy,
// and nothing net/http would treat specially or refuse (those go to
// Fallback, which then answers exactly as before).
func (t *Transport) direct(req *http.Request) bool {
	u := req.URL
	if !canProbe || u == nil || u.Scheme != "http" || u.Host == "" || u.User != nil {
		return false
	}
	// An IPv6 zone or a non-ASCII name is rewritten by net/http before
	// it goes out; those are Fallback's.
	if h := hostHeader(req); !httpguts.ValidHostHeader(h) || !isASCII(h) || !isASCII(u.Host) || strings.Contains(h, "%") {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodPost, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodOptions:
	default:
		return false
	}
	// A body of unknown length would go out chunked, and an upload with
	// trailers or an Expect: 100-continue waits on the server: net/http's.
	if req.Body != nil && req.Body != http.NoBody && req.ContentLength <= 0 {
		return false
	}
	// The direct path makes room for the whole body before reading it: a
	// larger length (or one a body does not have, which net/http reports
	// as an error) is streamed by net/http instead of allocated.
	if req.ContentLength > maxDirectBody {
		return false
	}
	if len(req.TransferEncoding) > 0 || len(req.Trailer) > 0 {
		return false
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		switch http.CanonicalHeaderKey(k) {
		case "Expect", "Upgrade", "Connection", "Transfer-Encoding", "Te", "Trailer":
			return false
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	p, err := t.proxy(req)
	return err == nil && p == nil
}

func hostHeader(req *http.Request) string {
	if req.Host != "" {
		return req.Host
	}
	return req.URL.Host
}

// containsCTL is net/http's stringContainsCTLByte.
func containsCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < ' ' || b == 0x7f {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// dialAddr is the host:port a direct request dials (port 80 when the URL
// names none).
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// CloseIdleConnections closes the idle connections of both paths.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.timer.Stop()
			c.Close()
		}
	}
	t.Fallback.CloseIdleConnections()
}

// takeIdle returns the most recently used idle connection to addr that is
// still open, or nil. A connection the server closed while it was idle is
// noticed here (probeStale) and closed, so the request goes out on
// another; one closed in the instant after the probe is what roundTrip's
// retry rule is for.
func (t *Transport) takeIdle(addr string) *directConn {
	for {
		t.mu.Lock()
		list := t.idle[addr]
		if len(list) == 0 {
			t.mu.Unlock()
			return nil
		}
		c := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[addr] = list[:len(list)-1]
		t.mu.Unlock()
		c.timer.Stop()
		if !probeStale(c.Conn) {
			return c
		}
		c.Close()
	}
}

// putIdle keeps c for the next request to its address, or closes it when
// the pool is full. Its idle timer is a time.AfterFunc: no goroutine
// until it fires.
func (t *Transport) putIdle(c *directConn) {
	t.mu.Lock()
	if len(t.idle[c.addr]) >= max(t.MaxIdleConnsPerHost, 1) {
		t.mu.Unlock()
		c.Close()
		return
	}
	if t.idle == nil {
		t.idle = make(map[string][]*directConn)
	}
	timeout := t.IdleConnTimeout
	if timeout <= 0 {
		timeout = idleConnTimeout
	}
	// The timer is armed before the lock is let go: takeIdle stops it as
	// soon as another request takes c.
	c.idleAt = time.Now()
	if c.timer == nil {
		c.timer = time.AfterFunc(timeout, func() { t.expire(c, timeout) })
	} else {
		c.timer.Reset(timeout)
	}
	t.idle[c.addr] = append(t.idle[c.addr], c)
	t.mu.Unlock()
}

// expire closes c if it is still idle and has been for timeout. The check
// of idleAt covers a timer that fired just as c was taken and put back.
func (t *Transport) expire(c *directConn, timeout time.Duration) {
	t.mu.Lock()
	list := t.idle[c.addr]
	i := slices.Index(list, c)
	if i < 0 || time.Since(c.idleAt) < timeout {
		t.mu.Unlock()
		return
	}
	t.idle[c.addr] = slices.Delete(list, i, i+1)
	t.mu.Unlock()
	c.Close()
}

func (t *Transport) reader(c io.Reader) *bufio.Reader {
	if br, ok := t.readers.Get().(*bufio.Reader); ok {
		br.Reset(c)
		return br
	}
	return bufio.NewReaderSize(c, transportBuffer)
}

func (t *Transport) putReader(br *bufio.Reader) {
	br.Reset(nil)
	t.readers.Put(br)
}

// maxDirectBody is the largest request body the direct path assembles in
// memory (writeRequest); a chat request with images is well below it.
const maxDirectBody = 64 << 20

// maxPooledWrite bounds the request buffers kept for reuse: a request
// larger than this is assembled in a buffer of its own, which is dropped.
const maxPooledWrite = 64 << 10

func (t *Transport) writeBuffer() *bytes.Buffer {
	if b, ok := t.writes.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (t *Transport) putWriteBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledWrite {
		return
	}
	b.Reset()
	t.writes.Put(b)
}
