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
	h := newHarness(b, fixture{})
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
		b.Fatal(err)
	}
	ts := httptest.NewServer(handler)
	defer ts.Close()
	client := ts.Client()
	post := func(headers map[string]string, body string) (http.Header, string) {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			b.Fatal(err)
		}
		return resp.Header, string(data)
	}
	headers := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	meta := ""
	if stateless {
		headers = map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "run_prompt"}
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`
	} else {
		hdr, body := post(nil, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		sid := hdr.Get("Mcp-Session-Id")
		if sid == "" {
			b.Fatalf("initialize: %s", body)
		}
		headers["Mcp-Session-Id"] = sid
		post(headers, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	call := func(i int) {
		_, body := post(headers, `{"jsonrpc":"2.0","id":`+strconv.Itoa(i)+`,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"x"}`+meta+`}}`)
		if !strings.Contains(body, `"result"`) || strings.Contains(body, `"isError":true`) {
			b.Fatalf("call: %s", body)
		}
	}
	call(0) // the stateless path's first call proves the version (serveCall)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		call(i)
	}
	b.StopTimer()
	if !stateless {
		req, _ := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", headers["Mcp-Session-Id"])
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}
