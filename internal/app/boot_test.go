package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/server/transport"
)

// signalLog is a slog handler that records messages and reports the first
// one starting with a prefix.
type signalLog struct {
	mu      sync.Mutex
	lines   []string
	waiters map[string]chan struct{}
}

func newSignalLog() *signalLog { return &signalLog{waiters: map[string]chan struct{}{}} }

func (s *signalLog) on(prefix string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.waiters[prefix] = ch
	return ch
}

func (s *signalLog) Enabled(context.Context, slog.Level) bool { return true }
func (s *signalLog) Handle(_ context.Context, r slog.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	s.lines = append(s.lines, line)
	for prefix, ch := range s.waiters {
		if strings.HasPrefix(r.Message, prefix) {
			close(ch)
			delete(s.waiters, prefix)
		}
	}
	return nil
}
func (s *signalLog) WithAttrs([]slog.Attr) slog.Handler { return s }
func (s *signalLog) WithGroup(string) slog.Handler      { return s }
func (s *signalLog) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

func report(err error) string {
	var b bytes.Buffer
	WriteReport(&b, err)
	return b.String()
}

func TestBootFailureReports(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope", "prompts.toml")
	err := Boot(context.Background(), BootOptions{ConfigPath: missing, Transport: HTTP})
	got := report(err)
	want := "error: load the configuration\n  caused by: read config " + missing + "\n  caused by: "
	if !strings.HasPrefix(got, want) || strings.HasSuffix(got, "caused by: \n") {
		t.Fatalf("report:\n%s\nwant it to start with:\n%s<a cause>", got, want)
	}

	// A broken prompt no longer stops the boot (it is served as a broken
	// entry); a catalog-level fault, two files claiming one name, still does.
	path := servertest.ConfigDir(t, `api_key = "k"`, nil, map[string]string{
		"a.md": luaPrompt("twin", "One.", "return 1"),
		"b.md": luaPrompt("twin", "Two.", "return 2"),
	})
	got = report(Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP}))
	for _, want := range []string{"error: resolve the prompt catalog\n  caused by: catalog has 1 fault\n  ", "a.md", "b.md", "twin"} {
		if !strings.Contains(got, want) {
			t.Errorf("catalog report lacks %q:\n%s", want, got)
		}
	}
}

func TestHTTPRefusalsComeBeforeAnythingSlow(t *testing.T) {
	// No prompts directory at all: the token check must fail first.
	dir := t.TempDir()
	path := filepath.Join(dir, "prompts.toml")
	os.WriteFile(path, []byte("[server]\n[paths]\nprompts = \"/nonexistent\"\n[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n"), 0o644)
	err := Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP})
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepServe || !errors.Is(err, transport.ErrMissingToken) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(report(err), "[server].api_key") {
		t.Fatalf("report %q", report(err))
	}

	os.WriteFile(path, []byte("[server]\nbind = \"0.0.0.0:9310\"\napi_key = \"k\"\n[paths]\nprompts = \"/nonexistent\"\n[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n"), 0o644)
	err = Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP})
	if !errors.As(err, &se) || se.Step != StepServe || !strings.Contains(err.Error(), "allowed_hosts") {
		t.Fatalf("got %v", err)
	}

	os.WriteFile(path, []byte("[server]\napi_key = \"k\"\nallowed_origins = [\"null\"]\n[paths]\nprompts = \"/nonexistent\"\n[gateway]\nurl = \"http://127.0.0.1:1/v1\"\napi_key = \"k\"\n"), 0o644)
	err = Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP})
	if !errors.As(err, &se) || se.Step != StepServe || !strings.Contains(err.Error(), `[server].allowed_origins entry "null"`) {
		t.Fatalf("got %v", err)
	}
}

func TestBootReportsABindFailure(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	path := servertest.ConfigDir(t, fmt.Sprintf("api_key = \"k\"\nbind = %q\nwatch = false", held.Addr()), nil, basePrompts)
	got := report(Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP}))
	// Exactly the mcp-server §1.2 shape: the step, the bind, the OS's reason.
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 3 || lines[0] != "error: serve the transport" || lines[1] != "  caused by: bind "+held.Addr().String() ||
		!strings.HasPrefix(lines[2], "  caused by: ") || strings.Contains(lines[2], "listen") || strings.Contains(lines[2], held.Addr().String()) {
		t.Fatalf("report:\n%s", got)
	}
}

