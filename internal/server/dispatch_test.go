package server

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/catalog"
	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/tools"
)

var runIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func TestRunPromptEchoReturnsItsValue(t *testing.T) {
	h := newHarness(t, fixture{})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "hello"})
	if res.IsError {
		t.Fatalf("isError: %+v", res)
	}
	if got := textOf(t, res); got != "hello" {
		t.Fatalf("text = %q, want hello", got)
	}
	s := structuredOf(t, res)
	if s["value"] != "hello" || s["status"] != "completed" || s["prompt"] != "echo" {
		t.Fatalf("structured = %v", s)
	}
	if _, ok := s["version"]; ok {
		t.Fatalf("structured carries a version key: %v", s)
	}
	if id, _ := s["run_id"].(string); !runIDPattern.MatchString(id) {
		t.Fatalf("run_id %q is not 32 hex digits", s["run_id"])
	}
	tokens, _ := s["tokens"].(map[string]any)
	if len(s) != 8 || s["error"] != nil || s["turns"] != float64(0) || !mapsEqual(tokens, map[string]any{"completion": 0, "prompt": 0}) {
		t.Fatalf("wire object = %v, want the eight keys with error null, 0 turns and 0 tokens", s)
	}
}

func TestRunPromptWithAndWithoutProgressTokenAgree(t *testing.T) {
	h := newHarness(t, fixture{})
	plain := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "same"}))
	params := &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "same"}}
	params.SetProgressToken("tok")
	res, err := h.session.CallTool(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	tokened := structuredOf(t, res)
	for _, s := range []map[string]any{plain, tokened} {
		delete(s, "run_id")
		delete(s, "elapsed_ms")
	}
	if !mapsEqual(plain, tokened) {
		t.Fatalf("with token %v, without %v", tokened, plain)
	}
	if tokened["turns"] != float64(0) {
		t.Fatalf("turns = %v, want 0", tokened["turns"])
	}
}

func mapsEqual(a, b map[string]any) bool {
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) == string(bb)
}

// We run the prompt the catalog parsed (a generation is immutable), so
// there is no per-run parse and no parse observation; every execution
// observation carries the run id the caller gets back.
func TestObservationsCarryTheRunID(t *testing.T) {
	var mu sync.Mutex
	var seen []engine.Event
	h := newHarness(t, fixture{opts: func(o *Options) {
		o.Observer = engine.ObserverFunc(func(ev engine.Event) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, ev)
		})
	}})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"})
	id := structuredOf(t, res)["run_id"].(string)
	mu.Lock()
	defer mu.Unlock()
	var details []engine.Detail
	for _, ev := range seen {
		if ev.Execution != id {
			t.Errorf("observation %v carries execution %q, want %q", ev.Detail, ev.Execution, id)
		}
		details = append(details, ev.Detail)
	}
	for _, want := range []engine.Detail{engine.RunStarted, engine.SectionStarted, engine.RunSucceeded} {
		if !slices.Contains(details, want) {
			t.Errorf("observations %v lack %v", details, want)
		}
	}
}

// fetchTool is a live tool described like web_fetch. It stands in for
// internal/tools' web_fetch, which is another package's work.
type fetchTool struct{}

func (fetchTool) Descriptor() tools.Descriptor {
	return tools.Descriptor{
		ID:          tools.ID{Server: "promptforge", Name: "web_fetch"},
		WireName:    "web_fetch",
		Description: "Fetch a web page and return its main content as markdown.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`),
	}
}

func (fetchTool) Call(context.Context, json.RawMessage) (tools.Result, error) {
	return tools.Result{Text: "fetched"}, nil
}

func TestCapabilityBindingUsesTheLiveTools(t *testing.T) {
	need := func(name, capability string) string {
		return promptFile(name, "Bind a tool.", "", "# Bind\n\n```lua\ntools.need(\"fetch\", \""+capability+"\")\n```\n\n## Run\n\n```lua\nreturn \"bound\"\n```\n")
	}
	h := newHarness(t, fixture{
		prompts: map[string]string{
			"fetcher.md": need("fetcher", "Fetch a web page and return its main content as markdown."),
			"dancer.md":  need("dancer", "Teach a penguin to tango in the rain."),
		},
		opts: func(o *Options) { o.Tools = []tools.Tool{fetchTool{}} },
	})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "fetcher"})
	if res.IsError || textOf(t, res) != "bound" {
		t.Fatalf("fetcher: %+v %q", res, textOf(t, res))
	}
	res = h.ok(ToolRunPrompt, map[string]any{"prompt": "dancer"})
	if !res.IsError || !strings.Contains(textOf(t, res), "no tool matches capability") {
		t.Fatalf("dancer: isError %v, text %q", res.IsError, textOf(t, res))
	}
}

