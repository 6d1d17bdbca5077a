package transport_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// Live HTTP sessions are capped (#11 item 5): with max_sessions taken, a
// real go-sdk client cannot open another and a raw initialize gets 503,
// Retry-After and a JSON-RPC error saying what to do; ending a session
// makes room; 2026-07-28 clients, which hold no session, are not counted.
func TestSessionCapRefusesNewSessions(t *testing.T) {
	hh := newHTTPHarness(t, fixture{http: func(o *transport.HTTPOptions) { o.MaxSessions = 2 }}, nil)
	first := hh.clientAt(t, nil, true, eraStateful)
	hh.clientAt(t, nil, true, eraStateful)

	if cs, err := hh.connect(t, nil, true, eraStateful); err == nil {
		cs.Close()
		t.Fatal("a third session opened past max_sessions = 2")
	} else if !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("refused connect: %v, want Service Unavailable", err)
	}
	resp := post(t, context.Background(), hh.url+"/mcp", "Bearer "+testToken, "", initializeBody, "")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("raw initialize: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	r := replyOf(t, resp)
	if r.Error.Code != -32000 || string(r.ID) != "1" || !strings.Contains(r.Error.Message, "[server].max_sessions") ||
		!strings.Contains(r.Error.Message, "DELETE") {
		t.Errorf("refusal %s %+v, want -32000 under id 1 naming the setting and what to do", r.ID, *r.Error)
	}

	// A client without a session is served while the cap is reached.
	if _, err := hh.client(t, nil).CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo"}}); err != nil {
		t.Fatalf("2026-07-28 call while the sessions are full: %v", err)
	}

	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	hh.clientAt(t, nil, true, eraStateful)
}

// Under pressure (three quarters of the cap taken) a new session closes
// the sessions idle for SessionIdleUnderPressure, well before
// SessionIdleTimeout; a session in use stays, and without pressure nobody
// is closed early.
func TestIdleSessionsCloseEarlyUnderPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, fixture{})
		handler := func(max int) http.Handler {
			hd, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}, MaxSessions: max})
			if err != nil {
				t.Fatal(err)
			}
			return hd
		}
		open := func(hd http.Handler) (string, int) {
			rec := rawPost(hd, "", initializeBody)
			sid := rec.Header().Get("Mcp-Session-Id")
			if sid != "" {
				rawPost(hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			}
			return sid, rec.Code
		}
		alive := func(hd http.Handler, sid string) bool {
			return rawPost(hd, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Code == http.StatusOK
		}

		hd := handler(4)
		var sids []string
		for range 4 {
			sid, code := open(hd)
			if code != http.StatusOK {
				t.Fatalf("session %d: %d", len(sids)+1, code)
			}
			sids = append(sids, sid)
		}
		if _, code := open(hd); code != http.StatusServiceUnavailable {
			t.Fatalf("a fifth session with four busy ones: %d, want 503", code)
		}
		time.Sleep(transport.SessionIdleUnderPressure + time.Second)
		if !alive(hd, sids[0]) {
			t.Fatal("session 1 expired before SessionIdleTimeout")
		}
		sid, code := open(hd)
		if code != http.StatusOK {
			t.Fatalf("a new session with three idle for a minute: %d, want 200", code)
		}
		synctest.Wait()
		for i, s := range sids[1:] {
			if alive(hd, s) {
				t.Errorf("idle session %d still open under pressure", i+2)
			}
		}
		if !alive(hd, sids[0]) || !alive(hd, sid) {
			t.Error("a session in use was closed")
		}

		relaxed := handler(100)
		var kept []string
		for range 3 {
			s, _ := open(relaxed)
			kept = append(kept, s)
		}
		time.Sleep(transport.SessionIdleUnderPressure + time.Second)
		s, _ := open(relaxed)
		for i, k := range kept {
			if !alive(relaxed, k) {
				t.Errorf("session %d closed early without pressure", i+1)
			}
		}
		for _, hs := range []struct {
			hd  http.Handler
			ids []string
		}{{hd, []string{sids[0], sid}}, {relaxed, append(kept, s)}} {
			for _, id := range hs.ids {
				req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Mcp-Session-Id", id)
				hs.hd.ServeHTTP(httptest.NewRecorder(), req)
			}
		}
		synctest.Wait()
	})
}

// The cap reads a POST as the SDK does: go-sdk v1.8.0 matches member names
// case-sensitively (internal/json, DontMatchCaseInsensitiveStructFields),
// so an initialize that also carries "Method" is still an initialize to
// it, and must count against the cap; a tools/call disguised the same way
// is still a call without a session.
func TestSessionCapReadsMembersAsTheSDKDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, fixture{})
		hd, err := transport.HTTPHandler(h.srv.Backend(), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"localhost"}, MaxSessions: 2})
		if err != nil {
			t.Fatal(err)
		}
		var sids []string
		defer func() {
			for _, id := range sids {
				req := httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Mcp-Session-Id", id)
				hd.ServeHTTP(httptest.NewRecorder(), req)
			}
			synctest.Wait()
		}()
		for range 2 {
			rec := rawPost(hd, "", initializeBody)
			if rec.Code != http.StatusOK {
				t.Fatalf("session %d: %d", len(sids)+1, rec.Code)
			}
			sids = append(sids, rec.Header().Get("Mcp-Session-Id"))
		}
		disguised := strings.Replace(initializeBody, `"method":"initialize"`, `"method":"initialize","Method":"ping"`, 1)
		rec := rawPost(hd, "", disguised)
		if sid := rec.Header().Get("Mcp-Session-Id"); sid != "" {
			sids = append(sids, sid)
		}
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("an initialize with a second-cased Method past max_sessions = 2: %d %s, want 503", rec.Code, rec.Body)
		}
		call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","Method":"ping","params":{"name":"list_prompts","arguments":{}}}`
		if rec := rawPost(hd, "", call); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "-32600") {
			t.Errorf("a disguised call without a session: %d %s, want 400 with -32600", rec.Code, rec.Body)
		}
	})
}
