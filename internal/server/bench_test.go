package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// The benchmarks compare run_prompt on a Lua-only prompt with a trivial
// SDK tool that returns a constant, behind the same transport stack (the
// floor). Run them together:
//
//	go test ./internal/server -run '^$' -bench . -benchmem

// constServer is a bare SDK server with one tool returning a constant.
func constServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	s.AddTool(&mcp.Tool{Name: "const", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil
		})
	return s
}

// The SDK client writes per-request metadata into the params it is given
// (on sessions that negotiated the 2026-07-28 protocol), so every session
// gets params of its own.
func echoCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "hello"}}
}

func constCall() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "const", Arguments: map[string]any{}}
}

func benchLimits() Limits {
	return Limits{MaxConcurrentRuns: 64, AdmissionTimeout: time.Minute, ReplyDeadline: time.Minute, RetainCompleted: time.Minute}
}

const testToken = "s3cret-token"

// backendFor is h's server as the transports see it, with mcpServer in
// place of the server's own SDK server (a bare one for the floor).
func backendFor(h *harness, mcpServer *mcp.Server) transport.Backend {
	b := h.srv.Backend()
	b.MCP = mcpServer
	return b
}

// serveHTTPFor serves mcpServer over a real loopback listener behind the
// transport stack and returns its /mcp URL.
func serveHTTPFor(b *testing.B, h *harness, mcpServer *mcp.Server) string {
	b.Helper()
	handler, err := transport.HTTPHandler(backendFor(h, mcpServer), transport.HTTPOptions{APIKey: testToken, AllowedHosts: []string{"127.0.0.1"}, Metrics: h.srv.metrics.Handler()})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	b.Cleanup(func() {
		for ss := range mcpServer.Sessions() {
			ss.Close()
		}
		srv.Close()
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// The protocol eras /mcp serves: a session of the 2025-11-25 era
// (initialize, Mcp-Session-Id) and the stateless 2026-07-28 one (each call
// a POST of its own, with its _meta).
const (
	stateful  = "2025-11-25"
	stateless = "2026-07-28"
)

// httpSession connects a go-sdk client asking for protocol version, and
// fails if the server answered with another.
func httpSession(b *testing.B, url, version string) *mcp.ClientSession {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	b.Cleanup(tr.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: servertest.Bearer{Token: testToken, Base: tr}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		b.Fatalf("asked for protocol %s, got %s", version, got)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// stdioSession serves mcpServer over in-process io.Pipe pairs through the
// stdio line handling and connects a client to it.
func stdioSession(b *testing.B, h *harness, mcpServer *mcp.Server) *mcp.ClientSession {
	b.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		transport.ServeStdio(context.Background(), inR, outW, backendFor(h, mcpServer), time.Second)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cs.Close()
		<-done
	})
	return cs
}

func callLoop(b *testing.B, cs *mcp.ClientSession, params *mcp.CallToolParams) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
}

func BenchmarkRunPromptHTTP(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, httpSession(b, serveHTTPFor(b, h, h.srv.MCP()), stateful), echoCall())
}

func BenchmarkConstToolHTTP(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, httpSession(b, serveHTTPFor(b, h, constServer()), stateful), constCall())
}

// The same call in the 2026-07-28 era: no session, so the SDK connects a
// throwaway server session for each POST (StreamableHTTPHandler.
// serveStateless), and every request carries its _meta and the Mcp-Method
// and Mcp-Name headers.
func BenchmarkRunPromptHTTPStateless(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, httpSession(b, serveHTTPFor(b, h, h.srv.MCP()), stateless), echoCall())
}

func BenchmarkConstToolHTTPStateless(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, httpSession(b, serveHTTPFor(b, h, constServer()), stateless), constCall())
}

func BenchmarkRunPromptStdio(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, stdioSession(b, h, h.srv.MCP()), echoCall())
}

func BenchmarkConstToolStdio(b *testing.B) {
	h := newHarness(b, fixture{limits: benchLimits()})
	callLoop(b, stdioSession(b, h, constServer()), constCall())
}

