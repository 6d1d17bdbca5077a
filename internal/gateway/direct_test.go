package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// The direct path (gateway.Transport for plain-http, unproxied requests)
// is held here to net/http's behaviour: the same replies read from the
// same bytes, keep-alive reuse exactly when net/http would reuse, a stale
// idle connection retried by net/http's rule, cancellation reported as
// net/http reports it, and no goroutine of its own.

// dialCount counts the connections a transport dials: all of them, and
// those its net/http Fallback dials (so a test can prove which path ran).
type dialCount struct{ all, fallback atomic.Int64 }

func countingTransport(t *testing.T) (*gateway.Transport, *dialCount) {
	t.Helper()
	tr := gateway.NewTransport()
	t.Cleanup(tr.CloseIdleConnections)
	d := &dialCount{}
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.all.Add(1)
		return dial(ctx, network, addr)
	}
	fdial := tr.Fallback.DialContext
	tr.Fallback.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.fallback.Add(1)
		return fdial(ctx, network, addr)
	}
	return tr, d
}

// rawGateway is a loopback server that answers each request with bytes
// the test scripts, for what net/http's server (and so gatewaytest) will
// not send: HTTP/1.0, a body cut short, a connection closed at a chosen
// moment.
type rawGateway struct {
	ln       net.Listener
	accepts  atomic.Int64
	requests atomic.Int64
	// reply answers the n-th request (from 1) with raw bytes; hangUp
	// closes the connection after them.
	reply func(n int64, req *http.Request) (raw string, hangUp bool)
	// closed receives each connection the server closed (the first 64
	// not yet received).
	closed chan struct{}

	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func newRawGateway(t testing.TB, reply func(n int64, req *http.Request) (string, bool)) *rawGateway {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &rawGateway{ln: ln, reply: reply, closed: make(chan struct{}, 64)}
	g.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.accepts.Add(1)
			g.mu.Lock()
			g.conns = append(g.conns, c)
			g.mu.Unlock()
			g.wg.Go(func() { g.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		g.mu.Lock()
		for _, c := range g.conns {
			c.Close()
		}
		g.mu.Unlock()
		g.wg.Wait()
	})
	return g
}

func (g *rawGateway) serve(c net.Conn) {
	defer func() {
		c.Close()
		select {
		case g.closed <- struct{}{}:
		default: // a test that opens more connections than it waits for
		}
	}()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		raw, hangUp := g.reply(g.requests.Add(1), req)
		if _, err := io.WriteString(c, raw); err != nil || hangUp {
			return
		}
	}
}

func (g *rawGateway) URL() string { return "http://" + g.ln.Addr().String() }

// chatOK is a complete chat reply with keep-alive framing.
const chatOK = `{"id":"x","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`

func withLength(head, body string) string {
	return head + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// skipWithoutDirect skips a test of the direct path where the platform
// sends every request through net/http (poll_other.go).
func skipWithoutDirect(t testing.TB) {
	t.Helper()
	if !gateway.DirectPath {
		t.Skip("no direct path on this platform: requests go through net/http")
	}
}

// get sends a GET of url through rt and reads the reply.
func get(t *testing.T, rt http.RoundTripper, url string) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return send(rt, req)
}

