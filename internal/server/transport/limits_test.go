package transport_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

func rawPost(hd http.Handler, session, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	rec := httptest.NewRecorder()
	hd.ServeHTTP(rec, req)
	return rec
}

// An HTTP session nobody uses is closed after SessionIdleTimeout (B3), and
// the SDK's per-session INFO lines stay out of the log.
func TestIdleHTTPSessionsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		h := newHarness(t, fixture{opts: func(o *server.Options) {
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}})
		hd, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}})
		if err != nil {
			t.Fatal(err)
		}
		rec := rawPost(hd, "", initializeBody)
		session := rec.Header().Get("Mcp-Session-Id")
		if rec.Code != http.StatusOK || session == "" {
			t.Fatalf("initialize: %d %q", rec.Code, rec.Body.String())
		}
		rawPost(hd, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if rec := rawPost(hd, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); rec.Code != http.StatusOK {
			t.Fatalf("ping on a live session: %d", rec.Code)
		}
		time.Sleep(transport.SessionIdleTimeout + time.Second)
		synctest.Wait()
		if rec := rawPost(hd, session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); rec.Code != http.StatusNotFound {
			t.Fatalf("ping on an expired session: %d, want 404", rec.Code)
		}
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "level=INFO") && strings.Contains(line, "component=mcp") {
				t.Errorf("SDK INFO line in the log: %s", line)
			}
		}
	})
}
