package transport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call statefulCalls answers runs its tracked handler in the one
// context the call came in with (Calls.Track derives none: a waiting run
// holds one context for its call, not three), and that context still
// ends when the session's calls are cancelled (Calls.CancelSession, as a
// DELETE or an idle close does) and when the POST goes away.
func TestAStatefulCallHoldsOneContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := &Calls{}
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		// The context the chain hands on, before the tool's handler.
		var chainDone <-chan struct{}
		srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == methodCallTool {
					chainDone = ctx.Done()
				}
				return next(ctx, method, req)
			}
		})
		type seen struct {
			done  <-chan struct{}
			cause error
		}
		seenc := make(chan seen, 1)
		srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, calls.Track(func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			seenc <- seen{ctx.Done(), context.Cause(ctx)}
			return nil, ctx.Err()
		}))
		hd, err := httpHandler(Backend{MCP: srv, Calls: calls}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{})
		if err != nil {
			t.Fatal(err)
		}
		bg := context.Background()
		sid := rawCall(bg, hd, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get(headerSessionID)
		if sid == "" {
			t.Fatal("no session")
		}
		rawCall(bg, hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

		// Ended with the session's calls.
		go rawCall(bg, hd, sid, toolCall("1", "slow", `{}`, ""))
		synctest.Wait()
		if n := calls.CancelSession(sid); n != 1 {
			t.Fatalf("CancelSession cancelled %d calls, want the slow one", n)
		}
		s := <-seenc
		if !errors.Is(s.cause, errSessionEnded) {
			t.Errorf("the call ended with cause %v, want %v", s.cause, errSessionEnded)
		}
		if s.done != chainDone {
			t.Errorf("the tracked handler ran in a context of its own, not the call's")
		}
		synctest.Wait()

		// Ended with its POST.
		ctx, cancel := context.WithCancel(bg)
		go rawCall(ctx, hd, sid, toolCall("2", "slow", `{}`, ""))
		synctest.Wait()
		cancel()
		s = <-seenc
		if !errors.Is(s.cause, context.Canceled) {
			t.Errorf("the call whose POST went ended with cause %v, want %v", s.cause, context.Canceled)
		}
		if s.done != chainDone {
			t.Errorf("the second call's tracked handler ran in a context of its own, not the call's")
		}
		synctest.Wait()
		if n := calls.CancelSession(sid); n != 0 {
			t.Errorf("%d calls still filed under the session after both ended", n)
		}
		for ss := range srv.Sessions() {
			ss.Close()
		}
		synctest.Wait()
	})
}

