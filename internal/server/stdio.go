package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// MaxLineBytes caps one incoming stdio line (4 MiB, spec §9.4).
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
// line is read as usual. The SDK's reader would end the session on the
// first bad line, so it only ever sees lines that passed here.
type lineFilter struct {
	src  *bufio.Reader
	log  *slog.Logger
	max  int
	line []byte // the line being assembled
	out  []byte // the accepted line (with its newline) not yet read
	err  error  // the source's terminal error, reported once out is empty
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
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		f.log.Debug("dropped a stdio line that is not a JSON-RPC message", "error", err)
		return
	}
	f.out = append(append(make([]byte, 0, len(msg)+1), msg...), '\n')
}

// readCloser closes the source when the SDK closes the connection, which
// is what unblocks a read in progress on a pipe.
type readCloser struct {
	io.Reader
	src io.Reader
}

func (r readCloser) Close() error {
	if c, ok := r.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ServeStdio serves one session on in/out until the peer closes in, or
// until ctx ends, then closes the session. Calls still in flight when ctx
// ends get up to drain to answer first.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, drain time.Duration) error {
	return s.serveStdio(ctx, s.mcp, in, out, drain)
}

// serveStdio serves mcpServer; benchmarks use it to put a bare SDK server
// behind exactly the same line handling.
func (s *Server) serveStdio(ctx context.Context, mcpServer *mcp.Server, in io.Reader, out io.Writer, drain time.Duration) error {
	t := &mcp.IOTransport{
		Reader: readCloser{Reader: newLineFilter(in, MaxLineBytes, s.log), src: in},
		Writer: nopWriteCloser{out},
		// The filter already bounds a line; the SDK's own cap is higher,
		// so it never refuses what we let through.
		MaxLineLength: MaxLineBytes + readChunk,
	}
	ss, err := mcpServer.Connect(ctx, t, nil)
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
	s.log.Info("shutdown signal received; draining")
	if drain <= 0 {
		drain = DefaultDrainTimeout
	}
	s.stopSessions(drain)
	ss.Close()
	<-ended
	return nil
}
