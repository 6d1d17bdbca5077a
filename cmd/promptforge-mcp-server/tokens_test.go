package main

import (
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// twoTurns speaks twice through the model; failing adds a Lua error after
// the turns.
func twoTurns(failing bool) string {
	body := "---\nname: twice\ndescription: Speak twice.\npromptforge: 1\n---\n# Twice\n\n" +
		"```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## One\n\nSay one.\n\n## Two\n\nSay two.\n"
	if failing {
		body += "\n## Fail\n\n```lua\nerror('after the turns')\n```\n"
	}
	return body
}

// TestRunSummaryShowsTokens: the run command's closing line on stderr says
// the turns and the tokens they spent, summed over the run, and says them
// for a failed run too.
func TestRunSummaryShowsTokens(t *testing.T) {
	for _, tt := range []struct {
		name    string
		failing bool
		code    int
		want    string
	}{
		{"completed", false, exitOK, `msg="run finished" status=completed turns=2 prompt_tokens=70 completion_tokens=11`},
		{"failed", true, exitFailure, `msg="run finished" status=failed turns=2 prompt_tokens=70 completion_tokens=11`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := gatewaytest.New(t)
			g.Enqueue(gatewaytest.Text("one").WithUsage(30, 5), gatewaytest.Text("two").WithUsage(40, 6))
			code, _, errOut := call(t, gatewayEnv(g), "run", writePrompt(t, twoTurns(tt.failing)))
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Fatalf("stderr lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
}
