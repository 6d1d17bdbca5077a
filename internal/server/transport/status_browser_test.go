package transport_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server"
)

// chromium finds Debian's chromium (installed by .ci/run when missing). In
// CI a missing browser fails the test; elsewhere it is skipped with a
// message saying how to get it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; .ci/run installs it (apt-get install -y chromium)")
	}
	t.Skip("chromium is not installed: apt-get install -y chromium to run the status page's browser test")
	return ""
}

// artifactDir is where the timeline screenshot goes:
// $PROMPTFORGE_TEST_ARTIFACTS when set, else the test's temporary
// directory.
func artifactDir(t *testing.T) string {
	if d := os.Getenv("PROMPTFORGE_TEST_ARTIFACTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

// headlessBrowser starts a headless Chromium at exe for the test, stopped
// when the test ends (or after two minutes).
func headlessBrowser(t *testing.T, exe string) context.Context {
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900))
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestStatusPage_InHeadlessChromium drives the status page as an operator
// would: log in with the token, read a broken prompt's reason, watch a run
// appear in flight and finish, and open its timeline.
func TestStatusPage_InHeadlessChromium(t *testing.T) {
	exe := chromium(t)
	g, c := tcpGateway(t)
	gate := gatewaytest.NewGate()
	t.Cleanup(gate.Release)
	g.Enqueue(gatewaytest.Gated(gate, gatewaytest.Text("spoken").WithUsage(12, 3)))
	hh := newHTTPHarness(t, statusFixture(withGateway(c)), nil)

	ctx := headlessBrowser(t, exe)

	// Without the token: the login form, and nothing of the catalog.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		must(err)
		return v
	}
	must(chromedp.Do(ctx, chromedp.Navigate(hh.url+"/status/"), chromedp.WaitVisible(chromedp.ID("token"))))
	loginURL, err := chromedp.Run(ctx, chromedp.Location())
	must(err)
	page, err := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
	must(err)
	if !strings.HasSuffix(loginURL, "/status/login") || strings.Contains(page, "summarize") {
		t.Fatalf("without the token: at %s, page %s", loginURL, page)
	}

	// Log in; the broken prompt is listed with its reason.
	reasonSel := `tr.broken[data-prompt="broken"] .problem`
	must(chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.ID("token"), testToken),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS(reasonSel)),
	))
	if reason := text(reasonSel); !strings.Contains(reason, "description") {
		t.Fatalf("the broken prompt's reason reads %q", reason)
	}

	// Start a run whose model turn the gateway holds.
	cs := hh.client(t, nil)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "summarize"}})
		if err != nil {
			t.Errorf("run_prompt: %v", err)
		}
		done <- res
	}()
	<-gate.Arrived()

	// The page refreshes itself: the run shows in flight, then finishes.
	must(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#in-flight tr.run`))))
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#in-flight tr.run`), "data-run"))
	must(err)
	runID := attr.Value
	gate.Release()
	res := <-done
	if res == nil || textOf(t, res) != "spoken" {
		t.Fatalf("run_prompt = %+v", res)
	}
	row := `#recent tr.run[data-run="` + runID + `"]`
	must(chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(row))))
	if status := text(row + ` td.completed`); status != "completed" {
		t.Fatalf("recent run status %q", status)
	}

	// Its timeline has the model turn.
	must(chromedp.Do(ctx, chromedp.Click(chromedp.CSS(row+` a`)), chromedp.WaitVisible(chromedp.CSS(`.step.kind-model_turn`))))
	if turn := text(`.step.kind-model_turn`); !strings.Contains(turn, "test-model") || !strings.Contains(turn, "12→3 tok") {
		t.Fatalf("the model turn's row reads %q", turn)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(err)
	path := filepath.Join(artifactDir(t), "status-timeline.png")
	must(os.WriteFile(path, shot, 0o644))
	t.Logf("timeline screenshot: %s", path)
}