func TestRunPromptArgumentsAndNames(t *testing.T) {
	prompts := map[string]string{"research.md": luaPrompt("research_person", "Research a person.", "return 'researched'")}
	for k, v := range basePrompts {
		prompts[k] = v
	}
	h := newHarness(t, fixture{prompts: prompts})
	for _, tc := range []struct {
		args map[string]any
		want string
		name string
	}{
		{map[string]any{"prompt": "echo"}, "", "echo"},
		{map[string]any{"prompt": "greet", "args": "Ada"}, "Ada", "greet"},
		{map[string]any{"prompt": "GREET", "args": "Ada"}, "Ada", "greet"},
		{map[string]any{"prompt": "Greet", "args": "Ada"}, "Ada", "greet"},
		{map[string]any{"prompt": "Research-Person"}, "researched", "research_person"},
	} {
		res := h.ok(ToolRunPrompt, tc.args)
		s := structuredOf(t, res)
		if res.IsError || s["value"] != tc.want || s["prompt"] != tc.name {
			t.Errorf("%v: isError %v, structured %v; want value %q from %s", tc.args, res.IsError, s, tc.want, tc.name)
		}
	}
}

func TestUnknownPromptListsTheCatalogClosestFirst(t *testing.T) {
	h := newHarness(t, fixture{})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "greeet"})
	if !res.IsError || res.StructuredContent != nil {
		t.Fatalf("want an isError text result, got %+v", res)
	}
	text := textOf(t, res)
	if !strings.Contains(text, `"greeet"`) {
		t.Fatalf("text does not quote the request: %q", text)
	}
	_, list, ok := strings.Cut(text, "closest first: ")
	if !ok {
		t.Fatalf("text has no closest-first list: %q", text)
	}
	names := strings.Split(strings.TrimSuffix(list, "."), ", ")
	if names[0] != "greet" {
		t.Fatalf("closest is %q, want greet: %q", names[0], text)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"echo", "explode", "greet", "summarize"}) {
		t.Fatalf("listed %v", names)
	}
}

func TestArgumentShapeErrorsAreInvalidParams(t *testing.T) {
	h := newHarness(t, fixture{})
	for _, tc := range []struct {
		tool string
		args any
		msg  string
	}{
		{ToolRunPrompt, map[string]any{}, "prompt is required"},
		{ToolRunPrompt, map[string]any{"prompt": 7}, "prompt must be a string"},
		{ToolRunPrompt, map[string]any{"prompt": nil}, "prompt must be a string"},
		{ToolRunPrompt, map[string]any{"prompt": "echo", "args": []string{"a"}}, "args must be a string"},
		{ToolRunPrompt, map[string]any{"prompt": "echo", "args": nil}, "args must be a string"},
		{ToolRunPrompt, map[string]any{"prompt": "echo", "input_text": "a", "input_file": "b"}, "input_file and input_text are mutually exclusive; specify one, not both"},
		{ToolRunPrompt, map[string]any{"prompt": "echo", "verbose": "yes"}, `run_prompt takes no argument "verbose"`},
		{ToolRunPrompt, json.RawMessage(`[1,2]`), "must be a JSON object"},
		{ToolCheckRun, map[string]any{}, "run_id is required"},
		{ToolCheckRun, map[string]any{"run_id": 1}, "run_id must be a string"},
		{ToolNeedPrompt, map[string]any{}, "capability is required"},
		{ToolNeedPrompt, map[string]any{"capability": false}, "capability must be a string"},
		{ToolListPrompts, map[string]any{"cursor": "abc"}, `cursor "abc" is not a valid pagination cursor`},
		{ToolListPrompts, map[string]any{"cursor": 100}, "cursor must be a string"},
	} {
		we := h.protocolError(tc.tool, tc.args)
		if we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, tc.msg) {
			t.Errorf("%s %v: code %d message %q; want -32602 containing %q", tc.tool, tc.args, we.Code, we.Message, tc.msg)
		}
	}
}

func TestLuaRuntimeFailureIsAFailedRun(t *testing.T) {
	h := newHarness(t, fixture{})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "explode"})
	s := structuredOf(t, res)
	if !res.IsError || s["status"] != "failed" || s["value"] != nil || textOf(t, res) == "" {
		t.Fatalf("isError %v, structured %v, text %q", res.IsError, s, textOf(t, res))
	}
	if textOf(t, res) != s["error"] {
		t.Fatalf("text %q differs from error %q", textOf(t, res), s["error"])
	}
}

// design §3.10: a name we do not publish gets -32602, as the go-sdk answers
// (the MCP specification's choice), not the reference's -32601.
func TestUnpublishedToolNamesAreRefused(t *testing.T) {
	h := newHarness(t, fixture{})
	for _, name := range []string{"echo", "greet", "summarize", "explode", "nonesuch"} {
		we := h.protocolError(name, map[string]any{})
		if we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, name) {
			t.Errorf("%s: code %d message %q", name, we.Code, we.Message)
		}
	}
	off := newHarness(t, fixture{catalog: catalog.Options{NoRetrieval: true}})
	for _, args := range []any{map[string]any{}, map[string]any{"capability": "Summarize a text."}} {
		we := off.protocolError(ToolNeedPrompt, args)
		if we.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("need_prompt without retrieval: code %d", we.Code)
		}
	}
}
