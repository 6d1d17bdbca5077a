package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// publicIP is a global unicast address the policy admits. Tests never
// reach it: testNet routes it to a loopback listener.
const publicIP = "93.184.216.34"

// stubResolver answers from a script and records every lookup. Each host
// has a queue of answers; the last one repeats. No real name is ever
// resolved in these tests.
type stubResolver struct {
	mu      sync.Mutex
	answers map[string][][]string
	lookups []string
}

func newResolver() *stubResolver { return &stubResolver{answers: map[string][][]string{}} }

// set scripts host's successive answers.
func (r *stubResolver) set(host string, answers ...[]string) *stubResolver {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[host] = answers
	return r
}

func (r *stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups = append(r.lookups, host)
	// Like a real resolver, a fully-qualified name (trailing dot) is the
	// same name.
	queue, ok := r.answers[strings.TrimSuffix(host, ".")]
	if !ok || len(queue) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ans := queue[0]
	if len(queue) > 1 {
		r.answers[strings.TrimSuffix(host, ".")] = queue[1:]
	}
	out := make([]net.IPAddr, len(ans))
	for i, s := range ans {
		out[i] = net.IPAddr{IP: net.ParseIP(s)}
	}
	return out, nil
}

func (r *stubResolver) lookupCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lookups)
}

// testNet is the dial function under test: it records every address the
// guard asked it to dial and connects only to loopback, routing publicIP
// to 127.0.0.1 on the same port. Anything else is refused, so a test can
// never send traffic off the machine.
type testNet struct {
	mu     sync.Mutex
	dialed []string
}

func (n *testNet) dial(ctx context.Context, network, address string) (net.Conn, error) {
	n.mu.Lock()
	n.dialed = append(n.dialed, address)
	n.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("testNet: %q is not ip:port", address)
	}
	target := ap
	switch {
	case ap.Addr().String() == publicIP:
		target = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port())
	case ap.Addr().IsLoopback():
	default:
		return nil, fmt.Errorf("testNet: refusing to dial %s off the machine", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", target.String())
}

func (n *testNet) dialedAddrs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.dialed...)
}

// server is a loopback HTTP server that counts the requests it received
// and keeps their headers.
type server struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	headers []http.Header
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(s.wrap(h))
	t.Cleanup(s.Close)
	return s
}

func newTLSServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewTLSServer(s.wrap(h))
	t.Cleanup(s.Close)
	return s
}

func (s *server) wrap(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		h(w, r)
	}
}

func (s *server) port() uint16 {
	ap := netip.MustParseAddrPort(s.Listener.Addr().String())
	return ap.Port()
}

func (s *server) requestHeaders() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// testPolicy admits http and the given test server ports on top of the
// defaults; blocked ranges stay blocked.
func testPolicy(ports ...uint16) Policy {
	p := DefaultPolicy()
	p.AllowHTTP = true
	p.AllowPorts = append(p.AllowPorts, ports...)
	return p
}

// logBuffer is a concurrency-safe sink for a slog text handler.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

type fetchEnv struct {
	res  *stubResolver
	net  *testNet
	logs *logBuffer
}

func newEnv() *fetchEnv {
	return &fetchEnv{res: newResolver(), net: &testNet{}, logs: &logBuffer{}}
}

func (e *fetchEnv) fetcher(t *testing.T, p Policy, opts ...FetchOption) *WebFetch {
	t.Helper()
	base := []FetchOption{
		WithResolver(e.res),
		WithDialContext(e.net.dial),
		WithLogger(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	w, err := NewWebFetch(p, append(base, opts...)...)
	if err != nil {
		t.Fatalf("NewWebFetch: %v", err)
	}
	t.Cleanup(w.CloseIdleConnections)
	return w
}

func args(t *testing.T, v map[string]any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fetchOK calls the tool and requires a soft or successful result.
func fetchOK(t *testing.T, w *WebFetch, a map[string]any) string {
	t.Helper()
	res, err := w.Call(context.Background(), args(t, a))
	if err != nil {
		t.Fatalf("Call(%v) returned error %v; want a result", a, err)
	}
	if res.Trusted {
		t.Fatalf("Call(%v) returned trusted output; web_fetch output is always untrusted", a)
	}
	return res.Text
}

// fetchHard calls the tool and requires a hard KindInvalidArguments error.
func fetchHard(t *testing.T, w *WebFetch, a map[string]any) *Error {
	t.Helper()
	res, err := w.Call(context.Background(), args(t, a))
	if err == nil {
		t.Fatalf("Call(%v) = %q; want a hard error", a, res.Text)
	}
	var te *Error
	if !errors.As(err, &te) || te.Kind != KindInvalidArguments {
		t.Fatalf("Call(%v) error = %#v; want *Error of kind InvalidArguments", a, err)
	}
	return te
}

// header splits a success text into its header lines and body.
func header(t *testing.T, text string) (url string, truncated bool, extraction, body string) {
	t.Helper()
	head, body, ok := strings.Cut(text, "\n\n")
	lines := strings.Split(head, "\n")
	if !ok || len(lines) != 3 || !strings.HasPrefix(lines[0], "url: ") ||
		!strings.HasPrefix(lines[1], "truncated: ") || !strings.HasPrefix(lines[2], "extraction: ") {
		t.Fatalf("output does not start with the three header lines:\n%s", text)
	}
	tr, err := strconv.ParseBool(strings.TrimPrefix(lines[1], "truncated: "))
	if err != nil {
		t.Fatalf("truncated line %q: %v", lines[1], err)
	}
	return strings.TrimPrefix(lines[0], "url: "), tr, strings.TrimPrefix(lines[2], "extraction: "), body
}

func contentType(ct string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		} else {
			// Suppress net/http's sniffed default.
			w.Header()["Content-Type"] = nil
		}
		_, _ = w.Write([]byte(body))
	}
}
