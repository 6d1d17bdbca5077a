package transport

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
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

// lineFilter reads newline-delimited JSON-RPC from the peer, one message
// per line, and answers every line that is not one message itself: a line
// that is not JSON gets -32700, one that is JSON but not one JSON-RPC 2.0
// message (a batch, a wrong "jsonrpc", a "method" that is not a string, an
// id the SDK would answer under another id, anything the SDK's decoder
// refuses) gets -32600, under the line's id when it can be read and null
// otherwise (JSON-RPC 2.0 §5.1; issue #11 items 7 and 8). A line over
// MaxLineBytes is skipped without being buffered (the reader skips to its
// newline) and answered -32600 with id null. Either way the next line is
// read as usual.
//
// go-sdk v1.8.0's own stdio reader would end the session on the first bad
// line: the decoding goroutine of newIOConnLimited (mcp/transport.go)
// returns on the first error from its one streaming json.Decoder, and
// ioConn.Read passes that error, or one from readBatch, to the connection,
// whose read loop (internal/jsonrpc2/conn.go, readIncoming) then stops for
// good; a line over IOTransport.MaxLineLength ends it the same way
// (upstream modelcontextprotocol/go-sdk#1209). So the session reads
// through stdioConn, which hands the SDK only messages that passed here.
//
// Each line is checked by validJSON (json.Valid's verdict, in a few
// instructions a byte where json.Valid spent about 30) and one scan of
// its top-level members (scanEnvelope), checked (envelopeProblem), and a
// request in the common spelling is built from that same scan
// (envelopeRequest, copying only its params); anything else is decoded
// by the SDK's own jsonrpc.DecodeMessage. Either way it is read in place in
// the line buffer, and decoded once.
type lineFilter struct {
	src *bufio.Reader
	log *slog.Logger
	max int
	// refuse writes the error reply to a refused line.
	refuse func(reply []byte)
	line   []byte // the line being read
	err    error  // the source's terminal error, returned after the last message
}

func newLineFilter(r io.Reader, max int, log *slog.Logger, refuse func([]byte)) *lineFilter {
	return &lineFilter{src: bufio.NewReaderSize(r, readChunk), log: log, max: max, refuse: refuse}
}

// next returns the next JSON-RPC message, answering the lines before it
// that are not one; its error is the source's (io.EOF at the end).
func (f *lineFilter) next() (jsonrpc.Message, error) {
	for f.err == nil {
		if msg := f.line1(); msg != nil {
			return msg, nil
		}
	}
	return nil, f.err
}

