package server

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/promptforge-go/promptforge/internal/catalog"
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

// TestWatchedReloadsKeepMCPPromptsInStep saves files under the real
// watcher, whose reloads (after the first) patch the catalog, so follow
// registers only what each one changed; prompts/list must still show
// every healthy prompt with its current description and nothing else.
func TestWatchedReloadsKeepMCPPromptsInStep(t *testing.T) {
	h := newHarness(t, fixture{prompts: numberedPrompts(20, 2)})
	config := filepath.Join(t.TempDir(), "prompts.toml")
	if err := os.WriteFile(config, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	published := make(chan bool, 16) // whether each reload patched the catalog before it
	prev := h.handle.Current().Catalog()
	h.handle.OnPublish(func() {
		cur := h.handle.Current().Catalog()
		_, _, patched := cur.Changes(prev)
		prev = cur
		published <- patched
	})
	w, err := catalog.Watch(context.Background(), h.handle, catalog.WatchOptions{ConfigPath: config, Debounce: 20 * time.Millisecond, Load: reloadAll(h.dir)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())

	inStep := func(step string) {
		t.Helper()
		want := map[string]string{}
		for _, e := range h.handle.Current().Catalog().All() {
			if !e.Broken() {
				want[e.Name()] = e.Description()
			}
		}
		res, err := h.session.ListPrompts(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range res.Prompts {
			got[p.Name] = p.Description
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: prompts/list %v, want %v", step, got, want)
		}
	}
	save := func(step string, wantPatched bool, files map[string]string, remove ...string) {
		t.Helper()
		for _, name := range remove {
			if err := os.Remove(filepath.Join(h.dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		servertest.WriteTree(t, h.dir, files)
		// The catalog is settled once a reload publishes what was saved.
		deadline := time.After(10 * time.Second)
		for {
			var patched bool
			select {
			case patched = <-published:
			case <-deadline:
				t.Fatalf("%s: no reload", step)
			}
			if settled(h.handle.Current().Catalog(), files, remove) {
				if patched != wantPatched {
					t.Errorf("%s: patched = %v, want %v", step, patched, wantPatched)
				}
				break
			}
		}
		inStep(step)
	}
	save("first reload, in full", false, map[string]string{"p00.md": luaPrompt("p00", "Edited once.", "return 1")})
	save("description edited", true, map[string]string{"p01.md": luaPrompt("p01", "Edited.", "return 1")})
	save("renamed inside its file", true, map[string]string{"p02.md": luaPrompt("renamed", "Renamed.", "return 1")})
	save("broken", true, map[string]string{"p03.md": "---\nname: p03\npromptforge: 1\n---\nno heading\n"})
	save("added", true, map[string]string{"new.md": luaPrompt("newcomer", "New.", "return 1")})
	save("deleted", true, nil, "p04.md")
}

// settled reports whether c reflects the saved files (by their
// descriptions or breakage) and the removed ones.
func settled(c *catalog.Catalog, files map[string]string, removed []string) bool {
	byPath := map[string]catalog.Entry{}
	for _, e := range c.All() {
		byPath[filepath.Base(e.Path())] = e
	}
	for name, text := range files {
		e, ok := byPath[name]
		if !ok || !e.Broken() && !strings.Contains(text, "description: "+e.Description()+"\n") {
			return false
		}
	}
	for _, name := range removed {
		if _, ok := byPath[name]; ok {
			return false
		}
	}
	return true
}
