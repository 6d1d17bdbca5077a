package transport

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// MaxLineBytes caps one incoming stdio line (4 MiB, mcp-server §9.4).
	MaxLineBytes = 4 << 20
	// readChunk is the reader's buffer: memory held for a line is at most
	// MaxLineBytes plus one chunk.
	readChunk = 8 << 10
	// keepLine is the line buffer kept between messages; a larger one,
	// grown for one big message, is dropped so it does not stay resident.
	keepLine = 64 << 10
)

var utf8BOM = []byte("\xef\xbb\xbf")

// lineFilter turns a newline-delimited byte stream into a stream of
// well-formed JSON-RPC messages, one per line, and answers every other
// line itself: a line that is not JSON gets -32700, one that is JSON but
// not one JSON-RPC 2.0 message (a batch, a wrong "jsonrpc", a "method"
// that is not a string, an id the SDK would answer under another id) gets
// -32600, under the line's id when it can be read and null otherwise
// (JSON-RPC 2.0 §5.1; issue #11 items 7 and 8). A line over MaxLineBytes is
// skipped without being buffered (the reader skips to its newline) and
// answered -32600 with id null. Either way the next line is read as usual.
//
// go-sdk v1.8.0's reader would end the session on the first bad line: the
// decoding goroutine of newIOConnLimited (mcp/transport.go) returns on the
// first error from its one streaming json.Decoder, and ioConn.Read passes
// that error, or one from readBatch, to the connection, whose read loop
// (internal/jsonrpc2/conn.go, readIncoming) then stops for good. A line
// over IOTransport.MaxLineLength ends it the same way. So the SDK only
// ever sees lines that passed here (upstream
// modelcontextprotocol/go-sdk#1209).
//
// Each line is checked by json.Valid and one scan of its top-level members
// (scanEnvelope), and handed on in place from the line buffer: no decoding
// of params, no copy. The SDK decodes it once after that.
type lineFilter struct {
	src *bufio.Reader
	log *slog.Logger
	max int
	// refuse writes the error reply to a refused line.
	refuse func(reply []byte)
	// calls, when set, is told the id of every request passed on.
	calls *replyTracker
	line  []byte // the line being assembled
	out   []byte // the accepted line (with its newline) not yet read
	err   error  // the source's terminal error, reported once out is empty
}

func newLineFilter(r io.Reader, max int, log *slog.Logger, refuse func([]byte)) *lineFilter {
	return &lineFilter{src: bufio.NewReaderSize(r, readChunk), log: log, max: max, refuse: refuse}
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		f.next()
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	return n, nil
}

// next reads one line and, if it is a JSON-RPC message, makes it the
// pending output; otherwise it answers it.
func (f *lineFilter) next() {
	if cap(f.line) > keepLine {
		// Grown for one big message, which has been read by now: drop it
		// so it does not stay resident.
		f.line = nil
	}
	f.line = f.line[:0]
	over := false
	for {
		chunk, err := f.src.ReadSlice('\n')
		if !over {
			if len(f.line)+len(chunk) > f.max+1 { // +1: the newline itself
				over = true
				f.line = f.line[:0]
			} else {
				f.line = append(f.line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			f.err = err
		}
		break
	}
	if over {
		f.log.Warn("refused an over-long stdio line", "limit_bytes", f.max)
		f.refuse(errorReply(nil, codeInvalidRequest, fmt.Sprintf("the message is longer than the %d-byte line limit", f.max)))
		return
	}
	msg := bytes.TrimSpace(bytes.TrimPrefix(f.line, utf8BOM))
	if len(msg) == 0 {
		return
	}
	if !json.Valid(msg) {
		f.log.Debug("refused a stdio line that is not one JSON value")
		f.refuse(errorReply(nil, codeParseError, "parse error: the line is not one JSON value"))
		return
	}
	e, code, problem, id := requestProblem(msg)
	if code != 0 {
		f.log.Debug("refused a stdio line that is not one JSON-RPC message", "error", problem)
		f.refuse(errorReply(id, code, problem))
		return
	}
	if e.method != nil && f.calls != nil {
		if key, ok := idKey(e.id); ok {
			f.calls.asked(key)
		}
	}
	// msg lies inside f.line, which is not reused before f.out is read:
	// hand it on in place, its newline written just after it.
	off := cap(f.line) - cap(msg)
	end := off + len(msg)
	if end == len(f.line) { // the last line of the input, with no newline
		f.line = append(f.line, '\n')
	}
	f.line[end] = '\n'
	f.out = f.line[off : end+1]
}

// replyTracker knows which requests read from stdin have not been
// answered yet. go-sdk v1.8.0 ends the session as soon as its reader
// reports the end of input, dropping the replies of requests it has read
// but not answered: the connection's read loop (internal/jsonrpc2/conn.go,
// readIncoming) cancels every request in flight with the read error and
// the connection then refuses their responses (upstream
// modelcontextprotocol/go-sdk#1061). Holding the end of input back until
// they are answered is what makes piped use (requests, then EOF) reliable.
type replyTracker struct {
	mu      sync.Mutex
	pending map[string]struct{}
	changed chan struct{} // closed and replaced whenever pending shrinks
	closed  chan struct{} // closed when the SDK closes the connection
	once    sync.Once
}

func newReplyTracker() *replyTracker {
	return &replyTracker{pending: map[string]struct{}{}, changed: make(chan struct{}), closed: make(chan struct{})}
}

// asked and answered take an id's idKey.
func (t *replyTracker) asked(key string) {
	t.mu.Lock()
	t.pending[key] = struct{}{}
	t.mu.Unlock()
}

func (t *replyTracker) answered(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pending[key]; !ok {
		return
	}
	delete(t.pending, key)
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *replyTracker) close() { t.once.Do(func() { close(t.closed) }) }

// wait returns once every request read so far has been answered, the
// connection is closed, or limit has passed (a call that never answers
// must not keep the process alive after its peer left).
func (t *replyTracker) wait(limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		t.mu.Lock()
		n, changed := len(t.pending), t.changed
		t.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-t.closed:
			return
		case <-timer.C:
			return
		}
	}
}

