package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runtrace"
)

// tracedHarness is a server with traces on, its gateway and its metrics.
func tracedHarness(t *testing.T, capture bool) (*harness, *gatewaytest.Server, *Metrics) {
	g, c := tcpGateway(t)
	m := NewMetrics()
	h := newHarness(t, fixture{opts: func(o *Options) {
		withGateway(c)(o)
		o.Metrics = m
		o.Tracing = &runtrace.Options{CaptureContent: capture}
	}})
	return h, g, m
}

func TestCheckRun_IncludeTraceAddsTheTrace(t *testing.T) {
	h, g, _ := tracedHarness(t, false)
	g.Enqueue(gatewaytest.Text("spoken").WithUsage(9, 4))
	run := h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"})
	id := structuredOf(t, run)["run_id"].(string)

	plain := h.ok(ToolCheckRun, map[string]any{"run_id": id})
	if _, has := structuredOf(t, plain)["trace"]; has || len(plain.Content) != 1 {
		t.Fatalf("check_run without include_trace changed: %+v", plain)
	}
	same := h.ok(ToolCheckRun, map[string]any{"run_id": id, "include_trace": false})
	a, _ := json.Marshal(plain)
	b, _ := json.Marshal(same)
	if string(a) != string(b) {
		t.Fatalf("include_trace false differs from no include_trace:\n%s\n%s", a, b)
	}

	res := h.ok(ToolCheckRun, map[string]any{"run_id": id, "include_trace": true})
	tr, ok := structuredOf(t, res)["trace"].(map[string]any)
	if !ok {
		t.Fatalf("no trace object in %v", structuredOf(t, res))
	}
	steps := tr["steps"].([]any)
	var turn map[string]any
	for _, s := range steps {
		if s := s.(map[string]any); s["kind"] == runtrace.KindTurn {
			turn = s
		}
	}
	if tr["status"] != "completed" || turn == nil || turn["name"] != testModel.ID || turn["tokens"].(map[string]any)["prompt"] != 9.0 {
		t.Fatalf("trace = %v", tr)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[1].(*mcp.TextContent).Text, `"kind":"model_turn"`) {
		// The second block is the trace JSON, for clients that read text.
		t.Fatalf("content = %+v", res.Content)
	}
	if strings.Contains(string(mustJSON(t, tr)), "Say something") || strings.Contains(string(mustJSON(t, tr)), "spoken") {
		t.Fatal("the trace holds prompt or reply text without capture_content")
	}
	if we := h.protocolError(ToolCheckRun, map[string]any{"run_id": id, "include_trace": "yes"}); !strings.Contains(we.Message, "include_trace must be true or false") {
		t.Fatalf("error = %v", we)
	}
}

func TestCheckRun_IncludeTraceWithTracesOffIsNull(t *testing.T) {
	h := newHarness(t, fixture{})
	id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))["run_id"].(string)
	res := h.ok(ToolCheckRun, map[string]any{"run_id": id, "include_trace": true})
	if tr, has := structuredOf(t, res)["trace"]; !has || tr != nil {
		t.Fatalf("trace = %v (present %v), want null", tr, has)
	}
}

func TestTraceHandler_ServesTheTraceJSON(t *testing.T) {
	h, g, _ := tracedHarness(t, true)
	g.Enqueue(gatewaytest.Text("spoken"))
	id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"}))["run_id"].(string)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.srv.TraceHandler("/status/trace/").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(b)
	}
	code, body := get("/status/trace/" + id + ".json")
	var tr runtrace.Trace
	if err := json.Unmarshal([]byte(body), &tr); code != 200 || err != nil {
		t.Fatalf("%d %s %v", code, body, err)
	}
	if !tr.ContentCaptured || tr.RunID != id || !strings.Contains(body, `"reply":"spoken"`) || !strings.Contains(body, `"prompt":"Say something."`) {
		t.Fatalf("trace with capture = %s", body)
	}
	// With [runs].store, a run another replica ran is known to check_run
	// but has no trace here: the 404 says where it is.
	if code, body := get("/status/trace/nope.json"); code != http.StatusNotFound || !strings.Contains(body, "another replica") {
		t.Fatalf("unknown run: %d %s", code, body)
	}
}

