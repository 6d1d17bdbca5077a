package tools

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeNet is an in-memory network for synctest bubbles: dial hands one
// end of a net.Pipe to the listener, so an http.Server and the fetcher
// talk without sockets and the fake clock governs every timeout.
type pipeNet struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.once.Do(func() { close(p.done) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(93, 184, 216, 34), Port: 80} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, srv := net.Pipe()
	select {
	case p.conns <- srv:
		return client, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, net.ErrClosed
	}
}

// serve runs h on the pipe network until the returned stop is called.
func (p *pipeNet) serve(h http.HandlerFunc) (stop func()) {
	srv := &http.Server{Handler: h}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(p)
	}()
	return func() {
		_ = srv.Close()
		_ = p.Close()
		<-served
	}
}

func TestTotalTimeoutIsSoft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pn := newPipeNet()
		stop := pn.serve(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/stall-body" {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Length", "100")
				_, _ = w.Write([]byte("first part"))
				w.(http.Flusher).Flush()
			}
			<-r.Context().Done()
		})
		defer stop()
		res := newResolver().set("slow.test", []string{publicIP})
		// The pipe network speaks plain HTTP: a TLS server would add
		// nothing to a timeout test.
		p := DefaultPolicy()
		p.AllowHTTP = true
		w, err := NewWebFetch(p, WithResolver(res), WithDialContext(pn.dial))
		if err != nil {
			t.Fatal(err)
		}
		defer w.CloseIdleConnections()

		for _, tc := range []struct{ path, want string }{
			{"/stall-headers?token=secret", "request to http://slow.test/stall-headers timed out; try again later or try a different URL"},
			{"/stall-body", "request to http://slow.test/stall-body timed out while reading the body; try again later or try a different URL"},
		} {
			start := time.Now()
			got, err := w.Call(context.Background(), args(t, map[string]any{"url": "http://slow.test" + tc.path}))
			if err != nil {
				t.Fatalf("%s: hard error %v; want soft timeout", tc.path, err)
			}
			if got.Text != tc.want {
				t.Errorf("%s: %q; want %q", tc.path, got.Text, tc.want)
			}
			if elapsed := time.Since(start); elapsed != p.Timeout {
				t.Errorf("%s: gave up after %v of fake time; want the total timeout %v", tc.path, elapsed, p.Timeout)
			}
		}
	})
}

func TestConnectTimeoutIsSoft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var attempts []string
		blackhole := func(ctx context.Context, _, address string) (net.Conn, error) {
			attempts = append(attempts, address)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		res := newResolver().set("blackhole.test", []string{publicIP, "8.8.8.8"})
		p := DefaultPolicy()
		w, err := NewWebFetch(p, WithResolver(res), WithDialContext(blackhole))
		if err != nil {
			t.Fatal(err)
		}
		defer w.CloseIdleConnections()
		start := time.Now()
		got, err := w.Call(context.Background(), args(t, map[string]any{"url": "https://blackhole.test/"}))
		if err != nil {
			t.Fatalf("hard error %v; want soft timeout", err)
		}
		if got.Text != "request to https://blackhole.test/ timed out; try again later or try a different URL" {
			t.Errorf("connect timeout text: %q", got.Text)
		}
		// Each allowed address gets its own connect timeout.
		if elapsed := time.Since(start); elapsed != 2*p.ConnectTimeout {
			t.Errorf("gave up after %v of fake time; want two connect timeouts (%v)", elapsed, 2*p.ConnectTimeout)
		}
		if len(attempts) != 2 {
			t.Errorf("dial attempts %v; want both addresses", attempts)
		}
	})
}
