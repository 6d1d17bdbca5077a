package server

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/promptforge-go/promptforge/internal/engine"
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

func newRunSeries(reg *prometheus.Registry) *runSeries {
	s := &runSeries{
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

// labelCache keeps what child makes of two label values (Metrics.endedOf:
// a run's end's six children, by prompt and status), kept per pair.
// WithLabelValues checks and hashes the values and takes the vector's
// lock on every call, and runEnded updates six children on every run; a
// child is created (and appears in the exposition) on first use, exactly
// as WithLabelValues creates it.
type labelCache[T any] struct {
	child func(a, b string) T // makes the value of a and b, with WithLabelValues
	mu    sync.RWMutex
	m     map[[2]string]T
}

// get returns the child for a and b, creating it on first use.
func (c *labelCache[T]) get(a, b string) T {
	key := [2]string{a, b}
	c.mu.RLock()
	v, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = c.child(a, b)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[[2]string]T)
	}
	c.m[key] = v
	c.mu.Unlock()
	return v
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
