package app

import (
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// promptFile renders a prompt file with the given frontmatter extras and
// body (everything after the frontmatter).
func promptFile(name, description, extra, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\npromptforge: 1\n" + extra + "---\n" + body
}

// luaPrompt is a prompt whose one section runs lua and returns its value.
func luaPrompt(name, description, lua string) string {
	return promptFile(name, description, "", "# "+strings.ToUpper(name[:1])+name[1:]+"\n\n## Run\n\n```lua\n"+lua+"\n```\n")
}

// basePrompts is the catalog the boot tests serve.
var basePrompts = map[string]string{
	"echo.md":  luaPrompt("echo", "Return the arguments unchanged.", "return args"),
	"greet.md": luaPrompt("greet", "Greet someone by name.", "return args"),
}

// writeTree writes files (relative name → content) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// textOf is the single text block of a result.
func textOf(t testing.TB, res *mcp.CallToolResult) string {
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

// authTransport adds a bearer token to every request.
type authTransport struct {
	token string
	base  http.RoundTripper
}

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return a.base.RoundTrip(r)
}
