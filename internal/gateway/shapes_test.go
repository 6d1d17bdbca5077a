package gateway_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// Reply shapes real servers send that the reference gateway never does
// (issue 10 item 4); the replay over recorded fixtures is replay_test.go.

func TestInlineThinkBlock(t *testing.T) {
	for _, tt := range []struct{ content, text, reasoning string }{
		{"<think>\nweigh it\n</think>\n\nThe answer.", "The answer.", "weigh it"},
		{"  \n<think></think>Plain.", "Plain.", ""},
		// Not at the start: the model is writing about the tag.
		{"Use <think>…</think> tags.", "Use <think>…</think> tags.", ""},
	} {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Text(tt.content))
		got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
		if err != nil {
			t.Fatalf("%q: %v", tt.content, err)
		}
		if got.Text != tt.text || got.Reasoning != tt.reasoning {
			t.Errorf("%q: text %q reasoning %q, want %q and %q", tt.content, got.Text, got.Reasoning, tt.text, tt.reasoning)
		}
	}
	// A reasoning field wins over the inline block, which is still cut.
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Text("<think>inline</think>Answer").WithReasoning("field"))
	got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
	if err != nil || got.Text != "Answer" || got.Reasoning != "field" {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestRefusal(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(gatewaytest.Malformed(`{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with \"that\"."},"finish_reason":"stop"}]}`))
	_, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
	ge := asError(t, err, gateway.KindRefused)
	if want := `the model refused: "I can't help with "that"."; rephrase the prompt or use another model`; err.Error() != want || ge.Retryable() {
		t.Errorf("got %q (retryable %v), want %q", err, ge.Retryable(), want)
	}
	// Text next to a refusal is still the answer.
	s.Enqueue(gatewaytest.Malformed(`{"choices":[{"message":{"content":"Partly: yes.","refusal":"not all of it"},"finish_reason":"stop"}]}`))
	if got, err := newClient(t, s).Complete(t.Context(), userTurn("q")); err != nil || got.Text != "Partly: yes." {
		t.Errorf("got %+v, %v", got, err)
	}
}

func TestLenientToolCalls(t *testing.T) {
	for name, call := range map[string]string{
		"type null":        `{"id":"a","type":null,"function":{"name":"f","arguments":"{\"x\":1}"}}`,
		"type missing":     `{"id":"a","function":{"name":"f","arguments":"{\"x\":1}"}}`,
		"arguments absent": `{"id":"a","type":"function","function":{"name":"f"}}`,
		"arguments empty":  `{"id":"a","type":"function","function":{"name":"f","arguments":""}}`,
		"arguments null":   `{"id":"a","type":"function","function":{"name":"f","arguments":null}}`,
	} {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Malformed(`{"choices":[{"message":{"content":null,"tool_calls":[` + call + `]},"finish_reason":"tool_calls"}]}`))
		got, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := `{}`
		if strings.Contains(call, `\"x\"`) {
			want = `{"x":1}`
		}
		if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != "f" || string(got.ToolCalls[0].Arguments) != want {
			t.Errorf("%s: calls %+v, want f(%s)", name, got.ToolCalls, want)
		}
	}
}

