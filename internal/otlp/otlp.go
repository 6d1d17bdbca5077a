// Package otlp exports run traces as OpenTelemetry spans over OTLP/HTTP
// (issue #15). Each run is one trace: an invoke_agent span for the run, a
// span per unit the engine entered (the H1, sections, fanout arms), a chat
// span per model turn and an execute_tool span per tool call, named and
// attributed after the OpenTelemetry GenAI semantic conventions
// (gen_ai.operation.name, gen_ai.request.model, gen_ai.usage.input_tokens,
// gen_ai.tool.name, ...); log() lines are span events. Text (messages, tool
// arguments and results, log lines) is attached only with
// [observability] capture_content.
//
// It is built from a run's runtrace.Recorder through its Sink, so the
// spans and the status page's timeline are one reading of the engine's
// events. Off (no endpoint), nothing of this package is built: no
// provider, no exporter, no goroutine.
//
// # Goroutines
//
// The SDK's batch span processor runs one goroutine, started by [New] and
// stopped by [Exporter.Shutdown], which app.Boot calls once serving has
// ended (after the runs stopped), flushing what is queued.
package otlp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// Options configure an Exporter.
type Options struct {
	// Endpoint is the OTLP/HTTP traces URL ("http://host:4318/v1/traces");
	// "" leaves it to the OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
	// OTEL_EXPORTER_OTLP_ENDPOINT variables (and the rest of the standard
	// OTEL_EXPORTER_OTLP_* ones: headers, timeout, compression), which the
	// OpenTelemetry exporter reads itself.
	Endpoint string
	// CaptureContent attaches text: messages, tool arguments and results,
	// log lines.
	CaptureContent bool
	// ServiceVersion is the service.version resource attribute.
	ServiceVersion string
	// BatchTimeout is how long spans wait to be sent together; 0 is the
	// SDK's default (5 s).
	BatchTimeout time.Duration
}

// EnvConfigured reports whether the standard variables name an endpoint.
func EnvConfigured(lookup func(string) (string, bool)) bool {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" {
			return true
		}
	}
	return false
}

// Exporter turns run traces into spans and sends them.
type Exporter struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	capture  bool
}

// New builds the exporter; it contacts nothing until the first batch.
func New(ctx context.Context, o Options) (*Exporter, error) {
	var opts []otlptracehttp.Option
	if o.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(o.Endpoint))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("set up the OTLP trace exporter: %w; check [observability].otlp_endpoint and the OTEL_EXPORTER_OTLP_* variables", err)
	}
	var batch []sdktrace.BatchSpanProcessorOption
	if o.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(o.BatchTimeout))
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", "promptforge-mcp-server"),
		attribute.String("service.version", o.ServiceVersion),
	)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, batch...), sdktrace.WithResource(res))
	return &Exporter{provider: tp, tracer: tp.Tracer("github.com/promptforge-go/promptforge"), capture: o.CaptureContent}, nil
}

// Shutdown sends what is queued and stops the exporter's goroutine.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if err := e.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("flush the OTLP spans: %w", err)
	}
	return nil
}

// NewSink is a runtrace.Options.NewSink: one run's span builder.
func (e *Exporter) NewSink() runtrace.Sink {
	return &sink{e: e, spans: map[*runtrace.Step]trace.Span{}}
}

// sink builds one run's spans. Its recorder serialises the calls.
type sink struct {
	e      *Exporter
	start  time.Time
	run    trace.Span
	runCtx context.Context
	spans  map[*runtrace.Step]trace.Span
	ctxs   map[*runtrace.Step]context.Context
}

func (s *sink) at(ms float64) time.Time {
	return s.start.Add(time.Duration(ms * float64(time.Millisecond)))
}

func (s *sink) RunStarted(t *runtrace.Trace) {
	s.start = t.Started
	s.ctxs = map[*runtrace.Step]context.Context{}
	s.runCtx, s.run = s.e.tracer.Start(context.Background(), "invoke_agent "+t.Prompt,
		trace.WithTimestamp(t.Started), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", t.Prompt),
			attribute.String("gen_ai.conversation.id", t.RunID),
			attribute.String("promptforge.run_id", t.RunID),
		))
}

func (s *sink) RunEnded(t *runtrace.Trace) {
	s.run.SetAttributes(
		attribute.Int("gen_ai.usage.input_tokens", t.Tokens.Prompt),
		attribute.Int("gen_ai.usage.output_tokens", t.Tokens.Completion),
		attribute.Int("promptforge.turns", t.Turns),
	)
	if t.Status == "failed" {
		s.run.SetStatus(codes.Error, t.Error)
	}
	s.run.End(trace.WithTimestamp(s.start.Add(time.Duration(t.DurationMS) * time.Millisecond)))
}

func (s *sink) parentCtx(parent *runtrace.Step) context.Context {
	if parent != nil {
		if c, ok := s.ctxs[parent]; ok {
			return c
		}
	}
	return s.runCtx
}

