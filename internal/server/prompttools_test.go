package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

func TestPromptToolsArePublishedByTheSetting(t *testing.T) {
	h := newHarness(t, fixture{prompts: promptsWithBroken(), tools: []string{"brief", "e*", "broken"}})
	// The built-ins first, then the named prompts in name order; the
	// broken prompt is no tool, and greet is not named.
	want := []string{ToolListPrompts, ToolRunPrompt, ToolNeedPrompt, ToolCheckRun, "brief", "echo", "explode"}
	if got := toolNames(t, h.session); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want %v", got, want)
	}
	caps, _ := json.Marshal(h.session.InitializeResult().Capabilities.Tools)
	if string(caps) != `{"listChanged":true}` {
		t.Errorf("tools capability %s: the setting is used, so listChanged is advertised", caps)
	}
	byName := map[string]*mcp.Tool{}
	res, _ := h.session.ListTools(context.Background(), nil)
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	schema, _ := json.Marshal(byName["brief"].InputSchema)
	wantSchema := `{"additionalProperties":false,"properties":{"count":{"default":3,"type":"integer"},"loud":{"default":false,"type":"boolean"},"ratio":{"type":"number"},"topic":{"description":"What to write about.","type":"string"}},"required":["topic"],"type":"object"}`
	if string(schema) != wantSchema {
		t.Errorf("brief's input schema\n%s\nwant\n%s", schema, wantSchema)
	}
	schema, _ = json.Marshal(byName["echo"].InputSchema)
	if !strings.Contains(string(schema), `"properties":{"args":{"description":`) || strings.Contains(string(schema), "required") {
		t.Errorf("echo's input schema %s: one optional args string", schema)
	}
	out, _ := json.Marshal(byName["brief"].OutputSchema)
	var record, runPrompt map[string]any
	json.Unmarshal(out, &record)
	rp, _ := json.Marshal(byName[ToolRunPrompt].OutputSchema)
	json.Unmarshal(rp, &runPrompt)
	if !mapsEqual(record, runPrompt) {
		t.Errorf("brief's output schema is not the run record's: %s", out)
	}
}

func TestNoPromptToolsWithoutTheSetting(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts()})
	want := []string{ToolListPrompts, ToolRunPrompt, ToolNeedPrompt, ToolCheckRun}
	if got := toolNames(t, h.session); !slices.Equal(got, want) {
		t.Fatalf("tools %v, want the built-ins only", got)
	}
	if _, err := h.call("brief", map[string]any{"topic": "go"}); err == nil {
		t.Fatal("an unpublished prompt was callable as a tool")
	}
}

func TestPromptToolCallsSettleLikeRunPrompt(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts(), tools: []string{"brief", "echo", "explode"}})
	res := h.ok("brief", map[string]any{"topic": "go", "count": 2})
	s := structuredOf(t, res)
	if res.IsError || s["status"] != "completed" || s["prompt"] != "brief" || textOf(t, res) != `go|2|nil|false|{"count":2,"loud":false,"topic":"go"}` {
		t.Fatalf("brief: %v %q", s, textOf(t, res))
	}
	// The same record check_run reads.
	again := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": s["run_id"]}))
	if again["value"] != s["value"] {
		t.Fatalf("check_run %v", again)
	}
	if got := textOf(t, h.ok("echo", map[string]any{"args": "raw"})); got != "raw" {
		t.Fatalf("echo returned %q", got)
	}
	if got := textOf(t, h.ok("echo", nil)); got != "" {
		t.Fatalf("echo without args returned %q", got)
	}
	if failed := h.ok("explode", nil); !failed.IsError || structuredOf(t, failed)["status"] != "failed" {
		t.Fatalf("explode: %+v", failed)
	}
	// Bad arguments are refused as on run_prompt, naming the argument.
	for args, want := range map[string]string{
		`{}`:                            `prompt "brief" needs argument "topic"`,
		`{"topic":"go","count":"x"}`:    `argument "count" of prompt "brief" must be an integer, got "x"`,
		`{"topic":"go","colour":"red"}`: `prompt "brief" has no argument "colour"`,
	} {
		var m map[string]any
		json.Unmarshal([]byte(args), &m)
		res := h.ok("brief", m)
		if !res.IsError || !strings.Contains(textOf(t, res), want) {
			t.Errorf("%s: %q, want %q", args, textOf(t, res), want)
		}
	}
	if we := h.protocolError("echo", map[string]any{"text": "x"}); !strings.Contains(we.Message, `echo takes no argument "text"`) {
		t.Errorf("echo with a wrong key: %v", we)
	}
}

