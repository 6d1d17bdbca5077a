package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/secret"
)

func TestSearchSendsTheQueryAndReturnsTheRawReply(t *testing.T) {
	gw := gatewaytest.New(t)
	c := newClient(t, gw)
	hits := []gatewaytest.SearchHit{{Title: "Rivers", URL: "https://rivers.example/north", Description: "Frozen roads"}}
	gw.EnqueueSearch(gatewaytest.Search(hits...))
	reply, err := c.Search(t.Context(), json.RawMessage(`{"query":"northern rivers","count":5,"include_domains":["rivers.example"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Query   string                  `json:"query"`
		Results []gatewaytest.SearchHit `json:"results"`
	}
	if err := json.Unmarshal(reply, &body); err != nil || body.Query != "northern rivers" || !reflect.DeepEqual(body.Results, hits) {
		t.Errorf("reply %s (%v)", reply, err)
	}
	reqs := gw.SearchRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d search requests", len(reqs))
	}
	if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer "+gw.APIKey() {
		t.Errorf("Authorization %q", auth)
	}
	want := map[string]any{"query": "northern rivers", "count": float64(5), "include_domains": []any{"rivers.example"}}
	if !reflect.DeepEqual(reqs[0].Body, want) {
		t.Errorf("forwarded body %v, want %v", reqs[0].Body, want)
	}
}

func TestSearchBackendErrors(t *testing.T) {
	gw := gatewaytest.New(t)
	c := newClient(t, gw)
	huge := make([]gatewaytest.SearchHit, 300)
	for i := range huge {
		huge[i] = gatewaytest.SearchHit{Title: "t", URL: "https://x.example/", Description: strings.Repeat("d", 1000)}
	}
	tests := []struct {
		reply gatewaytest.Reply
		kind  gateway.Kind
		want  string
	}{
		{gatewaytest.Status(500, "upstream\n\texploded   badly"), gateway.KindStatus, "backend returned 500: upstream exploded badly"},
		{gatewaytest.Status(502, `{"error":{"message":"upstream returned 500","type":"server_error","code":"upstream_error"}}`), gateway.KindStatus,
			`backend returned 502: {"error":{"message":"upstream returned 500","type":"server_error","code":"upstream_error"}}`},
		{gatewaytest.Status(500, "echo "+gw.APIKey()), gateway.KindStatus, "backend returned 500: echo [redacted]"},
		{gatewaytest.Status(503, ""), gateway.KindStatus, "backend returned 503: (empty body)"},
		{gatewaytest.Status(500, strings.Repeat("x", 5000)), gateway.KindStatus, "backend returned 500: " + strings.Repeat("x", 2000) + "…"},
		{gatewaytest.Malformed("not json"), gateway.KindMalformed, "backend reply is malformed: not a JSON object with a results array"},
		{gatewaytest.JSON(map[string]any{"query": "q"}), gateway.KindMalformed, "backend reply is malformed: no results array"},
		{gatewaytest.JSON(map[string]any{"results": "x"}), gateway.KindMalformed, "backend reply is malformed: not a JSON object with a results array"},
		{gatewaytest.JSON(map[string]any{"results": []any{map[string]any{"title": "t"}}}), gateway.KindMalformed, "backend reply is malformed: result 0 has no url"},
		{gatewaytest.JSON(map[string]any{"results": []any{map[string]any{"url": "https://a/"}, map[string]any{"url": "  "}}}), gateway.KindMalformed, "backend reply is malformed: result 1 has no url"},
		{gatewaytest.Search(huge...), gateway.KindMalformed, "backend reply exceeds the 262144-byte cap"},
	}
	for _, tc := range tests {
		gw.EnqueueSearch(tc.reply)
		_, err := c.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
		if err == nil {
			t.Errorf("%.80q: no error", tc.want)
			continue
		}
		if ge := asError(t, err, tc.kind); ge.Error() != tc.want || ge.Op != "POST /tools/web_search" {
			t.Errorf("got %q (op %q); want %.200q", ge.Error(), ge.Op, tc.want)
		}
	}

	// A wrong key is the gateway's 401, reported like any non-2xx.
	wrong := newClient(t, gw, func(cfg *gateway.Options) { cfg.APIKey = secret.MustNew("wrong-key") })
	_, err := wrong.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
	if ge := asError(t, err, gateway.KindStatus); ge.Status != 401 || !strings.HasPrefix(ge.Error(), "backend returned 401: ") {
		t.Errorf("wrong key: %v", err)
	}
}

func TestSearchTransportAndCancel(t *testing.T) {
	gw := gatewaytest.New(t)
	c := newClient(t, gw)
	g := gatewaytest.NewGate()
	gw.EnqueueSearch(gatewaytest.Gated(g, gatewaytest.Search()))
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-g.Arrived()
		cancel()
	}()
	_, err := c.Search(ctx, json.RawMessage(`{"query":"q"}`))
	if asError(t, err, gateway.KindCancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: %v", err)
	}

	gw.Close()
	_, err = c.Search(t.Context(), json.RawMessage(`{"query":"q"}`))
	if ge := asError(t, err, gateway.KindTransport); !strings.HasPrefix(ge.Error(), "cannot reach the gateway at "+gw.URL()+": ") ||
		!strings.HasSuffix(ge.Error(), "; check that the gateway is running") {
		t.Errorf("closed gateway: %q", ge.Error())
	}
}

func TestSearchTimeoutOnAFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		silentGateway(t, gateway.Options{}, func(c *gateway.Client) {
			start := time.Now()
			_, err := c.Search(t.Context(), json.RawMessage(`{"query":"rivers"}`))
			if got := time.Since(start); got != 30*time.Second {
				t.Errorf("search gave up after %v of fake time; want 30s", got)
			}
			ge := asError(t, err, gateway.KindTransport)
			if !ge.Timeout() || ge.Error() != "the gateway at http://gateway.test/v1 did not answer within 30s; try again later" {
				t.Errorf("search: %v", err)
			}
		})
	})
}

// Search goes through the client's own HTTP client, like every request.
func TestSearchUsesTheConfiguredHTTPClient(t *testing.T) {
	gw := gatewaytest.New(t)
	var seen int
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		seen++
		return http.DefaultTransport.RoundTrip(r)
	})}
	defer http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	c := newClient(t, gw, func(cfg *gateway.Options) { cfg.HTTPClient = client })
	gw.EnqueueSearch(gatewaytest.Search(gatewaytest.SearchHit{URL: "https://a.example/"}))
	if _, err := c.Search(t.Context(), json.RawMessage(`{"query":"q"}`)); err != nil {
		t.Fatal(err)
	}
	if seen != 1 {
		t.Errorf("the configured client carried %d requests", seen)
	}
}

func TestSearchOnADisabledClient(t *testing.T) {
	_, err := gateway.NewDisabled("set it up").Search(t.Context(), json.RawMessage(`{"query":"q"}`))
	if asError(t, err, gateway.KindDisabled); !errors.Is(err, gateway.ErrNotConfigured) {
		t.Errorf("disabled: %v", err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