// line1 reads one line and returns its message, or nil after answering
// (or skipping, when blank) the line. The source's error is kept in f.err,
// so the last line, without a newline, is still delivered.
func (f *lineFilter) line1() jsonrpc.Message {
	if cap(f.line) > keepLine {
		// Grown for one big message, which has been decoded by now: drop
		// it so it does not stay resident.
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
		f.err = err
		break
	}
	if over {
		f.log.Warn("refused an over-long stdio line", "limit_bytes", f.max)
		f.refuse(errorReply(nil, codeInvalidRequest, fmt.Sprintf("the message is longer than the %d-byte line limit", f.max)))
		return nil
	}
	raw := bytes.TrimSpace(bytes.TrimPrefix(f.line, utf8BOM))
	if len(raw) == 0 {
		return nil
	}
	if !validJSON(raw) {
		f.log.Debug("refused a stdio line that is not one JSON value")
		f.refuse(errorReply(nil, codeParseError, "parse error: the line is not one JSON value"))
		return nil
	}
	// One scan of the envelope serves both the check and the build.
	env, obj := scanEnvelope(raw)
	code, problem, id := envelopeProblem(raw, env, obj)
	var msg jsonrpc.Message
	if code == 0 {
		if req, ok := envelopeRequest(env); ok {
			msg = req
		} else {
			var err error
			if msg, err = jsonrpc.DecodeMessage(raw); err != nil {
				code, problem = codeInvalidRequest, "not a JSON-RPC 2.0 message: "+err.Error()
			}
		}
	}
	if code != 0 {
		f.log.Debug("refused a stdio line that is not one JSON-RPC message", "error", problem)
		f.refuse(errorReply(id, code, problem))
		return nil
	}
	return msg
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

// has reports whether the request under key is read and not yet answered.
func (t *replyTracker) has(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.pending[key]
	return ok
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

// stdioConn is the session's mcp.Connection over stdin and stdout, in
// place of the SDK's IOTransport: each line is decoded where it lies
// (lineFilter), by Read on the SDK's read loop, or, with the fast lane,
// by the lane's worker whose turn it is (fastLane.readOne), which runs a
// call it takes itself and hands the SDK's messages to Read, in order,
// with no hand-off on a call's way to its handler; Write encodes each
// message once, writes it with its newline in one call, and tells the
// tracker about every response (the SDK's ioConn kept a goroutine and a
// channel between the pipe and the read loop, and decoded every message
// three times: its json.Decoder, readBatch's attempt at an array, then
// DecodeMessage).
//
// At the end of input Read holds the end back until the requests already
// read are answered (at most drain). Closing it closes the source, which
// is what unblocks a read in progress on a pipe.
type stdioConn struct {
	filter *lineFilter
	src    io.Reader
	calls  *replyTracker
	drain  time.Duration
	// fast runs the plain tools/call requests itself (fastLane); nil
	// hands every message to the SDK.
	fast *fastLane

	// mu serialises writes: the SDK's messages and the filter's refusals
	// (written from the read loop); lockWrite takes it.
	mu  sync.Mutex
	out io.Writer
	// room tells whether a write of n bytes to out cannot block
	// (newOutRoom), under mu; nil: any may. Set for a lazy lane only.
	room func(n int) bool
	// writing says what the write under mu may do, for a lazy reader
	// that finds mu taken (lockWrite).
	writing atomic.Int32

	srcOnce   sync.Once // src is closed once: by Close, or by abandon first
	srcClosed error
	// closed is closed by Close: a worker holding a message for the
	// SDK's read loop drops it.
	closed    chan struct{}
	closeOnce sync.Once
}

// stdioTransport hands the SDK its one connection.
type stdioTransport struct{ conn *stdioConn }

func (t stdioTransport) Connect(context.Context) (mcp.Connection, error) { return t.conn, nil }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.fast != nil {
		// The lane's workers read (fastLane.readOne) and hand over
		// what is the SDK's, in order. Once the lane has ended (a failed
		// write, the connection closing) its workers stop, and the loop
		// reads for itself, after the reader of the moment, until the
		// read fails.
		if r, ok := c.handed(ctx, c.fast.stop); ok {
			return r.msg, r.err
		}
		if r, ok := c.handed(ctx, c.fast.tok); ok {
			return r.msg, r.err
		}
		msg, err := c.readDirect()
		if err == nil {
			c.fast.tok <- struct{}{}
		}
		return msg, err
	}
	return c.readDirect()
}

// handed waits for what a lane's worker hands the SDK (ok), or for
// other (not ok); the connection closing or ctx ending is an error.
func (c *stdioConn) handed(ctx context.Context, other <-chan struct{}) (readResult, bool) {
	select {
	case r := <-c.fast.toSDK:
		return r, true
	case <-other:
		return readResult{}, false
	case <-c.closed:
		return readResult{err: errConnClosed}, true
	case <-ctx.Done():
		return readResult{err: ctx.Err()}, true
	}
}

// readDirect reads the next message for the SDK on the caller's
// goroutine. At the end of input it first waits for the requests read to
// be answered (at most drain).
func (c *stdioConn) readDirect() (jsonrpc.Message, error) {
	msg, err := c.filter.next()
	if err != nil {
		c.calls.wait(c.drain)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.calls.asked(idKey(req.ID))
	}
	return msg, nil
}

// errConnClosed is what Read returns once the connection is closed.
var errConnClosed = errors.New("the stdio connection is closed")

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.Error != nil {
		msg = withValidCode(resp)
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode a message for stdout: %w", err)
	}
	return c.writeEncoded(msg, data, nil)
}

// writeEncoded writes msg, already encoded as data, with its newline.
// rd is the reader of a lazy lane's call whose reply this is (nil for
// any other write): while it holds the right to read stdin, the write
// goes ahead only if it cannot block, else rd hands that right on first
// (lockWrite). A peer that sends requests without reading the replies
// fills stdout while it waits for stdin to take its writes: a reply
// write blocked with nobody reading stdin meanwhile would hang both for
// good.
func (c *stdioConn) writeEncoded(msg jsonrpc.Message, data []byte, rd *reader) error {
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp {
		// Before the write: the peer may send its next line as soon as
		// it reads this one, under the same id (an id is unique only
		// among the requests in flight; jsonrpc2's processResult forgets
		// it before writing too), and that request must stay pending.
		// The end of input may then stop waiting while this write is
		// under way: the write goes ahead (the SDK's has passed its
		// shutdown check, the lane's its own), and the session's close
		// waits for it.
		if c.fast != nil {
			c.fast.answered(resp)
		}
		c.calls.answered(idKey(resp.ID))
	}
	c.lockWrite(len(data)+1, rd)
	_, err := c.out.Write(append(data, '\n'))
	c.unlockWrite()
	if err != nil && c.fast != nil {
		// The SDK cancels its requests when a write fails
		// (Connection.write); the lane's go the same way.
		c.fast.end(fmt.Errorf("%w: %v", errServerClosing, err))
	}
	return err
}

// refuse writes a refusal; a failed write is the peer gone, which the
// SDK's next write or read reports.
func (c *stdioConn) refuse(reply []byte) {
	c.lockWrite(len(reply), nil)
	defer c.unlockWrite()
	c.out.Write(reply)
}

// What a write under mu may do (stdioConn.writing).
const (
	writeNone     int32 = iota // none under way, or about to start or end
	writeFits                  // one that cannot block (room)
	writeMayBlock              // one that may block, or not yet told
)

