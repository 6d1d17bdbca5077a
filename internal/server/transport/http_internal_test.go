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
		hostCheck(allowed, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK; got != tc.ok {
			t.Errorf("Host %q: status %d, want allowed=%v", tc.host, rec.Code, tc.ok)
		}
	}
}

// A browser page from another site is refused even with an allowed Host;
// a page served from an allowed authority, and a client sending no Origin,
// pass.
func TestOriginMatching(t *testing.T) {
	allowed, err := parseAllowedHosts([]string{"localhost", "127.0.0.1", "::1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, {"http://localhost:9310", true}, {"http://127.0.0.1", true}, {"https://[::1]:8443", true},
		{"https://evil.example", false}, {"http://localhost.evil.example:9310", false}, {"null", false}, {"localhost", false},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = "localhost:9310"
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		hostCheck(allowed, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
		if got := rec.Code == http.StatusOK; got != tc.ok {
			t.Errorf("Origin %q: status %d, want allowed=%v", tc.origin, rec.Code, tc.ok)
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
