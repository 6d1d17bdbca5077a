package gateway_test

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// replay is what the client must make of one recorded profile
// (gatewaytest.WireShapes): the models list, a prose turn, a tool call
// and the turn after the tool result, each as a real server sent it.
type replay struct {
	// served are the ids /models lists; modelsErr, when set, is the
	// server's own reason the models error must quote instead.
	served    []string
	modelsErr string
	// chat is the served model the test describes in [models] and chats
	// with; context is the window the server publishes for it (0: none,
	// so the table gives one). configured, when set, is the id the user
	// wrote instead of chat, which must come back as unmatched with chat
	// as the closest.
	chat       string
	context    uint32
	configured string

	// reasoning is the prose turn's reasoning; proseErr, when set, is the
	// text the prose turn's error must contain, of proseKind.
	reasoning string
	proseErr  string
	proseKind gateway.Kind

	// args are the calls to convert the tool turn must yield (compared as
	// JSON), ids their ids when the profile's are notable; toolErr, when
	// set, is the upstream text the tool turn's error must contain.
	args    []string
	ids     []string
	toolErr string
}

const (
	proseText  = "- Go is a language.\n- It is compiled.\n- It has goroutines."
	convert10  = `{"value":10,"pair":"km_mi"}`
	qwen       = "Qwen/Qwen2.5-7B-Instruct"
	gguf       = "qwen2.5-7b-instruct-q4_k_m.gguf"
	toolResult = "6.2137"
)

var (
	ollamaServed = []string{"llama3.1:8b", "nomic-embed-text:latest"}
	openaiServed = []string{"gpt-4o-mini", "text-embedding-3-small", "dall-e-3"}
	litellm      = []string{"gpt-4o-mini", "claude-sonnet"}
)

// replays has one entry per file in gatewaytest/testdata/wire-shapes; a
// recording without an entry here fails the test, so every new fixture
// says what it must do.
func replays() map[string]replay {
	ollama := replay{served: ollamaServed, chat: "llama3.1:8b", args: []string{convert10}}
	openai := replay{served: openaiServed, chat: "gpt-4o-mini", args: []string{convert10}}
	llamacpp := replay{served: []string{gguf}, chat: gguf, context: 8192, args: []string{convert10}}
	vllm := replay{served: []string{qwen}, chat: qwen, context: 32768, args: []string{convert10}}
	with := func(r replay, edit func(*replay)) replay { edit(&r); return r }
	return map[string]replay{
		"litellm": {served: litellm, chat: "gpt-4o-mini", args: []string{convert10}},
		"litellm-401": {modelsErr: "Authentication Error, Invalid proxy server token passed. Received API Key = sk-...1234, Key Hash (Token) =e3b0c44298fc1c14.",
			chat: "gpt-4o-mini", args: []string{convert10}},
		"litellm-anthropic": {served: litellm, chat: "claude-sonnet", reasoning: "Three bullets.", args: []string{convert10}, ids: []string{"toolu_01A09q90qw90lq917835lq9"}},

		"llamacpp":           llamacpp,
		"llamacpp-reasoning": with(llamacpp, func(r *replay) { r.reasoning = "Three bullets about Go." }),
		// The block at the start of content is reasoning, not the value.
		"llamacpp-think-inline": with(llamacpp, func(r *replay) { r.reasoning = "Three bullets about Go." }),
		// Out of budget while thinking: no value, and a message saying why.
		"llamacpp-think-length": with(llamacpp, func(r *replay) {
			r.proseErr, r.proseKind = `finish_reason "length"`, gateway.KindEmptyReply
		}),
		"llamacpp-ctx-exceeded": with(llamacpp, func(r *replay) {
			r.proseErr, r.proseKind = "request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it", gateway.KindStatus
		}),

		"ollama":          ollama,
		"ollama-thinking": with(ollama, func(r *replay) { r.reasoning = "The user wants three bullets. Let me write them." }),
		"ollama-404": with(ollama, func(r *replay) {
			r.proseErr, r.proseKind = `model "llama3.1:8b" not found, try pulling it first`, gateway.KindStatus
		}),
		// A fresh Ollama: "data": null is an empty catalog.
		"ollama-nomodels": {served: []string{}, configured: "llama3.1:8b", args: []string{convert10}},
		// The user wrote the tag they pulled; Ollama lists :latest.
		"ollama-latest": {served: []string{"llama3.1:latest"}, chat: "llama3.1:latest", configured: "llama3.1:8b", args: []string{convert10}},

		"openai": openai,
		"openai-429": with(openai, func(r *replay) {
			r.proseErr, r.proseKind = "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.", gateway.KindStatus
		}),
		"openai-refusal": with(openai, func(r *replay) {
			r.proseErr, r.proseKind = `the model refused: "I'm sorry, I can't help with that."`, gateway.KindRefused
		}),
		"openai-parallel": with(openai, func(r *replay) {
			r.args, r.ids = []string{convert10, `{"value":5,"pair":"kg_lb"}`}, []string{"call_A1", "call_B2"}
		}),

		"reported-args-empty-string": with(openai, func(r *replay) { r.args = []string{`{}`} }),
		"reported-openrouter-noargs": with(openai, func(r *replay) { r.args = []string{`{}`} }),
		"reported-type-null":         with(openai, func(r *replay) { r.ids = []string{"call_1"} }),
		"vllm":                       vllm,
		"vllm-reasoning":             with(vllm, func(r *replay) { r.reasoning = "Three bullets." }),
		"vllm-reasoning-old":         with(vllm, func(r *replay) { r.reasoning = "Three bullets." }),
		"vllm-kimi-ids":              with(vllm, func(r *replay) { r.ids = []string{"functions.convert:0"} }),
		"vllm-404": with(vllm, func(r *replay) {
			r.proseErr, r.proseKind = "The model `llama3.1:8b` does not exist.", gateway.KindStatus
		}),
		"vllm-no-auto-tool": with(vllm, func(r *replay) {
			r.args, r.toolErr = nil, `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`
		}),
	}
}