func TestFetchModelsClassifiesFailures(t *testing.T) {
	g := gatewaytest.New(t)
	client := func(timeout time.Duration) *gateway.Client {
		c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), ModelsTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.CloseIdleConnections)
		return c
	}
	log := discard()
	fetch := func(timeout time.Duration) ([]gateway.Model, error) {
		set, err := envPlan{}.fetchModels(context.Background(), client(timeout), server.NewMetrics(), log)
		if err != nil {
			return nil, err
		}
		return set.Snapshot().Models, nil
	}

	models, err := fetch(0)
	if err != nil || len(models) != 1 {
		t.Fatalf("one served model: %v %v", models, err)
	}

	g.SetModelsReply(gatewaytest.Status(503, `{"error":"warming up"}`))
	if models, err = fetch(0); err != nil || len(models) != 0 {
		t.Fatalf("503 is transient: %v %v", models, err)
	}

	g.SetModelsReply(gatewaytest.Status(401, `{"error":"bad key"}`))
	_, err = fetch(0)
	var ge *gateway.Error
	if !errors.As(err, &ge) || ge.Status != 401 {
		t.Fatalf("401 is fatal with the gateway error as cause: %v", err)
	}

	g.SetModelsReply(gatewaytest.Malformed(`{"data": 7}`))
	if _, err = fetch(0); err == nil {
		t.Fatal("a malformed catalog is fatal")
	}

	// A model server with nothing pulled yet is an empty catalog, not a
	// reason to refuse to start.
	g.SetModelsReply(gatewaytest.JSON(map[string]any{"object": "list", "data": []any{}}))
	if models, err = fetch(0); err != nil || len(models) != 0 {
		t.Fatalf("an empty list: %v %v", models, err)
	}

	// A gateway that accepts and never answers cannot hang boot: the
	// timeout is transient.
	g.SetModelsReply(gatewaytest.Hang())
	if models, err = fetch(50 * time.Millisecond); err != nil || len(models) != 0 {
		t.Fatalf("a silent gateway: %v %v", models, err)
	}
}

// bootHTTP boots serve over HTTP from path (with edits applied to its
// options) and returns the address and a stop function that waits for
// Boot to return.
func bootHTTP(t *testing.T, path string, log slog.Handler, edits ...func(*BootOptions)) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan net.Addr, 1)
	done := make(chan error, 1)
	o := BootOptions{ConfigPath: path, Transport: HTTP, Logger: slog.New(log), Version: "t",
		Listening: func(a net.Addr) { addr <- a }, DrainTimeout: time.Second}
	for _, e := range edits {
		e(&o)
	}
	go func() {
		done <- Boot(ctx, o)
	}()
	select {
	case a := <-addr:
		stopped := false
		stop := func() error {
			if stopped {
				return nil
			}
			stopped = true
			cancel()
			return <-done
		}
		t.Cleanup(func() { stop() })
		return "http://" + a.String(), stop
	case err := <-done:
		cancel()
		t.Fatalf("boot failed:\n%s", report(err))
	}
	return "", nil
}

func TestBootServesHTTPAndPicksUpNewPrompts(t *testing.T) {
	g := gatewaytest.New(t)
	path := servertest.ConfigDir(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"\nwatch_debounce = \"50ms\"", g, basePrompts)
	log := newSignalLog()
	url, stop := bootHTTP(t, path, log)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "boot", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: servertest.Bearer{Token: "k", Base: tr}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || caps.Tools.ListChanged {
		t.Fatalf("capabilities %+v", caps.Tools)
	}

	reloaded := log.on("reloaded ")
	servertest.WriteTree(t, filepath.Join(filepath.Dir(path), "prompts"), map[string]string{"late.md": luaPrompt("late", "Arrive after boot.", "return 'late value'")})
	select {
	case <-reloaded:
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload within 10s; log:\n%s", log.text())
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "late"}})
	if err != nil || servertest.TextOf(t, res) != "late value" {
		t.Fatalf("the new prompt: %v %+v", err, res)
	}
	cs.Close()
	if err := stop(); err != nil {
		t.Fatalf("Boot returned %v after the shutdown signal", err)
	}
	for _, want := range []string{"serving on http url=http://127.0.0.1:", "watching ", "shutdown signal received; draining"} {
		if !strings.Contains(log.text(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.text())
		}
	}
}

