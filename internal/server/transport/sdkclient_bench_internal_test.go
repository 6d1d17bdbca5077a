package transport

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSDKClientCall is the go-sdk client's own side of one tools/call
// in each protocol era: the client the benchmark (test/bench) drives both
// HTTP paths with, calling a server whose every tools/call reply is the
// same fixed SSE event (the session's setup goes to the SDK's handlers), so
// that what differs between the eras is the client's work. The event is
// flushed as the SDK's handlers flush it ("flushed": a chunked body whose
// end follows in a second write) or left to net/http ("whole": one write,
// with a Content-Length, as writeSSE sends a call's reply). It reports the
// TCP connections the client opened per call (conns/op).
//
//	go test ./internal/server/transport -run '^$' -bench SDKClientCall -benchmem
func BenchmarkSDKClientCall(b *testing.B) {
	for _, version := range []string{"2025-11-25", protocolStateless} {
		name := "stateful"
		if version == protocolStateless {
			name = "stateless"
		}
		for _, flush := range []bool{true, false} {
			reply := "/flushed"
			if !flush {
				reply = "/whole"
			}
			b.Run(name+reply, func(b *testing.B) { benchSDKClientCall(b, version, flush) })
		}
	}
}

func benchSDKClientCall(b *testing.B, version string, flush bool) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "const", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "const", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest, map[string]any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: version == protocolStateless, DisableLocalhostProtection: true})
	// Every tools/call gets the same reply, under its own id.
	fixed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		if e, ok := scanEnvelope(body); !ok || string(e.method) != `"tools/call"` {
			sdk.ServeHTTP(w, r)
		} else {
			setStreamHeaders(w.Header(), "text/event-stream")
			writeSSE(w, []byte(`{"jsonrpc":"2.0","id":`+string(e.id)+`,"result":{"content":[{"type":"text","text":"ok"}]}}`), flush)
		}
	})
	ts := httptest.NewUnstartedServer(fixed)
	var conns atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: ts.URL, HTTPClient: ts.Client(), DisableStandaloneSSE: true,
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("negotiated %s, not %s", got, version)
	}
	call := func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "const", Arguments: map[string]any{"prompt": "echo", "args": "x"}})
		if err != nil || res.IsError || len(res.Content) != 1 {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
	call()
	before := conns.Load()
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64(conns.Load()-before)/float64(b.N), "conns/op")
}
