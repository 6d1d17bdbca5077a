package engine

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
)

// traceRecorder is a Tracer that keeps every TraceEvent.
type traceRecorder struct{ eventLog[TraceEvent] }

// structured is a prompt that enters sections every way the tracer tells
// apart: the H1, the walk, an execute chain, a jump and a fanout, with a
// model turn that calls a tool and a log line.
func structured(t *testing.T) (*gw, Options, string) {
	g := newGW(t)
	g.Enqueue(gatewaytest.Calls(gatewaytest.Call{Name: "search", Args: map[string]any{"query": "go"}}),
		gatewaytest.Text("found it").WithUsage(11, 5))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	src := "# T\n\n" + defaultModel + lua(`tools.need("search", "`+searchNeed+`"); tools.always("search"); log("hello")`) +
		"\n## A\n\nFind things.\n\n" + lua(`execute("## Sub"); jump("## C")`) +
		"\n## B\n\n" + lua(`error("B must be jumped over")`) +
		"\n## C\n\n" + lua(`return table.concat(fanout("## W", {"x", "y"}), ",")`) +
		"\n## Sub\n\n---\n\n" + lua(`local s = 1`) +
		"\n## W\n\n---\n\n" + lua(`return item`)
	return g, cfg, src
}

func TestTracer_PlacesEveryEventInTheRunStructure(t *testing.T) {
	_, cfg, src := structured(t)
	tr := &traceRecorder{}
	cfg.Tracer = tr
	runP(t, parse(t, src), "", cfg).ok(t, "x,y")

	// unit -> "via section parent-section"
	units := map[uint32]string{}
	names := map[uint32]string{0: "run"}
	var turn, call *Info
	for _, ev := range tr.events {
		if ev.Unit != 0 {
			names[ev.Unit] = ev.Section
		}
		switch ev.Detail {
		case ModelTurnCompleted:
			if strings.Contains(fmt.Sprint(ev.Info.ToolCalls), "search") {
				turn = ev.Info
			}
		case ToolCallStarted:
			call = ev.Info
		}
	}
	for _, ev := range tr.events {
		if ev.Unit != 0 {
			units[ev.Unit] = ev.Via.String() + " " + ev.Section + " <" + names[ev.Parent]
		}
	}
	var got []string
	for i := uint32(1); i <= uint32(len(units)); i++ {
		got = append(got, units[i])
	}
	want := []string{"h1 T <run", "walk A <run", "execute Sub <A", "jump C <run", "fanout W <C", "fanout W <C"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("units:\n got %q\nwant %q", got, want)
	}
	if turn == nil || turn.Model != testModel.ID || turn.PromptBytes == 0 || turn.Finish != "tool_calls" {
		t.Fatalf("the tool-calling turn's info = %+v", turn)
	}
	if call == nil || call.Tool != "search" || fmt.Sprint(call.ArgKeys) != "[query]" || call.Arguments != "" {
		t.Fatalf("the tool call's info = %+v (no arguments text without capture)", call)
	}
}

func TestTracer_CaptureContentAddsTheText(t *testing.T) {
	_, cfg, src := structured(t)
	tr := &traceRecorder{}
	cfg.Tracer, cfg.CaptureContent = tr, true
	runP(t, parse(t, src), "", cfg).ok(t, "x,y")
	var prompt, reply, args string
	for _, ev := range tr.events {
		switch {
		case ev.Detail == ModelTurnStarted && prompt == "":
			prompt = ev.Info.Prompt
		case ev.Detail == ModelTurnCompleted:
			reply = ev.Info.Reply
		case ev.Detail == ToolCallStarted:
			args = ev.Info.Arguments
		}
	}
	if prompt != "Find things." || reply != "found it" || args != `{"query":"go"}` {
		t.Fatalf("captured prompt %q, reply %q, arguments %q", prompt, reply, args)
	}
}

func TestTracer_ObserverSeesWhatItSawBefore(t *testing.T) {
	// The same run with and without a tracer tells its observer the same
	// events: the arms' own lifecycle and SectionFailed stay tracer-only.
	lines := func(tracer Tracer) []string {
		_, cfg, src := structured(t)
		cfg.Tracer = tracer
		r := runP(t, parse(t, src), "", cfg)
		r.ok(t, "x,y")
		return r.rec.lines()
	}
	// Sorted: the two fanout arms run concurrently, so their events
	// interleave differently from run to run.
	without, with := lines(nil), lines(&traceRecorder{})
	slices.Sort(without)
	slices.Sort(with)
	if strings.Join(without, "\n") != strings.Join(with, "\n") {
		t.Fatalf("observer lines differ with a tracer:\n%s\n---\n%s", strings.Join(without, "\n"), strings.Join(with, "\n"))
	}
}

