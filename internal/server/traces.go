package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// Run traces on the server side: every run's engine tracer is the metrics'
// (tokens by model, gateway errors by kind) and, with [observability]
// traces on, the run's recorder (which hands the metrics their events),
// whose trace check_run's include_trace, the trace JSON and the status page
// read. launch opens each run's trace and hands the recorder to the
// registry with the run (runs.Registry.LaunchWith); runBody enters it and
// ends it, and rewinds it when a speculative attempt stops. Over the in-memory run store the registry keeps the recorder in
// the run's record, so a trace is found by the record's map and lives
// exactly as long as the record (retain_completed, the count and byte
// bounds); over a shared store, which cannot hold it, the book keeps this
// replica's traces with the registry's retention.

// Trace is run id's trace, while its record is retained; false when there
// is none (an unknown or evicted run, one another replica ran, since traces
// are not in the shared run store, or traces off).
func (s *Server) Trace(id string) (runtrace.Trace, bool) {
	if s.traces == nil {
		return runtrace.Trace{}, false
	}
	if !s.tracesInRecords {
		return s.traces.Get(id)
	}
	if rec := s.recorder(id); rec != nil {
		return rec.Snapshot(), true
	}
	return runtrace.Trace{}, false
}

// recorder is the recorder the registry keeps with run id's record (traces
// in records); nil when there is none.
func (s *Server) recorder(id string) *runtrace.Recorder {
	v, ok := s.runs.View(id)
	if !ok {
		return nil
	}
	rec, _ := v.Local.(*runtrace.Recorder)
	return rec
}

// traceRuns are the runs in flight and the recent finished ones, as the
// status page lists them.
func (s *Server) traceRuns(recent int) (inFlight, finished []runtrace.Summary) {
	if !s.tracesInRecords {
		return s.traces.Runs(recent)
	}
	live, done := s.runs.Locals(recent)
	ended := recorders(done)
	// A run whose terminal record has just been written may be read both
	// in flight and finished: it is finished.
	going := slices.DeleteFunc(recorders(live), func(r *runtrace.Recorder) bool { return slices.Contains(ended, r) })
	return runtrace.Summaries(going, ended)
}

func recorders(locals []any) []*runtrace.Recorder {
	out := make([]*runtrace.Recorder, 0, len(locals))
	for _, l := range locals {
		if rec, ok := l.(*runtrace.Recorder); ok {
			out = append(out, rec)
		}
	}
	return out
}

// traceTokensOf is a record's token counts as a trace states them.
func traceTokensOf(t runs.Tokens) runtrace.Tokens {
	return runtrace.Tokens{Prompt: int(t.Prompt), Completion: int(t.Completion)}
}

// restateTrace restates the header of a failed run's trace in its record's
// words (see the registry's OnTerminal in server.go).
func (s *Server) restateTrace(res runs.Result) {
	tokens := traceTokensOf(res.Tokens)
	if !s.tracesInRecords {
		s.traces.Finish(res.RunID, string(res.Status), res.Error, int(res.Turns), tokens)
		return
	}
	if rec := s.recorder(res.RunID); rec != nil {
		rec.Finish(string(res.Status), res.Error, int(res.Turns), tokens)
	}
}

// checkRunTrace is check_run's reply with include_trace: the record with a
// "trace" key (null when there is none) in structuredContent, and the
// trace JSON as a second text block after the record's text.
func (s *Server) checkRunTrace(res runs.Result) (*mcp.CallToolResult, error) {
	out, err := runResult(res)
	if err != nil {
		return nil, err
	}
	traceJSON := []byte("null")
	if t, ok := s.Trace(res.RunID); ok {
		if traceJSON, err = marshal(t); err != nil {
			return nil, internalError("render the run's trace: %v", err)
		}
	}
	body := out.StructuredContent.(json.RawMessage)
	withTrace := make([]byte, 0, len(body)+len(traceJSON)+10)
	withTrace = append(withTrace, body[:len(body)-1]...)
	withTrace = append(withTrace, `,"trace":`...)
	withTrace = append(withTrace, traceJSON...)
	withTrace = append(withTrace, '}')
	out.StructuredContent = json.RawMessage(withTrace)
	out.Content = append(out.Content, &mcp.TextContent{Text: string(traceJSON)})
	return out, nil
}

// TraceHandler serves GET <prefix><run id> as the run's trace JSON (404 for
// an unknown run). The transport mounts it behind the bearer check.
func (s *Server) TraceHandler(prefix string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, prefix), ".json")
		t, ok := s.Trace(id)
		if !ok {
			http.Error(w, "no trace for run "+id+": it is unknown, evicted past retain_completed, run by another replica (a trace stays on the replica that ran the run; ask that one), or traces are off ([observability].traces)", http.StatusNotFound)
			return
		}
		body, err := marshal(t)
		if err != nil {
			http.Error(w, "render the trace: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
	})
}
