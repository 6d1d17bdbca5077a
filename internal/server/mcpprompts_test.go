package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

// brokenPrompt does not parse: the catalog serves it as a broken entry.
const brokenPrompt = "---\nname: broken\ndescription: Half written.\npromptforge: 1\n---\n# Broken\n\n## Run\n\n```lua\nreturn (\n```\n"

func promptsWithBroken() map[string]string {
	files := typedPrompts()
	files["broken.md"] = brokenPrompt
	return files
}

func TestPromptsListShowsEveryHealthyPrompt(t *testing.T) {
	h := newHarness(t, fixture{prompts: promptsWithBroken()})
	res, err := h.session.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Prompt{}
	var names []string
	for _, p := range res.Prompts {
		byName[p.Name] = p
		names = append(names, p.Name)
	}
	if want := []string{"brief", "echo", "explode", "greet", "summarize"}; !slices.Equal(names, want) {
		t.Fatalf("prompts %v, want %v (the broken prompt is not listed)", names, want)
	}
	echo := byName["echo"]
	if echo.Description != "Return the arguments unchanged." || len(echo.Arguments) != 1 || echo.Arguments[0].Name != "args" || echo.Arguments[0].Required {
		t.Errorf("echo: %+v %+v", echo, echo.Arguments)
	}
	var args []string
	for _, a := range byName["brief"].Arguments {
		args = append(args, a.Name+"|"+a.Description+"|"+map[bool]string{true: "required", false: "optional"}[a.Required])
	}
	want := []string{"topic|What to write about. (string)|required", "count|(integer, default 3)|optional", "ratio|(number)|optional", "loud|(boolean, default false)|optional"}
	if !slices.Equal(args, want) {
		t.Errorf("brief's arguments %q, want %q", args, want)
	}
}

func TestPromptsListPagesALargeCatalog(t *testing.T) {
	h := newHarness(t, fixture{prompts: numberedPrompts(1200, 4)})
	n := 0
	for p, err := range h.session.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if p.Name == "" {
			t.Fatal("an empty prompt")
		}
		n++
	}
	if n != 1200 {
		t.Fatalf("paged through %d prompts, want 1200", n)
	}
}

func getPrompt(h *harness, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return h.session.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name, Arguments: args})
}

func messageText(t *testing.T, res *mcp.GetPromptResult) string {
	t.Helper()
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("messages %+v, want one user message", res.Messages)
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Messages[0].Content)
	}
	return tc.Text
}

func TestPromptsGetRunsThePrompt(t *testing.T) {
	observing, started := runIDs()
	h := newHarness(t, fixture{prompts: promptsWithBroken(), opts: observing})
	res, err := getPrompt(h, "echo", map[string]string{"args": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if got := messageText(t, res); got != "hello" || res.Description != "Return the arguments unchanged." {
		t.Fatalf("echo: %q %q", got, res.Description)
	}
	res, err = getPrompt(h, "brief", map[string]string{"topic": "go", "count": "7", "loud": "true", "ratio": "0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := messageText(t, res), `go|7|0.5|true|{"count":7,"loud":true,"ratio":0.5,"topic":"go"}`; got != want {
		t.Fatalf("brief: %q, want %q", got, want)
	}
	// An unfilled form field arrives as "": not given, so defaults apply.
	res, err = getPrompt(h, "brief", map[string]string{"topic": "go", "count": "", "ratio": ""})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := messageText(t, res), `go|3|nil|false|{"count":3,"loud":false,"topic":"go"}`; got != want {
		t.Fatalf("brief with empty fields: %q, want %q", got, want)
	}
	// The run is one record in the registry, like run_prompt's.
	ids := started()
	if len(ids) != 3 {
		t.Fatalf("%d runs started, want 3", len(ids))
	}
	if rec, ok := h.srv.Registry().Check(ids[0]); !ok || rec.Value != "hello" || rec.Prompt != "echo" {
		t.Fatalf("the registry's record of the first run: %+v %v", rec, ok)
	}
}

func TestPromptsGetErrors(t *testing.T) {
	h := newHarness(t, fixture{prompts: promptsWithBroken()})
	for _, tt := range []struct {
		name string
		args map[string]string
		code int64
		want string
	}{
		{"nosuch", nil, jsonrpc.CodeInvalidParams, `no prompt named "nosuch"`},
		{"brief", nil, jsonrpc.CodeInvalidParams, `prompt "brief" needs argument "topic"`},
		{"brief", map[string]string{"topic": ""}, jsonrpc.CodeInvalidParams, `prompt "brief" needs argument "topic"`},
		{"brief", map[string]string{"topic": "go", "count": "many"}, jsonrpc.CodeInvalidParams, `argument "count" of prompt "brief" must be an integer, got "many"`},
		{"brief", map[string]string{"topic": "go", "colour": "red"}, jsonrpc.CodeInvalidParams, `prompt "brief" has no argument "colour"`},
		{"echo", map[string]string{"text": "x"}, jsonrpc.CodeInvalidParams, `prompt "echo" has no argument "text"; its one argument is args`},
		{"broken", nil, jsonrpc.CodeInternalError, `prompt "broken" cannot run: `},
		{"explode", nil, jsonrpc.CodeInternalError, `prompt "explode" failed (run `},
	} {
		t.Run(tt.name+tt.want, func(t *testing.T) {
			res, err := getPrompt(h, tt.name, tt.args)
			if err == nil {
				t.Fatalf("got %+v, want an error", res)
			}
			we := wireError(t, err)
			if we.Code != tt.code || !strings.Contains(we.Message, tt.want) {
				t.Fatalf("error %d %q, want %d containing %q", we.Code, we.Message, tt.code, tt.want)
			}
		})
	}
}

func TestPromptsGetThatOutlivesTheDeadlineSaysHowToCollect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, deadlineLimits(50*time.Millisecond))
		res, err := getPrompt(h, "speak", nil)
		if err != nil {
			t.Fatal(err)
		}
		text := messageText(t, res)
		if !strings.Contains(text, "check_run") || !strings.Contains(text, "speak is still running as run ") {
			t.Fatalf("message %q", text)
		}
		id := strings.TrimSuffix(strings.Fields(strings.SplitAfter(text, "as run ")[1])[0], ".")
		g.Release()
		synctest.Wait()
		done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": id}))
		if done["status"] != "completed" || done["value"] != "eventually" {
			t.Fatalf("collected %v", done)
		}
	})
}