// lockWrite takes mu for a write of n bytes. rd, the reader of a lazy
// lane's call (nil for any other write), while it holds the right to
// read stdin, hands it on first unless the write cannot block: neither
// its own (room) nor the one under way, if any, which it would wait for.
// It does not wait for one that may block (a peer that sends without
// reading fills stdout while it waits for stdin to take its writes);
// one that cannot is over at once, so it waits for that, yielding
// meanwhile. Lock order: mu, then the lane's (handOn).
func (c *stdioConn) lockWrite(n int, rd *reader) {
	if rd == nil || !rd.held {
		c.mu.Lock()
	} else {
		for !c.mu.TryLock() {
			if c.writing.Load() == writeMayBlock {
				rd.handOn()
				c.mu.Lock()
				break
			}
			runtime.Gosched()
		}
	}
	c.writing.Store(writeMayBlock)
	if c.room != nil && c.room(n) {
		c.writing.Store(writeFits)
		return
	}
	rd.handOn()
}

// unlockWrite lets mu go after a write.
func (c *stdioConn) unlockWrite() {
	c.writing.Store(writeNone)
	c.mu.Unlock()
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.calls.close()
	if c.fast != nil {
		// The SDK closes the connection once it is shutting down and its
		// own requests are done; the read loop's error, which cancels
		// what is left, follows at once.
		c.fast.end(errServerClosing)
	}
	return c.closeSrc()
}

// closeSrc closes the source, once.
func (c *stdioConn) closeSrc() error {
	c.srcOnce.Do(func() {
		if cl, ok := c.src.(io.Closer); ok {
			c.srcClosed = cl.Close()
		}
	})
	return c.srcClosed
}

// abandon ends the session after a reply of the fast lane's could not be
// written. After a failed write of its own the SDK cancels its requests in
// flight and closes the connection once they have returned (jsonrpc2's
// Connection.write and updateInFlight), but it never sees the lane's
// writes: without this it would go on running its calls, and reading
// stdin, for a peer that can no longer be answered. Closing the source
// ends its read loop, which cancels those calls and closes the session
// once they return; nothing read is left to wait for, as nothing can be
// answered.
func (c *stdioConn) abandon() {
	c.calls.close()
	c.closeSrc()
}

func (*stdioConn) SessionID() string { return "" }

// idKey makes 7 and "7" different keys, as they are different ids.
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		return strconv.Quote(v)
	}
	return ""
}

// ServeStdio serves one session of b on in/out until the peer closes in,
// or until ctx ends, then closes the session. Calls still in flight when
// ctx ends, or when in ends, get up to drain to answer first; 0 means
// DefaultDrainTimeout.
func ServeStdio(ctx context.Context, in io.Reader, out io.Writer, b Backend, drain time.Duration) error {
	return serveStdio(ctx, in, out, b, drain, laneOptions{})
}

// laneOptions are the fast lane's test switches.
type laneOptions struct {
	off   bool          // every message to the SDK, as before the lane
	taken *atomic.Int64 // counts the calls the lane takes; nil: not counted
	// workers counts the lane's workers started; nil: not counted.
	workers *atomic.Int64
}

func serveStdio(ctx context.Context, in io.Reader, out io.Writer, b Backend, drain time.Duration, lane laneOptions) error {
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	log := b.logger()
	conn := &stdioConn{src: in, out: out, calls: newReplyTracker(), drain: drain, closed: make(chan struct{})}
	conn.filter = newLineFilter(in, MaxLineBytes, log, conn.refuse)
	if !lane.off {
		conn.fast = newFastLane(ctx, b, conn)
		conn.fast.taken = lane.taken
		conn.fast.workers = lane.workers
		if conn.fast.lazy {
			conn.room = newOutRoom(out)
		}
		conn.fast.startReading()
	}
	ss, err := b.MCP.Connect(ctx, stdioTransport{conn}, nil)
	if conn.fast != nil {
		conn.fast.setSession(ss)
	}
	if err != nil {
		if conn.fast != nil {
			// Its first worker is reading: closing ends the read.
			conn.Close()
			conn.fast.wait()
		}
		return fmt.Errorf("connect the stdio session: %w", err)
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		ss.Wait()
		if conn.fast != nil {
			conn.fast.wait()
		}
	}()
	select {
	case <-ended:
		return nil
	case <-ctx.Done():
	}
	log.Info("shutdown signal received; draining")
	b.stopSessions(drain)
	// Closing the session closes the connection, which closes in: that
	// ends a read in progress on a pipe or a socket, but not on a stdin
	// in blocking mode (the usual stdin: os.File reads it with a plain
	// read(2), which Close does not interrupt), and the session's close
	// waits for its read loop. So the wait is bounded: a peer that keeps
	// stdin open and silent must not keep the process from exiting on a
	// signal. The read loop and this close are then left to the process's
	// exit, the one goroutine pair not stopped here.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		ss.Close()
	}()
	timer := time.NewTimer(FinalCloseTimeout)
	defer timer.Stop()
	select {
	case <-ended:
		<-closed
	case <-timer.C:
		log.Warn("stdin is still open and its read cannot be interrupted; exiting without waiting for the peer to close it",
			"waited", FinalCloseTimeout.String())
	}
	return nil
}
