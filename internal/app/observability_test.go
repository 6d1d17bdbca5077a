package app

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/server"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
)

func TestObservability_WhatEachSettingBuilds(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	none := env(nil)
	cases := []struct {
		name           string
		o              config.Observability
		lookup         func(string) (string, bool)
		traces, export bool
		log            string
	}{
		{"defaults", config.Observability{Traces: true, TraceSteps: 2000}, none, true, false, ""},
		{"traces off", config.Observability{}, none, false, false, ""},
		{"endpoint", config.Observability{Traces: true, OTLPEndpoint: "http://127.0.0.1:4318/v1/traces"}, none, true, true, "exporting run traces over OTLP/HTTP"},
		{"standard variable", config.Observability{Traces: true}, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}), true, true, "from OTEL_EXPORTER_OTLP_* variables"},
		{"endpoint with traces off", config.Observability{OTLPEndpoint: "http://127.0.0.1:4318/v1/traces"}, none, false, false, "no spans are exported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			opts, flush, err := observability(context.Background(), &config.Config{Observability: tc.o}, tc.lookup, "test", slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer flush(context.Background())
			if (opts != nil) != tc.traces || (opts != nil && (opts.NewSink != nil) != tc.export) {
				t.Fatalf("options = %+v; want traces %v, export %v", opts, tc.traces, tc.export)
			}
			if opts != nil && opts.MaxSteps != tc.o.TraceSteps {
				t.Fatalf("max steps = %d", opts.MaxSteps)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Fatalf("log %q lacks %q", logs.String(), tc.log)
			}
		})
	}
}

func TestBoot_TracesReachTheStatusPageAndTheCollector(t *testing.T) {
	var exports atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	g := gatewaytest.New(t)
	path := servertest.ConfigDir(t, "api_key = \"k\"\nbind = \"127.0.0.1:0\"", g, basePrompts)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "\n[observability]\notlp_endpoint = %q\n", collector.URL+"/v1/traces")
	f.Close()
	url, stop := bootHTTP(t, path, slog.DiscardHandler)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: servertest.Bearer{Token: "k", Base: tr}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "boot", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: client, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: server.ToolRunPrompt, Arguments: map[string]any{"prompt": "echo", "args": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	id := res.StructuredContent.(map[string]any)["run_id"].(string)
	resp, err := client.Get(url + "/status/runs/" + id + ".json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"completed"`) {
		t.Fatalf("trace JSON: %d %s", resp.StatusCode, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Shutdown flushed the batch the run's spans were waiting in.
	if exports.Load() == 0 {
		t.Fatal("no spans reached the collector by the end of Boot")
	}
}
