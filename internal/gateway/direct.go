package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The direct path: one plain-http round trip on the caller's goroutine.
// The request is assembled in a pooled buffer and written in one write;
// the caller then waits for the reply to become readable with no read
// buffer held (and no request buffer either, unless the request may be
// sent again), reads it through a pooled bufio.Reader with
// http.ReadResponse, and gets the body wrapped in a directBody, which
// gives the connection back to the pool when the body has been read to
// EOF and neither side asked to close. A Client's timeout is the
// connection's deadline (requestDeadline). Cancellation is a
// context.AfterFunc that moves the connection's deadline into the past,
// which ends whatever read or write is waiting; the connection is then
// closed, never reused.

// directConn is one keep-alive connection of the direct path.
type directConn struct {
	net.Conn
	addr string
	// reused is set once the connection has carried a request: only a
	// reused connection's failure may be the server closing it while it
	// was idle, which is when a request is sent again.
	reused bool
	// poolable: the socket can be peeked at (probeStale), so a close
	// while idle is seen before use. A dialer's wrapper that is no
	// syscall.Conn cannot be, and a POST that met such a close could not
	// be sent again: that connection serves one request.
	poolable bool
	// head is what a reply is read through: the connection, with
	// net/http's bound on the bytes of the reply's head.
	head   headReader
	idleAt time.Time   // guarded by Transport.mu
	timer  *time.Timer // the idle timeout, made on the first putIdle
}

var (
	// errClosedBeforeReply is a connection that ended before any byte of
	// the reply (net/http's errServerClosedIdle).
	errClosedBeforeReply = errors.New("the gateway closed the connection before replying")
	// errReadAfterClose is net/http's wording for a read of a closed body.
	errReadAfterClose = errors.New("http: read on closed response body")
)

// roundTrip sends req on an idle connection or a new one. A request that
// failed on a reused connection before the server can have acted on it is
// sent again on another, by net/http's rule (transport.go
// shouldRetryRequest): when nothing of it was written, or when the
// connection ended before any byte of the reply and the request is
// replayable (GET, HEAD, OPTIONS, TRACE or an Idempotency-Key). A POST
// that was written is never sent twice: the server may have acted on it.
func (t *Transport) roundTrip(req *http.Request, dl *errTimeout) (*http.Response, error) {
	ctx := req.Context()
	wire := t.writeBuffer()
	held := true
	// release gives wire back to the pool once, here or in exchange as
	// soon as no retry can need it: a POST that was written is never sent
	// again, so its bytes need not be held while the run waits for the
	// model (a buffer of the request's size per run in flight).
	release := func() {
		if held {
			held = false
			t.putWriteBuffer(wire)
		}
	}
	defer release()
	err := writeRequest(wire, req)
	if req.Body != nil {
		req.Body.Close()
	}
	if err != nil {
		return nil, err
	}
	addr := dialAddr(req.URL)
	for {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if dl.passed() {
			return nil, dl
		}
		c := t.takeIdle(addr)
		if c == nil {
			nc, err := t.dial(ctx, addr, dl)
			if err != nil {
				if ctx.Err() != nil {
					return nil, context.Cause(ctx)
				}
				return nil, err
			}
			c = &directConn{Conn: nc, addr: addr, poolable: t.poolUnprobed || rawConn(nc) != nil}
		}
		resp, retry, err := t.exchange(ctx, c, req, wire.Bytes(), release, dl)
		if err == nil || !retry {
			return resp, err
		}
	}
}

// dial dials addr for a request with the timeout dl (nil: none), which a
// dial that outlasts it fails with.
func (t *Transport) dial(ctx context.Context, addr string, dl *errTimeout) (net.Conn, error) {
	if dl == nil {
		return t.DialContext(ctx, "tcp", addr)
	}
	dctx, cancel := context.WithDeadlineCause(ctx, dl.at, dl)
	defer cancel()
	nc, err := t.DialContext(dctx, "tcp", addr)
	if err != nil && ctx.Err() == nil && context.Cause(dctx) == dl {
		return nil, dl
	}
	return nc, err
}

// passed reports whether the timeout has passed (never for nil).
func (e *errTimeout) passed() bool { return e != nil && !time.Now().Before(e.at) }

