package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// A run_prompt over stdio, the one surface whose caller waits on the
// goroutine its call runs on (the fast lane, transport.DirectCall.Wait),
// is first attempted there (runner.go, speculate). These tests drive the
// real stdio transport over OS pipes, as a host spawns the server.

// servePipes serves h's server over OS pipes through the stdio
// transport, as a host spawns it, and returns the peer's ends: in, which
// the server reads, and out, which it writes. served is closed once
// ServeStdio has returned (after in is closed, or out) and the server's
// ends are closed.
func servePipes(t *testing.T, h *harness) (in, out *os.File, served <-chan struct{}) {
	t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		transport.ServeStdio(context.Background(), inR, outW, h.srv.Backend(), time.Second)
		outW.Close()
		inR.Close()
	}()
	return inW, outR, done
}

// stdioClient serves h's server over OS pipes (servePipes) and connects
// a go-sdk client to it.
func stdioClient(t *testing.T, h *harness) *mcp.ClientSession {
	t.Helper()
	inW, outR, served := servePipes(t, h)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil).Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-served
		outR.Close()
	})
	return cs
}

// runnerGoroutines counts the registry's run goroutines alive now.
func runnerGoroutines(t *testing.T) int {
	t.Helper()
	var b strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, block := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(block, "runs.(*Registry).runner") {
			n++
		}
	}
	return n
}

// startedOnce fails unless every run that started told RunStarted once.
func startedOnce(t *testing.T, started func() []string, runs int) {
	t.Helper()
	ids := started()
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("run %s was narrated as started twice: %v", id, ids)
		}
		seen[id] = true
	}
	if len(seen) != runs {
		t.Errorf("%d runs were narrated as started; want %d", len(seen), runs)
	}
}

// A Lua-only run_prompt over stdio runs on the goroutine that read the
// call: no run goroutine is started, and each run is narrated once.
func TestAStdioLuaRunRunsWhereItsCallWasRead(t *testing.T) {
	observing, started := runIDs()
	h := newHarness(t, fixture{opts: func(o *Options) {
		observing(o)
		o.Tracing = &runtrace.Options{}
	}})
	cs := stdioClient(t, h)
	before := runnerGoroutines(t)
	for i := range 5 {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		if got := structuredOf(t, res)["value"]; got != "hi" {
			t.Fatalf("call %d: value %v, want hi", i, got)
		}
	}
	if n := runnerGoroutines(t); n != before {
		t.Errorf("%d run goroutines after five Lua runs over stdio, %d before; want none started", n, before)
	}
	startedOnce(t, started, 5)
}

// traceTree is the kinds and names of a run's trace steps, in order.
func traceTree(t *testing.T, cs *mcp.ClientSession, id string) string {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolCheckRun, Arguments: map[string]any{"run_id": id, "include_trace": true}})
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := structuredOf(t, res)["trace"].(map[string]any)
	if !ok {
		t.Fatalf("no trace for run %s: %v", id, structuredOf(t, res))
	}
	var b strings.Builder
	for _, s := range tr["steps"].([]any) {
		s := s.(map[string]any)
		fmt.Fprintln(&b, s["kind"], s["name"], s["status"])
	}
	return b.String()
}

// An attempt that stops leaves nothing behind: the prompt is run once more,
// on a run goroutine, with one request to the gateway, one narration of
// its start and one trace, the same as over a transport that does not
// attempt runs.
func TestAStdioRunWhoseAttemptStopsRunsOnce(t *testing.T) {
	for name, c := range map[string]struct {
		prompt, want string
		turns        int
	}{
		// Stopped before the model turn.
		"prose": {prompt: "summarize", want: "spoken", turns: 1},
		// Stopped once its Lua ran past the attempt's window.
		"long lua": {prompt: "count", want: "200000"},
	} {
		t.Run(name, func(t *testing.T) {
			g, client := tcpGateway(t)
			g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("spoken") })
			observing, started := runIDs()
			prompts := map[string]string{
				"summarize.md": speakPrompt("summarize"),
				"count.md":     luaPrompt("count", "Count to a million.", "local n = 0\nfor i = 1, 200000 do n = n + 1 end\nreturn n"),
			}
			h := newHarness(t, fixture{prompts: prompts, opts: func(o *Options) {
				withGateway(client)(o)
				observing(o)
				o.Tracing = &runtrace.Options{}
			}})
			cs := stdioClient(t, h)
			before := runnerGoroutines(t)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": c.prompt}})
			if err != nil || res.IsError {
				t.Fatalf("run over stdio: %v %+v", err, res)
			}
			got := structuredOf(t, res)
			if got["value"] != c.want || got["status"] != "completed" {
				t.Fatalf("run over stdio = %v; want completed %q", got, c.want)
			}
			// The attempt stopped: the run went on on a run goroutine,
			// which waits idle for the next run.
			if n := runnerGoroutines(t); n <= before {
				t.Errorf("%d run goroutines after the run, %d before; want the attempt stopped and the run on one", n, before)
			}
			if n := len(g.Requests()); n != c.turns {
				t.Errorf("the gateway got %d requests; want %d", n, c.turns)
			}
			startedOnce(t, started, 1)
			overStdio := traceTree(t, cs, got["run_id"].(string))
			// The same prompt through the in-memory transport, which
			// never attempts a run.
			plain := h.ok(ToolRunPrompt, map[string]any{"prompt": c.prompt})
			if want := traceTree(t, h.session, structuredOf(t, plain)["run_id"].(string)); overStdio != want {
				t.Errorf("trace over stdio:\n%s\nwant, as run without an attempt:\n%s", overStdio, want)
			}
		})
	}
}

