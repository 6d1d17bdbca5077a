package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// Metrics are the process's Prometheus series (design §3.9), on a registry
// of their own so nothing depends on client_golang's global one. One
// Metrics serves one Server.
type Metrics struct {
	reg *prometheus.Registry

	runsFinished    *prometheus.CounterVec
	tokens          *prometheus.CounterVec
	runDuration     *prometheus.HistogramVec
	gatewayDuration *prometheus.HistogramVec
	progressDropped *prometheus.CounterVec
	modelFetches    *prometheus.CounterVec
	runs            *runSeries // metrics_runs.go

	// The children runEnded updates on every run, by prompt and status
	// (labelCache): one lookup a run for the six of them.
	endedOf labelCache[*endedSeries]

	bindOnce sync.Once
	bindErr  error
}

// NewMetrics builds the series that do not depend on a Server, plus the Go
// runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		runsFinished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_runs_finished_total",
			Help: "Runs that reached a terminal record, by status (completed or failed).",
		}, []string{"status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_tokens_total",
			Help: "Model tokens the gateway's replies reported, by kind (prompt or completion), counted when a run ends, failed runs included.",
		}, []string{"kind"}),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "promptforge_run_duration_seconds",
			Help:    "Time from a run's registration to its terminal record, by status.",
			Buckets: []float64{0.01, 0.05, 0.25, 1, 5, 15, 30, 60, 120, 240, 600, 1800},
		}, []string{"status"}),
		gatewayDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "promptforge_gateway_request_duration_seconds",
			Help:    "Gateway HTTP calls from request to the end of the reply body, by endpoint and status code (0: no reply).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"endpoint", "code"}),
		progressDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_progress_frames_dropped_total",
			Help: "Progress notifications not delivered: queue full, or the call already answered (disconnected).",
		}, []string{"reason"}),
		modelFetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "promptforge_model_list_fetches_total",
			Help: "Fetches of the model server's model list, by outcome: ok, empty (no models served) or failed.",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.runsFinished, m.tokens, m.runDuration, m.gatewayDuration, m.progressDropped, m.modelFetches,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.runs = newRunSeries(m.reg)
	// Both statuses exist from the start, so a dashboard's rate() has a
	// series to read before the first failure.
	for _, s := range []string{string(runs.StatusCompleted), string(runs.StatusFailed)} {
		m.runsFinished.WithLabelValues(s)
	}
	for _, r := range []string{dropFull, dropDisconnected} {
		m.progressDropped.WithLabelValues(r)
	}
	for _, o := range []string{modelset.OutcomeOK, modelset.OutcomeEmpty, modelset.OutcomeFailed} {
		m.modelFetches.WithLabelValues(o)
	}
	for _, k := range []string{tokensPrompt, tokensCompletion} {
		m.tokens.WithLabelValues(k)
	}
	m.endedOf.child = func(prompt, status string) *endedSeries {
		return &endedSeries{
			finished:         m.runsFinished.WithLabelValues(status),
			duration:         m.runDuration.WithLabelValues(status),
			promptTokens:     m.tokens.WithLabelValues(tokensPrompt),
			completionTokens: m.tokens.WithLabelValues(tokensCompletion),
			promptRuns:       m.runs.promptRuns.WithLabelValues(prompt, status),
			promptDuration:   m.runs.promptDuration.WithLabelValues(prompt),
		}
	}
	return m
}

// The kinds of promptforge_tokens_total, named as the gateway's usage
// names them (prompt_tokens, completion_tokens).
const (
	tokensPrompt     = "prompt"
	tokensCompletion = "completion"
)

