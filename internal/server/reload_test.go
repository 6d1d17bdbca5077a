package server

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

func TestACallAfterAReloadRunsTheNewBody(t *testing.T) {
	h := newHarness(t, fixture{})
	servertest.WriteTree(t, h.dir, map[string]string{"echo.md": luaPrompt("echo", "Return the arguments.", "return 'new ' .. args")})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"})); got != "new x" {
		t.Fatalf("after the edit echo returned %q", got)
	}

	// A save that breaks it: the problem is reported, never the old value.
	servertest.WriteTree(t, h.dir, map[string]string{"echo.md": "---\nname: echo\ndescription: Half written.\npromptforge: 1\n---\n# Echo\n\n## Run\n\n```lua\nreturn (\n"})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"})
	if !res.IsError || strings.Contains(textOf(t, res), "new x") || structuredOf(t, res)["status"] != "failed" {
		t.Fatalf("broken echo: %+v %q", res, textOf(t, res))
	}
	// The other prompts keep serving.
	if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "greet", "args": "Ada"})); got != "Ada" {
		t.Fatalf("greet returned %q", got)
	}
}

func TestAPromptAddedMidSessionBecomesCallable(t *testing.T) {
	h := newHarness(t, fixture{})
	if res := h.ok(ToolRunPrompt, map[string]any{"prompt": "newcomer"}); !res.IsError {
		t.Fatalf("an unknown prompt ran: %+v", res)
	}
	servertest.WriteTree(t, h.dir, map[string]string{"newcomer.md": luaPrompt("newcomer", "Arrive late.", "return 'here'")})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(promptNames(h.list("")), ","), "newcomer") {
		t.Fatal("list_prompts does not show the new prompt")
	}
	if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "newcomer"})); got != "here" {
		t.Fatalf("newcomer returned %q", got)
	}
	tools, err := h.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "newcomer" {
			t.Fatal("a prompt became a tool")
		}
	}
}

// A prompt file saved half-written while it runs cannot reach that run: the
// run executes the generation it started in.
func TestAHalfWrittenSaveDuringARunDoesNotTouchIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, defaultLimits())
		type reply struct {
			res *mcp.CallToolResult
			err error
		}
		done := make(chan reply, 1)
		go func() {
			res, err := h.call(ToolRunPrompt, map[string]any{"prompt": "speak"})
			done <- reply{res, err}
		}()
		<-g.arrived
		servertest.WriteTree(t, h.dir, map[string]string{"speak.md": "---\nname: speak\ndescription: Say one thing.\npromptforge: 1\n---\n# Speak\n\n```lua\nmodels.def"})
		out, err := h.handle.Reload(context.Background(), reloadAll(h.dir))
		if err != nil || out.Broken != 1 {
			t.Fatalf("reload: %+v %v", out, err)
		}
		// Another run is unaffected too.
		if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "fine"})); got != "fine" {
			t.Fatalf("echo returned %q", got)
		}
		g.Release()
		r := <-done
		if r.err != nil || r.res.IsError || textOf(t, r.res) != "eventually" {
			t.Fatalf("the run in flight: %v %+v", r.err, r.res)
		}
		next := h.ok(ToolRunPrompt, map[string]any{"prompt": "speak"})
		if !next.IsError {
			t.Fatalf("the next call ran the old prompt: %q", textOf(t, next))
		}
	})
}