// A run whose attempt stopped goes on while the lane reads on: a call
// made while it runs is answered first, so a notifications/cancelled
// would be read too.
func TestStdioReadsOnWhileAStoppedAttemptsRunGoes(t *testing.T) {
	spinning := make(chan struct{})
	var once sync.Once
	h := newHarness(t, fixture{
		prompts: map[string]string{
			"spin.md": luaPrompt("spin", "Spin until the instruction quota ends it.", "while true do end"),
			"echo.md": luaPrompt("echo", "Return the arguments.", "return args"),
		},
		opts: func(o *Options) {
			o.Observer = engine.ObserverFunc(func(ev engine.Event) {
				// Told live only by the run started after the attempt
				// stopped (an attempt's narration is held).
				if ev.Detail == engine.RunStarted {
					once.Do(func() { close(spinning) })
				}
			})
		},
	})
	cs := stdioClient(t, h)
	spun := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "spin"}})
		spun <- err
	}()
	<-spinning
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "x"}})
	if err != nil || res.IsError {
		t.Fatalf("echo while spin runs: %v %+v", err, res)
	}
	select {
	case err := <-spun:
		t.Fatalf("spin's call ended (%v) before echo's was answered: the lane did not read on while spin ran", err)
	default:
	}
	if err := <-spun; err != nil {
		t.Fatalf("spin: %v", err)
	}
}

// A reply deadline shorter than an attempt answers running, as over any
// transport: such a run is not attempted.
func TestAStdioRunUnderAZeroReplyDeadlineAnswersRunning(t *testing.T) {
	h := newHarness(t, fixture{limits: deadlineLimits(0)})
	cs := stdioClient(t, h)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "hi"}})
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	if got := structuredOf(t, res)["status"]; got != "running" {
		t.Errorf("status %v under a 0s reply deadline; want running", got)
	}
}

// A run that reads an input_file or writes an output_file is not
// attempted inline: a file on a network file system may keep the stdio
// reader waiting. It runs on a run goroutine, as over any transport.
func TestAStdioRunWithFilesIsNotAttempted(t *testing.T) {
	for name, args := range map[string]func(work string) map[string]any{
		"input_file": func(work string) map[string]any {
			return map[string]any{"prompt": "reader", "input_file": filepath.Join(work, "in.txt")}
		},
		"output_file": func(work string) map[string]any {
			return map[string]any{"prompt": "writer", "args": "x", "output_file": filepath.Join(work, "out.txt")}
		},
	} {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			if err := os.WriteFile(filepath.Join(work, "in.txt"), []byte("from the file"), 0o644); err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, fixture{prompts: filePrompts(), opts: func(o *Options) {
				o.FileRoots = []string{work}
			}})
			cs := stdioClient(t, h)
			before := runnerGoroutines(t)
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: args(work)})
			if err != nil || res.IsError {
				t.Fatalf("%v %+v", err, res)
			}
			if got := structuredOf(t, res)["status"]; got != "completed" {
				t.Fatalf("status %v", got)
			}
			// The run's goroutine waits idle for the next run.
			if n := runnerGoroutines(t); n <= before {
				t.Errorf("%d run goroutines after the run, %d before; want it run on one, not attempted inline", n, before)
			}
		})
	}
}

// A run_prompt naming an input_file or output_file hands the reading of
// stdin on (transport.DirectCall.Wait) before the file is checked: the
// check reads the file system, which may wait (a network file system),
// and Backend.LazyRead promises that nothing waits before Wait. A path
// outside the roots is refused by that check; the refusal comes after
// the hand-off.
func TestARunWithFilesHandsTheReadOnBeforeTheCheck(t *testing.T) {
	for name, args := range map[string]string{
		"input_file":  `{"prompt":"reader","input_file":"/nowhere/in.txt"}`,
		"output_file": `{"prompt":"writer","args":"x","output_file":"/nowhere/out.txt"}`,
	} {
		t.Run(name, func(t *testing.T) {
			work := t.TempDir()
			h := newHarness(t, fixture{prompts: filePrompts(), opts: func(o *Options) {
				o.FileRoots = []string{work}
			}})
			waits := 0
			ctx := context.WithValue(t.Context(), inlineCallKey{}, func() { waits++ })
			res, err := h.srv.runPrompt(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolRunPrompt, Arguments: []byte(args)}})
			if err != nil || res == nil || !res.IsError {
				t.Fatalf("a path outside the roots = %+v, %v; want a refusal", res, err)
			}
			if waits == 0 {
				t.Error("the call was refused by the file check without handing the read on first")
			}
		})
	}
}