func (s *sink) StepStarted(st, parent *runtrace.Step) {
	ctx := s.parentCtx(parent)
	if st.Kind == runtrace.KindLog {
		// A log line is an event of the span it was logged in, added
		// when it ends (at once), which is when its text is set.
		s.ctxs[st] = ctx
		return
	}
	name, kind, attrs := describe(st)
	c, span := s.e.tracer.Start(ctx, name, trace.WithTimestamp(s.at(st.StartMS)), trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	s.spans[st], s.ctxs[st] = span, c
}

func (s *sink) StepEnded(st *runtrace.Step) {
	if st.Kind == runtrace.KindLog {
		var attrs []attribute.KeyValue
		if s.e.capture && st.Message != "" {
			attrs = append(attrs, attribute.String("promptforge.log.message", st.Message))
		}
		trace.SpanFromContext(s.ctxs[st]).AddEvent("promptforge.log", trace.WithTimestamp(s.at(st.StartMS)), trace.WithAttributes(attrs...))
		delete(s.ctxs, st)
		return
	}
	span, ok := s.spans[st]
	if !ok {
		return
	}
	delete(s.spans, st)
	delete(s.ctxs, st)
	if in := st.Info; in != nil {
		span.SetAttributes(s.ended(st, in)...)
	}
	if st.Status != runtrace.StatusOK {
		msg := st.Status
		if st.Info != nil && st.Info.Err != "" {
			msg = st.Info.Err
		}
		if st.Status == runtrace.StatusFailed {
			span.SetStatus(codes.Error, msg)
		}
		span.SetAttributes(attribute.String("promptforge.status", st.Status))
	}
	span.End(trace.WithTimestamp(s.at(st.EndMS)))
}

// describe names a step's span as the GenAI conventions do: "chat <model>"
// and "execute_tool <tool>"; units are spans of ours.
func describe(st *runtrace.Step) (string, trace.SpanKind, []attribute.KeyValue) {
	switch st.Kind {
	case runtrace.KindTurn:
		return "chat " + st.Name, trace.SpanKindClient, []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "chat"),
			attribute.String("gen_ai.request.model", st.Name),
		}
	case runtrace.KindTool:
		return "execute_tool " + st.Name, trace.SpanKindInternal, []attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", st.Name),
		}
	}
	attrs := []attribute.KeyValue{
		attribute.String("promptforge.unit.kind", st.Kind),
		attribute.String("promptforge.section.name", st.Name),
		attribute.String("promptforge.section.via", st.Via),
	}
	if st.Info != nil && st.Info.Index > 0 {
		attrs = append(attrs, attribute.Int("promptforge.fanout.index", st.Info.Index), attribute.Int("promptforge.fanout.size", st.Info.Of))
	}
	return st.Kind + " " + st.Name, trace.SpanKindInternal, attrs
}

// ended is what a turn or tool call measured, as attributes.
func (s *sink) ended(st *runtrace.Step, in *runtrace.Info) []attribute.KeyValue {
	var out []attribute.KeyValue
	switch st.Kind {
	case runtrace.KindTurn:
		out = append(out, attribute.String("gen_ai.response.model", in.Model))
		if in.Finish != "" {
			out = append(out, attribute.StringSlice("gen_ai.response.finish_reasons", []string{in.Finish}))
		}
		if st.Tokens != nil {
			out = append(out, attribute.Int("gen_ai.usage.input_tokens", st.Tokens.Prompt), attribute.Int("gen_ai.usage.output_tokens", st.Tokens.Completion))
		}
		out = append(out, attribute.Int("promptforge.request.bytes", in.PromptBytes), attribute.Int("promptforge.reply.bytes", in.ReplyBytes))
		if in.ErrKind != "" {
			out = append(out, attribute.String("error.type", strings.ReplaceAll(in.ErrKind, " ", "_")))
		}
		if s.e.capture {
			if in.Prompt != "" {
				out = append(out, attribute.String("gen_ai.input.messages", messages("user", in.Prompt)))
			}
			if in.Reply != "" {
				out = append(out, attribute.String("gen_ai.output.messages", messages("assistant", in.Reply)))
			}
		}
	case runtrace.KindTool:
		out = append(out, attribute.Int("promptforge.tool.result.bytes", in.ResultBytes), attribute.StringSlice("promptforge.tool.argument_keys", in.ArgKeys))
		if in.Err != "" {
			out = append(out, attribute.String("error.type", "tool_error"))
		}
		if s.e.capture {
			if in.Arguments != "" {
				out = append(out, attribute.String("gen_ai.tool.call.arguments", in.Arguments))
			}
			if in.Result != "" {
				out = append(out, attribute.String("gen_ai.tool.call.result", in.Result))
			}
		}
	}
	return out
}

// messages is one message in the GenAI conventions' JSON form.
func messages(role, text string) string {
	b, _ := json.Marshal([]map[string]any{{"role": role, "parts": []map[string]string{{"type": "text", "content": text}}}})
	return string(b)
}