// parallelHTTP drives 16 client sessions of protocol version at once and
// reports calls/s.
func parallelHTTP(b *testing.B, version string, mcpServer func(*harness) *mcp.Server, params func() *mcp.CallToolParams) {
	const clients = 16
	h := newHarness(b, fixture{limits: benchLimits()})
	url := serveHTTPFor(b, h, mcpServer(h))
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		sessions[i] = httpSession(b, url, version)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			params := params()
			for next.Add(1) <= int64(b.N) {
				if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
					b.Errorf("call: %v %+v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
}

func BenchmarkRunPromptHTTP16Clients(b *testing.B) {
	parallelHTTP(b, stateful, func(h *harness) *mcp.Server { return h.srv.MCP() }, echoCall)
}

func BenchmarkConstToolHTTP16Clients(b *testing.B) {
	parallelHTTP(b, stateful, func(*harness) *mcp.Server { return constServer() }, constCall)
}

func BenchmarkRunPromptHTTPStateless16Clients(b *testing.B) {
	parallelHTTP(b, stateless, func(h *harness) *mcp.Server { return h.srv.MCP() }, echoCall)
}

func BenchmarkConstToolHTTPStateless16Clients(b *testing.B) {
	parallelHTTP(b, stateless, func(*harness) *mcp.Server { return constServer() }, constCall)
}

// BenchmarkListPromptsPage serves one 100-entry page of a 10,000-prompt
// catalog: through the handler alone, as a whole in-memory MCP call, and
// through the real go-sdk client over the stdio line handling (io.Pipe)
// and over loopback streamable HTTP (the client's decoding of the page is
// part of each call, as it is of the round trip callers see).
func BenchmarkListPromptsPage(b *testing.B) {
	files := make(map[string]string, 10000)
	for i := range 10000 {
		name := fmt.Sprintf("prompt_%05d", i)
		files[name+".md"] = luaPrompt(name, "Prompt number "+name+" of the large benchmark catalog.", "return args")
	}
	h := newHarness(b, fixture{prompts: files})
	args := json.RawMessage(`{"cursor":"5000"}`)
	b.Run("handler", func(b *testing.B) {
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListPrompts, Arguments: args}}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.srv.listPrompts(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		// The server's side of one call on the SDK's stateful HTTP path,
		// on one goroutine: the handler behind the middleware that hands
		// the SDK the page's bytes, then what jsonrpc2 does with the
		// result (NewResponse's marshalToRaw: an encoding/json Encoder
		// without HTML escaping, and EncodeMessage of the response).
		chain := h.srv.pagesMiddleware(func(ctx context.Context, _ string, r mcp.Request) (mcp.Result, error) {
			return h.srv.listPrompts(ctx, r.(*mcp.CallToolRequest))
		})
		call := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListPrompts, Arguments: args}}
		id, err := jsonrpc.MakeID(float64(1))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := chain(context.Background(), "tools/call", call)
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(res); err != nil {
				b.Fatal(err)
			}
			if _, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: bytes.TrimRight(buf.Bytes(), "\n")}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("clientdecode", func(b *testing.B) {
		// What the go-sdk client does with the reply's bytes, whichever
		// server sent them: jsonrpc.DecodeMessage of the message, then
		// CallToolResult.UnmarshalJSON of its result (the text unescaped,
		// structuredContent built as maps), on one goroutine.
		res, err := h.srv.listPrompts(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListPrompts, Arguments: args}})
		if err != nil {
			b.Fatal(err)
		}
		raw, err := json.Marshal(res)
		if err != nil {
			b.Fatal(err)
		}
		id, err := jsonrpc.MakeID(float64(1))
		if err != nil {
			b.Fatal(err)
		}
		wire, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Result: raw})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			msg, err := jsonrpc.DecodeMessage(wire)
			if err != nil {
				b.Fatal(err)
			}
			var got mcp.CallToolResult
			if err := got.UnmarshalJSON(msg.(*jsonrpc.Response).Result); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inmemory", func(b *testing.B) {
		cpuPerOp(b, func() { callLoop(b, h.session, &mcp.CallToolParams{Name: ToolListPrompts, Arguments: args}) })
	})
	b.Run("stdio", func(b *testing.B) {
		cs := stdioSession(b, h, h.srv.MCP())
		cpuPerOp(b, func() { callLoop(b, cs, &mcp.CallToolParams{Name: ToolListPrompts, Arguments: args}) })
	})
	b.Run("http", func(b *testing.B) {
		cs := httpSession(b, serveHTTPFor(b, h, h.srv.MCP()), stateful)
		cpuPerOp(b, func() { callLoop(b, cs, &mcp.CallToolParams{Name: ToolListPrompts, Arguments: args}) })
	})
}

