package transport_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// BenchmarkHTTPToolsCall is one run_prompt of the Lua-only echo prompt
// through the whole /mcp stack of the real server, as raw POSTs from a
// plain net/http client (whose own cost is the same in every variant, so
// the differences are the server's): on an established stateful session
// and as a 2026-07-28 call, each answered directly (statefulCalls; the
// stateless path's stand-in session) and by the SDK's handler.
//
//	go test ./internal/server/transport -run '^$' -bench HTTPToolsCall -benchmem
func BenchmarkHTTPToolsCall(b *testing.B) {
	for _, era := range []string{"stateful", "stateless"} {
		for _, direct := range []bool{true, false} {
			name := era + "/direct"
			if !direct {
				name = era + "/sdk"
			}
			b.Run(name, func(b *testing.B) { benchHTTPToolsCall(b, era == "stateless", direct) })
		}
	}
}

func benchHTTPToolsCall(b *testing.B, stateless, direct bool) {
	call, done := newRawCaller(b, stateless, direct)
	defer done()
	call(0) // the stateless path's first call proves the version (serveCall)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		call(i)
	}
	b.StopTimer()
}

// TestCallReplyIsOneWrite: a run_prompt answered on either HTTP path
// without the SDK's handler (statefulCalls; the stateless path's stand-in
// session) reaches the client as one response with a Content-Length, the
// SDK's event bytes as its body, not as a flushed chunk with the body's end
// in a second write (writeSSE). The first stateless call, on a throwaway
// session, is still flushed and chunked.
func TestCallReplyIsOneWrite(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		call, done := newRawCaller(t, stateless, true)
		call(0)
		resp, body := call(1)
		done()
		if resp.ContentLength != int64(len(body)) || len(resp.TransferEncoding) > 0 {
			t.Errorf("stateless %v: Content-Length %d, Transfer-Encoding %q for a %d-byte reply; want the length, unchunked",
				stateless, resp.ContentLength, resp.TransferEncoding, len(body))
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || !strings.HasPrefix(body, "event: message\ndata: {") {
			t.Errorf("stateless %v: %s reply %q; want the SDK's SSE event", stateless, ct, body)
		}
	}
}

// newRawCaller serves the real server's /mcp over loopback HTTP and
// returns a raw POST of a run_prompt of the echo prompt as call i (on an
// established stateful session, or as a 2026-07-28 call; answered
// directly, or by the SDK's handlers), checked to be a result, and how to
// end it all.
func newRawCaller(tb testing.TB, stateless, direct bool) (call func(i int) (*http.Response, string), done func()) {
	h := newHarness(tb, fixture{})
	backend := h.srv.Backend()
	opts := transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"127.0.0.1"}}
	var handler http.Handler
	var err error
	switch {
	case stateless:
		backend.NoParamHeaders = direct
		handler, err = transport.HTTPHandler(backend, opts)
	case direct:
		handler, err = transport.HTTPHandler(backend, opts)
	default:
		handler, err = transport.HTTPHandlerSDKOnly(backend, opts)
	}
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(handler)
	client := ts.Client()
	post := func(headers map[string]string, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			tb.Fatal(err)
		}
		return resp, string(data)
	}
	headers := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	meta := ""
	if stateless {
		headers = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "run_prompt"}
		meta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},`
	} else {
		resp, body := post(nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			tb.Fatalf("initialize: %s", body)
		}
		headers["Mcp-Session-Id"] = sid
		post(headers, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	// The bodies are the go-sdk v1.8.0 client's own for this call, byte for
	// byte but the id (captured from its StreamableClientTransport against
	// the built server): a 2026-07-28 call's _meta comes first, its members
	// in the order the client encodes them, so the scans here walk what a
	// real client's POST makes them walk.
	call = func(i int) (*http.Response, string) {
		resp, body := post(headers, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{`+meta+`"name":"run_prompt","arguments":{"args":"hello","prompt":"echo"}}}`)
		if !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
			tb.Fatalf("call: %s", body)
		}
		return resp, body
	}
	done = func() {
		if !stateless {
			req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Mcp-Session-Id", headers["Mcp-Session-Id"])
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		ts.Close()
	}
	return call, done
}
