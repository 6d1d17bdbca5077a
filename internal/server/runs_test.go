package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/runs"
)

// What the handler does with a run that has to wait, or that outlasts the
// call which started it (the seed's five handler tests, plus the missing
// run id). Nothing waits on the real clock: deadlines and admission waits
// run on synctest's fake clock, and the prompt that must be slower than its
// deadline is held by a gateway that answers only when the test releases
// it.

// speakingHarness serves one prose prompt, "speak", against g.
// Each of more may set further options.
func speakingHarness(t testing.TB, g *memGateway, limits Limits, more ...func(*Options)) *harness {
	return newHarness(t, fixture{
		prompts: map[string]string{"speak.md": speakPrompt("speak"), "echo.md": luaPrompt("echo", "Return the arguments.", "return args")},
		limits:  limits,
		opts: func(o *Options) {
			o.Client = g.client
			o.Models = modelset.Static([]gateway.Model{testModel})
			for _, f := range more {
				f(o)
			}
		},
	})
}

// runIDs records the run id of every run a server started with
// observing as Options.Observer starts.
func runIDs() (observing func(*Options), started func() []string) {
	var mu sync.Mutex
	var ids []string
	observing = func(o *Options) {
		o.Observer = engine.ObserverFunc(func(ev engine.Event) {
			if ev.Detail == engine.RunStarted {
				mu.Lock()
				ids = append(ids, ev.Execution)
				mu.Unlock()
			}
		})
	}
	return observing, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), ids...)
	}
}

func TestAnAbandonedCallCancelsTheInFlightRunAndFreesItsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		observing, started := runIDs()
		h := speakingHarness(t, g, Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 50 * time.Second, ReplyDeadline: 300 * time.Second, RetainCompleted: time.Hour}, observing)

		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := h.callOn(ctx, h.session, ToolRunPrompt, map[string]any{"prompt": "speak"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the call was abandoned long before its 300s deadline, got %v", err)
		}
		// The run had reached the gateway, so what was abandoned was an
		// in-flight run, not one that failed before it started.
		select {
		case <-g.arrived:
		default:
			t.Fatal("the run never reached the gateway")
		}

		// Cancelling the call cancelled the run, which returned its slot:
		// a fresh admission is granted rather than refused after 50s.
		slot, err := h.srv.Registry().Admit(context.Background())
		if err != nil {
			t.Fatalf("a cancelled run frees its slot; a detached one would refuse this: %v", err)
		}
		slot.Release()
		// The slot is returned before the record is terminal (runs'
		// supervise), so the run may still be writing it: let it finish.
		synctest.Wait()

		ids := started()
		if len(ids) != 1 {
			t.Fatalf("started %d runs", len(ids))
		}
		rec, ok := h.srv.Registry().Check(ids[0])
		if !ok || rec.Status != runs.StatusFailed || !strings.Contains(rec.Error, runs.ErrCallerCancelled.Error()) {
			t.Fatalf("record %+v, want failed saying the caller cancelled", rec)
		}
	})
}

func TestCheckRunCollectsARunThatFinishedInsideItsDeadline(t *testing.T) {
	h := newHarness(t, fixture{})
	ran := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "hello"})
	id, _ := structuredOf(t, ran)["run_id"].(string)
	collected := h.ok(ToolCheckRun, map[string]any{"run_id": id})
	s := structuredOf(t, collected)
	if collected.IsError || s["status"] != "completed" || s["value"] != "hello" || textOf(t, collected) != "hello" {
		t.Fatalf("collected %v %q", s, textOf(t, collected))
	}
}

func TestARunThatOutlivesItsDeadlineIsReportedRunningAndKeepsGoing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		limits := defaultLimits()
		limits.ReplyDeadline = 50 * time.Millisecond
		h := speakingHarness(t, g, limits)

		start := time.Now()
		res := h.ok(ToolRunPrompt, map[string]any{"prompt": "speak"})
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("the reply came after %v, want exactly the 50ms deadline", waited)
		}
		s := structuredOf(t, res)
		if res.IsError || s["status"] != "running" || s["value"] != nil || s["turns"] != float64(0) {
			t.Fatalf("result %v", s)
		}
		if !strings.Contains(textOf(t, res), "check_run") {
			t.Fatalf("the caller is not told how to collect it: %q", textOf(t, res))
		}
		id := s["run_id"].(string)

		// The deadline detached the run rather than cancelling it.
		polled := h.ok(ToolCheckRun, map[string]any{"run_id": id})
		if polled.IsError || structuredOf(t, polled)["status"] != "running" {
			t.Fatalf("polled %v", structuredOf(t, polled))
		}

		g.Release()
		synctest.Wait()
		done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": id}))
		if done["status"] != "completed" || done["value"] != "eventually" || done["turns"] != float64(1) {
			t.Fatalf("after release %v", done)
		}
	})
}

