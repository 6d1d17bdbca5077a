package server

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// Run traces on the server side: every run's engine tracer is the metrics'
// (tokens by model, gateway errors by kind) and, with [observability]
// traces on, the run's recorder in the book (which hands the metrics their
// events), whose traces check_run's include_trace, the trace JSON and the
// status page read. runFunc opens and closes each run's trace.

// Trace is run id's trace, while its record is retained; false when there
// is none (an unknown or evicted run, one another replica ran, since traces
// are not in the shared run store, or traces off).
func (s *Server) Trace(id string) (runtrace.Trace, bool) {
	if s.traces == nil {
		return runtrace.Trace{}, false
	}
	return s.traces.Get(id)
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
