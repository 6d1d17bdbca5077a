package config

import (
	"fmt"
	"net/url"
)

// Observability is the [observability] table: run traces, what they may
// hold, and their export over OTLP.
type Observability struct {
	// Traces keeps a trace of every run (the status page, the trace JSON,
	// check_run's include_trace). Default true.
	Traces bool
	// CaptureContent keeps the verbatim prompt, reply, tool argument and
	// result text and log() lines in traces and exported spans. Default
	// false: a trace without it holds names, sizes and counts only, so the
	// status page and an OTLP collector never hold what callers sent.
	CaptureContent bool
	// TraceSteps caps the steps one trace keeps (default
	// DefaultTraceSteps).
	TraceSteps int
	// OTLPEndpoint is the OTLP/HTTP traces endpoint URL spans are exported
	// to; "" exports only when the OTEL_EXPORTER_OTLP_ENDPOINT or
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT variable is set.
	OTLPEndpoint string
}

// Defaults of [Observability].
const (
	DefaultTraces     = true
	DefaultTraceSteps = 2000
)

type rawObservability struct {
	Traces         *bool   `toml:"traces"`
	CaptureContent *bool   `toml:"capture_content"`
	TraceSteps     *int64  `toml:"trace_steps"`
	OTLPEndpoint   *string `toml:"otlp_endpoint"`
}

var observabilityKeys = []string{"traces", "capture_content", "trace_steps", "otlp_endpoint"}

func observabilityType(key string) string {
	switch key {
	case "traces", "capture_content":
		return "true or false"
	case "trace_steps":
		return "a positive integer"
	case "otlp_endpoint":
		return `a URL such as "http://127.0.0.1:4318/v1/traces"`
	}
	return ""
}

func (p *parser) buildObservability(r *rawObservability, o *Observability) error {
	at := func(k string) tomlPath { return tomlPath{"observability", k} }
	o.Traces = deref(r.Traces, DefaultTraces)
	o.CaptureContent = deref(r.CaptureContent, false)
	if r.TraceSteps != nil {
		if n := *r.TraceSteps; n < 1 || n > 1_000_000 {
			return p.fail(at("trace_steps"), fmt.Sprintf("[observability].trace_steps must be between 1 and 1000000 (the steps one run's trace keeps): %d", n))
		}
		o.TraceSteps = int(*r.TraceSteps)
	}
	if r.OTLPEndpoint != nil && *r.OTLPEndpoint != "" {
		u, err := url.Parse(*r.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return p.fail(at("otlp_endpoint"), fmt.Sprintf("[observability].otlp_endpoint must be an http or https URL such as \"http://127.0.0.1:4318/v1/traces\": %q", *r.OTLPEndpoint))
		}
		o.OTLPEndpoint = *r.OTLPEndpoint
	}
	return nil
}