// exchange writes wire on c and reads the reply's head. On failure c is
// closed, and retry says whether the request may go out again. Once the
// whole request is written and it is not replayable (so retry stays
// false whatever follows), it calls release, after which wire is not
// touched.
func (t *Transport) exchange(ctx context.Context, c *directConn, req *http.Request, wire []byte, release func(), dl *errTimeout) (_ *http.Response, retry bool, _ error) {
	// The request's timeout is the connection's deadline, set before the
	// AfterFunc, which may move it into the past at once.
	if dl != nil {
		_ = c.SetDeadline(dl.at)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	// A gateway may reply and close before it has read the whole request
	// (a 401 or 413 to a large one), and the write then fails: net/http
	// reads the reply while it writes and returns it, so the reply is
	// read here too, and the write's error returned only when there is
	// none (the connection is not used again either way).
	n, werr := c.Write(wire)
	fail := func(err error, again bool) (*http.Response, bool, error) {
		stop()
		c.Close()
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
		if dl.passed() {
			return nil, false, dl
		}
		if werr != nil {
			return nil, n == 0 && c.reused, fmt.Errorf("write the request: %w", werr)
		}
		return nil, again && c.reused, err
	}
	if werr != nil && (n == 0 || isTimeout(werr)) {
		return fail(nil, false)
	}
	if werr == nil && !replayable(req) {
		release()
	}
	if err := waitReadable(c.Conn); err != nil {
		return fail(err, replayable(req))
	}
	c.head = headReader{Conn: c.Conn, left: maxResponseHeaderBytes}
	br := t.reader(&c.head)
	if _, err := br.Peek(1); err != nil {
		t.putReader(br)
		if err == io.EOF {
			err = errClosedBeforeReply
		}
		return fail(err, replayable(req))
	}
	resp, err := http.ReadResponse(br, req)
	// Informational replies (103 Early Hints, a stray 100) come before
	// the real one; as net/http's, they are bounded only by the bytes of
	// all the heads together (maxResponseHeaderBytes). A 101 is final
	// there, and the connection is not used again after it.
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		resp, err = http.ReadResponse(br, req)
	}
	if err != nil {
		if c.head.left <= 0 {
			err = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxResponseHeaderBytes)
		}
		t.putReader(br)
		return fail(fmt.Errorf("read the reply: %w", err), false)
	}
	c.head.left = -1 // the body is not bounded here
	keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols && werr == nil
	b := &directBody{t: t, c: c, br: br, rc: resp.Body, ctx: ctx, dl: dl, stop: stop, keep: keep}
	if resp.Body == http.NoBody {
		b.release()
		return resp, false, nil
	}
	resp.Body = b
	return resp, false, nil
}

// maxResponseHeaderBytes is net/http's default MaxResponseHeaderBytes: the
// bytes a reply's head (with any informational replies before it) may
// take before the reply is refused.
const maxResponseHeaderBytes = 10 << 20

// headReader reads a connection, at most left bytes while left >= 0.
type headReader struct {
	net.Conn
	left int64
}