// TestReplayRealServers replays every recorded profile through the client
// over real HTTP (issue 10, acceptance): the models list loads (or fails
// quoting the server), a prose turn completes with the value, a tool call
// round trip works, and each error body's cause reaches the message.
func TestReplayRealServers(t *testing.T) {
	shapes, err := gatewaytest.WireShapes()
	if err != nil {
		t.Fatal(err)
	}
	want := replays()
	var names []string
	for _, ws := range shapes {
		names = append(names, ws.Name)
		r, ok := want[ws.Name]
		if !ok {
			t.Errorf("wire shape %s has no expectation: add it to replays()", ws.Name)
			continue
		}
		t.Run(ws.Name, func(t *testing.T) { replayProfile(t, ws, r) })
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !slices.Contains(names, name) {
			t.Errorf("expectation %s has no wire shape file", name)
		}
	}
}

func replayProfile(t *testing.T, ws gatewaytest.WireShape, r replay) {
	s := gatewaytest.New(t)
	c := newClient(t, s)
	model := r.chat
	if model == "" {
		model = r.configured
	}

	// The models list.
	configured := r.chat
	if r.configured != "" {
		configured = r.configured
	}
	override := gateway.ModelOverride{Description: "General chat model", Thinking: gateway.ThinkingNever}
	if r.context == 0 {
		override.Context = 4096
	}
	s.SetModelsReply(ws.Models.Reply())
	cat, err := c.Models(t.Context(), map[string]gateway.ModelOverride{configured: override})
	if r.modelsErr != "" {
		ge := asError(t, err, gateway.KindStatus)
		if ge.Status != ws.Models.Status || !strings.Contains(err.Error(), `the model server said: "`+r.modelsErr) {
			t.Errorf("models error %q, want the server's %q", err, r.modelsErr)
		}
	} else {
		if err != nil {
			t.Fatalf("models: %v", err)
		}
		var got []string
		for _, m := range cat.Models {
			got = append(got, m.ID)
		}
		for _, sk := range cat.Skipped {
			got = append(got, sk.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, slices.Sorted(slices.Values(r.served))) {
			t.Errorf("served ids %v, want %v", got, r.served)
		}
		if r.configured != "" {
			wantU := []gateway.UnmatchedOverride{{ID: r.configured, Closest: r.chat}}
			if len(cat.Models) != 0 || !reflect.DeepEqual(cat.Unmatched, wantU) {
				t.Errorf("catalog %+v, want %s unmatched with closest %q", cat, r.configured, r.chat)
			}
		} else if len(cat.Models) != 1 || cat.Models[0].ID != r.chat || cat.Models[0].Context != max(r.context, override.Context) {
			t.Errorf("bindable models %+v, want %s with context %d", cat.Models, r.chat, max(r.context, override.Context))
		}
	}

	// A prose turn.
	s.Enqueue(ws.Prose.Reply())
	got, err := c.Complete(t.Context(), gateway.ChatRequest{Model: model, Messages: []gateway.Message{{Role: "user", Content: "Three bullets about Go."}}})
	if r.proseErr != "" {
		ge := asError(t, err, r.proseKind)
		if !strings.Contains(err.Error(), r.proseErr) || ge.Kind == gateway.KindStatus && ge.Status != ws.Prose.Status {
			t.Errorf("prose error %q (status %d), want it to contain %q", err, ge.Status, r.proseErr)
		}
	} else if err != nil {
		t.Errorf("prose: %v", err)
	} else if got.Text != proseText || got.Reasoning != r.reasoning {
		t.Errorf("prose text %q reasoning %q, want %q and %q", got.Text, got.Reasoning, proseText, r.reasoning)
	}

	// The tool-call round trip.
	tools := []gateway.ToolSpec{{Name: "convert", Description: "Convert units",
		Parameters: json.RawMessage(`{"type":"object","properties":{"value":{"type":"number"},"pair":{"type":"string"}}}`)}}
	msgs := []gateway.Message{{Role: "user", Content: "Convert 10 km to miles."}}
	s.Enqueue(ws.ToolCall.Reply())
	turn, err := c.Complete(t.Context(), gateway.ChatRequest{Model: model, Messages: msgs, Tools: tools})
	if r.toolErr != "" {
		ge := asError(t, err, gateway.KindStatus)
		if ge.Status != ws.ToolCall.Status || !strings.Contains(err.Error(), `the model server said: "`+r.toolErr) {
			t.Errorf("tool error %q, want the server's %q", err, r.toolErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("tool turn: %v", err)
	}
	if len(turn.ToolCalls) != len(r.args) {
		t.Fatalf("calls %+v, want %d", turn.ToolCalls, len(r.args))
	}
	for i, call := range turn.ToolCalls {
		if call.Name != "convert" || !sameJSON(t, call.Arguments, r.args[i]) || r.ids != nil && call.ID != r.ids[i] {
			t.Errorf("call %d = %s %s(%s), want %v convert(%s)", i, call.ID, call.Name, call.Arguments, r.ids, r.args[i])
		}
	}
	msgs = append(msgs, gateway.Message{Role: "assistant", ToolCalls: turn.ToolCalls})
	for _, call := range turn.ToolCalls {
		msgs = append(msgs, gateway.Message{Role: "tool", ToolCallID: call.ID, Content: toolResult})
	}
	// The server answers from the tool result it was sent back, under the
	// ids it gave.
	s.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		m := req.Messages
		tail := m[len(m)-len(turn.ToolCalls):]
		for i, call := range turn.ToolCalls {
			if tail[i]["role"] != "tool" || tail[i]["tool_call_id"] != call.ID {
				return gatewaytest.Status(400, `{"error":{"message":"tool result `+call.ID+` not sent back"}}`)
			}
		}
		body := strings.ReplaceAll(string(ws.Final.Body), gatewaytest.ToolResultPlaceholder, tail[0]["content"].(string))
		return gatewaytest.Status(ws.Final.Status, body)
	})
	final, err := c.Complete(t.Context(), gateway.ChatRequest{Model: model, Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("final turn: %v", err)
	}
	if want := "10 km is " + toolResult + " miles."; final.Text != want {
		t.Errorf("final %q, want %q", final.Text, want)
	}
}

func sameJSON(t *testing.T, got json.RawMessage, want string) bool {
	t.Helper()
	var a, b any
	if err := errors.Join(json.Unmarshal(got, &a), json.Unmarshal([]byte(want), &b)); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(a, b)
}
