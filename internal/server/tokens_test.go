package server

import (
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// TestTokensAreAccounted: the tokens a run's model replies report reach
// run_prompt's record, check_run's (over the go-sdk client) and /metrics,
// for a completed run and for one that failed after its turns.
func TestTokensAreAccounted(t *testing.T) {
	g, c := tcpGateway(t)
	g.Enqueue(
		gatewaytest.Text("spoken").WithUsage(40, 12),
		gatewaytest.Text("first").WithUsage(30, 5), gatewaytest.Text("second").WithUsage(31, 6),
	)
	m := NewMetrics()
	h := newHarness(t, fixture{
		prompts: map[string]string{
			"summarize.md": speakPrompt("summarize"),
			"twice.md": promptFile("twice", "Speak twice, then fail.", "",
				"# Twice\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## One\n\nSay one.\n\n## Two\n\nSay two.\n\n"+
					"## Fail\n\n```lua\nerror(\"after the turns\")\n```\n"),
		},
		opts: func(o *Options) {
			withGateway(c)(o)
			o.Metrics = m
		},
	})

	tokensOf := func(s map[string]any) map[string]any {
		tok, _ := s["tokens"].(map[string]any)
		return tok
	}
	for _, tt := range []struct {
		prompt, status     string
		prompts, completes float64
	}{
		{"summarize", "completed", 40, 12},
		{"twice", "failed", 61, 11},
	} {
		ran, err := h.call(ToolRunPrompt, map[string]any{"prompt": tt.prompt})
		if err != nil {
			t.Fatal(err)
		}
		s := structuredOf(t, ran)
		want := map[string]any{"prompt": tt.prompts, "completion": tt.completes}
		if s["status"] != tt.status || !mapsEqual(tokensOf(s), want) {
			t.Fatalf("%s: run_prompt record %v, want %s with tokens %v", tt.prompt, s, tt.status, want)
		}
		checked := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": s["run_id"]}))
		if checked["status"] != tt.status || !mapsEqual(tokensOf(checked), want) {
			t.Fatalf("%s: check_run record %v, want tokens %v", tt.prompt, checked, want)
		}
	}

	text := scrape(t, m)
	for _, want := range []string{
		`promptforge_tokens_total{kind="prompt"} 101`,
		`promptforge_tokens_total{kind="completion"} 23`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(text, "promptforge_tokens_total"))
		}
	}
}

// TestTokensSeriesExistBeforeTheFirstRun: both kinds are exported at 0 from
// the start, so a dashboard's rate() has a series to read.
func TestTokensSeriesExistBeforeTheFirstRun(t *testing.T) {
	text := scrape(t, NewMetrics())
	for _, want := range []string{
		"# TYPE promptforge_tokens_total counter",
		`promptforge_tokens_total{kind="prompt"} 0`,
		`promptforge_tokens_total{kind="completion"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func grepLines(text, substr string) string {
	var out []string
	for line := range strings.Lines(text) {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}
