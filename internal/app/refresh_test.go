package app

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// speakPrompt binds the default model and has one prose section.
var speakPrompt = promptFile("speak", "Say one thing through the model.", "",
	"# Speak\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n")

// configFor writes a configuration whose gateway is url with key, serving
// basePrompts and speak.md, and returns its path.
func configFor(t *testing.T, serverLines, url, key string) string {
	t.Helper()
	prompts := map[string]string{"speak.md": speakPrompt}
	for k, v := range basePrompts {
		prompts[k] = v
	}
	path := servertest.ConfigDir(t, serverLines, nil, prompts)
	data := mustRead(t, path)
	// ConfigDir points a config without a gateway at port 1 with gw-key.
	data = []byte(strings.Replace(strings.Replace(string(data), "http://127.0.0.1:1/v1", url, 1), `"gw-key"`, `"`+key+`"`, 1))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// connect opens an MCP client session on a server booted by bootHTTP.
func connect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "refresh", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: &http.Client{Transport: servertest.Bearer{Token: "k", Base: tr}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func runPrompt(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": name}})
	if err != nil {
		t.Fatalf("run_prompt %s: %v", name, err)
	}
	return servertest.TextOf(t, res), res.IsError
}

// The acceptance: the server starts with the model server down,
// a prose run says the model server is not reachable, then the model
// server starts and a prose run succeeds, without a restart.
func TestAModelServerThatStartsAfterUsIsUsedWithoutARestart(t *testing.T) {
	// A loopback port where nothing listens until the gateway starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gwAddr := ln.Addr().String()
	ln.Close()
	gwURL := "http://" + gwAddr + "/v1"

	path := configFor(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"\nwatch = false", gwURL, "late-key")
	log := newSignalLog()
	// Every binding miss may fetch again: the test never waits for the
	// backoff's clock (modelset's own tests drive that with synctest).
	url, _ := bootHTTP(t, path, log, func(o *BootOptions) {
		o.modelRetry = modelset.Options{Backoff: time.Nanosecond, MaxBackoff: time.Nanosecond}
	})
	cs := connect(t, url)

	text, isErr := runPrompt(context.Background(), t, cs, "speak")
	want := "the model server at " + gwURL + " is not reachable: "
	if !isErr || !strings.Contains(text, want) || !strings.Contains(text, "; start it, or check [gateway].url") || strings.Contains(text, "no model matches") {
		t.Fatalf("a run while the model server is down: %q (error %v), want it to contain %q", text, isErr, want)
	}
	// Lua-only prompts run all along.
	if text, isErr := runPrompt(context.Background(), t, cs, "echo"); isErr {
		t.Fatalf("a Lua-only prompt: %q", text)
	}

	g := gatewaytest.NewAt(t, gwAddr, "late-key")
	g.Enqueue(gatewaytest.Text("hello from the late model server"))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if text, isErr := runPrompt(ctx, t, cs, "speak"); isErr || !strings.Contains(text, "hello from the late model server") {
		t.Fatalf("a run once the model server is up: %q (error %v)", text, isErr)
	}
}

// A saved prompt reloads the catalog, and the reload fetches the model
// list again.
func TestAReloadFetchesTheModelListAgain(t *testing.T) {
	g := gatewaytest.New(t)
	path := configFor(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"\nwatch_debounce = \"50ms\"", g.URL(), g.APIKey())
	log := newSignalLog()
	bootHTTP(t, path, log)
	if n := g.ModelsCalls(); n != 1 {
		t.Fatalf("boot fetched the model list %d times, want 1", n)
	}
	fetched := log.on("the model server lists models for binding")
	servertest.WriteTree(t, filepath.Join(filepath.Dir(path), "prompts"), map[string]string{"late.md": luaPrompt("late", "Arrive after boot.", "return 'late'")})
	select {
	case <-fetched:
	case <-time.After(10 * time.Second):
		t.Fatalf("no model-list fetch after the reload within 10s; log:\n%s", log.text())
	}
	if n := g.ModelsCalls(); n != 2 {
		t.Fatalf("the model list was fetched %d times, want 2 (boot and the reload)", n)
	}
}

// A model server with nothing pulled lists no models: the server starts
// with one warning saying what to pull, Lua-only prompts run, and a model
// prompt says the list is empty.
func TestAnEmptyModelListIsAWarningNotABootFailure(t *testing.T) {
	g := gatewaytest.New(t)
	g.SetModelsReply(gatewaytest.JSON(map[string]any{"object": "list", "data": []any{}}))
	path := configFor(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"\nwatch = false", g.URL(), g.APIKey())
	log := newSignalLog()
	url, _ := bootHTTP(t, path, log)
	cs := connect(t, url)
	if text, isErr := runPrompt(context.Background(), t, cs, "echo"); isErr {
		t.Fatalf("a Lua-only prompt: %q", text)
	}
	text, isErr := runPrompt(context.Background(), t, cs, "speak")
	if !isErr || !strings.Contains(text, "lists no models; pull one (for Ollama: ollama pull llama3.1) or check [gateway].url") {
		t.Fatalf("a model prompt: %q (error %v)", text, isErr)
	}
	if n := strings.Count(log.text(), "WARN the model server at "+g.URL()+" lists no models; pull one"); n != 1 {
		t.Fatalf("%d warnings about the empty list, want 1; log:\n%s", n, log.text())
	}
}

// A 404 (the URL lacks /v1) is a configuration error: boot refuses.
func TestAModelListAnswering404RefusesToBoot(t *testing.T) {
	g := gatewaytest.New(t)
	g.SetModelsReply(gatewaytest.Status(404, `{"error":"not found"}`))
	path := configFor(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"\nwatch = false", g.URL(), g.APIKey())
	err := Boot(context.Background(), BootOptions{ConfigPath: path, Transport: HTTP})
	var se *StepError
	if !errors.As(err, &se) || se.Step != StepPrepareTools || !strings.Contains(err.Error(), "404") {
		t.Fatalf("got %v", err)
	}
}