func TestAnUnknownRunIDIsAResultNamingTheRetentionWindow(t *testing.T) {
	h := newHarness(t, fixture{})
	res := h.ok(ToolCheckRun, map[string]any{"run_id": strings.Repeat("0", 32)})
	if !res.IsError || res.StructuredContent != nil {
		t.Fatalf("want an isError text result, got %+v", res)
	}
	if text := textOf(t, res); !strings.Contains(text, "1h") {
		t.Fatalf("the window is not named: %q", text)
	}
}

func TestAMissingRunIDIsAProtocolError(t *testing.T) {
	h := newHarness(t, fixture{})
	res, err := h.session.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolCheckRun})
	if err == nil {
		t.Fatalf("an absent run_id is the client's bug, got %+v", res)
	}
	if we := wireError(t, err); we.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("code %d", we.Code)
	}
}

func TestACallThatCannotGetASlotIsRefusedWithTheWaitItSpent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, fixture{limits: Limits{MaxConcurrentRuns: 1, AdmissionTimeout: 5 * time.Second, ReplyDeadline: 240 * time.Second, RetainCompleted: time.Hour}})
		slot, err := h.srv.Registry().Admit(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer slot.Release()

		start := time.Now()
		res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "hello"})
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("refused after %v, want the 5s admission timeout", waited)
		}
		if !res.IsError || res.StructuredContent != nil {
			t.Fatalf("nothing ran, so there is no run to report: %+v", res)
		}
		if text := textOf(t, res); !strings.Contains(text, "5s") {
			t.Fatalf("the wait is not named: %q", text)
		}
	})
}

// A run whose model need binds nothing names the [models] tables that
// match no served id (the model set's snapshot carries them to the engine).
func TestAModelNeedThatBindsNothingNamesTheUnmatchedTables(t *testing.T) {
	g := newMemGateway(t)
	h := speakingHarness(t, g, defaultLimits(), func(o *Options) {
		set := modelset.StaticCatalog("http://127.0.0.1:11434/v1", gateway.Catalog{
			Skipped:   []gateway.SkippedModel{{ID: "llama3.1:latest", Reason: "no description"}},
			Unmatched: []gateway.UnmatchedOverride{{ID: "llama3.1:8b", Closest: "llama3.1:latest"}},
		})
		o.Models = set
	})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "speak"})
	want := `no served model is "llama3.1:8b"; the server lists "llama3.1:latest": rename the table to [models."llama3.1:latest"]`
	if text := textOf(t, res); !res.IsError || !strings.Contains(text, want) {
		t.Fatalf("result (error %v) %s\nwant it to contain %s", res.IsError, text, want)
	}
}

// refusingStore is a run store that cannot write: what a PostgreSQL store
// ([runs].store) answers while the database is unreachable. Reads go to
// the memory store it wraps.
type refusingStore struct{ runs.Store }

func (refusingStore) Register(context.Context, runs.Stored) error {
	return errors.New("write the running record: dial tcp 127.0.0.1:5432: connect: connection refused")
}

// A launch the run store does not record is refused (mcp-server §5.4): no
// run exists, so the caller gets no run id check_run would not know, and
// no metric counts a run.
func TestRunStoreDownRefusesTheLaunch(t *testing.T) {
	m := NewMetrics()
	h := newHarness(t, fixture{opts: func(o *Options) {
		o.RunStore = refusingStore{runs.NewMemoryStore(runs.RetentionOptions{RetainCompleted: time.Hour})}
		o.Metrics = m
	}})
	res := h.ok(ToolRunPrompt, map[string]any{"prompt": "echo", "args": "x"})
	text := textOf(t, res)
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, "the run store did not record the run, so nothing was run") || !strings.Contains(text, "(write the running record: dial tcp 127.0.0.1:5432: connect: connection refused)") {
		t.Fatalf("result %+v %q; want an isError refusal naming the store", res, text)
	}
	if s := h.srv.runs.Stats(); s.Started != 0 || s.Failed != 0 {
		t.Fatalf("registry stats %+v; want no run", s)
	}
}
