package gateway_test

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// it, never written onto the wire (it would split the request line).
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

// net/http writes it.
func TestDirectContentLengthAsNetHTTP(t *testing.T) {
	seen := make(chan *http.Request, 2)
	g := newRawGateway(t, func(_ int64, req *http.Request) (string, bool) {
		seen <- req
		return withLength("HTTP/1.1 200 OK\r\n", "ok"), false
	})
	tr, _ := countingTransport(t)
	ref := &http.Transport{DisableCompression: true}
	t.Cleanup(ref.CloseIdleConnections)
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

// where the connection's socket cannot be peeked at.
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