// Reasons a progress frame is dropped.
const (
	dropFull         = "full"
	dropDisconnected = "disconnected"
)

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// bindRegistry adds the series read from the run registry's counters. A
// Metrics can back one registry only: a second one would report the same
// series twice.
func (m *Metrics) bindRegistry(r *runs.Registry) error {
	bound := false
	m.bindOnce.Do(func() {
		bound = true
		// Each series reads one field of the registry's Stats when scraped.
		series := []struct {
			name, help string
			counter    bool
			read       func(runs.Stats) float64
		}{
			{"promptforge_runs_started_total", "Runs launched.", true,
				func(s runs.Stats) float64 { return float64(s.Started) }},
			{"promptforge_admissions_refused_total", "Calls refused because no run slot came free within admission_timeout.", true,
				func(s runs.Stats) float64 { return float64(s.Refused) }},
			{"promptforge_runs_in_flight", "Runs launched that have not ended.", false,
				func(s runs.Stats) float64 { return float64(s.InFlight) }},
			{"promptforge_run_slots_free", "Run slots nobody holds.", false,
				func(s runs.Stats) float64 { return float64(s.FreeSlots) }},
			{"promptforge_admissions_waiting", "Calls queued for a run slot.", false,
				func(s runs.Stats) float64 { return float64(s.Waiting) }},
		}
		var errs []error
		for _, sr := range series {
			read := func() float64 { return sr.read(r.Stats()) }
			var c prometheus.Collector
			if sr.counter {
				c = prometheus.NewCounterFunc(prometheus.CounterOpts{Name: sr.name, Help: sr.help}, read)
			} else {
				c = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: sr.name, Help: sr.help}, read)
			}
			errs = append(errs, m.reg.Register(c))
		}
		m.bindErr = errors.Join(errs...)
	})
	if !bound {
		return errors.New("these metrics already serve another server; give each server its own NewMetrics")
	}
	if m.bindErr != nil {
		return fmt.Errorf("register the run registry's metrics: %w", m.bindErr)
	}
	return nil
}

// endedSeries are the children a run's end updates, for one prompt and
// status: found with one lookup instead of six (issue #12), each created
// on first use as WithLabelValues creates it.
type endedSeries struct {
	finished, promptTokens, completionTokens, promptRuns prometheus.Counter
	duration, promptDuration                             prometheus.Observer
}

// runEnded records a terminal run record.
func (m *Metrics) runEnded(res runs.Result) {
	e := m.endedOf.get(res.Prompt, string(res.Status))
	seconds := float64(res.ElapsedMS) / 1000
	e.finished.Inc()
	e.duration.Observe(seconds)
	e.promptTokens.Add(float64(res.Tokens.Prompt))
	e.completionTokens.Add(float64(res.Tokens.Completion))
	e.promptRuns.Inc()
	e.promptDuration.Observe(seconds)
}

func (m *Metrics) framesDropped(reason string, n uint64) {
	if n > 0 {
		m.progressDropped.WithLabelValues(reason).Add(float64(n))
	}
}

// ModelListFetched counts one fetch of the model list by its outcome
// (modelset.Options.OnFetch), so an operator sees a model server that
// stopped answering, or serves nothing, without reading the log.
func (m *Metrics) ModelListFetched(outcome string) {
	m.modelFetches.WithLabelValues(outcome).Inc()
}

// GatewayTransport wraps base (nil: a clone of http.DefaultTransport) so
// every gateway call's duration lands in
// promptforge_gateway_request_duration_seconds. The duration ends when the
// reply body is closed, so it covers the whole exchange.
func (m *Metrics) GatewayTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &timedTransport{base: base, hist: m.gatewayDuration}
}

type timedTransport struct {
	base http.RoundTripper
	hist *prometheus.HistogramVec
}

func (t *timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	// The gateway names the endpoint: the label set stays small, never a
	// raw path a misconfigured URL could make unbounded.
	endpoint := gateway.Endpoint(req.URL.Path)
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.hist.WithLabelValues(endpoint, "0").Observe(time.Since(start).Seconds())
		return nil, err
	}
	resp.Body = &timedBody{ReadCloser: resp.Body, done: func() {
		t.hist.WithLabelValues(endpoint, strconv.Itoa(resp.StatusCode)).Observe(time.Since(start).Seconds())
	}}
	return resp, nil
}

// Unwrap is the wrapped transport: a gateway.Client whose transport wraps
// a gateway.Transport leaves its timeout to it (the connection's
// deadline), instead of a timer and context per request.
func (t *timedTransport) Unwrap() http.RoundTripper { return t.base }

// CloseIdleConnections lets the gateway client release the wrapped
// transport's idle connections.
func (t *timedTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type timedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *timedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}