func TestMetrics_PerPromptPerModelAndGatewayErrors(t *testing.T) {
	h, g, m := tracedHarness(t, false)
	metricsPerPromptPerModelAndGatewayErrors(t, h, g, m)
}

// With traces off the engine hands the metrics only the ends of turns
// (engine.Options.TraceTurnsOnly); the series are the same.
func TestMetrics_PerPromptPerModelAndGatewayErrorsWithTracesOff(t *testing.T) {
	g, c := tcpGateway(t)
	m := NewMetrics()
	h := newHarness(t, fixture{opts: func(o *Options) {
		withGateway(c)(o)
		o.Metrics = m
	}})
	metricsPerPromptPerModelAndGatewayErrors(t, h, g, m)
}

func metricsPerPromptPerModelAndGatewayErrors(t *testing.T, h *harness, g *gatewaytest.Server, m *Metrics) {
	g.Enqueue(gatewaytest.Text("spoken").WithUsage(9, 4), gatewaytest.Status(503, `{"error":"busy"}`))
	h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"})
	h.ok(ToolRunPrompt, map[string]any{"prompt": "summarize"})
	h.ok(ToolRunPrompt, map[string]any{"prompt": "echo"})
	text := scrape(t, m)
	for _, want := range []string{
		`promptforge_prompt_runs_total{prompt="summarize",status="completed"} 1`,
		`promptforge_prompt_runs_total{prompt="summarize",status="failed"} 1`,
		`promptforge_prompt_runs_total{prompt="echo",status="completed"} 1`,
		`promptforge_prompt_run_duration_seconds_count{prompt="summarize"} 2`,
		`promptforge_model_tokens_total{direction="prompt",model="` + testModel.ID + `"} 9`,
		`promptforge_model_tokens_total{direction="completion",model="` + testModel.ID + `"} 4`,
		`promptforge_gateway_errors_total{kind="status"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The run's body is its trace's one owner: it ends the trace with the
// outcome the record gets, in the registry's words, before the record is
// terminal; when the body does not return (a panic), its deferred end
// still does, as the record says.
func TestTrace_EndsAsTheRecordDoes(t *testing.T) {
	traced := func(o *Options) { o.Tracing = &runtrace.Options{} }
	same := func(t *testing.T, h *harness, id, wantErr string) {
		t.Helper()
		rec, ok := h.srv.Registry().Check(id)
		if !ok || rec.Status != runs.StatusFailed || !strings.Contains(rec.Error, wantErr) {
			t.Fatalf("record %+v, want failed saying %q", rec, wantErr)
		}
		tr, ok := h.srv.Trace(id)
		if !ok || tr.Status != string(rec.Status) || tr.Error != rec.Error {
			t.Fatalf("trace %q %q, want the record's %q %q", tr.Status, tr.Error, rec.Status, rec.Error)
		}
	}
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			g := newMemGateway(t)
			observing, started := runIDs()
			h := speakingHarness(t, g, Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 50 * time.Second, ReplyDeadline: 300 * time.Second, RetainCompleted: time.Hour}, observing, traced)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if _, err := h.callOn(ctx, h.session, ToolRunPrompt, map[string]any{"prompt": "speak"}); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the call was abandoned, got %v", err)
			}
			synctest.Wait()
			ids := started()
			if len(ids) != 1 {
				t.Fatalf("started %d runs", len(ids))
			}
			same(t, h, ids[0], runs.ErrCallerCancelled.Error())
		})
	})
	t.Run("panicked", func(t *testing.T) {
		// The observer is called on the run's goroutine: its panic
		// unwinds through the run's body.
		h := newHarness(t, fixture{opts: func(o *Options) {
			traced(o)
			o.Observer = engine.ObserverFunc(func(ev engine.Event) {
				if ev.Detail == engine.SectionStarted {
					panic("an observer's bug")
				}
			})
		}})
		id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))["run_id"].(string)
		same(t, h, id, "the run did not finish: an observer's bug")
	})
}

// A traced run's record starts and ends at the instants its trace does:
// the trace's start is the record's (one clock reading, handed to the
// registry at launch), and its end, the start plus the trace's duration, is
// the record's Finished and elapsed time. The trace's clock here steps a
// quarter of a second a reading, so a record that read the real clock
// itself would differ from it by far more than the milliseconds shown.
func TestTrace_StartsAndEndsWithItsRecord(t *testing.T) {
	base := time.Now()
	var readings atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(readings.Add(1)) * 250 * time.Millisecond) }
	h := newHarness(t, fixture{opts: func(o *Options) { o.Tracing = &runtrace.Options{Now: clock} }})
	id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))["run_id"].(string)
	v, ok := h.srv.Registry().View(id)
	if !ok || v.Status != runs.StatusCompleted {
		t.Fatalf("record %+v, want completed", v)
	}
	tr, ok := h.srv.Trace(id)
	if !ok || tr.Status != string(runs.StatusCompleted) {
		t.Fatalf("trace %+v, want completed", tr)
	}
	if !tr.Started.Equal(v.Started) {
		t.Errorf("the trace started at %v, the record at %v: want the same reading", tr.Started, v.Started)
	}
	if tr.DurationMS < 250 || uint64(tr.DurationMS) != v.ElapsedMS {
		t.Errorf("the trace took %d ms, the record %d ms: want the same, on the trace's clock", tr.DurationMS, v.ElapsedMS)
	}
	if want := v.Started.Add(time.Duration(tr.DurationMS) * time.Millisecond); !v.Finished.Equal(want) {
		t.Errorf("the record finished at %v, want the trace's end %v", v.Finished, want)
	}
}

// endHook is a trace sink that holds the run's goroutine in RunEnded, the
// moment its body ends the trace, until the test lets it go: a sink that
// exports takes that long anyway.
type endHook struct {
	ended   chan string
	release chan struct{}
}

func (s endHook) RunStarted(*runtrace.Trace)      {}
func (s endHook) StepStarted(_, _ *runtrace.Step) {}
func (s endHook) StepEnded(*runtrace.Step)        {}
func (s endHook) RunEnded(t *runtrace.Trace) {
	s.ended <- t.RunID
	<-s.release
}

// A cancellation that reaches a failing run after its body ended the trace
// but before the registry wrote the record still changes the record's
// error (runs.FailureText puts the cause in front); the trace must end up
// saying what the record says, as it did when the terminal record restated
// every trace.
func TestTrace_AgreesWithARecordACancellationRewordedLate(t *testing.T) {
	hook := endHook{ended: make(chan string, 1), release: make(chan struct{})}
	h := newHarness(t, fixture{opts: func(o *Options) {
		o.Tracing = &runtrace.Options{NewSink: func() runtrace.Sink { return hook }}
	}})
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := h.call(ToolRunPrompt, map[string]any{"prompt": "explode"})
		if err != nil {
			t.Errorf("run_prompt explode: protocol error %v", err)
		}
		done <- res
	}()
	id := <-hook.ended
	h.srv.Registry().Cancel(id)
	close(hook.release)
	<-done
	rec, ok := h.srv.Registry().Check(id)
	if !ok || rec.Status != runs.StatusFailed || !strings.Contains(rec.Error, runs.ErrRunCancelled.Error()) {
		t.Fatalf("record %+v, want failed and naming the late cancellation", rec)
	}
	tr, ok := h.srv.Trace(id)
	if !ok || tr.Status != string(rec.Status) || tr.Error != rec.Error {
		t.Errorf("trace %q %q, want the record's %q %q", tr.Status, tr.Error, rec.Status, rec.Error)
	}
}

// Over the in-memory run store a run's trace is kept in its record, so
// the trace is readable (check_run's include_trace, the trace JSON, the
// status page's recent runs) exactly as long as the record: one instant
// before retain_completed ends both are there, at its end both are gone.
// The count and byte bounds are the record's too
// (runs.TestLocalLivesExactlyAsLongAsItsRecord).
func TestTrace_LivesExactlyAsLongAsItsRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const retain = time.Minute
		h := speakingHarness(t, newMemGateway(t), Limits{MaxConcurrentRuns: 1, AdmissionTimeout: time.Second, ReplyDeadline: time.Minute, RetainCompleted: retain},
			func(o *Options) { o.Tracing = &runtrace.Options{} })
		id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))["run_id"].(string)
		both := func(when string, want bool) {
			t.Helper()
			_, rec := h.srv.Registry().Check(id)
			tr, trace := h.srv.Trace(id)
			_, recent := h.srv.traceRuns(10)
			if rec != want || trace != want || (len(recent) == 1) != want || (trace && (tr.RunID != id || tr.Status != string(runs.StatusCompleted))) {
				t.Errorf("%s: record %v, trace %v (%s %s), recent %v; want all %v", when, rec, trace, tr.RunID, tr.Status, recent, want)
			}
			res, err := h.call(ToolCheckRun, map[string]any{"run_id": id, "include_trace": true})
			switch {
			case err != nil:
				t.Fatalf("%s: check_run: %v", when, err)
			case res.IsError:
				if want {
					t.Errorf("%s: check_run refused: %+v", when, res.Content)
				}
			case !want:
				t.Errorf("%s: check_run still knows the run", when)
			default:
				if _, has := structuredOf(t, res)["trace"].(map[string]any); !has {
					t.Errorf("%s: check_run gave no trace: %v", when, structuredOf(t, res))
				}
			}
		}
		both("at its end", true)
		time.Sleep(retain - time.Nanosecond)
		both("one instant before retain_completed", true)
		time.Sleep(time.Nanosecond)
		both("at retain_completed", false)
	})
}

// sharedStore stands for a shared run store ([runs].store): it keeps the
// records of the memory store it wraps but, like the PostgreSQL one,
// nothing of what the process keeps with them (runs.Stored.Local).
type sharedStore struct{ runs.Store }

func (s sharedStore) Register(ctx context.Context, rec runs.Stored) error {
	rec.Local = nil
	return s.Store.Register(ctx, rec)
}

func (s sharedStore) Finish(ctx context.Context, rec runs.Stored) (runs.Stored, error) {
	rec.Local = nil
	return s.Store.Finish(ctx, rec)
}

// Over a shared run store, which cannot hold a trace, the book keeps this
// replica's traces: a finished run's trace is still read by check_run,
// the trace JSON and the status page; and a launch the store refuses
// leaves no trace behind in flight.
func TestTrace_OverASharedStoreTheBookKeepsIt(t *testing.T) {
	var store runs.Store = sharedStore{runs.NewMemoryStore(runs.RetentionOptions{RetainCompleted: time.Hour})}
	h := newHarness(t, fixture{opts: func(o *Options) {
		o.RunStore = store
		o.Tracing = &runtrace.Options{}
	}})
	id := structuredOf(t, h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}))["run_id"].(string)
	if tr, ok := h.srv.Trace(id); !ok || tr.RunID != id || tr.Status != string(runs.StatusCompleted) || len(tr.Steps) == 0 {
		t.Fatalf("trace %+v %v; want the finished run's", tr, ok)
	}
	if live, recent := h.srv.traceRuns(10); len(live) != 0 || len(recent) != 1 || recent[0].RunID != id {
		t.Fatalf("status page runs %+v %+v; want the one finished run", live, recent)
	}
	store = refusingStore{store}
	h2 := newHarness(t, fixture{opts: func(o *Options) {
		o.RunStore = store
		o.Tracing = &runtrace.Options{}
	}})
	if res := h2.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"}); !res.IsError {
		t.Fatalf("the refusing store's launch was not refused: %+v", res)
	}
	if live, recent := h2.srv.traceRuns(10); len(live) != 0 || len(recent) != 0 {
		t.Fatalf("status page runs %+v %+v after a refused launch; want none", live, recent)
	}
}