func TestPromptToolRunningReplyLikeRunPrompt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakToolHarness(t, g)
		res := h.ok("speak", nil)
		s := structuredOf(t, res)
		if res.IsError || s["status"] != "running" || !strings.Contains(textOf(t, res), "Collect it with check_run") {
			t.Fatalf("speak: %v %q", s, textOf(t, res))
		}
		g.Release()
		synctest.Wait()
		done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": s["run_id"]}))
		if done["status"] != "completed" || done["value"] != "eventually" {
			t.Fatalf("collected %v", done)
		}
	})
}

func TestPromptToolsFollowReloads(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts(), tools: []string{"echo"}})
	changed := make(chan struct{}, 16)
	cs := h.connect(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})

	// The setting changes: greet joins, echo leaves.
	if _, err := h.handle.Reload(context.Background(), reloadTools(h.dir, "greet")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "tools/list_changed after the setting changed")
	if got := toolNames(t, cs); !slices.Contains(got, "greet") || slices.Contains(got, "echo") {
		t.Fatalf("tools after the reload %v", got)
	}
	// The SDK no longer dispatches it: unknown tool.
	if we := h.protocolError("echo", map[string]any{"args": "x"}); !strings.Contains(we.Message, `unknown tool "echo"`) {
		t.Fatalf("echo after it left the setting: %v", we)
	}

	// A prompt's arguments change: its schema follows.
	servertest.WriteTree(t, h.dir, map[string]string{"greet.md": promptFile("greet", "Greet someone.", "arguments:\n  - name: who\n    required: true\n",
		"# Greet\n\n## Run\n\n```lua\nreturn 'hi ' .. params.who\n```\n")})
	if _, err := h.handle.Reload(context.Background(), reloadTools(h.dir, "greet")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, "tools/list_changed after greet's arguments changed")
	if got := textOf(t, h.ok("greet", map[string]any{"who": "Ada"})); got != "hi Ada" {
		t.Fatalf("greet returned %q", got)
	}
}

// speakToolHarness serves the speak prompt as its own tool, behind a 50ms
// reply deadline, with g as its gateway.
func speakToolHarness(t testing.TB, g *memGateway) *harness {
	return newHarness(t, fixture{
		prompts: map[string]string{"speak.md": speakPrompt("speak")},
		limits:  deadlineLimits(50 * time.Millisecond), tools: []string{"speak"},
		opts: func(o *Options) {
			o.Client = g.client
			o.Models = modelset.Static([]gateway.Model{testModel})
		},
	})
}

// Backend promises the HTTP transport that no tool binds a parameter to an
// Mcp-Param-* header (transport.Backend.NoParamHeaders): no input schema,
// built-in or prompt tool, typed or raw, has x-mcp-header on a property,
// read as the SDK reads it (each property of "properties", nested ones
// included).
func TestNoToolBindsAParamHeader(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts(), tools: []string{"*"}})
	if !h.srv.Backend().NoParamHeaders {
		t.Fatal("Backend does not promise NoParamHeaders")
	}
	var bound func(props map[string]json.RawMessage) bool
	bound = func(props map[string]json.RawMessage) bool {
		for _, raw := range props {
			var p struct {
				Header     json.RawMessage            `json:"x-mcp-header"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			json.Unmarshal(raw, &p)
			if p.Header != nil || bound(p.Properties) {
				return true
			}
		}
		return false
	}
	tools := h.srv.Tools()
	if len(tools) <= 4 {
		t.Fatalf("only %d tools: the prompt tools are missing", len(tools))
	}
	for _, tool := range tools {
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil || bound(schema.Properties) {
			t.Errorf("tool %s: input schema %s binds a header (or is unreadable: %v)", tool.Name, raw, err)
		}
	}
}
