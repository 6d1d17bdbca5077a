package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/secret"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return string(b)
}

func TestGatewayCallsAreTimed(t *testing.T) {
	g := gatewaytest.New(t)
	g.Enqueue(gatewaytest.Text("spoken"))
	m := NewMetrics()
	base := gateway.NewTransport()
	t.Cleanup(base.CloseIdleConnections)
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey()), HTTPClient: &http.Client{Transport: m.GatewayTransport(base)}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, fixture{opts: func(o *Options) {
		withGateway(c)(o)
		o.Metrics = m
	}})
	if got := textOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"})); got != "spoken" {
		t.Fatalf("run: %q", got)
	}
	text := scrape(t, m)
	for _, want := range []string{
		`promptforge_gateway_request_duration_seconds_count{code="200",endpoint="/chat/completions"} 1`,
		`promptforge_runs_finished_total{status="completed"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestMetricsServeOneServer(t *testing.T) {
	m := NewMetrics()
	newHarness(t, fixture{opts: func(o *Options) { o.Metrics = m }})
	h := newHarness(t, fixture{})
	if _, err := New(Options{Catalog: h.handle, Limits: defaultLimits(), Metrics: m}); err == nil {
		t.Fatal("one Metrics was bound to two servers")
	}
}

func TestModelListFetchesAreCountedByOutcome(t *testing.T) {
	m := NewMetrics()
	m.ModelListFetched(modelset.OutcomeFailed)
	m.ModelListFetched(modelset.OutcomeFailed)
	m.ModelListFetched(modelset.OutcomeOK)
	text := scrape(t, m)
	for _, want := range []string{
		`promptforge_model_list_fetches_total{outcome="failed"} 2`,
		`promptforge_model_list_fetches_total{outcome="ok"} 1`,
		`promptforge_model_list_fetches_total{outcome="empty"} 0`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s:\n%s", want, text)
		}
	}
}
