package gateway_test

import (
	"net/http"
	"net/url"
	"strings"
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
}

func (u *unwrapping) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Deadline(); ok {
		u.deadlines.Add(1)
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

// On the direct path the client's timeout is the connection's deadline:
// the request's context carries none (no timer and context of its own
// per request), and the timeout still ends a request the gateway never
// answers, at the same instant and with the same error.
func TestDirectTimeoutIsTheConnectionsDeadline(t *testing.T) {
	skipWithoutDirect(t)
	synctest.Test(t, func(t *testing.T) {
		silentClient(t, gateway.NewTransport(), 7*time.Second, func(c *gateway.Client, w *unwrapping) {
			start := time.Now()
			_, err := c.Complete(t.Context(), userTurn("hi"))
			if got := time.Since(start); got != 7*time.Second {
				t.Errorf("gave up after %v, want 7s", got)
			}
			if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !ge.Retryable() ||
				!strings.Contains(err.Error(), "POST /chat/completions timed out after 7s:") {
				t.Errorf("not the timeout: %v", err)
			}
			if n := w.deadlines.Load(); n != 0 {
				t.Errorf("%d requests went out with a context deadline; the direct path's is the connection's", n)
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
			start := time.Now()
			_, err := c.Complete(t.Context(), userTurn("hi"))
			if got := time.Since(start); got != 5*time.Second {
				t.Errorf("gave up after %v, want 5s", got)
			}
			if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !ge.Retryable() ||
				!strings.Contains(err.Error(), "POST /chat/completions timed out after 5s:") {
				t.Errorf("not the timeout: %v", err)
			}
		})
	})
}