func TestTracer_SectionFailedEndsAFailingSection(t *testing.T) {
	tr := &traceRecorder{}
	p := parse(t, "# T\n\n## A\n\n"+lua(`error("boom")`))
	r := runP(t, p, "", Options{Tracer: tr})
	r.fails(t, KindLua, "boom")
	var failed *TraceEvent
	for i, ev := range tr.events {
		if ev.Detail == SectionFailed {
			failed = &tr.events[i]
		}
	}
	if failed == nil || failed.Section != "A" || !strings.Contains(failed.Info.Err, "boom") {
		t.Fatalf("SectionFailed = %+v", failed)
	}
	if r.rec.count(SectionFailed) != 0 {
		t.Fatal("the observer saw SectionFailed")
	}
}

func TestTracer_SectionFailedHasItsName(t *testing.T) {
	if got := SectionFailed.String(); got != "Section failed" {
		t.Fatalf("SectionFailed.String() = %q", got)
	}
}

func TestTracer_TurnsOnlyGetsTheEndsOfTurns(t *testing.T) {
	// The structured run, narrowed: only its turns' ends, with the model
	// and usage (what counting tokens by model needs), and no structure
	// or tool-call info built for nobody.
	_, cfg, src := structured(t)
	tr := &traceRecorder{}
	cfg.Tracer, cfg.TraceTurnsOnly = tr, true
	runP(t, parse(t, src), "", cfg).ok(t, "x,y")
	var usage []string
	for _, ev := range tr.events {
		if ev.Detail != ModelTurnCompleted || ev.Info == nil || ev.Info.Model != testModel.ID {
			t.Fatalf("a turns-only tracer got %v with %+v", ev.Detail, ev.Info)
		}
		usage = append(usage, fmt.Sprint(ev.Info.Usage.PromptTokens, "+", ev.Info.Usage.CompletionTokens))
	}
	if strings.Join(usage, " ") != "0+0 11+5" {
		t.Fatalf("turn ends' usage = %q, want both turns, the second with 11+5", usage)
	}

	// A failed turn's end carries its gateway error kind.
	g := newGW(t)
	g.Enqueue(gatewaytest.Status(503, `{"error":"busy"}`))
	cfg = g.cfg()
	tr = &traceRecorder{}
	cfg.Tracer, cfg.TraceTurnsOnly = tr, true
	runP(t, parse(t, "# T\n\n"+defaultModel+"\n## A\n\nSay hi.\n"), "", cfg).fails(t, KindCompletion, "503")
	if len(tr.events) != 1 || tr.events[0].Detail != ModelTurnFailed || tr.events[0].Info.ErrKind != "status" {
		t.Fatalf("a failed turn, turns only: %+v", tr.events)
	}
}

// A Lua-only run's tracer gets its one section's start and end and nothing
// else: not the run's start and success (the tracer's making and the run's
// result stand for them), nor the teardown of an H1 with no blocks (it runs
// nothing, so it has no step). Each would be a call a traced run pays for.
func TestTracer_ALuaOnlyRunIsItsSectionsStartAndEnd(t *testing.T) {
	tr := &traceRecorder{}
	runP(t, parse(t, "# T\n\n## Run\n\n"+lua(`return "hi " .. args`)), "x", Options{Tracer: tr}).ok(t, "hi x")
	var got []string
	for _, ev := range tr.events {
		got = append(got, ev.Via.String()+" "+ev.Detail.String())
	}
	if want := "walk " + SectionStarted.String() + "; walk " + SectionFinished.String(); strings.Join(got, "; ") != want {
		t.Fatalf("events:\n got %q\nwant %q", strings.Join(got, "; "), want)
	}

	// A failure is handed over; an H1 with blocks ends with its teardown.
	tr = &traceRecorder{}
	runP(t, parse(t, "# T\n\n"+lua(`local a = 1`)+"\n## Run\n\n"+lua(`error("no")`)), "", Options{Tracer: tr}).fails(t, KindLua, "no")
	var h1End, failed bool
	for _, ev := range tr.events {
		h1End = h1End || ev.Via == ViaH1 && ev.Detail == LuaTeardownSucceeded
		failed = failed || ev.Detail == RunFailed && ev.Info != nil && strings.Contains(ev.Info.Err, "no")
		if ev.Detail == RunStarted || ev.Detail == RunSucceeded || ev.Detail == LuaTeardownStarted {
			t.Fatalf("the tracer got %v", ev.Detail)
		}
	}
	if !h1End || !failed {
		t.Fatalf("the H1's end %v, the run's failure %v", h1End, failed)
	}
}
