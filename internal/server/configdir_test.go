package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// bootDir writes prompts.toml (with the given [server] lines and gateway)
// and a prompts directory holding files.
func bootDir(t *testing.T, serverLines string, g *gatewaytest.Server, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	prompts := filepath.Join(dir, "prompts")
	if err := os.MkdirAll(prompts, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTree(t, prompts, files)
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

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
