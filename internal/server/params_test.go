package server

import (
	"strings"
	"testing"
)

// typedPrompt declares typed arguments and returns what Lua sees of them
// (params and args) so a test reads the binding back.
var typedPrompt = promptFile("brief", "Write a brief.",
	"arguments:\n"+
		"  - name: topic\n    description: What to write about.\n    required: true\n"+
		"  - name: count\n    type: integer\n    default: 3\n"+
		"  - name: ratio\n    type: number\n"+
		"  - name: loud\n    type: boolean\n    default: false\n",
	"# Brief\n\n## Run\n\n```lua\nreturn params.topic .. '|' .. params.count .. '|' .. tostring(params.ratio) .. '|' .. tostring(params.loud) .. '|' .. args\n```\n")

func typedPrompts() map[string]string {
	files := map[string]string{"brief.md": typedPrompt}
	for k, v := range basePrompts {
		files[k] = v
	}
	return files
}

func TestRunPromptBindsTypedArguments(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts()})
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"defaults applied", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": "go"}},
			`go|3|nil|false|{"count":3,"loud":false,"topic":"go"}`},
		{"every argument", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": "go", "count": 5, "ratio": 0.25, "loud": true}},
			`go|5|0.25|true|{"count":5,"loud":true,"ratio":0.25,"topic":"go"}`},
		{"args as a JSON object", map[string]any{"prompt": "brief", "args": `{"topic":"lua","count":1}`},
			`lua|1|nil|false|{"count":1,"loud":false,"topic":"lua"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h.ok(ToolRunPrompt, tt.args)
			if res.IsError || textOf(t, res) != tt.want {
				t.Fatalf("got %q (isError %v), want %q", textOf(t, res), res.IsError, tt.want)
			}
		})
	}
}

func TestRunPromptRefusesBadTypedArguments(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts()})
	for _, tt := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"missing", map[string]any{"prompt": "brief"},
			`prompt "brief" needs argument "topic" (string: What to write about.); its arguments are topic (string, required), count (integer), ratio (number), loud (boolean)`},
		{"unknown", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": "go", "colour": "red"}},
			`prompt "brief" has no argument "colour"; its arguments are topic (string, required)`},
		{"wrong type", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": "go", "count": "three"}},
			`argument "count" of prompt "brief" must be an integer, got "three"`},
		{"not whole", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": "go", "count": 2.5}},
			`argument "count" of prompt "brief" must be an integer, got 2.5`},
		{"null", map[string]any{"prompt": "brief", "arguments": map[string]any{"topic": nil}},
			`argument "topic" of prompt "brief" must be a string, got null`},
		{"both forms", map[string]any{"prompt": "brief", "args": `{"topic":"x"}`, "arguments": map[string]any{"topic": "go"}},
			`pass them in arguments, not also in args`},
		{"args not an object", map[string]any{"prompt": "brief", "args": "go"},
			`pass them in arguments as a JSON object`},
		{"arguments to an untyped prompt", map[string]any{"prompt": "echo", "arguments": map[string]any{"x": 1}},
			`prompt "echo" declares no typed arguments, so it takes no arguments object`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := h.ok(ToolRunPrompt, tt.args)
			if !res.IsError || !strings.Contains(textOf(t, res), tt.want) {
				t.Fatalf("got %q (isError %v), want it to contain %q", textOf(t, res), res.IsError, tt.want)
			}
			if res.StructuredContent != nil {
				t.Errorf("a refusal carries a run record: %v", res.StructuredContent)
			}
		})
	}
	// arguments that are not an object are the caller's malformed request.
	if we := h.protocolError(ToolRunPrompt, map[string]any{"prompt": "brief", "arguments": "topic=go"}); !strings.Contains(we.Message, "arguments must be a JSON object") {
		t.Fatalf("protocol error %v", we)
	}
}

// A prompt without arguments: is run exactly as before, args verbatim.
func TestRunPromptUntypedUnchanged(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts()})
	if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": `{"topic":"x"}`})); got != `{"topic":"x"}` {
		t.Fatalf("echo returned %q", got)
	}
}

func TestListPromptsShowsTypedArguments(t *testing.T) {
	h := newHarness(t, fixture{prompts: typedPrompts()})
	l := h.list("")
	var brief, echo string
	for _, p := range l.Prompts {
		switch string(p["name"]) {
		case `"brief"`:
			brief = string(p["arguments"])
		case `"echo"`:
			echo = string(p["arguments"])
		}
	}
	want := `[{"description":"What to write about.","name":"topic","required":true,"type":"string"},` +
		`{"default":3,"description":"","name":"count","required":false,"type":"integer"},` +
		`{"description":"","name":"ratio","required":false,"type":"number"},` +
		`{"default":false,"description":"","name":"loud","required":false,"type":"boolean"}]`
	if brief != want {
		t.Errorf("brief's arguments:\n%s\nwant\n%s", brief, want)
	}
	if echo != "" {
		t.Errorf("echo lists arguments %s; a prompt without them has no key", echo)
	}
}
