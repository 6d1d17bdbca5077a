package gateway_test

import (
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

func TestUsageIsRead(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(
		gatewaytest.Text("answer").WithUsage(40, 12),
		gatewaytest.Calls(gatewaytest.Call{Name: "f"}).WithUsage(7, 3),
	)
	c := newClient(t, s)
	for i, want := range []gateway.Usage{{PromptTokens: 40, CompletionTokens: 12}, {PromptTokens: 7, CompletionTokens: 3}} {
		comp, err := c.Complete(t.Context(), userTurn("q"))
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if comp.Usage != want {
			t.Errorf("%d: usage %+v, want %+v", i, comp.Usage, want)
		}
	}
}

// TestUsageShapes replays the usage objects real servers send (see the
// recorded wire shapes: OpenAI and LiteLLM with *_details, vLLM with
// prompt_tokens_details null and total before completion, llama.cpp with
// timings beside usage) and the ones a server or proxy may send instead:
// none, null, or counts we cannot read. An unreadable count is 0; it never
// fails the reply.
func TestUsageShapes(t *testing.T) {
	const choices = `"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]`
	tests := []struct {
		name, usage string
		want        gateway.Usage
	}{
		{"openai", `,"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`, gateway.Usage{PromptTokens: 40, CompletionTokens: 12}},
		{"vllm", `,"usage":{"prompt_tokens":40,"total_tokens":52,"completion_tokens":12,"prompt_tokens_details":null}`, gateway.Usage{PromptTokens: 40, CompletionTokens: 12}},
		{"llamacpp", `,"usage":{"completion_tokens":12,"prompt_tokens":40,"total_tokens":52},"timings":{"prompt_n":99,"prompt_ms":51.2,"predicted_n":99,"predicted_ms":301}`, gateway.Usage{PromptTokens: 40, CompletionTokens: 12}},
		{"absent", ``, gateway.Usage{}},
		{"null", `,"usage":null`, gateway.Usage{}},
		{"not an object", `,"usage":"52 tokens"`, gateway.Usage{}},
		{"empty object", `,"usage":{}`, gateway.Usage{}},
		{"strings", `,"usage":{"prompt_tokens":"40","completion_tokens":"12"}`, gateway.Usage{}},
		{"negative", `,"usage":{"prompt_tokens":-40,"completion_tokens":12}`, gateway.Usage{CompletionTokens: 12}},
		{"fraction", `,"usage":{"prompt_tokens":40,"completion_tokens":12.5}`, gateway.Usage{PromptTokens: 40}},
		{"exponent", `,"usage":{"prompt_tokens":4e1,"completion_tokens":12}`, gateway.Usage{CompletionTokens: 12}},
		{"overflow", `,"usage":{"prompt_tokens":99999999999999999999999,"completion_tokens":12}`, gateway.Usage{CompletionTokens: 12}},
		{"null counts", `,"usage":{"prompt_tokens":null,"completion_tokens":null}`, gateway.Usage{}},
		{"only completion", `,"usage":{"completion_tokens":5}`, gateway.Usage{CompletionTokens: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := gatewaytest.New(t)
			s.Enqueue(gatewaytest.Malformed(`{"id":"x","object":"chat.completion",` + choices + tt.usage + `}`))
			comp, err := newClient(t, s).Complete(t.Context(), userTurn("q"))
			if err != nil {
				t.Fatalf("a usage of %s failed the reply: %v", tt.usage, err)
			}
			if comp.Usage != tt.want || comp.Text != "ok" {
				t.Errorf("usage %+v text %q, want %+v", comp.Usage, comp.Text, tt.want)
			}
		})
	}
}

// TestRefusedReplyKeepsUsage: a reply the client refuses after the server
// did the work (here a reasoning model that ran out of budget before
// answering) still says what it cost.
func TestRefusedReplyKeepsUsage(t *testing.T) {
	s := gatewaytest.New(t)
	s.Enqueue(
		gatewaytest.Empty("length").WithReasoning("thinking...").WithUsage(40, 512),
		gatewaytest.Status(400, `{"error":{"message":"request (9412 tokens) exceeds the available context size (8192 tokens), try increasing it","n_prompt_tokens":9412}}`),
	)
	c := newClient(t, s)
	_, err := c.Complete(t.Context(), userTurn("q"))
	if ge := asError(t, err, gateway.KindEmptyReply); ge.Usage != (gateway.Usage{PromptTokens: 40, CompletionTokens: 512}) {
		t.Errorf("empty reply usage %+v, want 40/512", ge.Usage)
	}
	_, err = c.Complete(t.Context(), userTurn("q"))
	if ge := asError(t, err, gateway.KindStatus); ge.Usage != (gateway.Usage{}) {
		t.Errorf("an error body without usage gave usage %+v", ge.Usage)
	}
}