// A call holds its body until it answers: a body of a declared length is
// read into that many bytes, not io.ReadAll's growing buffer (512 bytes
// for a plain call of about 100), and still read to its end.
func TestReadBodyHoldsTheDeclaredLength(t *testing.T) {
	const sent = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"speak"}}}`
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(sent))
	body, ok := readBody(httptest.NewRecorder(), r)
	if !ok || string(body) != sent {
		t.Fatalf("read %q, %v", body, ok)
	}
	if cap(body) != len(sent) {
		t.Errorf("the body is held in %d bytes, want its %d", cap(body), len(sent))
	}
	// A body shorter than it declared is refused, as before.
	r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(sent))
	r.ContentLength = int64(len(sent) + 5)
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(sent), iotest.ErrReader(io.ErrUnexpectedEOF)))
	w := httptest.NewRecorder()
	if _, ok := readBody(w, r); ok || w.Code != http.StatusBadRequest {
		t.Errorf("a truncated body: ok %v, status %d, want refused with 400", ok, w.Code)
	}
}

// A body whose reader ends with a plain io.EOF short of its declared
// length, inside the first read or at the end of a grown one, is refused
// as a truncated one is: readAllOf's io.ReadFull reports that io.EOF,
// which is not the body's end (readAllOf makes it io.ErrUnexpectedEOF).
func TestReadBodyRefusesABodyEndingShortOfItsLength(t *testing.T) {
	for _, sent := range []int{100, bodyFirstRead, 2 * bodyFirstRead} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat(" ", sent)))
		r.ContentLength = int64(sent + 5)
		w := httptest.NewRecorder()
		if body, ok := readBody(w, r); ok || w.Code != http.StatusBadRequest {
			t.Errorf("%d bytes of %d declared: read %d bytes, ok %v, status %d; want refused with 400", sent, sent+5, len(body), ok, w.Code)
		}
	}
}

// A call waiting on its tool has set none of its stream's headers (no
// header map held while it waits); they are set by its first write, or,
// when it ends having written nothing, as it returns: the reply's headers
// are what they were.
func TestAWaitingCallSetsItsHeadersLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan struct{}, 1)
		srv := statefulServer(started)
		srv.AddTool(&mcp.Tool{Name: "quiet", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		hd, err := httpHandler(Backend{MCP: srv, Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{})
		if err != nil {
			t.Fatal(err)
		}
		bg := context.Background()
		sid := rawCall(bg, hd, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get(headerSessionID)
		rawCall(bg, hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

		want := func(rec *httptest.ResponseRecorder, what string) {
			t.Helper()
			h := rec.Result().Header
			if h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache, no-transform" || h.Get("Connection") != "keep-alive" {
				t.Errorf("%s: headers %v, want the event stream's", what, h)
			}
		}
		for _, tc := range []struct {
			what, tool, meta string
		}{{"a call that ends unanswered", "quiet", ""}, {"a call with progress", "slow", `{"progressToken":"p"}`}} {
			ctx, cancel := context.WithCancel(bg)
			req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost/mcp", strings.NewReader(toolCall("1", tc.tool, `{}`, tc.meta)))
			for k, v := range map[string]string{"Authorization": "Bearer k", "Content-Type": "application/json",
				"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25", headerSessionID: sid} {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				hd.ServeHTTP(rec, req)
			}()
			<-started
			synctest.Wait()
			if tc.meta == "" {
				if n := len(rec.Header()); n != 0 {
					t.Errorf("%s: %d headers set while it waits (%v), want none", tc.what, n, rec.Header())
				}
			} else {
				want(rec, tc.what+", waiting after its progress")
			}
			cancel()
			<-done
			want(rec, tc.what)
		}
		for ss := range srv.Sessions() {
			ss.Close()
		}
		synctest.Wait()
	})
}

// A call that ends having written nothing (its result cannot be encoded:
// processResult writes nothing, and neither does serve) still gets its
// stream's headers as it returns (callStream.finish), as it got them
// before the call when they were set up front.
func TestACallThatWritesNothingGetsItsHeaders(t *testing.T) {
	srv := statefulServer(make(chan struct{}, 1))
	srv.AddTool(&mcp.Tool{Name: "unencodable", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"x": math.Inf(1)}}, nil
	})
	hd, err := httpHandler(Backend{MCP: srv, Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}}, pathKnobs{})
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	sid := rawCall(bg, hd, "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`).Header().Get(headerSessionID)
	rawCall(bg, hd, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	rec := rawCall(bg, hd, sid, toolCall("1", "unencodable", `{}`, ""))
	if rec.Body.Len() != 0 {
		t.Fatalf("the call wrote %q; want nothing (its result cannot be encoded)", rec.Body.String())
	}
	h := rec.Result().Header
	if h.Get("Content-Type") != "text/event-stream" || h.Get("Cache-Control") != "no-cache, no-transform" || h.Get("Connection") != "keep-alive" {
		t.Errorf("headers %v, want the event stream's", h)
	}
	for ss := range srv.Sessions() {
		ss.Close()
	}
}

// A body's declared length is a promise, not bytes: a client that
// declares the cap (4 MiB) and sends ten bytes before it stalls makes the
// server hold about what arrived, as io.ReadAll did, not the declared
// size (an authenticated client could otherwise pin 4 MiB per connection
// for the whole body timeout by sending headers alone). A large body that
// does arrive is still held in exactly its length, and one that ends short
// is still refused.
func TestReadBodyAllocatesAsTheBytesArrive(t *testing.T) {
	stalled := errBodyTimeout{DefaultBodyTimeout}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.ContentLength = maxBodyBytes
	r.Body = io.NopCloser(io.MultiReader(strings.NewReader(`{"jsonrpc"`), iotest.ErrReader(stalled)))
	w := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, ok := readBody(w, r)
	runtime.ReadMemStats(&after)
	if ok || w.Code != http.StatusRequestTimeout {
		t.Errorf("a stalled body: ok %v, status %d, want refused with 408", ok, w.Code)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("reading 10 bytes of a body declared as %d allocated %d bytes", maxBodyBytes, got)
	}

	big := `{"pad":"` + strings.Repeat("x", 300<<10) + `"}`
	r = httptest.NewRequest(http.MethodPost, "/mcp", iotest.HalfReader(strings.NewReader(big)))
	r.ContentLength = int64(len(big))
	body, ok := readBody(httptest.NewRecorder(), r)
	if !ok || string(body) != big || cap(body) != len(big) {
		t.Errorf("a %d-byte body: ok %v, read %d bytes in %d", len(big), ok, len(body), cap(body))
	}
	r = httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(big))
	r.ContentLength = int64(len(big) + 1)
	w = httptest.NewRecorder()
	if _, ok := readBody(w, r); ok || w.Code != http.StatusBadRequest {
		t.Errorf("a body a byte short of its length: ok %v, status %d, want refused with 400", ok, w.Code)
	}
}
