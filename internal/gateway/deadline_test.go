package gateway_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// unwrapping is a host's wrapper of the gateway's transport (as the
// server's timing one): it says what it wraps, and records whether a
// request's context had a deadline.
type unwrapping struct {
	base      http.RoundTripper
	deadlines atomic.Int64
	// underDo counts round trips made under http.Client.Do, which holds a
	// copy of the request's headers and URL (for redirects) meanwhile.
	underDo atomic.Int64
}

func (u *unwrapping) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Deadline(); ok {
		u.deadlines.Add(1)
	}
	buf := make([]byte, 64<<10)
	if strings.Contains(string(buf[:runtime.Stack(buf, false)]), "net/http.(*Client).do(") {
		u.underDo.Add(1)
	}
	return u.base.RoundTrip(req)
}

func (u *unwrapping) Unwrap() http.RoundTripper { return u.base }

// silentClient runs fn with a client of timeout d whose requests go
// through tr (wrapped as a host wraps it) to a gateway that never answers.
func silentClient(t *testing.T, tr *gateway.Transport, d time.Duration, fn func(c *gateway.Client, w *unwrapping)) {
	silentServerOn(tr, func(hc *http.Client) {
		w := &unwrapping{base: hc.Transport}
		c, err := gateway.New(gateway.Options{BaseURL: "http://gateway.test/v1", APIKey: secret.MustNew("k"), Timeout: d,
			HTTPClient: &http.Client{Transport: w}})
		if err != nil {
			t.Fatal(err)
		}
		fn(c, w)
	})
}

// chatTimesOut sends a chat turn on c, whose gateway never answers, and
// checks that the client's timeout d (humanized) ends it at d, as the
// retryable timeout error.
func chatTimesOut(t *testing.T, c *gateway.Client, d time.Duration, human string) {
	t.Helper()
	start := time.Now()
	_, err := c.Complete(t.Context(), userTurn("hi"))
	if got := time.Since(start); got != d {
		t.Errorf("gave up after %v, want %v", got, d)
	}
	if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !ge.Retryable() ||
		!strings.Contains(err.Error(), "POST /chat/completions timed out after "+human+":") {
		t.Errorf("not the timeout: %v", err)
	}
}

// On the direct path the client's timeout is the connection's deadline:
// the request's context carries none (no timer and context of its own
// per request), and the timeout still ends a request the gateway never
// answers, at the same instant and with the same error.
func TestDirectTimeoutIsTheConnectionsDeadline(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		silentClient(t, gateway.NewTransport(), 7*time.Second, func(c *gateway.Client, w *unwrapping) {
			chatTimesOut(t, c, 7*time.Second, "7s")
			if n := w.deadlines.Load(); n != 0 {
				t.Errorf("%d requests went out with a context deadline; the direct path's is the connection's", n)
			}
			if n := w.underDo.Load(); n != 0 {
				t.Errorf("%d requests waited under http.Client.Do and its copies for redirects", n)
			}
		})
	})
}

// A request the direct path does not take (here, one a proxy takes) is
// net/http's, under a context with the timeout's deadline: the timeout
// ends it too, with the same error.
func TestFallbackTimeoutOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := gateway.NewTransport()
		tr.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.test:3128") }
		silentClient(t, tr, 5*time.Second, func(c *gateway.Client, _ *unwrapping) {
			chatTimesOut(t, c, 5*time.Second, "5s")
		})
	})
}

// What the redirect's target saw of the request.
type redirected struct {
	method, auth, body string
	origin             int64 // requests the first server got
	err                string
}

// A gateway's redirect is followed as http.Client follows it (the method,
// the body, the Authorization header kept on the same host and dropped
// on another), the request is sent once to the server that redirected,
// and a failure reads as http.Client's, whether the client's transport is
// the gateway's (which reads the first reply itself) or any other.
func TestRedirectsFollowedAsNetHTTP(t *testing.T) {
	run := func(t *testing.T, code int, sameHost bool, tr http.RoundTripper) redirected {
		var got redirected
		var mu sync.Mutex
		target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got.method, got.auth, got.body = r.Method, r.Header.Get("Authorization"), string(body)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, chatOK)
		}))
		defer target.Close()
		var origin atomic.Int64
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			origin.Add(1)
			_, _ = io.Copy(io.Discard, r.Body)
			to := target.URL
			if !sameHost {
				to = strings.Replace(to, "127.0.0.1", "localhost", 1)
			}
			http.Redirect(w, r, to+r.URL.Path, code)
		}))
		defer first.Close()
		c, err := gateway.New(gateway.Options{BaseURL: first.URL + "/v1", APIKey: secret.MustNew("k"), HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(t.Context(), userTurn("hi")); err != nil {
			got.err = err.Error()
		}
		got.origin = origin.Load()
		return got
	}
	for _, code := range []int{http.StatusTemporaryRedirect, http.StatusFound} {
		for _, same := range []bool{true, false} {
			ours := run(t, code, same, gateway.NewTransport())
			theirs := run(t, code, same, http.DefaultTransport.(*http.Transport).Clone())
			if ours != theirs || ours.origin != 1 || ours.err != "" {
				t.Errorf("%d, same host %v: through the gateway's transport %+v, through http.Client %+v", code, same, ours, theirs)
			}
		}
	}
	// A refused connection reads as http.Client's.
	dead := httptest.NewServer(http.NotFoundHandler())
	base := dead.URL + "/v1"
	dead.Close()
	if msgs := chatErrorsBothWays(t, base); msgs[0] != msgs[1] {
		t.Errorf("a refused connection: through the gateway's transport %q, through http.Client %q", msgs[0], msgs[1])
	}
}

