package app

import (
	"context"
	"log/slog"
	"os"

	"github.com/promptforge-go/promptforge/internal/config"
	"github.com/promptforge-go/promptforge/internal/otlp"
	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// observability translates [observability] into the server's trace options
// and, when an endpoint is configured (in prompts.toml or the standard
// OTEL_EXPORTER_OTLP_* variables), the OTLP exporter. shutdown flushes the
// exporter; Boot calls it once the runs have stopped. With traces off
// nothing is built: the exporter reads the traces, so it is off too (and
// says so when an endpoint was set).
func observability(ctx context.Context, cfg *config.Config, lookup func(string) (string, bool), version string, logger *slog.Logger) (*runtrace.Options, func(context.Context), error) {
	o := cfg.Observability
	noop := func(context.Context) {}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	exporting := o.OTLPEndpoint != "" || otlp.EnvConfigured(lookup)
	if !o.Traces {
		if exporting {
			logger.Warn("run traces are off ([observability] traces = false), so no spans are exported over OTLP; set traces = true to export them")
		}
		return nil, noop, nil
	}
	opts := &runtrace.Options{MaxSteps: o.TraceSteps, CaptureContent: o.CaptureContent}
	if !exporting {
		return opts, noop, nil
	}
	exp, err := otlp.New(ctx, otlp.Options{Endpoint: o.OTLPEndpoint, CaptureContent: o.CaptureContent, ServiceVersion: version})
	if err != nil {
		return nil, noop, err
	}
	opts.NewSink = exp.NewSink
	logger.Info("exporting run traces over OTLP/HTTP", "endpoint", endpointForLog(o.OTLPEndpoint), "capture_content", o.CaptureContent)
	return opts, func(ctx context.Context) {
		if err := exp.Shutdown(ctx); err != nil {
			logger.Warn("the last run traces could not be exported", "error", err)
		}
	}, nil
}

func endpointForLog(configured string) string {
	if configured == "" {
		return "from OTEL_EXPORTER_OTLP_* variables"
	}
	return configured
}