func TestThinkingSwitch(t *testing.T) {
	on, off := true, false
	for _, tt := range []struct {
		name      string
		dflt, req gateway.ThinkingSwitch
		thinking  *bool
		want      string // the switch's part of the wire body, "" for none
	}{
		{"default is today's", "", "", &on, `"chat_template_kwargs":{"enable_thinking":true}`},
		{"kwargs off", gateway.ThinkingSwitchTemplateKwargs, "", &off, `"chat_template_kwargs":{"enable_thinking":false}`},
		{"gateway default effort", gateway.ThinkingSwitchReasoningEffort, "", &on, `"reasoning_effort":"medium"`},
		{"effort off", "", gateway.ThinkingSwitchReasoningEffort, &off, `"reasoning_effort":"none"`},
		{"model wins over gateway", gateway.ThinkingSwitchReasoningEffort, gateway.ThinkingSwitchTemplateKwargs, &on, `"chat_template_kwargs":{"enable_thinking":true}`},
		{"none sends nothing", "", gateway.ThinkingSwitchNone, &on, ""},
		{"no thinking asked", gateway.ThinkingSwitchReasoningEffort, "", nil, ""},
	} {
		s := gatewaytest.New(t)
		s.Enqueue(gatewaytest.Text("ok"))
		c := newClient(t, s, func(o *gateway.Options) { o.ThinkingSwitch = tt.dflt })
		req := userTurn("q")
		req.Thinking, req.ThinkingSwitch = tt.thinking, tt.req
		if _, err := c.Complete(t.Context(), req); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		raw := string(s.Requests()[0].Raw)
		has := strings.Contains(raw, "chat_template_kwargs") || strings.Contains(raw, "reasoning_effort")
		if tt.want == "" && has || tt.want != "" && !strings.Contains(raw, tt.want) {
			t.Errorf("%s: body %s, want %s", tt.name, raw, tt.want)
		}
	}
	s := gatewaytest.New(t)
	req := userTurn("q")
	req.Thinking, req.ThinkingSwitch = &on, "think"
	_, err := newClient(t, s).Complete(t.Context(), req)
	if asError(t, err, gateway.KindConfig); !strings.Contains(err.Error(), `thinking switch "think" is unknown`) {
		t.Errorf("got %v", err)
	}
	_, err = gateway.New(gateway.Options{BaseURL: s.URL(), APIKey: blankOK("k"), ThinkingSwitch: "think"})
	if err == nil || !strings.Contains(err.Error(), `gateway thinking switch "think" is not valid: use "chat_template_kwargs", "reasoning_effort" or "none"`) {
		t.Errorf("New: %v", err)
	}
	_, err = newClient(t, s).Models(t.Context(), map[string]gateway.ModelOverride{"m": {ThinkingSwitch: "x"}})
	if err == nil || !strings.Contains(err.Error(), `[models."m"] thinking_switch = "x" is not valid`) {
		t.Errorf("Models: %v", err)
	}
}

func TestModelsEmptyOrNullData(t *testing.T) {
	for _, body := range []string{`{"object":"list","data":null}`, `{"object":"list","data":[]}`} {
		s := gatewaytest.New(t)
		s.SetModelsReply(gatewaytest.Malformed(body))
		cat, err := newClient(t, s).Models(t.Context(), map[string]gateway.ModelOverride{"llama3.1:8b": {Description: "x"}})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if len(cat.Models) != 0 || len(cat.Skipped) != 0 || !reflect.DeepEqual(cat.Unmatched, []gateway.UnmatchedOverride{{ID: "llama3.1:8b"}}) {
			t.Errorf("%s: %+v", body, cat)
		}
	}
}

func TestModelsPublishedContext(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModels(
		entry{"id": "vllm", "max_model_len": 32768},
		entry{"id": "llamacpp", "meta": entry{"n_ctx": 8192, "n_ctx_train": 131072}},
		entry{"id": "openrouter", "context_length": 200000},
		entry{"id": "ours", "context": 4096, "max_model_len": 99},
		entry{"id": "junk", "max_model_len": "big", "meta": "x", "context_length": -1},
	)
	over := map[string]gateway.ModelOverride{}
	for _, id := range []string{"vllm", "llamacpp", "openrouter", "ours", "junk"} {
		over[id] = gateway.ModelOverride{Description: id + " model", Thinking: gateway.ThinkingNever}
	}
	over["vllm"] = gateway.ModelOverride{Description: "vllm model", Thinking: gateway.ThinkingNever, Context: 1000}
	cat, err := newClient(t, s).Models(t.Context(), over)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint32{}
	for _, m := range cat.Models {
		got[m.ID] = m.Context
	}
	want := map[string]uint32{"vllm": 1000, "llamacpp": 8192, "openrouter": 200000, "ours": 4096}
	if !reflect.DeepEqual(got, want) || len(cat.Skipped) != 1 || cat.Skipped[0].ID != "junk" {
		t.Errorf("contexts %v skipped %+v, want %v and junk skipped", got, cat.Skipped, want)
	}
}

