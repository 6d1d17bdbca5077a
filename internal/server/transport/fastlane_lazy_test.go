package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// The lazy read (Backend.LazyRead) over real pipes: a lazy lane writes a
// reply while it holds stdin's read only when the pipe has room for it,
// which only an *os.File pipe tells (newOutRoom), so io.Pipe would not
// do here.

// goid is the calling goroutine's id, from its stack trace's first line.
func goid() int64 {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := strings.Fields(string(buf[:n]))
	id, _ := strconv.ParseInt(f[1], 10, 64)
	return id
}

// pipeSession is one initialized stdio session served on OS pipes.
type pipeSession struct {
	in      *os.File // the peer's end of stdin
	out     *bufio.Reader
	outR    *os.File
	served  chan error
	workers atomic.Int64
}

// newPipeSession serves b over OS pipes and answers its initialize. The
// session ends when the test does: stdin is closed, ServeStdio waited for
// (bounded), stdout's read end closed.
func newPipeSession(t *testing.T, b transport.Backend) *pipeSession {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &pipeSession{in: inW, out: bufio.NewReader(outR), outR: outR, served: make(chan error, 1)}
	go func() {
		s.served <- transport.ServeStdioCounting(context.Background(), inR, outW, b, 10*time.Second, nil, &s.workers)
		outW.Close()
		inR.Close()
	}()
	t.Cleanup(func() {
		inW.Close()
		var err error
		select {
		case err = <-s.served:
		case <-time.After(10 * time.Second):
			// A reply write blocked on a stdout nobody reads (a failed
			// test): failing it ends the session.
			outR.Close()
			select {
			case err = <-s.served:
			case <-time.After(10 * time.Second):
				t.Error("ServeStdio never returned")
				return
			}
		}
		if err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		outR.Close()
	})
	s.send(t, initializeBody)
	if m := s.recv(t); m["id"] != float64(1) {
		t.Fatalf("initialize: %v", m)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *pipeSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := s.in.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// recv reads the next message written, failing after 30 s.
func (s *pipeSession) recv(t *testing.T) map[string]any {
	t.Helper()
	s.outR.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("no reply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("not JSON: %q", line)
	}
	return m
}

// lazyBackend is the test server's Backend with Direct replaced by
// direct and LazyRead set.
func lazyBackend(t *testing.T, direct func(context.Context, transport.DirectCall) (transport.DirectReply, bool)) transport.Backend {
	b := newHarness(t, fixture{}).srv.Backend()
	b.Direct = direct
	b.LazyRead = true
	return b
}

var okWire = json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)

// With LazyRead and a Direct that never waits, the worker that reads a
// call runs it and reads the next line itself: every call is run on one
// goroutine and no worker is started after the first call's. (The first
// call is not counted: its reply's write may find the SDK's write of the
// reply to initialize still holding the write lock, which hands stdin on
// as a write that could block would.) Without LazyRead
// (the same Backend otherwise) the reader hands stdin on before each call
// runs, so the calls alternate between workers: the check that the
// observables tell the two apart.
func TestStdioLazyLaneReadsOnTheCallersGoroutine(t *testing.T) {
	for _, lazy := range []bool{true, false} {
		t.Run(fmt.Sprintf("lazy %v", lazy), func(t *testing.T) {
			var mu sync.Mutex
			ran := map[int64]int{} // by goroutine id: calls run
			var waits atomic.Int64
			b := lazyBackend(t, func(_ context.Context, c transport.DirectCall) (transport.DirectReply, bool) {
				mu.Lock()
				ran[goid()]++
				mu.Unlock()
				if c.Wait != nil {
					waits.Add(1)
				}
				return transport.DirectReply{Wire: okWire}, true
			})
			b.LazyRead = lazy
			s := newPipeSession(t, b)
			s.send(t, call("9", `{"name":"anything","arguments":{}}`))
			s.recv(t)
			mu.Lock()
			clear(ran)
			mu.Unlock()
			waits.Store(0)
			workers := s.workers.Load()
			const calls = 50
			for i := range calls {
				id := strconv.Itoa(10 + i)
				s.send(t, call(id, `{"name":"anything","arguments":{}}`))
				if m := s.recv(t); fmt.Sprint(m["id"]) != id || m["result"] == nil {
					t.Fatalf("reply to %s: %v", id, m)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if lazy {
				if len(ran) != 1 {
					t.Errorf("the calls ran on %d goroutines, want 1: %v", len(ran), ran)
				}
				if n := s.workers.Load() - workers; n != 0 {
					t.Errorf("%d workers started, want none", n)
				}
				if waits.Load() != calls {
					t.Errorf("%d of %d calls had a Wait", waits.Load(), calls)
				}
				return
			}
			if len(ran) < 2 {
				t.Errorf("without LazyRead the calls ran on %d goroutines, want at least 2", len(ran))
			}
			if waits.Load() != 0 {
				t.Errorf("without LazyRead %d calls had a Wait, want none", waits.Load())
			}
		})
	}
}

// A call that calls Wait hands stdin's read on: while it blocks, a second
// call is read and answered, and a notifications/cancelled for the first
// is read and cancels it. Then the end of input waits for its reply.
func TestStdioLazyLaneWaitReadsOn(t *testing.T) {
	entered := make(chan struct{})
	cancelled := make(chan error, 1)
	b := lazyBackend(t, func(ctx context.Context, c transport.DirectCall) (transport.DirectReply, bool) {
		if c.Params.Name != "block" {
			return transport.DirectReply{Wire: okWire}, true
		}
		c.Wait()
		c.Wait() // twice: nothing more
		close(entered)
		select {
		case <-ctx.Done():
			cancelled <- context.Cause(ctx)
			return transport.DirectReply{Err: ctx.Err()}, true
		case <-time.After(30 * time.Second):
			cancelled <- errors.New("never cancelled")
			return transport.DirectReply{Wire: okWire}, true
		}
	})
	s := newPipeSession(t, b)
	s.send(t, call("2", `{"name":"block","arguments":{}}`))
	<-entered
	s.send(t, call("3", `{"name":"quick","arguments":{}}`))
	if m := s.recv(t); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("the second call's reply, while the first blocks: %v", m)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("the blocked call ended with %v, want it cancelled", err)
	}
	s.in.Close()
	if m := s.recv(t); m["id"] != float64(2) {
		t.Fatalf("the cancelled call's reply: %v", m)
	}
	if err := <-s.served; err != nil {
		t.Fatalf("ServeStdio: %v", err)
	}
	s.served <- nil // for the cleanup
}

// A peer that writes all its requests before reading any reply fills
// stdin and stdout alike: a lazy lane that wrote a reply while holding
// stdin's read would block on the full stdout while the peer blocks on
// the full stdin. Every reply must arrive.
func TestStdioLazyLanePipeliningPeer(t *testing.T) {
	text := strings.Repeat("x", 160)
	wire := json.RawMessage(`{"content":[{"type":"text","text":"` + text + `"}]}`)
	b := lazyBackend(t, func(context.Context, transport.DirectCall) (transport.DirectReply, bool) {
		return transport.DirectReply{Wire: wire}, true
	})
	s := newPipeSession(t, b)
	const n = 2000
	var reqs bytes.Buffer
	for i := range n {
		reqs.WriteString(call(strconv.Itoa(100+i), `{"name":"pad","arguments":{}}`) + "\n")
	}
	// Both pipes must overflow for the test to mean anything.
	if reqs.Len() < 2<<16 || n*(len(wire)+30) < 2<<16 {
		t.Fatalf("%d bytes of requests, %d of replies: too few to fill the pipes", reqs.Len(), n*(len(wire)+30))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	written := make(chan error, 1)
	go func() {
		_, err := s.in.Write(reqs.Bytes())
		written <- err
	}()
	select {
	case err := <-written:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		// Unblocks the writer; the cleanup ends the session.
		s.in.Close()
		<-written
		t.Fatal("the server stopped reading stdin while its stdout was full: deadlock")
	}
	seen := map[float64]bool{}
	s.outR.SetReadDeadline(time.Now().Add(30 * time.Second))
	for len(seen) < n {
		line, err := s.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%d of %d replies, then %v", len(seen), n, err)
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil || m["result"] == nil {
			t.Fatalf("reply %q", line)
		}
		seen[m["id"].(float64)] = true
	}
}

// A call Direct does not answer goes to the chain, which may block
// anywhere: the reader hands stdin on before it, starting a worker.
// (Possibly one more: the next call's reply may find the chain's reply
// write still holding the write lock.) Without that hand-off the reader
// would run the chain, write its reply and read the next call itself, and
// no second worker would start.
func TestStdioLazyLaneHandsOnBeforeTheChain(t *testing.T) {
	b := lazyBackend(t, func(_ context.Context, c transport.DirectCall) (transport.DirectReply, bool) {
		return transport.DirectReply{Wire: okWire}, c.Params.Name != "chain"
	})
	s := newPipeSession(t, b)
	s.send(t, call("2", `{"name":"chain","arguments":{}}`))
	// The SDK's tools/call handler knows no such tool.
	if m := s.recv(t); m["id"] != float64(2) || m["result"] == nil && m["error"] == nil {
		t.Fatalf("the chain's reply: %v", m)
	}
	s.send(t, call("3", `{"name":"direct","arguments":{}}`))
	if m := s.recv(t); m["id"] != float64(3) || m["result"] == nil {
		t.Fatalf("the next call's reply: %v", m)
	}
	if n := s.workers.Load(); n < 2 {
		t.Errorf("%d workers started, want at least 2: stdin handed on before the chain", n)
	}
}

// A reply that cannot be written (stdout's reader gone) ends the session
// with a lazy lane too, stdin left open: the worker holding stdin's read
// when the lane ends hands it to the SDK's read loop, which then finds
// stdin closed (stdioConn.abandon) and ends the session.
func TestStdioLazyLaneFailedWriteEndsTheSession(t *testing.T) {
	b := lazyBackend(t, func(context.Context, transport.DirectCall) (transport.DirectReply, bool) {
		return transport.DirectReply{Wire: okWire}, true
	})
	s := newPipeSession(t, b)
	s.outR.Close()
	s.send(t, call("2", `{"name":"direct","arguments":{}}`))
	select {
	case err := <-s.served:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("ServeStdio still serving after a reply could not be written")
	}
	s.served <- nil // for the cleanup
}
