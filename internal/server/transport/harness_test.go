package transport_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// The transports are tested under the real server and its four tools,
// driven by the real go-sdk client; only what server's own tests cannot
// reach (bytes, sessions, shutdown) is asserted here.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const (
	// echoPrompt returns its arguments from Lua: no model call.
	echoPrompt = "---\nname: echo\ndescription: Return the arguments unchanged.\npromptforge: 1\n---\n" +
		"# Echo\n\n## Run\n\n```lua\nreturn args\n```\n"
	// summarizePrompt is one prose section against the test model: one
	// model turn, which a gated gateway can hold.
	summarizePrompt = "---\nname: summarize\ndescription: Say one thing through the model.\npromptforge: 1\n---\n" +
		"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n"
	// trioPrompt runs three Lua sections: progress 0 for the run, then 1,
	// 2 and 3.
	trioPrompt = "---\nname: trio\ndescription: Three sections in a row.\npromptforge: 1\n---\n" +
		"# Trio\n\n## First\n\n```lua\nvar.n = 1\n```\n\n## Second\n\n```lua\nvar.n = var.n + 1\n```\n\n## Third\n\n```lua\nreturn \"trio done\"\n```\n"
)

// fixture describes a test server.
type fixture struct {
	prompts map[string]string // nil: echo and summarize
	limits  server.Limits     // zero: defaultLimits
	opts    func(*server.Options)
	http    func(*transport.HTTPOptions) // newHTTPHarness's options beyond its defaults
}

func defaultLimits() server.Limits {
	return server.Limits{MaxConcurrentRuns: 4, AdmissionTimeout: 30 * time.Second, ReplyDeadline: 240 * time.Second, RetainCompleted: time.Hour}
}

// oneSlot admits one run at a time, so a run that keeps its slot shows.
func oneSlot() server.Limits {
	return server.Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 30 * time.Second, ReplyDeadline: 240 * time.Second, RetainCompleted: time.Hour}
}

// cancelMidRun starts a run_prompt of summarize on cs, cancels the call
// once its model turn is held at gate, and returns the call's error.
func cancelMidRun(cs *mcp.ClientSession, gate *gatewaytest.Gate) error {
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "summarize"}})
		errc <- err
	}()
	<-gate.Arrived()
	cancel()
	return <-errc
}

// collectFrames waits for n progress values on frames (the client hands
// notifications to its handler on its own goroutine, so the last may come
// just after the result).
func collectFrames(t *testing.T, frames <-chan float64, n int) []float64 {
	t.Helper()
	var got []float64
	for len(got) < n {
		select {
		case f := <-frames:
			got = append(got, f)
		case <-time.After(10 * time.Second):
			t.Fatalf("frames %v: the rest never arrived", got)
		}
	}
	return got
}

// harness is the real server over a catalog of f's prompts; it is closed
// when the test ends.
type harness struct {
	srv     *server.Server
	metrics *server.Metrics // the series srv records, served at /metrics
}

func newHarness(t testing.TB, f fixture) *harness {
	t.Helper()
	dir := t.TempDir()
	files := f.prompts
	if files == nil {
		files = map[string]string{"echo.md": echoPrompt, "summarize.md": summarizePrompt}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	handle, err := catalog.New(context.Background(), catalog.Settings{Roots: []string{dir}, Include: []string{"**/*.md"}}, catalog.Options{})
	if err != nil {
		t.Fatalf("resolve the fixture catalog: %v", err)
	}
	limits := f.limits
	if limits == (server.Limits{}) {
		limits = defaultLimits()
	}
	metrics := server.NewMetrics()
	opts := server.Options{Catalog: handle, Limits: limits, Version: "test", FileRoots: []string{dir}, Metrics: metrics}
	if f.opts != nil {
		f.opts(&opts)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close the server: %v", err)
		}
	})
	return &harness{srv: srv, metrics: metrics}
}

// tcpGateway is a scripted gateway on loopback and a client for it.
func tcpGateway(t testing.TB) (*gatewaytest.Server, *gateway.Client) {
	t.Helper()
	return servertest.Gateway(t)
}

// withGateway points runs at c with the model gatewaytest serves.
func withGateway(c *gateway.Client) func(*server.Options) {
	return func(o *server.Options) {
		o.Client = c
		o.Models = modelset.Static([]gateway.Model{servertest.TestModel})
	}
}

// textOf is the single text block of a result.
func textOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	return servertest.TextOf(t, res)
}
