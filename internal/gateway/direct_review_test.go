package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
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
