package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// A control byte in the request URI (a RawQuery with CR LF) is refused as
// net/http refuses it, never written onto the wire (it would split the
// request line).
func TestDirectRefusesControlBytesInTheURL(t *testing.T) {
	g := newRawGateway(t, func(int64, *http.Request) (string, bool) {
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	u, _ := url.Parse(g.URL() + "/v1/models")
	u.RawQuery = "a=1 HTTP/1.1\r\nX-Injected: 1\r\n\r\nGET /x"
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://x/", nil)
	req.URL = u
	req.Host = ""
	_, _, err := send(tr, req)
	if err == nil || !strings.Contains(err.Error(), "can't write control character") || g.requests.Load() != 0 {
		t.Errorf("sent %d requests, error %v; want net/http's refusal", g.requests.Load(), err)
	}
}

// A request without a body carries Content-Length: 0 exactly when
// net/http writes it.
func TestDirectContentLengthAsNetHTTP(t *testing.T) {
	seen, g, tr, ref := requestRecorder(t)
	for _, m := range []string{http.MethodDelete, http.MethodOptions, http.MethodPost, http.MethodGet, http.MethodPut} {
		for _, rt := range []http.RoundTripper{ref, tr} {
			req, _ := http.NewRequestWithContext(t.Context(), m, g.URL()+"/v1/x", nil)
			if _, _, err := send(rt, req); err != nil {
				t.Fatal(err)
			}
		}
		want, got := <-seen, <-seen
		if w, g := want.Header.Values("Content-Length"), got.Header.Values("Content-Length"); len(w) != len(g) {
			t.Errorf("%s: Content-Length direct %q, net/http %q", m, g, w)
		}
	}
}

// opaqueConn hides the connection's socket (as a dialer that wraps its
// connections does), so no non-blocking peek can look at it.
type opaqueConn struct{ net.Conn }

// A POST after the server closed the connection of the one before still
// succeeds where the connection's socket cannot be peeked at: such a
// connection serves one request and is not pooled.
func TestDirectStaleConnectionWithoutProbe(t *testing.T) {
	g := newRawGateway(t, func(n int64, _ *http.Request) (string, bool) {
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), n == 1
	})
	tr, _ := countingTransport(t)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return opaqueConn{c}, nil
	}
	post := func() error {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL()+"/v1/chat/completions", strings.NewReader("{}"))
		_, _, err := send(tr, req)
		return err
	}
	if err := post(); err != nil {
		t.Fatal(err)
	}
	<-g.closed
	time.Sleep(10 * time.Millisecond)
	if err := post(); err != nil {
		t.Fatalf("the stale connection surfaced: %v", err)
	}
}

// A reply's head is bounded as net/http bounds it (10 MiB over the final
// head and any informational ones before it), not by a count of
// informational replies; a 101 is a final reply, as there.
func TestDirectReadsHeadsAsNetHTTP(t *testing.T) {
	skipWithoutDirect(t)
	early := "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
	for name, raw := range map[string]string{
		"six early hints":    strings.Repeat(early, 6) + withLength("HTTP/1.1 200 OK\r\n", "ok"),
		"101":                "HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"an endless head":    "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 11<<20) + "\r\nContent-Length: 2\r\n\r\nok",
		"endless 1xx":        strings.Repeat(early, (10<<20)/len(early)+1) + withLength("HTTP/1.1 200 OK\r\n", "ok"),
		"a head near 10 MiB": "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 9<<20) + "\r\nContent-Length: 2\r\n\r\nok",
	} {
		t.Run(name, func(t *testing.T) {
			g := newRawGateway(t, func(int64, *http.Request) (string, bool) { return raw, true })
			ref := &http.Transport{DisableCompression: true}
			t.Cleanup(ref.CloseIdleConnections)
			want, wantBody, wantErr := get(t, ref, g.URL()+"/v1/models")
			tr, _ := countingTransport(t)
			got, gotBody, gotErr := get(t, tr, g.URL()+"/v1/models")
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("direct error %v, net/http error %v", gotErr, wantErr)
			}
			if wantErr != nil {
				if !strings.Contains(gotErr.Error(), "server response headers exceeded 10485760 bytes") {
					t.Errorf("direct error %v, net/http error %v", gotErr, wantErr)
				}
				return
			}
			if got.StatusCode != want.StatusCode || string(gotBody) != string(wantBody) {
				t.Errorf("direct %d %q, net/http %d %q", got.StatusCode, gotBody, want.StatusCode, wantBody)
			}
		})
	}
}

// A gateway that answers a large request before reading it (a 401 to a
// long prompt) and closes: the caller gets the 401, as from net/http, not
// the write's "connection reset by peer" (which the client would report as
// a gateway that is not running).
func TestDirectReplyBeforeTheRequestIsWritten(t *testing.T) {
	skipWithoutDirect(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 1024))
				_, _ = io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 6\r\n\r\nno key")
				time.Sleep(20 * time.Millisecond)
			})
		}
	})
	body := strings.Repeat("x", 8<<20)
	ref := &http.Transport{}
	t.Cleanup(ref.CloseIdleConnections)
	tr, _ := countingTransport(t)
	for _, rt := range []http.RoundTripper{ref, tr} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+ln.Addr().String()+"/v1/chat/completions", strings.NewReader(body))
		resp, b, err := send(rt, req)
		if err != nil || resp.StatusCode != http.StatusUnauthorized || string(b) != "no key" {
			t.Errorf("%T: %v; want the 401", rt, err)
		}
	}
}

// A ContentLength its body does not have fails as net/http fails it; the
// direct path allocated the length named first (1 TiB: the process died
// out of memory).
func TestDirectContentLengthLargerThanTheBody(t *testing.T) {
	g := newRawGateway(t, func(int64, *http.Request) (string, bool) { return withLength("HTTP/1.1 200 OK\r\n", "ok"), false })
	tr, _ := countingTransport(t)
	for _, n := range []int64{3, 1 << 40} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, g.URL()+"/v1/x", strings.NewReader("{}"))
		req.ContentLength = n
		if _, _, err := send(tr, req); err == nil || !strings.Contains(err.Error(), "with Body length 2") {
			t.Errorf("ContentLength %d with a 2-byte body: %v", n, err)
		}
	}
	if n := g.requests.Load(); n != 0 {
		t.Errorf("%d requests reached the gateway", n)
	}
}
