package transport_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/logtext"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// BenchmarkStdioToolsCall is one tools/call of a constant tool through
// ServeStdio, with the fast lane and through the SDK's path: raw lines
// over in-process pipes, so what it counts (time and allocations per call)
// is the server's side alone, without a client's; in a 2025-era session
// and in a 2026-07-28 one (the _meta a go-sdk client sends on each call).
//
//	go test ./internal/server/transport -run '^$' -bench StdioToolsCall -benchmem
func BenchmarkStdioToolsCall(b *testing.B) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, lane := range []bool{true, false} {
			name := era + "/lane"
			if !lane {
				name = era + "/sdk"
			}
			b.Run(name, func(b *testing.B) { benchStdioToolsCall(b, era, lane) })
		}
	}
}

func benchStdioToolsCall(b *testing.B, era string, lane bool) {
	impl := &mcp.Implementation{Name: "floor", Version: "1"}
	s := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	calls := &transport.Calls{}
	s.AddTool(&mcp.Tool{Name: "const", InputSchema: json.RawMessage(`{"type":"object"}`)},
		calls.Track(func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		}))
	s.AddReceivingMiddleware(transport.ErrorCodes)
	roundTrip, meta, stop := benchSession(b, transport.Backend{MCP: s, Calls: calls, Impl: impl}, era, lane)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"const","arguments":{}` + meta + `}}`)
	}
	b.StopTimer()
	stop()
}

// BenchmarkStdioRunPrompt is one run_prompt of a Lua-only prompt on the
// real server through ServeStdio, raw lines as above: answered by the
// server directly (Backend.Direct, as served), through its receiving
// chain on the lane, and through the SDK's path; what it counts is the
// server's side alone (allocations per call do not depend on the load).
//
//	go test ./internal/server/transport -run '^$' -bench StdioRunPrompt -benchmem
func BenchmarkStdioRunPrompt(b *testing.B) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		for _, mode := range []struct {
			name string
			mode laneMode
		}{{"direct", laneDirect}, {"chain", laneChain}, {"sdk", sdkPath}} {
			b.Run(era+"/"+mode.name, func(b *testing.B) { benchStdioRunPrompt(b, era, mode.mode, nil) })
		}
		// As served: answered directly, with the info lines of
		// mcp-server §1.3 formatted by the binary's stderr handler
		// (written to io.Discard), which the runs above do not log.
		b.Run(era+"/served", func(b *testing.B) {
			benchStdioRunPrompt(b, era, laneDirect, slog.New(logtext.New(io.Discard, nil)))
		})
		// As the binary serves it by default: with run traces on
		// ([observability] traces = true, trace_steps 2000).
		b.Run(era+"/served-traced", func(b *testing.B) {
			benchStdioRunPromptWith(b, era, laneDirect, func(o *server.Options) {
				o.Logger = slog.New(logtext.New(io.Discard, nil))
				o.Tracing = &runtrace.Options{MaxSteps: 2000}
			})
		})
	}
}

func benchStdioRunPrompt(b *testing.B, era string, mode laneMode, log *slog.Logger) {
	var opts func(*server.Options)
	if log != nil {
		opts = func(o *server.Options) { o.Logger = log }
	}
	benchStdioRunPromptWith(b, era, mode, opts)
}

// benchStdioRunPromptWith is benchStdioRunPrompt with the server's options
// set by opts (nil: the harness's).
func benchStdioRunPromptWith(b *testing.B, era string, mode laneMode, opts func(*server.Options)) {
	f := fixture{prompts: map[string]string{"echo.md": echoPrompt}, opts: opts}
	h := newHarness(b, f)
	backend := h.srv.Backend()
	if mode == laneChain {
		backend.Direct = nil
	}
	roundTrip, meta, stop := benchSession(b, backend, era, mode != sdkPath)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		roundTrip(`{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"hello"}` + meta + `}}`)
	}
	b.StopTimer()
	stop()
}

// benchSession serves one stdio session of backend over in-process pipes,
// opened in era (initialize, or server/discover with the _meta a go-sdk
// client sends, which meta returns for each call), and returns a round
// trip of one line and what ends the session.
func benchSession(b *testing.B, backend transport.Backend, era string, lane bool) (roundTrip func(string), meta string, stop func()) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		transport.ServeStdioLane(context.Background(), inR, outW, backend, time.Second, lane, nil)
		outW.Close()
	}()
	r := bufio.NewReader(outR)
	roundTrip = func(line string) {
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadString('\n'); err != nil {
			b.Fatal(err)
		}
	}
	if era == "2025-11-25" {
		roundTrip(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
		io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	} else {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}}}`
		roundTrip(`{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{` + meta[1:] + `}}`)
	}
	return roundTrip, meta, func() {
		inW.Close()
		<-done
	}
}