func (r *headReader) Read(p []byte) (int, error) {
	if r.left < 0 {
		return r.Conn.Read(p)
	}
	if r.left == 0 {
		return 0, fmt.Errorf("read limit of %d bytes exhausted", maxResponseHeaderBytes)
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.Conn.Read(p)
	r.left -= int64(n)
	return n, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// replayable is net/http's Request.isReplayable for a request whose body
// this path has already read into memory.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// writeRequest assembles req as net/http's Request.Write would for a
// request direct admits: request line, Host, User-Agent, Content-Length,
// Connection: close if asked, the other headers, then the body, read in
// full here so the write is one syscall and a retry needs no rewind.
func writeRequest(buf *bytes.Buffer, req *http.Request) error {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	// A control byte would split the request line (RawQuery goes out as
	// it is): net/http refuses such a URL with this error.
	ruri := req.URL.RequestURI()
	if containsCTL(ruri) {
		return errors.New("net/http: can't write control character in Request.URL")
	}
	buf.WriteString(method)
	buf.WriteByte(' ')
	buf.WriteString(ruri)
	buf.WriteString(" HTTP/1.1\r\nHost: ")
	buf.WriteString(hostHeader(req))
	buf.WriteString("\r\n")
	ua := "Go-http-client/1.1"
	if _, ok := req.Header["User-Agent"]; ok {
		ua = textproto.TrimString(req.Header.Get("User-Agent"))
	}
	if ua != "" {
		buf.WriteString("User-Agent: ")
		buf.WriteString(ua)
		buf.WriteString("\r\n")
	}
	var n int64
	if req.Body != nil && req.Body != http.NoBody {
		n = req.ContentLength
	}
	// net/http's transferWriter.shouldSendContentLength: a body's length,
	// or 0 for the methods servers expect one with.
	if n > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		buf.WriteString("Content-Length: ")
		buf.WriteString(strconv.FormatInt(n, 10))
		buf.WriteString("\r\n")
	}
	if req.Close {
		buf.WriteString("Connection: close\r\n")
	}
	for k, vs := range req.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		for _, v := range vs {
			buf.WriteString(k)
			buf.WriteString(": ")
			buf.WriteString(textproto.TrimString(v))
			buf.WriteString("\r\n")
		}
	}
	buf.WriteString("\r\n")
	if n == 0 {
		return nil
	}
	buf.Grow(int(n))
	body := buf.AvailableBuffer()[:n]
	got, err := io.ReadFull(req.Body, body)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return fmt.Errorf("read the request body: %w", err)
	}
	extra, _ := io.Copy(io.Discard, req.Body)
	if int64(got) != n || extra != 0 {
		return fmt.Errorf("http: ContentLength=%d with Body length %d", n, int64(got)+extra)
	}
	buf.Write(body)
	return nil
}

// directBody is a direct reply's body: the connection goes back to the
// pool when it has been read to EOF, and is closed by Close before that,
// by a read error, or by the request's context ending.
type directBody struct {
	t    *Transport
	c    *directConn
	br   *bufio.Reader
	rc   io.ReadCloser // http.ReadResponse's body, reading through br
	ctx  context.Context
	dl   *errTimeout // the request's timeout, the connection's deadline (nil: none)
	stop func() bool // stops the cancellation AfterFunc
	keep bool        // neither side asked to close

	mu sync.Mutex
	// err is nil while the body is open; once it was read to EOF, failed
	// or was closed (the connection released), it is what a read returns.
	err error
}

func (b *directBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.err != nil {
		err := b.err
		b.mu.Unlock()
		return 0, err
	}
	b.mu.Unlock()
	n, err := b.rc.Read(p)
	if err == nil {
		return n, nil
	}
	b.mu.Lock()
	if b.err != nil { // closed while the read waited
		err := b.err
		b.mu.Unlock()
		return n, err
	}
	if err != io.EOF {
		b.stop()
		b.c.Close()
		if b.ctx.Err() != nil {
			err = context.Cause(b.ctx)
		} else if b.dl.passed() {
			err = b.dl
		}
		b.err = err
		b.mu.Unlock()
		return n, err
	}
	b.err = io.EOF
	b.mu.Unlock()
	b.release()
	return n, io.EOF
}

// release ends the exchange after the whole reply was read: the
// connection goes back to the pool unless a side asked to close, the
// context ended (its AfterFunc may have moved the deadline), or bytes
// beyond the reply arrived (nothing may follow a reply unasked).
func (b *directBody) release() {
	reuse := b.stop() && b.keep && b.br.Buffered() == 0 && b.c.poolable
	b.t.putReader(b.br)
	b.br = nil
	if !reuse {
		b.c.Close()
		return
	}
	if b.dl != nil {
		// The request's deadline is not the next one's.
		_ = b.c.SetDeadline(time.Time{})
	}
	b.c.reused = true
	b.t.putIdle(b.c)
}

// Close closes the connection unless the body was read to its end: the
// rest of the reply is not drained, as net/http does not drain it.
func (b *directBody) Close() error {
	b.mu.Lock()
	open := b.err == nil
	b.err = errReadAfterClose
	b.mu.Unlock()
	if open {
		b.stop()
		b.c.Close()
	}
	return nil
}

// rawConn is c's socket, or nil for a connection that is no syscall.Conn.
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
