package transport_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// dialPipeServer serves the harness with ServeHTTP on a pipe listener, on
// the synctest bubble's clock, and connects one client; the server stops
// and the connection closes when the test ends.
func dialPipeServer(t *testing.T) net.Conn {
	t.Helper()
	h := newHarness(t, fixture{})
	ln := servertest.NewPipeListener()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() {
		served <- transport.ServeHTTP(ctx, ln, h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}})
	}()
	t.Cleanup(func() { cancel(); <-served })
	conn, err := ln.Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// A client that sends its headers and then trickles the body, one byte a
// second, is cut off at the body deadline (#11 item 6): authenticated, it
// gets 408 saying what to do; unauthenticated, or on a route that reads no
// body, its answer comes at once and the connection closes at the same
// deadline. A body sent whole is served.
func TestSlowRequestBodiesAreCutOff(t *testing.T) {
	for _, tc := range []struct {
		name, path, auth string
		status           int
	}{
		{"authenticated", "/mcp", "Bearer " + testToken, http.StatusRequestTimeout},
		{"unauthenticated", "/mcp", "Bearer wrong", http.StatusUnauthorized},
		{"a route that reads no body", "/healthz", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				conn := dialPipeServer(t)
				start := time.Now()
				body := initializeBody
				head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nAuthorization: %s\r\nContent-Type: application/json\r\n"+
					"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", tc.path, tc.auth, len(body))
				stop, trickled := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(trickled)
					if _, err := io.WriteString(conn, head); err != nil {
						return
					}
					for i := range len(body) {
						select {
						case <-stop:
							return
						case <-time.After(time.Second):
						}
						if _, err := conn.Write([]byte{body[i]}); err != nil {
							return
						}
					}
				}()
				defer func() { close(stop); <-trickled }()
				br := bufio.NewReader(conn)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				msg, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d %q, want %d", resp.StatusCode, msg, tc.status)
				}
				if tc.status == http.StatusRequestTimeout && !strings.Contains(string(msg), "did not arrive within 30s") {
					t.Errorf("408 body %q does not say what happened", msg)
				}
				// The connection ends at the deadline, long before the trickle.
				if _, err := br.ReadByte(); err == nil {
					t.Fatal("the connection stayed open after the answer")
				}
				if took := time.Since(start); took < transport.DefaultBodyTimeout || took > transport.DefaultBodyTimeout+2*time.Second {
					t.Errorf("connection ended after %v, want the %v body deadline", took, transport.DefaultBodyTimeout)
				}
			})
		})
	}

	t.Run("whole body", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			conn := dialPipeServer(t)
			body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
			go fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
				"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", testToken, len(body), body)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("a body sent whole: %d", resp.StatusCode)
			}
		})
	})
}
