package transport_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// stdioPeer drives ServeStdio over in-process pipes with raw JSON-RPC.
type stdioPeer struct {
	t      *testing.T
	w      *io.PipeWriter
	r      *bufio.Reader
	served chan error
	cancel context.CancelFunc
}

func newStdioPeer(t *testing.T, h *harness) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &stdioPeer{t: t, w: inW, r: bufio.NewReader(outR), served: make(chan error, 1), cancel: cancel}
	go func() {
		err := transport.ServeStdio(ctx, inR, outW, h.srv.Backend(), time.Second)
		outW.Close()
		p.served <- err
	}()
	t.Cleanup(func() {
		cancel()
		inW.Close()
		go io.Copy(io.Discard, outR)
		if err := <-p.served; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.w, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

// recv reads the next message and decodes it.
func (p *stdioPeer) recv() map[string]any {
	p.t.Helper()
	line, err := p.r.ReadString('\n')
	if err != nil {
		p.t.Fatalf("read a reply: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		p.t.Fatalf("reply %q: %v", line, err)
	}
	return m
}

func (p *stdioPeer) initialize() {
	p.send(initializeBody)
	if m := p.recv(); m["id"] != float64(1) || m["result"] == nil {
		p.t.Fatalf("initialize: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestStdioSurvivesAHostilePeer(t *testing.T) {
	h := newHarness(t, fixture{})
	p := newStdioPeer(t, h)
	p.initialize()

	// An over-long line, malformed JSON, ids the SDK would answer under
	// another id and a wrong argument type: each is answered, and the
	// session goes on.
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"` + strings.Repeat("x", transport.MaxLineBytes) + `"}}}`)
	if m := p.recv(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32600) {
		t.Fatalf("over-long line: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call",`)
	if m := p.recv(); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Fatalf("malformed JSON: %v", m)
	}
	for _, id := range []string{"1180591620717411303424", "1.5"} {
		p.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"wrong id"}}}`)
		line, err := p.r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, `{"jsonrpc":"2.0","id":`+id+`,"error":{"code":-32600,`) {
			t.Fatalf("id %s: %q %v", id, line, err)
		}
	}
	p.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":["echo"]}}}`)
	m := p.recv()
	if m["id"] != float64(4) || m["error"].(map[string]any)["code"] != float64(-32602) {
		t.Fatalf("wrong type: %v", m)
	}
	p.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"still here"}}}`)
	m = p.recv()
	content := m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if m["id"] != float64(5) || content["text"] != "still here" {
		t.Fatalf("after the hostile lines: %v", m)
	}
}

func TestStdioEndsAtEOF(t *testing.T) {
	h := newHarness(t, fixture{})
	p := newStdioPeer(t, h)
	p.initialize()
	p.w.Close()
	select {
	case err := <-p.served:
		p.served <- err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after EOF")
	}
}

// A shutdown before the peer ever initialized returns promptly.
func TestStdioShutdownBeforeTheHandshake(t *testing.T) {
	h := newHarness(t, fixture{})
	p := newStdioPeer(t, h)
	p.cancel()
	select {
	case err := <-p.served:
		p.served <- err
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the shutdown signal")
	}
}

// stdioClient connects a go-sdk client to ServeStdio over in-process
// pipes, asking for protocol version ("" for the newest the SDK speaks on
// stdio); taken counts the calls the fast lane answered.
func stdioClient(t *testing.T, h *harness, opts *mcp.ClientOptions, version string) (cs *mcp.ClientSession, taken *atomic.Int64) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	taken = new(atomic.Int64)
	go func() {
		done <- transport.ServeStdioLane(context.Background(), inR, outW, h.srv.Backend(), time.Second, true, taken)
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio", Version: "1"}, opts).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
	})
	return cs, taken
}

// Progress and cancellation over stdio, in both protocol eras: the calls
// of a 2025-era session and of a 2026-07-28 one (each call carrying its
// protocol version in _meta, after the client's server/discover, which
// the SDK answers) all take the fast lane.
func TestStdioProgressAndCancellation(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) { testStdioProgressAndCancellation(t, version) })
	}
}

func testStdioProgressAndCancellation(t *testing.T, version string) {
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("too late")))
	defer gate.Release()
	prompts := map[string]string{"trio.md": trioPrompt, "echo.md": echoPrompt, "summarize.md": summarizePrompt}
	h := newHarness(t, fixture{prompts: prompts, opts: withGateway(c),
		limits: server.Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 30 * time.Second, ReplyDeadline: time.Minute, RetainCompleted: time.Hour}})
	frames := make(chan float64, 16)
	cs, taken := stdioClient(t, h, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		frames <- r.Params.Progress
	}}, version)
	if got := cs.InitializeResult().ProtocolVersion; got != version {
		t.Fatalf("negotiated protocol %s, want %s", got, version)
	}

	params := &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "trio"}}
	params.SetProgressToken("p")
	if res, err := cs.CallTool(context.Background(), params); err != nil || textOf(t, res) != "trio done" {
		t.Fatalf("trio: %v %+v", err, res)
	}
	collectFrames(t, frames, 4)

	cancelMidRun(cs, gate)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "next"}}); err != nil || textOf(t, res) != "next" {
		t.Fatalf("after the cancelled call: %v %+v", err, res)
	}
	if got := taken.Load(); got != 3 {
		t.Errorf("the fast lane took %d of the 3 calls, want 3", got)
	}
}

// Requests piped in and followed at once by the end of input are all
// answered before ServeStdio returns (B8): here the end of input arrives
// while one call is held at the gateway, and its reply must still be
// written.
func TestStdioAnswersEverythingReadBeforeEOF(t *testing.T) {
	h, gate := gatedHarness(t, "summary")
	var out lockedBuffer
	in := strings.Join([]string{
		initializeBody,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"echo","args":"hi"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_prompt","arguments":{"prompt":"summarize"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`,
	}, "\n") + "\n"
	inR, inW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- transport.ServeStdio(context.Background(), inR, &out, h.srv.Backend(), 30*time.Second)
	}()
	go func() {
		io.WriteString(inW, in)
		inW.Close()
	}()
	select {
	case <-gate.Arrived():
		gate.Release()
		if err := <-served; err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case err := <-served:
		t.Errorf("ServeStdio returned (%v) before the held call reached the gateway", err)
	}
	ids := map[float64]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("reply %q: %v", line, err)
		}
		if id, ok := m["id"].(float64); ok {
			ids[id] = true
		}
	}
	for _, id := range []float64{1, 2, 3, 4} {
		if !ids[id] {
			t.Errorf("no reply to request %v; wrote:\n%s", id, out.String())
		}
	}
}

// lockedBuffer is an io.Writer the server writes and the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// onlyReader hides its reader's Close, as os.Stdin's Close hides nothing
// but interrupts nothing either: a read on a blocking stdin whose peer
// keeps it open and silent goes on after Close.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// A shutdown signal ends ServeStdio even while the peer keeps stdin open
// and silent and the read on it cannot be interrupted (serve --stdio under
// an MCP client that signals the server before closing the pipe).
func TestStdioShutdownWithAStdinThatCannotBeInterrupted(t *testing.T) {
	h := newHarness(t, fixture{})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- transport.ServeStdio(ctx, onlyReader{inR}, outW, h.srv.Backend(), time.Second) }()
	defer func() {
		// The peer goes at last: the read loop left behind ends.
		inW.Close()
		outW.Close()
	}()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not return after the shutdown signal while stdin stayed open")
	}
}