// waitFor waits for one signal, failing after a bound meant only to stop
// a broken test from hanging (the SDK debounces list_changed by 10ms of
// real time, outside any bubble).
func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}

func reloadTools(dir string, tools ...string) catalog.LoadFunc {
	return func(context.Context) (catalog.Settings, []string, error) {
		return catalog.Settings{Roots: []string{dir}, Include: []string{"**/*.md"}, Tools: tools}, nil, nil
	}
}

func TestPromptsListChangedAfterAReload(t *testing.T) {
	h := newHarness(t, fixture{})
	changed := make(chan struct{}, 16)
	cs := h.connect(&mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} }})
	servertest.WriteTree(t, h.dir, map[string]string{"newcomer.md": luaPrompt("newcomer", "Arrive late.", "return 'here'")})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "prompts/list_changed after a prompt was added")
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "newcomer" }) {
		t.Fatal("the new prompt is not listed")
	}
	// A prompt that breaks leaves the list.
	servertest.WriteTree(t, h.dir, map[string]string{"newcomer.md": strings.Replace(brokenPrompt, "broken", "newcomer", 1)})
	if _, err := h.handle.Reload(context.Background(), reloadAll(h.dir)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "prompts/list_changed after a prompt broke")
	res, err = cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(res.Prompts, func(p *mcp.Prompt) bool { return p.Name == "newcomer" }) {
		t.Fatal("a broken prompt is still listed")
	}
}

// prompts/get is a tracked call like tools/call: a shutdown waits for it.
func TestPromptsGetIsATrackedCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, defaultLimits())
		done := make(chan error, 1)
		go func() {
			_, err := getPrompt(h, "speak", nil)
			done <- err
		}()
		<-g.arrived
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := h.srv.Backend().Calls.Wait(ctx); err == nil || !strings.Contains(err.Error(), "wait for 1 call(s) in flight") {
			t.Fatalf("Wait while prompts/get runs: %v", err)
		}
		g.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := h.srv.Backend().Calls.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// In the 2026-07-28 era a prompts/get result says it is complete
// (resultType), as the SDK finishes results on its own dispatch path: a
// registered prompt is answered there, not by the middleware alone.
func TestPromptsGetInTheModernEraCarriesItsResultType(t *testing.T) {
	h := newHarness(t, fixture{})
	for _, era := range []struct {
		version string
		want    any
	}{{"", "complete"}, {"2025-11-25", nil}} {
		c := connectTasks(t, h, false, era.version)
		if _, err := c.cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "echo", Arguments: map[string]string{"args": "hi"}}); err != nil {
			t.Fatalf("%q: prompts/get: %v", era.version, err)
		}
		c.mu.Lock()
		var m map[string]any
		err := json.Unmarshal(c.last, &m)
		c.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		if m["resultType"] != era.want {
			t.Errorf("era %q: resultType %v, want %v (result %v)", era.version, m["resultType"], era.want, m)
		}
	}
}
