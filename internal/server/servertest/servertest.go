// Package servertest holds the helpers that the tests of server, of its
// transport and of app share: all three drive the real server (with the
// real go-sdk client, or the built binary) from packages that cannot see
// each other's test files.
//
// It imports nothing of server, so server's own (internal) tests can use
// it without an import cycle.
package servertest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// TextOf is the single text block of a result; the test fails otherwise.
func TextOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// Bearer is a RoundTripper that adds "Authorization: Bearer <Token>" to
// every request it passes to Base.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}

// TestModel is the model gatewaytest serves by default.
var TestModel = gateway.Model{ID: "test-model", Description: "A general assistant model for tests",
	Context: 32768, Thinking: gateway.ThinkingNever, Dialect: gateway.DialectOpenAI}

// Gateway is a scripted gateway on loopback and a client for it; both are
// closed when the test ends.
func Gateway(t testing.TB) (*gatewaytest.Server, *gateway.Client) {
	t.Helper()
	g := gatewaytest.New(t)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return g, c
}

// WriteTree writes files (relative name → content) under dir. Each file
// appears whole: it is written in a directory of its own and renamed into
// place, so a prompt watcher never reads it empty or half written (with
// os.WriteFile, a loaded machine could put more than the debounce window
// between the create and the write, and a reload then served the prompt
// broken). A symbolic link at the name is written through, as before.
func WriteTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	staging := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tmp := filepath.Join(staging, "file")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p); err != nil {
			t.Fatal(err)
		}
	}
}

// ConfigDir writes a prompts.toml (with the given [server] lines, and the
// gateway g, or none) and a prompts directory holding files, in a fresh
// temporary directory, and returns the prompts.toml path. [paths].files is
// that directory.
func ConfigDir(t testing.TB, serverLines string, g *gatewaytest.Server, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(prompts, 0o755); err != nil {
		t.Fatal(err)
	}
	WriteTree(t, prompts, files)
	// Nothing listens on port 1: a transient failure, so boot goes on
	// with no models.
	url, key := "http://127.0.0.1:1/v1", "gw-key"
	if g != nil {
		url, key = g.URL(), g.APIKey()
	}
	toml := fmt.Sprintf("[server]\n%s\n\n[paths]\nprompts = %q\nfiles = [%q]\n\n[gateway]\nurl = %q\napi_key = %q\ntimeout = \"2s\"\n\n[catalog]\ninclude = [\"**/*.md\"]\n",
		serverLines, prompts, dir, url, key)
	path := filepath.Join(dir, "prompts.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// SearchingGateway is Gateway scripted for one prose block that searches:
// a turn calling the alias "search" with {"query":"go"} (usage 7 and 3),
// the search's reply, then a turn answering "found it" (usage 11 and 5);
// with the real web_search tool over its client.
func SearchingGateway(t testing.TB) (*gateway.Client, tools.Tool) {
	t.Helper()
	g, c := Gateway(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": "go"}}).WithUsage(7, 3),
		gatewaytest.Text("found it").WithUsage(11, 5))
	g.EnqueueSearch(gatewaytest.Search(gatewaytest.SearchHit{Title: "Go", URL: "https://go.dev/", Description: "The Go language."}))
	search, err := tools.NewWebSearch(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, search
}
