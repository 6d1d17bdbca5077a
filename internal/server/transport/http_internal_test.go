package transport

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestAuthorityMatching(t *testing.T) {
	allowed, err := parseAllowedHosts([]string{"localhost", "::1", "example.com:8080", "[fe80::1]:9310"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost:9310", true}, {"LOCALHOST", true}, {"[::1]:9310", true}, {"[::1]", true},
		{"example.com:8080", true}, {"example.com:8081", false}, {"example.com", false},
		{"[fe80::1]:9310", true}, {"[fe80::1]:1", false}, {"127.0.0.1", false}, {"", false}, {"[::1", false},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		req.Host = tc.host
		hostCheck(allowed, originPolicy{}, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK; got != tc.ok {
			t.Errorf("Host %q: status %d, want allowed=%v", tc.host, rec.Code, tc.ok)
		}
	}
}

// A browser page from another site is refused even with an allowed Host,
// and so is a page of another port on an allowed name (another local app),
// "null", an Origin with userinfo or a path, a scheme that is not http(s)
// and two Origins; the server's own pages (same host and port, the default
// port spelled or not) and a client sending no Origin pass. A configured
// allowed_origins list replaces the same-origin rule.
func TestOriginMatching(t *testing.T) {
	allowed, err := parseAllowedHosts([]string{"localhost", "127.0.0.1", "::1", "mcp.example"})
	if err != nil {
		t.Fatal(err)
	}
	listed, err := parseAllowedOrigins([]string{"https://app.example", "http://LOCALHOST:6274"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host    string
		origins []string
		policy  originPolicy
		ok      bool
	}{
		{"localhost:9310", nil, originPolicy{}, true},
		{"localhost:9310", []string{"http://localhost:9310"}, originPolicy{}, true},
		{"localhost:9310", []string{"HTTP://LocalHost:09310/"}, originPolicy{}, true},
		{"[::1]:9310", []string{"http://[::1]:9310"}, originPolicy{}, true},
		{"mcp.example", []string{"https://mcp.example"}, originPolicy{}, true},
		{"mcp.example", []string{"https://mcp.example:443"}, originPolicy{}, true},
		{"mcp.example", []string{"http://mcp.example"}, originPolicy{}, true},
		{"mcp.example", []string{"https://mcp.example:8443"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://localhost:6274"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://127.0.0.1:9310"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://localhost"}, originPolicy{}, false},
		{"localhost:9310", []string{"https://evil.example"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://localhost.evil.example:9310"}, originPolicy{}, false},
		{"localhost:9310", []string{"null"}, originPolicy{}, false},
		{"localhost:9310", []string{"localhost"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://evil@localhost:9310"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://localhost:9310/page"}, originPolicy{}, false},
		{"localhost:9310", []string{"ws://localhost:9310"}, originPolicy{}, false},
		{"localhost:9310", []string{"file://localhost:9310"}, originPolicy{}, false},
		{"localhost:9310", []string{"http://localhost:9310", "https://evil.example"}, originPolicy{}, false},
		{"localhost:9310", []string{"https://app.example"}, listed, true},
		{"localhost:9310", []string{"https://app.example:443"}, listed, true},
		{"localhost:9310", []string{"http://localhost:6274"}, listed, true},
		{"localhost:9310", []string{"http://app.example"}, listed, false},
		{"localhost:9310", []string{"http://localhost:9310"}, listed, true}, // its own pages (the status login form)
		{"localhost:9310", []string{"http://localhost:9311"}, listed, false},
		{"localhost:9310", nil, listed, true},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = tc.host
		for _, o := range tc.origins {
			req.Header.Add("Origin", o)
		}
		hostCheck(allowed, tc.policy, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK; got != tc.ok {
			t.Errorf("Host %q, Origin %q, listed %v: status %d, want allowed=%v", tc.host, tc.origins, tc.policy.listed, rec.Code, tc.ok)
		}
		if !tc.ok && (rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "Origin is not allowed")) {
			t.Errorf("Origin %q refused with %d %q, want 403 naming the Origin", tc.origins, rec.Code, rec.Body.String())
		}
	}
}

// A bad allowed_origins entry is refused when the transport is built,
// naming the entry and the form to write.
func TestAllowedOriginsEntriesAreChecked(t *testing.T) {
	for _, bad := range []string{"null", "app.example", "https://app.example/path", "ftp://app.example", "https://u@app.example", ""} {
		_, err := parseAllowedOrigins([]string{bad})
		if err == nil || !strings.Contains(err.Error(), "[server].allowed_origins entry") || !strings.Contains(err.Error(), "scheme://host") {
			t.Errorf("entry %q: %v, want a refusal naming the entry", bad, err)
		}
	}
}

// lockedRecorder is a ResponseWriter whose body can be read while a
// handler is still writing.
type lockedRecorder struct {
	mu     sync.Mutex
	header http.Header
	body   strings.Builder
}

func (l *lockedRecorder) Header() http.Header { return l.header }
func (l *lockedRecorder) WriteHeader(int)     {}
func (l *lockedRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.body.Write(p)
}
func (l *lockedRecorder) Flush() {}
func (l *lockedRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.body.String()
}

func TestIdleEventStreamsGetAKeepAliveComment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		handler := keepAliveSSE(DefaultKeepAlive, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, "data: first\n\n")
			<-release
		}))
		rec := &lockedRecorder{header: http.Header{}}
		done := make(chan struct{})
		go func() {
			defer close(done)
			handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/mcp", nil))
		}()
		time.Sleep(DefaultKeepAlive - time.Millisecond)
		synctest.Wait()
		if strings.Contains(rec.String(), "keep-alive") {
			t.Fatalf("pinged before the stream was idle for 15s: %q", rec.String())
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if got := rec.String(); got != "data: first\n\n: keep-alive\n\n" {
			t.Fatalf("stream %q", got)
		}
		close(release)
		<-done
		// Nothing is written after the handler returned.
		time.Sleep(time.Minute)
		if got := rec.String(); strings.Count(got, "keep-alive") != 1 {
			t.Fatalf("stream after the handler returned: %q", got)
		}
	})
}

// Idle keep-alive connections and slow headers are bounded (B4).
func TestHTTPServerBoundsIdleConnections(t *testing.T) {
	srv := httpServer(http.NotFoundHandler(), discard())
	if srv.ReadHeaderTimeout <= 0 || srv.IdleTimeout <= 0 {
		t.Fatalf("ReadHeaderTimeout %v, IdleTimeout %v: both must be set", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
}

// deadlineRecorder records the read deadlines a handler sets through
// http.ResponseController.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetReadDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// The body deadline is lifted once the body has been read, so a long call
// answered over SSE is not cut off by it (net/http reads the connection in
// the background after the body, to notice a client going away); a request
// without a body sets none.
func TestBodyDeadlineIsLiftedAfterTheBody(t *testing.T) {
	handler := bodyDeadline(time.Minute, bufferBody(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0"}`)))
	if len(rec.deadlines) != 2 || rec.deadlines[0].IsZero() || !rec.deadlines[1].IsZero() {
		t.Fatalf("deadlines %v, want one set and then cleared", rec.deadlines)
	}
	rec = &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/mcp", nil))
	if len(rec.deadlines) != 0 {
		t.Fatalf("deadlines %v on a request without a body", rec.deadlines)
	}
}

// The /mcp chain reads a POST's body in several layers: each read after
// the first hands back the same bytes, not a copy, and the handler at the
// end still reads the whole body.
func TestReadBodyCopiesOnce(t *testing.T) {
	const sent = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(sent))
	w := httptest.NewRecorder()
	first, ok := readBody(w, r)
	if !ok {
		t.Fatal("first read refused")
	}
	again, ok := readBody(w, r)
	if !ok || &again[0] != &first[0] {
		t.Fatal("a second layer's read copied the body")
	}
	got, err := io.ReadAll(r.Body)
	if err != nil || string(got) != sent {
		t.Fatalf("the handler read %q, %v", got, err)
	}
	// Once the handler has read it, a read re-reads (nothing is left).
	if _, ok := readBody(w, r); !ok {
		t.Fatal("a read after the handler's was refused")
	}
}

// Which era serves a POST is read from the body as the SDK reads it: exact
// member names, so a case-folded "Method" or "_META" beside the real member
// routes nothing.
func TestDeclaresStateless(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"` + metaProtocolVersion + `":"2026-07-28"}}}`, true},
		{`[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":1,"method":"server/discover"}]`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"` + metaProtocolVersion + `":"2025-11-25"}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"server/discover"}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_META":{"` + metaProtocolVersion + `":"2026-07-28"}}}`, false},
		{`not json`, false},
	} {
		if got := declaresStateless(messages([]byte(tc.body))); got != tc.want {
			t.Errorf("declaresStateless(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}