func TestBootServesStdioWithoutTouchingTheBind(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// No api_key, a bind already taken, allowed_hosts that HTTP would
	// refuse: stdio uses none of them.
	path := servertest.ConfigDir(t, fmt.Sprintf("bind = %q\nwatch = false", held.Addr()), nil, basePrompts)
	log := newSignalLog()
	cs, done := bootStdio(t, path, log)
	if name := cs.InitializeResult().ServerInfo.Name; name != server.ServerName {
		t.Fatalf("serverInfo.name %q", name)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "over stdio"}})
	if err != nil || servertest.TextOf(t, res) != "over stdio" {
		t.Fatalf("run_prompt: %v %+v", err, res)
	}
	cs.Close() // closes stdin: the peer hung up
	if err := <-done; err != nil {
		t.Fatalf("Boot: %v", err)
	}
	if !strings.Contains(log.text(), "are not used on this transport") || !strings.Contains(log.text(), "[server].watch is false") {
		t.Fatalf("log:\n%s", log.text())
	}
}

// bootStdio boots the configuration at path over in-process stdio pipes
// and connects a client; done receives what Boot returns once the client
// hangs up.
func bootStdio(t *testing.T, path string, log *signalLog) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Boot(context.Background(), BootOptions{ConfigPath: path, Transport: Stdio, Logger: slog.New(log), Stdin: inR, Stdout: outW, Version: "t"})
		outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v; log:\n%s", err, log.text())
	}
	return cs, done
}

func TestTheConfigEnvironmentBuildsTheLiveTools(t *testing.T) {
	g := gatewaytest.New(t)
	path := servertest.ConfigDir(t, "", g, basePrompts)
	os.WriteFile(path, append(mustRead(t, path), []byte("\n[tools]\nweb_fetch = true\nweb_search = true\n")...), 0o644)
	cfg, err := config.Loader{}.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	env, err := plan.build(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	var ids []string
	for _, tool := range env.tools {
		ids = append(ids, tool.Descriptor().ID.String())
	}
	if strings.Join(ids, ",") != "promptforge/web_fetch,promptforge/web_search" {
		t.Fatalf("live tools %v", ids)
	}
	if len(env.models.Snapshot().Models) != 1 || len(env.fileRoots) != 1 {
		t.Fatalf("models %v, roots %v", env.models.Snapshot().Models, env.fileRoots)
	}

	// The execution binding reaches the real web_fetch by its description.
	fetcher, err := prompt.Parse([]byte(promptFile("fetcher", "Bind a tool.", "",
		"# Bind\n\n```lua\ntools.need(\"fetch\", \"Fetch a web page and return its main content as markdown.\")\n```\n\n## Run\n\n```lua\nreturn \"bound\"\n```\n")))
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.Run(context.Background(), fetcher, "", nil, engine.Options{Client: env.client, ModelSet: env.models, Tools: env.tools})
	if err != nil || res.Value != "bound" {
		t.Fatalf("fetcher: %q, %v", res.Value, err)
	}
}

// Without prompts.toml the run command plans as the reference CLI does:
// web_fetch always, and the gateway, its models and web_search only when
// both variables are set; then any model catalog failure is fatal.
func TestTheRunCommandEnvironmentComesFromTheVariables(t *testing.T) {
	none, err := planEnv(func(string) (string, bool) { return "", false })
	if err != nil || none.gateway != nil || !none.webFetch || none.webSearch {
		t.Fatalf("no variables: %+v, %v", none, err)
	}
	if _, err := planEnv(func(k string) (string, bool) {
		if k == gateway.EnvAPIKey {
			return "k", true
		}
		return "", false
	}); err == nil || !strings.Contains(err.Error(), gateway.EnvURL+" is not set") {
		t.Fatalf("only the key: %v", err)
	}
	g := gatewaytest.New(t)
	vars := map[string]string{gateway.EnvURL: g.URL(), gateway.EnvAPIKey: g.APIKey()}
	plan, err := planEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil || plan.gateway == nil || !plan.webSearch || !plan.referenceCLI {
		t.Fatalf("both variables: %+v, %v", plan, err)
	}
	env, err := plan.build(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Close()
	if len(env.models.Snapshot().Models) != 1 || len(env.tools) != 2 {
		t.Fatalf("models %v, tools %v", env.models.Snapshot().Models, env.tools)
	}
	g.SetModelsReply(gatewaytest.Status(503, `{"error":"warming up"}`))
	if _, err := plan.build(context.Background(), nil, nil); err == nil || !strings.Contains(err.Error(), "fetch the gateway's model catalog") {
		t.Fatalf("a 503 fails the run command: %v", err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