// N sequential turns go out on one connection, and none through net/http.
func TestDirectReusesOneConnection(t *testing.T) {
	skipWithoutDirect(t)
	g := gatewaytest.New(t)
	tr, dials := countingTransport(t)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("ok") })
	for range 5 {
		if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Models(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if n, f := dials.all.Load(), dials.fallback.Load(); n != 1 || f != 0 {
		t.Errorf("six requests dialled %d connections (%d by net/http); want 1 on the direct path", n, f)
	}
}

// Every framing reads as net/http reads it, and the connection is reused
// exactly when net/http would reuse it.
func TestDirectReadsRepliesAsNetHTTP(t *testing.T) {
	skipWithoutDirect(t)
	cases := []struct {
		name, raw string
		hangUp    bool
		reused    bool
	}{
		{"content-length", withLength("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", chatOK), false, true},
		{"chunked with trailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-T: v\r\n\r\n", false, true},
		{"error status", withLength("HTTP/1.1 500 Internal Server Error\r\n", `{"error":{"message":"boom"}}`), false, true},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", false, true},
		{"early hints first", "HTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" + withLength("HTTP/1.1 200 OK\r\n", "ok"), false, true},
		{"1.0 keep-alive", withLength("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n", "ok"), false, true},
		{"gzip not decoded", withLength("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n", "\x1f\x8bnot really"), false, true},
		// The server keeps these two open: the client must close them.
		{"connection close", withLength("HTTP/1.1 200 OK\r\nConnection: close\r\n", "ok"), false, false},
		{"1.0 with length", withLength("HTTP/1.0 200 OK\r\n", "ok"), false, false},
		{"1.0 until close", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nread until the server closes", true, false},
		{"1.1 until close", "HTTP/1.1 200 OK\r\n\r\nno length, no chunking", true, false},
		{"cut short", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", true, false},
		{"chunked cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", true, false},
		{"bad status line", "HTTP/1.1 abc\r\n\r\n", true, false},
		// Bytes nobody asked for after the reply: the connection is not
		// kept (directBody.release, probeStale).
		{"bytes after the reply", withLength("HTTP/1.1 200 OK\r\n", "ok") + "unasked", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRawGateway(t, func(int64, *http.Request) (string, bool) { return tc.raw, tc.hangUp })
			// net/http, asked not to compress as the direct path does not.
			ref := &http.Transport{DisableCompression: true}
			t.Cleanup(ref.CloseIdleConnections)
			want, wantBody, wantErr := get(t, ref, g.URL()+"/v1/models")
			before := g.accepts.Load()

			tr, dials := countingTransport(t)
			got, gotBody, gotErr := get(t, tr, g.URL()+"/v1/models")
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("direct error %v, net/http error %v", gotErr, wantErr)
			}
			if dials.fallback.Load() != 0 {
				t.Fatal("the request went through net/http")
			}
			if want != nil {
				if got.StatusCode != want.StatusCode || got.Proto != want.Proto || got.ContentLength != want.ContentLength ||
					got.Close != want.Close || string(gotBody) != string(wantBody) ||
					strings.Join(got.TransferEncoding, ",") != strings.Join(want.TransferEncoding, ",") {
					t.Errorf("direct %d %s len %d close %v te %v body %q\nnet/http %d %s len %d close %v te %v body %q",
						got.StatusCode, got.Proto, got.ContentLength, got.Close, got.TransferEncoding, gotBody,
						want.StatusCode, want.Proto, want.ContentLength, want.Close, want.TransferEncoding, wantBody)
				}
				if got.Header.Get("Content-Type") != want.Header.Get("Content-Type") || got.Trailer.Get("X-T") != want.Trailer.Get("X-T") {
					t.Errorf("headers %v trailer %v, net/http %v trailer %v", got.Header, got.Trailer, want.Header, want.Trailer)
				}
			}
			// A second request: on the same connection only if it was kept.
			_, _, _ = get(t, tr, g.URL()+"/v1/models")
			if n := g.accepts.Load() - before; (n == 1) != tc.reused {
				t.Errorf("two requests took %d connections; reused should be %v", n, tc.reused)
			}
		})
	}
}

// The direct path writes what net/http's Request.Write writes for the
// same request, header for header.
func TestDirectWritesTheRequestAsNetHTTP(t *testing.T) {
	skipWithoutDirect(t)
	seen, g, tr, ref := requestRecorder(t)
	for _, rt := range []http.RoundTripper{ref, tr} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL()+"/v1/chat/completions?x=1", strings.NewReader(`{"a":1}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json")
		if _, _, err := send(rt, req); err != nil {
			t.Fatal(err)
		}
	}
	want, got := <-seen, <-seen
	if got.Method != want.Method || got.RequestURI != want.RequestURI || got.Host != want.Host || got.ContentLength != want.ContentLength || got.Proto != want.Proto {
		t.Errorf("direct %s %s %s host %s len %d; net/http %s %s %s host %s len %d",
			got.Method, got.RequestURI, got.Proto, got.Host, got.ContentLength, want.Method, want.RequestURI, want.Proto, want.Host, want.ContentLength)
	}
	if len(got.Header) != len(want.Header) {
		t.Errorf("direct headers %v\nnet/http headers %v", got.Header, want.Header)
	}
	for k := range want.Header {
		if got.Header.Get(k) != want.Header.Get(k) {
			t.Errorf("header %s: direct %q, net/http %q", k, got.Header.Get(k), want.Header.Get(k))
		}
	}
}

// send sends req through rt and reads the reply.
func send(rt http.RoundTripper, req *http.Request) (*http.Response, []byte, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// A reply cut short is a clear transport error, and its connection is not
// used again.
func TestDirectReplyCutShort(t *testing.T) {
	skipWithoutDirect(t)
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		if n == 1 {
			return "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n" + chatOK[:40], true
		}
		return withLength("HTTP/1.1 200 OK\r\n", chatOK), false
	})
	tr, _ := countingTransport(t)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL() + "/v1", APIKey: secret.MustNew("k"), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), userTurn("hi"))
	ge := asError(t, err, gateway.KindTransport)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !ge.Retryable() || !strings.Contains(err.Error(), "check that the gateway is running") {
		t.Errorf("cut short: %v", err)
	}
	if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
		t.Fatal(err)
	}
	if n := g.accepts.Load(); n != 2 {
		t.Errorf("%d connections; the cut one must not be reused", n)
	}
}

// The server closed an idle connection: the next request (a POST) goes out
// on a new one without the caller seeing an error.
func TestDirectStaleIdleConnection(t *testing.T) {
	skipWithoutDirect(t)
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		// The first reply promises keep-alive, then the server closes.
		return withLength("HTTP/1.1 200 OK\r\n", chatOK), n == 1
	})
	tr, _ := countingTransport(t)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL() + "/v1", APIKey: secret.MustNew("k"), HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
		t.Fatal(err)
	}
	<-g.closed // the server has closed the connection the client keeps idle
	if _, err := c.Complete(t.Context(), userTurn("again")); err != nil {
		t.Fatalf("the stale connection surfaced: %v", err)
	}
	if n, r := g.accepts.Load(), g.requests.Load(); n != 2 || r != 2 {
		t.Errorf("%d connections, %d requests; want 2 and 2", n, r)
	}
}

// A reused connection that ends after taking the request and before any
// byte of the reply: a GET goes out again on a new connection, a POST does
// not (the server may have acted on it), as net/http decides.
func TestDirectRetriesOnlyWhatNetHTTPRetries(t *testing.T) {
	skipWithoutDirect(t)
	// A POST with an Idempotency-Key is replayable by net/http's rule.
	for _, name := range []string{http.MethodGet, http.MethodPost, "POST with Idempotency-Key"} {
		method, keyed := strings.Fields(name)[0], strings.Contains(name, "Idempotency-Key")
		t.Run(name, func(t *testing.T) {
			g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
				if n == 2 {
					return "", true // took the second request, closed without a reply
				}
				return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
			})
			tr, _ := countingTransport(t)
			send := func() error {
				req, err := http.NewRequestWithContext(t.Context(), method, g.URL()+"/v1/x", strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				if keyed {
					req.Header.Set("Idempotency-Key", "k1")
				}
				_, _, err = send(tr, req)
				return err
			}
			if err := send(); err != nil {
				t.Fatal(err)
			}
			err := send()
			switch {
			case method == http.MethodGet || keyed:
				if err != nil || g.requests.Load() != 3 || g.accepts.Load() != 2 {
					t.Errorf("%s: %v after %d requests on %d connections; want it sent again on a second", name, err, g.requests.Load(), g.accepts.Load())
				}
			default:
				if err == nil || g.requests.Load() != 2 || !strings.Contains(err.Error(), "closed the connection before replying") {
					t.Errorf("POST: %v after %d requests; want one attempt and the error", err, g.requests.Load())
				}
			}
		})
	}
}

// Cancelling while the gateway holds the reply ends the wait with the
// context's error, as net/http reports it, and the connection is dropped.
func TestDirectCancelWhileWaitingForHeaders(t *testing.T) {
	skipWithoutDirect(t)
	arrived := make(chan struct{}, 1)
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		if n == 1 {
			arrived <- struct{}{}
			<-t.Context().Done() // holds until the test ends
			return "", true
		}
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.URL()+"/v1/chat/completions", strings.NewReader("{}"))
		_, _, err := send(tr, req)
		errc <- err
	}()
	<-arrived
	why := errors.New("the run was cancelled")
	cancel(why)
	if err := <-errc; err != why {
		t.Errorf("cancelled round trip: %v, want the context's cause as net/http returns it", err)
	}
	if _, _, err := get(t, tr, g.URL()+"/v1/models"); err != nil {
		t.Fatal(err)
	}
	if n := g.accepts.Load(); n != 2 {
		t.Errorf("%d connections; the cancelled one must not be reused", n)
	}
}

// Cancelling while the body is being read ends the read with the
// context's error, and the connection is dropped.
func TestDirectCancelWhileReadingTheBody(t *testing.T) {
	skipWithoutDirect(t)
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		if n == 1 {
			return "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfirst", false // the rest never comes
		}
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, g.URL()+"/v1/models", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("first bytes %q, %v", first, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 10))
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("read after cancel: %v, want context.Canceled", err)
	}
	resp.Body.Close()
	if _, _, err := get(t, tr, g.URL()+"/v1/models"); err != nil {
		t.Fatal(err)
	}
	if n := g.accepts.Load(); n != 2 {
		t.Errorf("%d connections; the cancelled one must not be reused", n)
	}
}

// Cancelling while dialling, or while writing a request the gateway does
// not read (32 MiB, more than the sockets buffer), ends the round trip
// with the context's cause.
func TestDirectCancelWhileDiallingOrWriting(t *testing.T) {
	skipWithoutDirect(t)
	why := errors.New("the run was cancelled")
	t.Run("dialling", func(t *testing.T) {
		tr, _ := countingTransport(t)
		dialling := make(chan struct{})
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			close(dialling)
			<-ctx.Done()
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ctx.Err()}
		}
		ctx, cancel := context.WithCancelCause(t.Context())
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:9/v1/models", nil)
			_, _, err := send(tr, req)
			errc <- err
		}()
		<-dialling
		cancel(why)
		if err := <-errc; err != why {
			t.Errorf("cancelled dial: %v, want the context's cause", err)
		}
	})
	t.Run("writing", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				accepted <- c // never read
			}
		}()
		tr, _ := countingTransport(t)
		ctx, cancel := context.WithCancelCause(t.Context())
		errc := make(chan error, 1)
		go func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions", bytes.NewReader(make([]byte, 32<<20)))
			_, _, err := send(tr, req)
			errc <- err
		}()
		c := <-accepted
		defer c.Close()
		cancel(why)
		if err := <-errc; err != why {
			t.Errorf("cancelled write: %v, want the context's cause", err)
		}
	})
}

// A request a proxy takes, and an https one, go through net/http.
func TestDirectFallsBackToNetHTTP(t *testing.T) {
	t.Run("proxy", func(t *testing.T) {
		var proxied atomic.Int64
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.IsAbs() { // a proxy sees the absolute URL
				proxied.Add(1)
			}
			_, _ = io.WriteString(w, "via proxy")
		}))
		t.Cleanup(proxy.Close)
		tr, dials := countingTransport(t)
		tr.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse(proxy.URL) }
		_, body, err := get(t, tr, "http://gateway.invalid/v1/models")
		if err != nil || string(body) != "via proxy" || proxied.Load() != 1 || dials.fallback.Load() != 1 {
			t.Errorf("proxied: %q, %v; proxy saw %d, net/http dialled %d", body, err, proxied.Load(), dials.fallback.Load())
		}
	})
	t.Run("https", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, r.Proto)
		}))
		t.Cleanup(srv.Close)
		tr, dials := countingTransport(t)
		tr.Fallback.TLSClientConfig = &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		_, body, err := get(t, tr, srv.URL+"/v1/models")
		if err != nil || dials.fallback.Load() != 1 {
			t.Errorf("https: %q, %v; net/http dialled %d", body, err, dials.fallback.Load())
		}
	})
}

// A turn in flight on the direct path costs the client no goroutine but
// its caller's; on net/http it costs the connection's read and write loops
// besides. Only the client's goroutines are counted (those running the
// gateway client or net/http's transport), not the in-process server's.
func TestDirectStartsNoGoroutine(t *testing.T) {
	skipWithoutDirect(t)
	g := gatewaytest.New(t)
	inFlight := func(rt http.RoundTripper) int {
		c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), HTTPClient: &http.Client{Transport: rt}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseIdleConnections()
		gate := gatewaytest.NewGate()
		g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("ok")))
		before := clientGoroutines()
		done := make(chan error, 1)
		go func() {
			_, err := c.Complete(t.Context(), userTurn("hi"))
			done <- err
		}()
		<-gate.Arrived()
		n := 0
		for id := range clientGoroutines() {
			if !before[id] {
				n++
			}
		}
		gate.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return n
	}
	tr, _ := countingTransport(t)
	if direct, fallback := inFlight(tr), inFlight(tr.Fallback); direct != 1 || fallback != 3 {
		t.Errorf("a turn in flight: %d client goroutines on the direct path, %d on net/http; want 1 (the caller) and 3", direct, fallback)
	}
}

// Idle connections close after 90 s on a timer (no goroutine waits for
// it), and at once on CloseIdleConnections; a connection idle for less is
// reused.
func TestDirectIdleTimeoutAndClose(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		var opened, closed atomic.Int64
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
			ConnState: func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					opened.Add(1)
				case http.StateClosed:
					closed.Add(1)
				}
			},
		}
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = srv.Serve(ln)
		}()
		tr := gateway.NewTransport()
		tr.DialContext = ln.dial
		gateway.PoolUnprobed(tr)
		fetch := func() {
			if _, _, err := get(t, tr, "http://gateway.test/v1/models"); err != nil {
				t.Fatal(err)
			}
		}
		fetch()
		time.Sleep(89 * time.Second)
		fetch()
		if opened.Load() != 1 {
			t.Errorf("a connection idle 89 s was not reused: %d opened", opened.Load())
		}
		time.Sleep(91 * time.Second)
		synctest.Wait()
		if closed.Load() != 1 {
			t.Errorf("after 91 s idle, %d connections closed; want 1", closed.Load())
		}
		fetch()
		tr.CloseIdleConnections()
		synctest.Wait()
		if opened.Load() != 2 || closed.Load() != 2 {
			t.Errorf("CloseIdleConnections: %d opened, %d closed; want 2 and 2", opened.Load(), closed.Load())
		}
		_ = srv.Close()
		<-served
	})
}

// The client's own timeouts hold on the direct path too (the request
// waits on the connection's deadline, moved by the context's end).
func TestDirectTimeoutOnAFakeClock(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		silentServerOn(gateway.NewTransport(), func(hc *http.Client) {
			c, err := gateway.New(gateway.Options{BaseURL: "http://gateway.test/v1", APIKey: secret.MustNew("k"), Timeout: 7 * time.Second, HTTPClient: hc})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = c.Complete(t.Context(), userTurn("hi"))
			if got := time.Since(start); got != 7*time.Second {
				t.Errorf("gave up after %v, want 7s", got)
			}
			if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() {
				t.Errorf("not a timeout: %v", err)
			}
		})
	})
}

// Whatever bytes a server sends, the direct path reads the same reply as
// net/http, or fails where net/http fails. The server closes the
// connection after its bytes, so a reply that promises more ends short on
// both.
func FuzzDirectReadsAsNetHTTP(f *testing.F) {
	for _, seed := range []string{
		withLength("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n", chatOK),
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n0\r\nX-T: v\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil close",
		"HTTP/1.1 103 Early Hints\r\n\r\n" + withLength("HTTP/1.1 200 OK\r\n", "ok"),
		strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + withLength("HTTP/1.1 200 OK\r\n", "ok"),
		"HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",
		"HTTP/1.1 200\r\n\r\n",
		"",
	} {
		f.Add(seed)
	}
	var mu sync.Mutex
	current := ""
	g := newRawGateway(f, func(int64, *http.Request) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		return current, true
	})
	f.Fuzz(func(t *testing.T, raw string) {
		mu.Lock()
		current = raw
		mu.Unlock()
		// Each side on fresh connections: a kept one would carry what an
		// earlier input left behind.
		ref := &http.Transport{DisableCompression: true}
		defer ref.CloseIdleConnections()
		want, wantBody, wantErr := get(t, ref, g.URL()+"/v1/models")
		tr := gateway.NewTransport()
		defer tr.CloseIdleConnections()
		got, gotBody, gotErr := get(t, tr, g.URL()+"/v1/models")
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("direct error %v, net/http error %v", gotErr, wantErr)
		}
		if wantErr != nil {
			return
		}
		if got.StatusCode != want.StatusCode || got.ContentLength != want.ContentLength || got.Close != want.Close ||
			string(gotBody) != string(wantBody) || fmt.Sprint(got.Header) != fmt.Sprint(want.Header) || fmt.Sprint(got.Trailer) != fmt.Sprint(want.Trailer) {
			t.Errorf("direct %d len %d close %v header %v trailer %v body %q\nnet/http %d len %d close %v header %v trailer %v body %q",
				got.StatusCode, got.ContentLength, got.Close, got.Header, got.Trailer, gotBody,
				want.StatusCode, want.ContentLength, want.Close, want.Header, want.Trailer, wantBody)
		}
	})
}

// requestRecorder is a gateway that hands each request it reads to seen
// and answers "ok", with the direct transport and net/http's (without
// compression, as the direct path asks for none) to compare what each
// writes.
func requestRecorder(t *testing.T) (seen chan *http.Request, g *rawGateway, tr *gateway.Transport, ref *http.Transport) {
	seen = make(chan *http.Request, 2)
	g = newRawGateway(t, func(_ int64, req *http.Request) (string, bool) {
		seen <- req
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ = countingTransport(t)
	ref = &http.Transport{DisableCompression: true}
	t.Cleanup(ref.CloseIdleConnections)
	return seen, g, tr, ref
}

// A POST waiting for its reply has given its request buffer back: it is
// never sent again once written, so the bytes of 1,000 runs waiting at
// the model need not be held (docs/benchmarks.md, "What a waiting run
// holds, once more"). A replayable request keeps its buffer for a retry.
// One P, so the pool the waiting request put its buffer into is the one
// the test takes from; under the race detector sync.Pool drops a quarter
// of what is put, so a POST gets several tries (all fail only without
// the change, or one in 4^20 with it).
func TestDirectWaitingPOSTHoldsNoRequestBuffer(t *testing.T) {
	skipWithoutDirect(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 3 {
		if waitingRequestPooled(t, http.MethodGet) {
			t.Fatal("a GET waiting for its reply gave its request buffer back; a retry may need it")
		}
	}
	for range 20 {
		if waitingRequestPooled(t, http.MethodPost) {
			return
		}
	}
	t.Error("a POST waiting for its reply still holds its request buffer")
}

// waitingRequestPooled sends a request of method on a fresh transport and,
// while the gateway holds it, reports whether a request buffer is back in
// the transport's pool; then it checks the reply.
func waitingRequestPooled(t *testing.T, method string) bool {
	t.Helper()
	arrived, answer := make(chan struct{}), make(chan struct{})
	g := newRawGateway(t, func(int64, *http.Request) (string, bool) {
		close(arrived)
		<-answer
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	type reply struct {
		body []byte
		err  error
	}
	got := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(t.Context(), method, g.URL()+"/v1/chat/completions", strings.NewReader(strings.Repeat("x", 2000)))
		_, body, err := send(tr, req)
		got <- reply{body, err}
	}()
	<-arrived
	pooled := gateway.TakeWriteBuffer(tr).Cap() > 0
	close(answer)
	if r := <-got; r.err != nil || string(r.body) != "ok" {
		t.Fatalf("%s: reply after the wait: %q, %v", method, r.body, r.err)
	}
	return pooled
}

// A connection whose reply ends while the idle pool for its host is full
// is closed, not kept: two turns in flight at once with room for one idle
// connection leave one open and close the other.
func TestDirectIdlePoolFullCloses(t *testing.T) {
	skipWithoutDirect(t)
	both := make(chan struct{})
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		switch n {
		case 1:
			<-both // the first two requests are on two connections at once
		case 2:
			close(both)
		}
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	tr.MaxIdleConnsPerHost = 1
	errc := make(chan error, 2)
	for range 2 {
		go func() {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, g.URL()+"/v1/models", nil)
			_, _, err := send(tr, req)
			errc <- err
		}()
	}
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-g.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("with room for one idle connection, neither of two was closed")
	}
	if _, _, err := get(t, tr, g.URL()+"/v1/models"); err != nil {
		t.Fatal(err)
	}
	if n := g.accepts.Load(); n != 2 {
		t.Errorf("%d connections; the third request should reuse the one kept", n)
	}
}