// chatErrorsBothWays is the error of a chat turn sent to base through the
// gateway's transport, then through net/http's.
func chatErrorsBothWays(t *testing.T, base string) [2]string {
	t.Helper()
	var msgs [2]string
	for i, tr := range []http.RoundTripper{gateway.NewTransport(), http.DefaultTransport.(*http.Transport).Clone()} {
		c, err := gateway.New(gateway.Options{BaseURL: base, APIKey: secret.MustNew("k"), HTTPClient: &http.Client{Transport: tr}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Complete(t.Context(), userTurn("hi"))
		asError(t, err, gateway.KindTransport)
		msgs[i] = err.Error()
	}
	return msgs
}

// A gateway that speaks plain HTTP at an https:// URL (http:// written as
// https://, a common slip with a local model server) fails as it fails
// through http.Client: "server gave HTTP response to HTTPS client", which
// says what to change, not the TLS record error under it.
func TestSchemeMismatchReadsAsNetHTTP(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	msgs := chatErrorsBothWays(t, strings.Replace(plain.URL, "http://", "https://", 1)+"/v1")
	if msgs[0] != msgs[1] || !strings.Contains(msgs[0], http.ErrSchemeMismatch.Error()) {
		t.Errorf("plain HTTP at an https URL: through the gateway's transport %q, through http.Client %q", msgs[0], msgs[1])
	}
}

// pipeGateway serves handle, after it has read each request's body, over
// pipes on the bubble's clock, and returns a gateway transport that dials
// it (pooling the pipes) and the count of its dials. The server stops with
// the test.
func pipeGateway(t *testing.T, handle http.HandlerFunc) (*gateway.Transport, *atomic.Int64) {
	ln := newPipeListener()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		handle(w, r)
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	tr := gateway.NewTransport()
	gateway.PoolUnprobed(tr)
	dials := &atomic.Int64{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return ln.dial(ctx, network, addr)
	}
	tr.Fallback.DialContext = tr.DialContext
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		_ = srv.Close()
		<-served
	})
	return tr, dials
}

// timedClient is a client of tr with the timeout d.
func timedClient(t *testing.T, tr *gateway.Transport, d time.Duration) *gateway.Client {
	c, err := gateway.New(gateway.Options{BaseURL: "http://gateway.test/v1", APIKey: secret.MustNew("k"), Timeout: d,
		HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A connection the direct path gives back to the pool carries no
// deadline: the timeout of the request that used it last (here 10s) does
// not end the next request on it, one that sets none of its own (a
// request another user of the transport sends), when its reply takes
// longer than what was left of that timeout. The request is a POST, which
// is not sent again on a fresh connection, so a stale deadline shows as
// its failure.
func TestAPooledConnectionCarriesNoDeadline(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		tr, dials := pipeGateway(t, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				select {
				case <-time.After(15 * time.Second):
				case <-r.Context().Done():
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, chatOK)
		})
		if _, err := timedClient(t, tr, 10*time.Second).Complete(t.Context(), userTurn("hi")); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://gateway.test/slow", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tr.RoundTrip(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if err != nil {
			t.Errorf("a request without a timeout, on the connection a 10s one used, failed: %v", err)
		}
		if n := dials.Load(); n != 1 {
			t.Errorf("%d dials, want 1: the second request reuses the first one's connection", n)
		}
	})
}

// A reply whose body stalls after its first bytes is ended by the
// client's timeout, on the direct path (the connection's deadline) and on
// net/http's (a proxy's request: the fallback's context), as the same
// retryable timeout error, at the timeout.
func TestStalledBodyEndsAtTheTimeout(t *testing.T) {
	for _, path := range []string{"direct", "fallback"} {
		t.Run(path, func(t *testing.T) {
			if path == "direct" {
				skipWithoutDirect(t)
			}
			synctest.Test(t, func(t *testing.T) {
				tr, _ := pipeGateway(t, func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.Header().Set("Content-Length", "1000")
					_, _ = io.WriteString(w, `{"id":"x",`)
					http.NewResponseController(w).Flush()
					<-r.Context().Done()
				})
				if path == "fallback" {
					tr.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.test:3128") }
				}
				chatTimesOut(t, timedClient(t, tr, 5*time.Second), 5*time.Second, "5s")
			})
		})
	}
}

// The timeout bounds the whole exchange, redirect included: a gateway
// that redirects to a place that never answers fails at the timeout from
// the first request, not from the redirect's, with the timeout error.
func TestTimeoutSpansARedirect(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		tr, _ := pipeGateway(t, func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/") {
				time.Sleep(2 * time.Second)
				http.Redirect(w, r, "/v2/chat", http.StatusTemporaryRedirect)
				return
			}
			<-r.Context().Done()
		})
		chatTimesOut(t, timedClient(t, tr, 5*time.Second), 5*time.Second, "5s")
	})
}
