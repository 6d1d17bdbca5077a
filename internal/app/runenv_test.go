package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// The run command without prompts.toml has a gateway only when both
// variables are set (gateway-picker-webfetch §4.1, as the reference CLI):
// with only the URL or a blank key, a prompt that never calls a model
// runs, the model list is never fetched, and a prompt that needs a model
// fails saying what to set (issue 11 item 12). A key without a URL is an
// error, as in the reference: a gateway was meant.
func TestRunOnceWithAnIncompleteGatewayEnvironment(t *testing.T) {
	dir := t.TempDir()
	luaOnly := filepath.Join(dir, "lua.md")
	needsModel := filepath.Join(dir, "model.md")
	for path, body := range map[string]string{
		luaOnly:    "---\nname: lua\ndescription: counts\npromptforge: 1\n---\n# T\n\n## A\n\n```lua\nreturn 'ran ' .. args\n```\n",
		needsModel: "---\nname: m\ndescription: writes\npromptforge: 1\n---\n# T\n\n```lua\nmodels.default('w', 'a writer')\n```\n\n## A\n\nHello\n",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g := gatewaytest.New(t)
	for _, tc := range []struct {
		name string
		vars map[string]string
	}{
		{"only the URL", map[string]string{gateway.EnvURL: g.URL()}},
		{"an empty key", map[string]string{gateway.EnvURL: g.URL(), gateway.EnvAPIKey: ""}},
		{"a blank key", map[string]string{gateway.EnvURL: g.URL(), gateway.EnvAPIKey: "  \t"}},
		{"blank both", map[string]string{gateway.EnvURL: " ", gateway.EnvAPIKey: " "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tc.vars[k]; return v, ok }
			got, err := RunOnce(t.Context(), RunOptions{Target: luaOnly, Args: "x", LookupEnv: lookup})
			if err != nil || got != "ran x" {
				t.Fatalf("the Lua-only prompt: %q, %v", got, err)
			}
			_, err = RunOnce(t.Context(), RunOptions{Target: needsModel, LookupEnv: lookup})
			if err == nil || !strings.Contains(err.Error(), "no gateway configured: ") || !strings.Contains(err.Error(), gateway.EnvAPIKey) {
				t.Fatalf("the prompt that needs a model: %v", err)
			}
			if n := g.ModelsCalls(); n != 0 {
				t.Fatalf("the model list was fetched %d times", n)
			}
		})
	}
	onlyKey := func(k string) (string, bool) {
		return map[string]string{gateway.EnvAPIKey: g.APIKey()}[k], k == gateway.EnvAPIKey
	}
	if _, err := RunOnce(t.Context(), RunOptions{Target: luaOnly, LookupEnv: onlyKey}); err == nil ||
		!strings.Contains(err.Error(), gateway.EnvURL+" is not set") || !strings.Contains(err.Error(), gateway.EnvAPIKey) {
		t.Fatalf("only the key: %v", err)
	}
}
