package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// pipeListener connects an http.Server and an http.Client through
// net.Pipe, so a whole HTTP exchange runs inside a synctest bubble on the
// fake clock (loopback sockets are not durably blocking; pipes are).
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// silentGateway runs fn with a client whose gateway accepts every request
// and never answers, all on the bubble's fake clock.
func silentGateway(t *testing.T, cfg gateway.Options, fn func(c *gateway.Client)) {
	silentServer(func(hc *http.Client) {
		cfg.BaseURL, cfg.APIKey = "http://gateway.test/v1", secret.MustNew("k")
		cfg.HTTPClient = hc
		c, err := gateway.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		fn(c)
	})
}

// silentServer runs fn with an HTTP client whose every request reaches a
// server that never answers, over pipes, so it runs on a bubble's clock.
func silentServer(fn func(hc *http.Client)) { silentServerOn(nil, fn) }

// silentServerOn is silentServer with the client's transport tr (its
// dialer replaced by the pipes'); nil is a plain net/http transport.
func silentServerOn(tr *gateway.Transport, fn func(hc *http.Client)) {
	ln := newPipeListener()
	stop := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to EOF lets the server notice the client
		// hanging up (it cancels r.Context()).
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	var rt interface {
		http.RoundTripper
		CloseIdleConnections()
	} = &http.Transport{DialContext: ln.dial}
	if tr != nil {
		tr.DialContext = ln.dial
		rt = tr
	}
	fn(&http.Client{Transport: rt})
	close(stop)
	rt.CloseIdleConnections()
	_ = srv.Close()
	<-served
}

func TestDefaultTimeoutsOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silentGateway(t, gateway.Options{}, func(c *gateway.Client) {
			start := time.Now()
			_, err := c.Complete(t.Context(), userTurn("hi"))
			if got := time.Since(start); got != gateway.DefaultTimeout {
				t.Errorf("chat gave up after %v, want %v", got, gateway.DefaultTimeout)
			}
			ge := asError(t, err, gateway.KindTransport)
			if !ge.Timeout() || !ge.Retryable() || !strings.Contains(err.Error(), "POST /chat/completions timed out after 2m:") ||
				!strings.Contains(err.Error(), "raise [gateway].request_timeout") {
				t.Errorf("chat: %v", err)
			}

			start = time.Now()
			_, err = c.Models(t.Context(), nil)
			if got := time.Since(start); got != gateway.DefaultModelsTimeout {
				t.Errorf("models gave up after %v, want %v", got, gateway.DefaultModelsTimeout)
			}
			if ge := asError(t, err, gateway.KindTransport); !ge.Timeout() || !strings.Contains(err.Error(), "timed out after 10s") ||
				!strings.Contains(err.Error(), "raise [gateway].timeout") {
				t.Errorf("models: %v", err)
			}
		})
	})
}

func TestConfiguredTimeoutAndCallerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silentGateway(t, gateway.Options{Timeout: 3 * time.Second}, func(c *gateway.Client) {
			start := time.Now()
			_, err := c.Complete(t.Context(), userTurn("hi"))
			if got := time.Since(start); got != 3*time.Second {
				t.Errorf("gave up after %v, want 3s", got)
			}
			asError(t, err, gateway.KindTransport)

			// The caller's deadline, shorter than the client's, is the
			// caller's context ending: not a retryable gateway timeout.
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, err = c.Complete(ctx, userTurn("hi"))
			ge := asError(t, err, gateway.KindCancelled)
			if !errors.Is(err, context.DeadlineExceeded) || ge.Retryable() || ge.Timeout() {
				t.Errorf("caller deadline: %v", err)
			}
		})
	})
}
