package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// run binds a typed prompt's arguments from one JSON object, by the same
// rules as run_prompt; an untyped prompt keeps its raw args.
func TestRunBindsTypedArguments(t *testing.T) {
	dir := t.TempDir()
	servertest.WriteTree(t, dir, map[string]string{
		"brief.md": "---\nname: brief\ndescription: Brief.\npromptforge: 1\narguments:\n  - name: topic\n    required: true\n  - name: count\n    type: integer\n    default: 2\n---\n" +
			"# Brief\n\n```lua\nreturn params.topic .. ' x' .. params.count .. ' ' .. args\n```\n",
	})
	noEnv := func(string) (string, bool) { return "", false }
	run := func(args string) (string, error) {
		return RunOnce(context.Background(), RunOptions{Target: filepath.Join(dir, "brief.md"), Args: args, LookupEnv: noEnv})
	}
	if got, err := run(`{"topic":"go"}`); err != nil || got != `go x2 {"count":2,"topic":"go"}` {
		t.Fatalf("run: %q, %v", got, err)
	}
	for args, want := range map[string]string{
		"":                              `prompt "brief" needs argument "topic"`,
		"go":                            `prompt "brief" takes typed arguments (topic (string, required), count (integer)): pass them as one JSON object`,
		`{"topic":"go","count":"many"}`: `argument "count" of prompt "brief" must be an integer, got "many"`,
	} {
		if _, err := run(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("args %q: %v, want %q", args, err, want)
		}
	}
}