func TestUnmatchedOverrideNamesTheClosestServedID(t *testing.T) {
	s := gatewaytest.New(t)
	s.SetModels(entry{"id": "llama3.1:latest"}, entry{"id": "Qwen/Qwen2.5-7B-Instruct"}, entry{"id": "gpt-4o-mini"}, entry{"id": "mistral:7b"})
	cat, err := newClient(t, s).Models(t.Context(), map[string]gateway.ModelOverride{
		"llama3.1:8b":              {Description: "tag differs"},
		"qwen/qwen2.5-7b-instruct": {Description: "case differs"},
		"gpt-4o-mnii":              {Description: "typo"},
		"claude-sonnet":            {Description: "nothing close"},
		"mistral":                  {Description: "no tag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []gateway.UnmatchedOverride{
		{ID: "claude-sonnet"},
		{ID: "gpt-4o-mnii", Closest: "gpt-4o-mini"},
		{ID: "llama3.1:8b", Closest: "llama3.1:latest"},
		{ID: "mistral", Closest: "mistral:7b"},
		{ID: "qwen/qwen2.5-7b-instruct", Closest: "Qwen/Qwen2.5-7B-Instruct"},
	}
	if !reflect.DeepEqual(cat.Unmatched, want) {
		t.Fatalf("unmatched %+v\nwant %+v", cat.Unmatched, want)
	}
	if got, w := want[2].Problem(), `no served model is "llama3.1:8b"; the server lists "llama3.1:latest": rename the table to [models."llama3.1:latest"]`; got != w {
		t.Errorf("Problem() = %q\nwant %q", got, w)
	}
	if got, w := want[0].Problem(), `no served model is "claude-sonnet": [models."claude-sonnet"] has no effect; check the id against the server's /models list`; got != w {
		t.Errorf("Problem() = %q\nwant %q", got, w)
	}
}

func TestUpstreamReasonInStatusErrors(t *testing.T) {
	s := gatewaytest.New(t)
	key := s.APIKey()
	long := strings.Repeat("z", 400)
	for _, tt := range []struct{ body, want string }{
		{`{"error":{"message":"model \"x\" not found, try pulling it first","type":"api_error"}}`, `: the model server said: "model "x" not found, try pulling it first"`},
		{`{"error":"plain string reason"}`, `: the model server said: "plain string reason"`},
		{`{"detail":"Not Found"}`, `: the model server said: "Not Found"`},
		{`{"error":{"message":"key ` + key + ` and Bearer ` + key + `x at https://u:p@h.example/v1?k=v line\nnext"}}`, `: the model server said: "key [redacted] and Bearer [redacted] at https://h.example/v1 line next"`},
		{`{"error":{"message":"` + long + `"}}`, `: the model server said: "` + strings.Repeat("z", 300) + `…"`},
		{`{"error":{"code":500}}`, ": retry later or check the gateway"},
		{`<html>oops</html>`, ": retry later or check the gateway"},
	} {
		s.Enqueue(gatewaytest.Status(500, tt.body))
		_, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
		asError(t, err, gateway.KindStatus)
		if !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("body %s:\ngot  %q\nwant suffix %q", tt.body, err, tt.want)
		}
	}
	s.SetModelsReply(gatewaytest.Status(401, `{"error":{"message":"Authentication Error, Invalid proxy server token passed.","type":"auth_error","code":"401"}}`))
	_, err := newClient(t, s).Models(t.Context(), nil)
	if asError(t, err, gateway.KindStatus); !strings.HasSuffix(err.Error(), `check the gateway API key: the model server said: "Authentication Error, Invalid proxy server token passed."`) {
		t.Errorf("models: %q", err)
	}
}
