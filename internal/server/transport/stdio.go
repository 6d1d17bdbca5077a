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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
// well-formed JSON-RPC messages, one per line. A line over MaxLineBytes is
// discarded without being buffered (the reader skips to its newline), and
// a line that is not one JSON-RPC message is dropped; either way the next
// line is read as usual.
//
// go-sdk v1.8.0's reader would end the session on the first bad line: the
// decoding goroutine of newIOConnLimited (mcp/transport.go) returns on the
// first error from its one streaming json.Decoder, and ioConn.Read passes
// that error, or one from readBatch, to the connection, whose read loop
// (internal/jsonrpc2/conn.go, readIncoming) then stops for good. A line
// over IOTransport.MaxLineLength ends it the same way. So the SDK only
// ever sees lines that passed here (upstream
// modelcontextprotocol/go-sdk#1209).
type lineFilter struct {
	src *bufio.Reader
	log *slog.Logger
	max int
	// calls, when set, is told the id of every request passed on.
	calls *replyTracker
	line  []byte // the line being assembled
	out   []byte // the accepted line (with its newline) not yet read
	err   error  // the source's terminal error, reported once out is empty
}

func newLineFilter(r io.Reader, max int, log *slog.Logger) *lineFilter {
	return &lineFilter{src: bufio.NewReaderSize(r, readChunk), log: log, max: max}
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
// pending output.
func (f *lineFilter) next() {
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
	if cap(f.line) > keepLine {
		defer func() { f.line = nil }()
	}
	if over {
		f.log.Warn("dropped an over-long stdio line", "limit_bytes", f.max)
		return
	}
	msg := bytes.TrimSpace(bytes.TrimPrefix(f.line, utf8BOM))
	if len(msg) == 0 {
		return
	}
	if !json.Valid(msg) {
		f.log.Debug("dropped a stdio line that is not one JSON value")
		return
	}
	decoded, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		f.log.Debug("dropped a stdio line that is not a JSON-RPC message", "error", err)
		return
	}
	if req, ok := decoded.(*jsonrpc.Request); ok && req.IsCall() && f.calls != nil {
		f.calls.asked(req.ID)
	}
	f.out = append(append(make([]byte, 0, len(msg)+1), msg...), '\n')
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

// idKey makes 7 and "7" different keys, as they are different ids.
func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (t *replyTracker) asked(id jsonrpc.ID) {
	t.mu.Lock()
	t.pending[idKey(id)] = struct{}{}
	t.mu.Unlock()
}

func (t *replyTracker) answered(id jsonrpc.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pending[idKey(id)]; !ok {
		return
	}
	delete(t.pending, idKey(id))
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

// stdoutWriter tells the tracker about every response it writes. The SDK
// writes one whole message per Write.
type stdoutWriter struct {
	out   io.Writer
	calls *replyTracker
}

func (w stdoutWriter) Write(p []byte) (int, error) {
	n, err := w.out.Write(p)
	if msg, derr := jsonrpc.DecodeMessage(bytes.TrimSpace(p)); derr == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			w.calls.answered(resp.ID)
		}
	}
	return n, err
}

func (stdoutWriter) Close() error { return nil }

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
	filter := newLineFilter(in, MaxLineBytes, log)
	filter.calls = calls
	t := &mcp.IOTransport{
		Reader: &stdinReader{filter: filter, src: in, calls: calls, drain: drain},
		Writer: stdoutWriter{out: out, calls: calls},
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
