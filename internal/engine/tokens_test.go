package engine

import (
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/tools"
)

func usage(prompt, completion int) gateway.Usage {
	return gateway.Usage{PromptTokens: prompt, CompletionTokens: completion}
}

// TestTokens_ToolLoopSumsEveryTurn: both turns of a tool loop count,
// including the empty stop that ends a loop cleanly.
func TestTokens_ToolLoopSumsEveryTurn(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		final       gatewaytest.Reply
		want        gateway.Usage
	}{
		{"text answer", "the answer", gatewaytest.Text("the answer").WithUsage(150, 5), usage(250, 15)},
		{"empty stop", "", gatewaytest.Empty("stop").WithUsage(3, 4), usage(103, 14)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGW(t)
			g.Enqueue(callSearch("one").WithUsage(100, 10), tt.final)
			cfg := g.cfg()
			cfg.Tools = []tools.Tool{searchTool()}
			r := runP(t, parse(t, searchPrompt(t, "")), "go", cfg)
			r.ok(t, tt.value)
			if r.Turns != 2 || r.Tokens != tt.want {
				t.Fatalf("turns %d tokens %+v, want 2 turns and %+v", r.Turns, r.Tokens, tt.want)
			}
		})
	}
}

// TestTokens_FanoutSumsItsArms gives each arm its own usage, so a sum that
// missed an arm, or raced on one, shows.
func TestTokens_FanoutSumsItsArms(t *testing.T) {
	g := newGW(t)
	per := map[string]gateway.Usage{"infer a": usage(1, 100), "infer b": usage(2, 200), "infer c": usage(4, 400), "main": usage(8, 800)}
	g.Respond(func(req gatewaytest.Request) gatewaytest.Reply {
		u := per[lastUser(req)]
		return gatewaytest.Text("R").WithUsage(u.PromptTokens, u.CompletionTokens)
	})
	p := fanoutPrompt(t, defaultModel, `models.infer("main") return #fanout("## W", {"a", "b", "c"})`,
		lua(`return models.infer("infer " .. item)`))
	r := runP(t, p, "", g.cfg())
	r.ok(t, "3")
	if r.Turns != 4 || r.Tokens != usage(15, 1500) {
		t.Fatalf("turns %d tokens %+v, want 4 turns and 15/1500", r.Turns, r.Tokens)
	}
}

// TestTokens_FailedRunReportsWhatItSpent: the completed turn before the
// failure counts, and so does the refused reply that failed the run (a
// reasoning model that spent its budget thinking).
func TestTokens_FailedRunReportsWhatItSpent(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Text("first").WithUsage(40, 12), gatewaytest.Empty("length").WithReasoning("hmm").WithUsage(5, 500))
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\nOne.\n\n## B\n\nTwo.\n")
	r := runP(t, p, "", g.cfg())
	r.fails(t, KindCompletion, "empty model reply")
	if r.Turns != 1 || r.Tokens != usage(45, 512) {
		t.Fatalf("turns %d tokens %+v, want 1 turn and 45/512", r.Turns, r.Tokens)
	}

	g = newGW(t)
	g.Enqueue(gatewaytest.Text("first").WithUsage(40, 12), gatewaytest.Status(500, `{"error":{"message":"overloaded"}}`))
	r = runP(t, p, "", g.cfg())
	r.fails(t, KindCompletion, "")
	if r.Turns != 1 || r.Tokens != usage(40, 12) {
		t.Fatalf("after a 500: turns %d tokens %+v, want 1 turn and 40/12", r.Turns, r.Tokens)
	}
}

// TestTokens_NoUsageIsZero: a server that sends no usage adds nothing and
// fails nothing.
func TestTokens_NoUsageIsZero(t *testing.T) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Malformed(`{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`))
	r := runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nSay hi.\n"), "", g.cfg())
	r.ok(t, "hi")
	if r.Turns != 1 || r.Tokens != (gateway.Usage{}) {
		t.Fatalf("turns %d tokens %+v", r.Turns, r.Tokens)
	}
}