// stdinReader hands the SDK the filtered lines and, at the end of input,
// holds the end back until the requests already read are answered (at
// most drain). Closing it closes the source, which is what unblocks a
// read in progress on a pipe.
type stdinReader struct {
	filter *lineFilter
	src    io.Reader
	calls  *replyTracker
	drain  time.Duration
}

func (r *stdinReader) Read(p []byte) (int, error) {
	n, err := r.filter.Read(p)
	if err != nil && n == 0 {
		r.calls.wait(r.drain)
	}
	return n, err
}

func (r *stdinReader) Close() error {
	r.calls.close()
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// stdoutWriter writes the SDK's messages and the filter's refusals, one
// whole message per Write, and tells the tracker about every response.
// The SDK serialises its own writes, but the filter's refusals come from
// the reading goroutine, hence the mutex.
type stdoutWriter struct {
	mu    sync.Mutex
	out   io.Writer
	calls *replyTracker
}

func (w *stdoutWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	n, err := w.out.Write(p)
	w.mu.Unlock()
	// The SDK's own encoding is valid JSON; only the envelope is read, so
	// a large result is not decoded again.
	if e, ok := scanEnvelope(p); ok && e.method == nil {
		if key, ok := idKey(e.id); ok {
			w.calls.answered(key)
		}
	}
	return n, err
}

// refuse writes a refusal; a failed write is the peer gone, which the
// SDK's next write or read reports.
func (w *stdoutWriter) refuse(reply []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out.Write(reply)
}

func (*stdoutWriter) Close() error { return nil }

// ServeStdio serves one session of b on in/out until the peer closes in,
// or until ctx ends, then closes the session. Calls still in flight when
// ctx ends, or when in ends, get up to drain to answer first; 0 means
// DefaultDrainTimeout.
func ServeStdio(ctx context.Context, in io.Reader, out io.Writer, b Backend, drain time.Duration) error {
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	log := b.logger()
	calls := newReplyTracker()
	w := &stdoutWriter{out: out, calls: calls}
	filter := newLineFilter(in, MaxLineBytes, log, w.refuse)
	filter.calls = calls
	t := &mcp.IOTransport{
		Reader: &stdinReader{filter: filter, src: in, calls: calls, drain: drain},
		Writer: w,
		// The filter already bounds a line; the SDK's own cap is higher,
		// so it never refuses what we let through.
		MaxLineLength: MaxLineBytes + readChunk,
	}
	ss, err := b.MCP.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connect the stdio session: %w", err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		ss.Wait()
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
	}
	log.Info("shutdown signal received; draining")
	b.stopSessions(drain)
	ss.Close()
	<-ended
	return nil
}
