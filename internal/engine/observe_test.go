package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/store"
)

// prompt-language §8.10 Observation and runs.
//
// Not covered: "a 1-byte memory limit fails host injection with teardown
// observations". gopher-lua has no allocation hook or per-state memory
// accounting, so a VM has no memory limit to set (luavm's package
// documentation says what bounds memory instead).

func TestObserve_TwoSectionSequence(t *testing.T) {
	p := parse(t, "# Trio\n\n## First\n\n"+lua(`local x = 1`)+"\n## Second\n\n"+lua(`local y = 2`))
	r := runP(t, p, "", Options{Execution: "e1"})
	r.ok(t, "done")
	want := []string{
		"Trio: Run started",
		"Trio: Lua teardown started", "Trio: Lua teardown succeeded",
		"First: Section started", "First: Lua shared load started", "First: Lua shared load succeeded",
		"First: Lua chunk started", "First: Lua chunk succeeded",
		"First: Lua teardown started", "First: Lua teardown succeeded", "First: Section finished",
		"Second: Section started", "Second: Lua shared load started", "Second: Lua shared load succeeded",
		"Second: Lua chunk started", "Second: Lua chunk succeeded",
		"Second: Lua teardown started", "Second: Lua teardown succeeded", "Second: Section finished",
		"Trio: Run succeeded",
	}
	if got := r.rec.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("observations:\n%s", strings.Join(got, "\n"))
	}
	for _, e := range r.rec.events {
		if e.Execution != "e1" {
			t.Fatalf("event %v has execution %q", e, e.Execution)
		}
	}
}

func TestObserve_FailingRun(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`error("boom")`))
	r := runP(t, p, "", Options{})
	r.fails(t, KindLua, "boom")
	lines := r.rec.lines()
	if r.rec.count(SectionStarted) != 1 || r.rec.count(SectionFinished) != 0 || r.rec.count(LuaChunkFailed) != 1 ||
		r.rec.count(LuaTeardownSucceeded) != 2 || lines[len(lines)-1] != "T: Run failed" {
		t.Fatalf("observations %v", lines)
	}
}

func TestObserve_ObserverNeverChangesResults(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`log("x"); store.write("a", "1"); var.n = 2`)+"\n## B\n\n"+lua(`store.append("a", "2"); return store.read("a") .. var.n`))
	with := runP(t, p, "", Options{})
	without := runP(t, p, "", Options{Observer: ObserverFunc(func(Event) {})})
	nothing, err := Run(context.Background(), p, "", store.New(), Options{})
	with.ok(t, "122")
	without.ok(t, "122")
	if err != nil || nothing.Value != "122" {
		t.Fatalf("nil observer: %v %v", nothing, err)
	}
	if fmt.Sprint(with.st.Snapshot()) != fmt.Sprint(without.st.Snapshot()) {
		t.Fatal("store state differs")
	}
}

func TestObserve_StoreEvents(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`store.write("a", "x"); store.append("a", "y"); store.read("a"); store.read_numbered("a")
store.str_replace("a", "x", "z"); store.glob("*"); store.exists("a"); store.delete("a"); pcall(store.read, "a")`))
	r := runP(t, p, "", Options{})
	r.ok(t, "done")
	var got []string
	for _, l := range r.rec.lines() {
		if strings.Contains(l, "Store") {
			got = append(got, strings.TrimPrefix(l, "A: "))
		}
	}
	want := "Store write succeeded,Store append succeeded,Store read succeeded,Store read_numbered succeeded,Store replace succeeded,Store glob succeeded,Store delete succeeded,Store read failed"
	if strings.Join(got, ",") != want {
		t.Fatalf("store events %v", got)
	}
}

func TestObserve_ToolLoopReportsTurnsAndCalls(t *testing.T) {
	g := newGW(t)
	g.Enqueue(callSearch("a"), callSearch("b"), gatewaytest.Text("done"))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	var debug []DebugTurn
	cfg.Debug = func(d DebugTurn) { debug = append(debug, d) }
	r := runP(t, parse(t, searchPrompt(t, "")), "", cfg)
	r.ok(t, "done")
	if r.rec.count(ModelTurnCompleted) != 3 || r.rec.count(ToolCallSucceeded) != 2 || r.Turns != 3 {
		t.Fatalf("observations %v", r.rec.lines())
	}
	if len(debug) != 3 || debug[2].Turn != 3 || debug[2].Section != "A" || !strings.Contains(string(debug[2].Response), "done") ||
		!strings.Contains(string(debug[0].Request), `"model":"test-model"`) {
		t.Fatalf("debug capture %+v", debug)
	}
	for _, l := range r.rec.lines() {
		if strings.Contains(l, "query") || strings.Contains(l, "Find") {
			t.Fatalf("observation leaks content: %q", l)
		}
	}
}

