package otlp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/otlp"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/runtrace"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// receiver is an in-process OTLP/HTTP collector: it decodes each export
// request's protobuf and keeps the spans.
type receiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
	paths []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var ex collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.paths = append(r.paths, req.URL.Path)
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

const twoSections = "---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n# T\n\n" +
	"```lua\nmodels.default(\"writer\", \"A general assistant model\")\ntools.need(\"search\", \"Search the web and return a list of results (title, url, description).\")\ntools.always(\"search\")\n```\n" +
	"\n## A\n\nFind things.\n\n" +
	"\n## B\n\n```lua\nlog(\"fanning out\")\nreturn table.concat(fanout(\"## W\", {\"x\", \"y\"}), \",\")\n```\n" +
	"\n## W\n\n---\n\n```lua\nreturn item\n```\n"

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// exportRun runs twoSections traced, with content capture as given, and
// returns what the in-process collector received once the exporter has
// shut down.
func exportRun(t *testing.T, capture bool) *receiver {
	t.Helper()
	recv := &receiver{}
	collector := httptest.NewServer(recv)
	t.Cleanup(collector.Close)
	exp, err := otlp.New(context.Background(), otlp.Options{Endpoint: collector.URL + "/v1/traces", ServiceVersion: "test", CaptureContent: capture})
	if err != nil {
		t.Fatal(err)
	}
	c, search := servertest.SearchingGateway(t)
	p, err := prompt.Parse([]byte(twoSections))
	if err != nil {
		t.Fatal(err)
	}
	rec := runtrace.NewRecorder("run-1", "t", runtrace.Options{NewSink: exp.NewSink, CaptureContent: capture})
	res, err := engine.Run(context.Background(), p, "", nil, engine.Options{Client: c, Tools: []tools.Tool{search}, Tracer: rec,
		CaptureContent: capture, Models: []gateway.Model{servertest.TestModel}})
	if err != nil || res.Value != "x,y" {
		t.Fatalf("run = %q, %v", res.Value, err)
	}
	rec.Finish("completed", "", res.Turns, runtrace.Tokens{Prompt: res.Tokens.PromptTokens, Completion: res.Tokens.CompletionTokens})
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	return recv
}

func TestExport_CaptureContentAttachesText(t *testing.T) {
	recv := exportRun(t, true)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	var input, args, logText string
	for _, s := range recv.spans {
		switch {
		case strings.HasPrefix(s.Name, "chat ") && input == "":
			input = attr(s, "gen_ai.input.messages")
		case strings.HasPrefix(s.Name, "execute_tool "):
			args = attr(s, "gen_ai.tool.call.arguments")
		case s.Name == "section B" && len(s.Events) == 1 && len(s.Events[0].Attributes) == 1:
			logText = s.Events[0].Attributes[0].Value.GetStringValue()
		}
	}
	if !strings.Contains(input, `"content":"Find things."`) || args != `{"query":"go"}` || logText != "fanning out" {
		t.Fatalf("captured input %q, arguments %q, log %q", input, args, logText)
	}
}

func TestExport_SpanTreeOfARun(t *testing.T) {
	recv := exportRun(t, false)
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.paths) == 0 || recv.paths[0] != "/v1/traces" {
		t.Fatalf("exports went to %v", recv.paths)
	}
	byID := map[string]*tracepb.Span{}
	for _, s := range recv.spans {
		byID[string(s.SpanId)] = s
	}
	children := map[string][]string{}
	var root *tracepb.Span
	for _, s := range recv.spans {
		if len(s.ParentSpanId) == 0 {
			root = s
			continue
		}
		if _, ok := byID[string(s.ParentSpanId)]; !ok {
			t.Fatalf("span %q has a parent that was not exported", s.Name)
		}
		children[string(s.ParentSpanId)] = append(children[string(s.ParentSpanId)], s.Name)
	}
	if root == nil || root.Name != "invoke_agent t" {
		t.Fatalf("root = %v", root)
	}
	var lines []string
	var walk func(s *tracepb.Span, depth int)
	walk = func(s *tracepb.Span, depth int) {
		lines = append(lines, strings.Repeat("  ", depth)+s.Name)
		var kids []*tracepb.Span
		for _, k := range recv.spans {
			if string(k.ParentSpanId) == string(s.SpanId) {
				kids = append(kids, k)
			}
		}
		slices.SortStableFunc(kids, func(a, b *tracepb.Span) int {
			if a.StartTimeUnixNano != b.StartTimeUnixNano {
				return int(int64(a.StartTimeUnixNano) - int64(b.StartTimeUnixNano))
			}
			return strings.Compare(a.Name, b.Name)
		})
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	walk(root, 0)
	want := []string{
		"invoke_agent t",
		"  h1 T",
		"  section A",
		"    chat test-model",
		"    execute_tool search",
		"    chat test-model",
		"  section B",
		"    fanout_arm W",
		"    fanout_arm W",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("span tree:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range recv.spans {
		switch {
		case strings.HasPrefix(s.Name, "chat "):
			if attr(s, "gen_ai.operation.name") != "chat" || attr(s, "gen_ai.request.model") != "test-model" ||
				s.Kind != tracepb.Span_SPAN_KIND_CLIENT || !hasInt(s, "gen_ai.usage.input_tokens") || !hasInt(s, "gen_ai.usage.output_tokens") {
				t.Errorf("chat span %v", s)
			}
			if hasKey(s, "gen_ai.input.messages") {
				t.Error("a chat span carries messages without capture")
			}
		case strings.HasPrefix(s.Name, "execute_tool "):
			if attr(s, "gen_ai.operation.name") != "execute_tool" || attr(s, "gen_ai.tool.name") != "search" {
				t.Errorf("tool span %v", s)
			}
		case s.Name == "section B":
			if len(s.Events) != 1 || s.Events[0].Name != "promptforge.log" || len(s.Events[0].Attributes) != 0 {
				t.Errorf("section B events = %v, want one log event without its text", s.Events)
			}
		}
		if s.EndTimeUnixNano < s.StartTimeUnixNano {
			t.Errorf("span %s ends before it starts", s.Name)
		}
	}
	if attr(root, "gen_ai.operation.name") != "invoke_agent" || attr(root, "gen_ai.conversation.id") != "run-1" {
		t.Errorf("root attributes %v", root.Attributes)
	}
}

func hasKey(s *tracepb.Span, key string) bool {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return true
		}
	}
	return false
}

func hasInt(s *tracepb.Span, key string) bool {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetIntValue() > 0
		}
	}
	return false
}