// cpuPerOp runs loop and reports the process's CPU time (user and system,
// every goroutine's: client, server and collector) per iteration, which a
// loaded machine changes far less than it changes the time per call.
func cpuPerOp(b *testing.B, loop func()) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	loop()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	used := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// speakHarness serves the speak prompt against g, with room for runs in
// flight, finished records retained for retain, and tracing as given.
func speakHarness(b *testing.B, g *memGateway, runs int, retain time.Duration, tracing *runtrace.Options) *harness {
	return newHarness(b, fixture{
		prompts: map[string]string{"speak.md": speakPrompt("speak")},
		limits:  Limits{MaxConcurrentRuns: runs, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: retain},
		opts: func(o *Options) {
			o.Client = g.client
			o.Models = modelset.Static([]gateway.Model{testModel})
			o.Tracing = tracing
		},
	})
}

// BenchmarkRunsInFlight holds 1,000 run_prompt calls in flight at a gated
// gateway and reports what each costs in heap and stack: the call's
// handler, its run, the engine's state and the gateway request. The gated
// gateway runs in-process over net.Pipe, so its side of each request is
// counted too, which makes the figure an upper bound.
func BenchmarkRunsInFlight(b *testing.B) {
	const runs = 1000
	for b.Loop() {
		g := newMemGateway(b)
		h := speakHarness(b, g, runs, time.Minute, nil)
		call := &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "speak"}}
		// Warm up connection pools and lazily built state.
		go h.session.CallTool(context.Background(), call)
		<-g.arrived
		before := memInUse()

		var wg sync.WaitGroup
		for range runs - 1 {
			wg.Go(func() { h.session.CallTool(context.Background(), call) })
		}
		for range runs - 1 {
			<-g.arrived
		}
		after := memInUse()
		b.ReportMetric(float64(after-before)/float64(runs-1), "B/run")
		g.Release()
		wg.Wait()
	}
}

func memInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkHeldProseRuns holds 1,000 prose runs in flight, as the scale
// benchmark's memory phase does (docs/benchmarks.md, "Prose runs at
// scale"), but in one process: a go-sdk client over loopback streamable
// HTTP (the stateful era), the whole transport stack, traces on as serve
// has them by default, and the gated in-memory gateway holding every
// model turn. Each op launches the 1,000 runs, waits until every one is
// at the gateway, measures, and releases them. It reports, per run:
//
//   - heap-B/run, stack-B/run: live heap and goroutine stacks while the
//     runs are held, after a collection, less before; the client's and
//     the gateway's side of each run are in the process too, so these are
//     upper bounds on the server's, and comparable between revisions;
//   - allocs/run, alloc-B/run: allocations over the whole op (call, run,
//     gateway turn, answer), client and gateway included.
func BenchmarkHeldProseRuns(b *testing.B) {
	const runs = 1000
	g := newMemGateway(b)
	h := speakHarness(b, g, runs, time.Nanosecond, &runtrace.Options{})
	cs := httpSession(b, serveHTTPFor(b, h, h.srv.MCP()), stateful)
	call := func() *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "speak"}}
	}
	hold := func(release func()) {
		var wg sync.WaitGroup
		for range runs {
			wg.Go(func() {
				if res, err := cs.CallTool(context.Background(), call()); err != nil || res.IsError {
					b.Errorf("call: %v %+v", err, res)
				}
			})
		}
		for range runs {
			<-g.arrived
		}
		release()
		wg.Wait()
		// One more run, answered at once, whose registration evicts the
		// finished records (retained for a nanosecond): the next op starts
		// from one retained record, not 1,000.
		if res, err := cs.CallTool(context.Background(), call()); err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
	// Warm up: the connections, the pools, lazily built state. The gate
	// stays shut: every op below holds its runs until it has measured.
	gate := make(chan struct{})
	g.gate(gate)
	hold(func() { close(gate) })
	var heap, stack, allocs, bytes float64
	for b.Loop() {
		gate := make(chan struct{})
		g.gate(gate)
		before := memNow()
		hold(func() {
			held := memNow()
			heap += float64(int64(held.HeapAlloc) - int64(before.HeapAlloc))
			stack += float64(int64(held.StackInuse) - int64(before.StackInuse))
			close(gate)
		})
		after := memNow()
		allocs += float64(after.Mallocs - before.Mallocs)
		bytes += float64(after.TotalAlloc - before.TotalAlloc)
	}
	n := float64(b.N * runs)
	b.ReportMetric(heap/n, "heap-B/run")
	b.ReportMetric(stack/n, "stack-B/run")
	b.ReportMetric(allocs/n, "allocs/run")
	b.ReportMetric(bytes/n, "alloc-B/run")
}

func memNow() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