func TestObserve_LogCheckpoints(t *testing.T) {
	p := parse(t, "# Checkpoints\n\n"+lua(`log("shared loaded")`)+
		"\n## Prepare\n\n"+lua(`log("prepare started"); store.write("state.txt", "prepared"); log("prepare finished")`)+
		"\n## Finish\n\n"+lua(`log("finish started"); return "logged"`))
	r := runP(t, p, "", Options{})
	r.ok(t, "logged")
	if got, _ := r.st.Read("state.txt", storeAll); got != "prepared" {
		t.Fatalf("state.txt = %q", got)
	}
	var got []string
	for _, e := range r.rec.events {
		if e.Detail == DetailLua {
			got = append(got, e.Section+"="+e.Message)
		}
	}
	want := "Checkpoints=Lua: shared loaded,Prepare=Lua: prepare started,Prepare=Lua: prepare finished,Finish=Lua: finish started"
	if strings.Join(got, ",") != want {
		t.Fatalf("checkpoints %v", got)
	}
}

func TestObserve_StoreFallthroughAndConcurrentRuns(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`store.write("v", args); log(args)`)+"\n## B\n\n"+lua(`log(args); return store.read("v")`))
	var wg sync.WaitGroup
	recs := make([]*recorder, 8)
	for i := range recs {
		recs[i] = &recorder{}
		wg.Go(func() {
			arg := fmt.Sprintf("run-%d", i)
			res, err := Run(context.Background(), p, arg, store.New(), Options{Execution: arg, Observer: recs[i]})
			if err != nil || res.Value != arg {
				t.Errorf("run %d: %v %v", i, res, err)
			}
		})
	}
	wg.Wait()
	for i, rec := range recs {
		want := fmt.Sprintf("run-%d", i)
		for _, e := range rec.events {
			if e.Execution != want || (e.Detail == DetailLua && e.Message != "Lua: "+want) {
				t.Fatalf("run %d saw %+v", i, e)
			}
		}
	}
}

func TestObserve_MintsExecutionIDs(t *testing.T) {
	p := parse(t, "# T\n\n## A\n\n"+lua(`return sys.execution`))
	a := runP(t, p, "", Options{})
	b := runP(t, p, "", Options{})
	if a.Value == "" || a.Value == b.Value || a.rec.events[0].Execution != a.Value {
		t.Fatalf("execution ids %q %q", a.Value, b.Value)
	}
}

// prompt-language §8.10: debug capture is an observer of turns, nothing more:
// the same run with and without it gives the same value, store, observations
// and wire requests (nested infer included).
func TestObserve_AbsentDebugCaptureChangesNothing(t *testing.T) {
	p := parse(t, "# T\n\n"+defaultModel+"\n## A\n\n"+lua(`var.side = models.infer("aside")`)+"\nMain {{ var.side }}.\n\n"+
		lua(`store.write("out", reply); return reply .. "|" .. sys.reply_finish_reason`))
	type outcome struct {
		value, store string
		lines        []string
		bodies       []string
		turns        int
	}
	run := func(debug func(DebugTurn)) outcome {
		g := newGW(t)
		g.Respond(func(req gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("R(" + lastUser(req) + ")") })
		cfg := g.cfg()
		cfg.Execution = "exec-debug"
		cfg.Debug = debug
		r := runP(t, p, "", cfg)
		if r.err != nil {
			t.Fatal(r.err)
		}
		var bodies []string
		for _, req := range g.Requests() {
			bodies = append(bodies, string(req.Raw))
		}
		return outcome{r.Value, fmt.Sprint(r.st.Snapshot()), r.rec.lines(), bodies, r.Turns}
	}
	var captured []DebugTurn
	with := run(func(d DebugTurn) { captured = append(captured, d) })
	without := run(nil)
	if len(captured) != 2 {
		t.Fatalf("debug capture saw %d turns", len(captured))
	}
	if fmt.Sprint(with) != fmt.Sprint(without) {
		t.Fatalf("debug capture changed the run:\nwith    %+v\nwithout %+v", with, without)
	}
	if with.value != "R(Main R(aside).)|stop" {
		t.Fatalf("value %q", with.value)
	}
}

// Each model turn and tool call is announced before it waits, naming what
// it waits on, so a host can say what a long run is waiting for; the
// announcement carries the model's alias and id or the tool's alias only.
func TestObserve_WaitsAreAnnouncedWithTheirSubject(t *testing.T) {
	g := newGW(t)
	g.Enqueue(callSearch("a"), gatewaytest.Text("done"))
	cfg := g.cfg()
	cfg.Tools = bothTools()
	r := runP(t, parse(t, searchPrompt(t, "")), "", cfg)
	r.ok(t, "done")
	var got []string
	for _, e := range r.rec.events {
		switch e.Detail {
		case ModelTurnStarted, ModelTurnCompleted, ToolCallStarted, ToolCallSucceeded:
			got = append(got, e.String()+" ["+e.Subject+"]")
		}
	}
	if len(got) != 6 {
		t.Fatalf("waits %q", got)
	}
	for i, prefix := range []string{"Model turn started [", "Model turn completed []", "Tool call started [search]", "Tool call succeeded []", "Model turn started [", "Model turn completed []"} {
		if !strings.HasPrefix(got[i], prefix) {
			t.Fatalf("wait %d is %q, want %q...; all: %q", i, got[i], prefix, got)
		}
	}
	if !strings.HasSuffix(got[0], ", test-model]") || got[0] != got[4] {
		t.Fatalf("model turn subject %q, want the alias and the model id", got[0])
	}
}
