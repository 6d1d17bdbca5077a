package server

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// runSeries are the per-prompt, per-model and per-error-kind series
// (issue #15): what an operator needs to tell which prompt is slow, which
// model spends the tokens and how the gateway fails.
type runSeries struct {
	promptRuns     *prometheus.CounterVec
	promptDuration *prometheus.HistogramVec
	modelTokens    *prometheus.CounterVec
	gatewayErrors  *prometheus.CounterVec
}

func newRunSeries(reg *prometheus.Registry) runSeries {
	s := runSeries{
		promptRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_prompt_runs_total",
			Help: "Runs that reached a terminal record, by prompt (the catalog's name) and status.",
		}, []string{"prompt", "status"}),
		promptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "promptforge_prompt_run_duration_seconds",
			Help:    "Time from a run's registration to its terminal record, by prompt.",
			Buckets: []float64{0.01, 0.05, 0.25, 1, 5, 15, 30, 60, 120, 240, 600, 1800},
		}, []string{"prompt"}),
		modelTokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_model_tokens_total",
			Help: "Tokens completed model turns' replies reported, by model id and direction (prompt: sent to the model; completion: generated), counted as each turn completes.",
		}, []string{"model", "direction"}),
		gatewayErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_gateway_errors_total",
			Help: "Model turns the gateway failed, by kind: transport, status, malformed, empty_reply, config, disabled.",
		}, []string{"kind"}),
	}
	reg.MustRegister(s.promptRuns, s.promptDuration, s.modelTokens, s.gatewayErrors)
	return s
}

func (s runSeries) runEnded(res runs.Result) {
	s.promptRuns.WithLabelValues(res.Prompt, string(res.Status)).Inc()
	s.promptDuration.WithLabelValues(res.Prompt).Observe(float64(res.ElapsedMS) / 1000)
}

// metricsTracer counts tokens by model and gateway errors by kind from the
// engine's traced turns.
type metricsTracer struct{ m *Metrics }

func (t metricsTracer) Observe(ev engine.TraceEvent) {
	if ev.Info == nil {
		return
	}
	switch ev.Detail {
	case engine.ModelTurnCompleted:
		u := ev.Info.Usage
		if u.PromptTokens > 0 {
			t.m.runs.modelTokens.WithLabelValues(ev.Info.Model, tokensPrompt).Add(float64(u.PromptTokens))
		}
		if u.CompletionTokens > 0 {
			t.m.runs.modelTokens.WithLabelValues(ev.Info.Model, tokensCompletion).Add(float64(u.CompletionTokens))
		}
	case engine.ModelTurnFailed:
		if ev.Info.ErrKind != "" {
			t.m.runs.gatewayErrors.WithLabelValues(strings.ReplaceAll(ev.Info.ErrKind, " ", "_")).Inc()
		}
	}
}
