package runtrace

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/secret"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/tools"
)

func lua(src string) string { return "```lua\n" + src + "\n```\n" }

// structured has the H1, a walked section with a model turn that calls a
// tool, an execute, a jump, and a fanout of two arms.
const structured = "---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n# T\n\n" +
	"```lua\nmodels.default(\"writer\", \"A general assistant model\")\ntools.need(\"search\", \"Search the web and return a list of results (title, url, description).\")\ntools.always(\"search\")\nlog(\"hello\")\n```\n" +
	"\n## A\n\nFind things.\n\n```lua\nexecute(\"## Sub\"); jump(\"## C\")\n```\n" +
	"\n## B\n\n```lua\nerror(\"jumped over\")\n```\n" +
	"\n## C\n\n```lua\nreturn table.concat(fanout(\"## W\", {\"x\", \"y\"}), \",\")\n```\n" +
	"\n## Sub\n\n---\n\n```lua\nlocal s = 1\n```\n" +
	"\n## W\n\n---\n\n```lua\nreturn item\n```\n"

// runStructured runs the structured prompt through a recorder made with
// opts and returns its trace.
func runStructured(t *testing.T, opts Options) (Trace, *Recorder) {
	t.Helper()
	c, search := servertest.SearchingGateway(t)
	p, err := prompt.Parse([]byte(structured))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("run-1", "t", opts)
	res, err := engine.Run(context.Background(), p, "", nil, engine.Options{
		Client: c, Tools: []tools.Tool{search}, Tracer: rec, CaptureContent: rec.CaptureContent(),
		Models: []gateway.Model{servertest.TestModel},
	})
	if err != nil || res.Value != "x,y" {
		t.Fatalf("run = %q, %v", res.Value, err)
	}
	rec.Finish("completed", "", res.Turns, Tokens{Prompt: res.Tokens.PromptTokens, Completion: res.Tokens.CompletionTokens})
	return rec.Snapshot(), rec
}

// tree renders steps as indented "kind name via status" lines.
func tree(steps []Step) string {
	depth := map[int]int{}
	var b strings.Builder
	for _, s := range steps {
		depth[s.ID] = depth[s.Parent] + 1
		fmt.Fprintf(&b, "%s%s %s %s %s\n", strings.Repeat("  ", depth[s.ID]-1), s.Kind, s.Name, s.Via, s.Status)
	}
	return b.String()
}

func TestRecorder_TheStepTreeOfARun(t *testing.T) {
	tr, _ := runStructured(t, Options{})
	want := `h1 T h1 ok
  log   ok
section A walk ok
  model_turn test-model  ok
  tool_call search  ok
  model_turn test-model  ok
  section Sub execute ok
section C jump ok
  fanout_arm W fanout ok
  fanout_arm W fanout ok
`
	if got := tree(tr.Steps); got != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", got, want)
	}
	if tr.Status != "completed" || tr.Turns != 2 || tr.Tokens != (Tokens{18, 8}) || tr.ContentCaptured {
		t.Fatalf("header = %+v", tr)
	}
	for _, s := range tr.Steps {
		if s.EndMS < s.StartMS || s.EndMS == 0 {
			t.Errorf("step %d %s: start %v end %v", s.ID, s.Kind, s.StartMS, s.EndMS)
		}
		if s.Message != "" || (s.Info != nil && (s.Info.Prompt != "" || s.Info.Reply != "" || s.Info.Arguments != "" || s.Info.Result != "")) {
			t.Errorf("step %d kept text without capture: %+v %+v", s.ID, s, s.Info)
		}
	}
	turn := tr.Steps[3]
	if turn.Tokens == nil || *turn.Tokens != (Tokens{7, 3}) || turn.Info.PromptBytes == 0 || fmt.Sprint(turn.Info.ToolCalls) != "[search]" {
		t.Fatalf("first turn = %+v %+v", turn, turn.Info)
	}
	if call := tr.Steps[4]; call.Info.ResultBytes == 0 || fmt.Sprint(call.Info.ArgKeys) != "[query]" {
		t.Fatalf("tool call = %+v", call.Info)
	}
	// Arms run concurrently, so either may have started first.
	if a, b := tr.Steps[8].Info, tr.Steps[9].Info; a == nil || b == nil || a.Index+b.Index != 3 || a.Of != 2 || b.Of != 2 {
		t.Fatalf("arms = %+v, %+v", a, b)
	}
}

func TestRecorder_CaptureKeepsTextWithinItsBudget(t *testing.T) {
	tr, _ := runStructured(t, Options{CaptureContent: true, MaxContentBytes: 20})
	if !tr.ContentCaptured || tr.Steps[1].Message != "hello" {
		t.Fatalf("log step = %+v", tr.Steps[1])
	}
	// "hello" (5) + "Find things." (12) leave 3 bytes for the reply.
	if got := tr.Steps[3].Info.Prompt; got != "Find things." {
		t.Fatalf("prompt = %q", got)
	}
	if got := tr.Steps[4].Info.Arguments; !strings.HasSuffix(got, truncated) || !strings.HasPrefix(got, `{"q`) {
		t.Fatalf("arguments = %q, want cut at the budget", got)
	}
}

func TestRecorder_BoundedSteps(t *testing.T) {
	var sink countingSink
	tr, _ := runStructured(t, Options{MaxSteps: 3, NewSink: func() Sink { return &sink }})
	if len(tr.Steps) != 3 || tr.Dropped != 7 {
		t.Fatalf("kept %d, dropped %d; want 3 and 7", len(tr.Steps), tr.Dropped)
	}
	if sink.started != 10 || sink.ended != 10 || sink.runs != 1 {
		t.Fatalf("sink saw %+v; want every step, kept or not", sink)
	}
}

type countingSink struct{ started, ended, runs int }

func (s *countingSink) RunStarted(*Trace)      {}
func (s *countingSink) RunEnded(*Trace)        { s.runs++ }
func (s *countingSink) StepStarted(_, _ *Step) { s.started++ }
func (s *countingSink) StepEnded(*Step)        { s.ended++ }

func TestBook_KeepsTracesForTheRetentionWindowAndCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBook(Options{}, time.Minute, 2)
		for _, id := range []string{"a", "b", "c"} {
			b.Start(id, "p")
		}
		if live, done := b.Runs(10); len(live) != 3 || len(done) != 0 {
			t.Fatalf("runs = %v %v", live, done)
		}
		b.Finish("a", "completed", "", 0, Tokens{})
		time.Sleep(time.Second)
		b.Finish("b", "failed", "boom", 1, Tokens{Prompt: 3})
		b.Finish("c", "completed", "", 0, Tokens{})
		b.Finish("nobody", "completed", "", 0, Tokens{})
		if _, ok := b.Get("a"); ok {
			t.Fatal("a is past the count bound but still kept")
		}
		live, done := b.Runs(10)
		if len(live) != 0 || len(done) != 2 || done[0].RunID != "c" || done[1].Error != "boom" {
			t.Fatalf("runs = %+v %+v", live, done)
		}
		time.Sleep(time.Minute)
		if _, ok := b.Get("b"); ok {
			t.Fatal("b outlived the retention window")
		}
	})
}

func TestRecorder_AnEmptyH1HasNoStep(t *testing.T) {
	p, err := prompt.Parse([]byte("---\nname: t\ndescription: A test prompt.\npromptforge: 1\n---\n# T\n\n## Run\n\n```lua\nreturn args\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("run-1", "t", Options{})
	if _, err := engine.Run(context.Background(), p, "x", nil, engine.Options{Tracer: rec}); err != nil {
		t.Fatal(err)
	}
	rec.Finish("completed", "", 0, Tokens{})
	if got := tree(rec.Snapshot().Steps); got != "section Run walk ok\n" {
		t.Fatalf("tree:\n%s", got)
	}
}

// A full book files each run by sweeping its oldest: it must keep the same
// finished runs as ever, and settle on one array for them rather than
// growing a new one every few runs (which it did by reslicing from the
// front: each run then cost a share of copying the whole window).
func TestBook_AFullBookSettlesOnOneArray(t *testing.T) {
	const kept = 10
	b := NewBook(Options{}, time.Hour, kept)
	file := func(i int) {
		id := fmt.Sprint("run-", i)
		b.Start(id, "p")
		b.Finish(id, "completed", "", 0, Tokens{})
	}
	i := 0
	for ; i < 4*kept; i++ {
		file(i)
	}
	array := &b.order[:cap(b.order)][0]
	for ; i < 20*kept; i++ {
		file(i)
		if got := &b.order[:cap(b.order)][0]; got != array {
			t.Fatalf("after %d runs the book grew a new array for its %d finished runs", i+1, kept)
		}
		_, done := b.Runs(kept + 1)
		if len(done) != kept || done[0].RunID != fmt.Sprint("run-", i) || done[kept-1].RunID != fmt.Sprint("run-", i-kept+1) {
			t.Fatalf("after run-%d the book lists %+v", i, done)
		}
		if _, ok := b.Get(fmt.Sprint("run-", i-kept)); ok {
			t.Fatalf("run-%d is past the count bound but still kept", i-kept)
		}
	}
}

// A run with one section (a Lua-only run) costs its trace one allocation,
// the recorder: its first step is kept inside it, and it is the run's
// tracer itself, not wrapped with the tracer it hands the ends of turns to.
// And filing a run in a steady book (the same number retained) allocates
// nothing more.
func TestRecorder_OneSectionRunIsOneAllocation(t *testing.T) {
	b := NewBook(Options{}, time.Hour, 10)
	section := func(d engine.Detail) engine.TraceEvent {
		return engine.TraceEvent{Event: engine.Event{Section: "Run", Detail: d}, Unit: 2, Via: engine.ViaWalk}
	}
	next := new(turnEnds)
	i := 0
	run := func() {
		i++
		id := fmt.Sprint("run-", i%20)
		var opts engine.Options
		rec := b.Begin(id, "t", next, &opts)
		opts.Tracer.Observe(section(engine.SectionStarted))
		opts.Tracer.Observe(section(engine.SectionFinished))
		b.End(rec, "completed", "", 0, Tokens{})
	}
	for range 100 {
		run()
	}
	// fmt.Sprint's id is the one other allocation.
	if got := testing.AllocsPerRun(200, run); got != 2 {
		t.Fatalf("a one-section traced run allocates %v times; want 2 (the recorder and the test's id)", got)
	}
	if tr, ok := b.Get(fmt.Sprint("run-", i%20)); !ok || tree(tr.Steps) != "section Run walk ok\n" || tr.Status != "completed" {
		t.Fatalf("the last run's trace: %+v, %v", tr, ok)
	}
}

// A Recorder is allocated for every traced run: it must stay within the
// allocator's 512-byte class, the largest without a type header (it was
// 640 with its first step, 480 without).
func TestRecorder_FitsASmallSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Recorder{}); size > 448 {
		t.Fatalf("a Recorder is %d bytes; keep it within 448 (see its doc)", size)
	}
}

// Begin wires a run as the server does: traces off, the run's tracer is
// next with only the ends of turns; on, it is the run's recorder, which
// hands next those same events, and End closes the trace once.
func TestBook_BeginWiresARunAsTheServerDoes(t *testing.T) {
	p, err := prompt.Parse([]byte(benchHeader + "# T\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Run\n\nSay hello.\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.New(t)
	g.Respond(func(gatewaytest.Request) gatewaytest.Reply { return gatewaytest.Text("hello").WithUsage(10, 2) })
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew(g.APIKey())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	cfg := engine.Options{Client: c, Models: []gateway.Model{{ID: "test-model", Description: "A general assistant model for tests", Dialect: gateway.DialectOpenAI}}}
	run := func(b *Book, id string) (*Recorder, *turnEnds, engine.Options) {
		t.Helper()
		next, opts := new(turnEnds), cfg
		rec := b.Begin(id, "t", next, &opts)
		res, err := engine.Run(context.Background(), p, "", nil, opts)
		if err != nil || res.Value != "hello" {
			t.Fatal(res, err)
		}
		b.End(rec, "completed", "", res.Turns, Tokens{res.Tokens.PromptTokens, res.Tokens.CompletionTokens})
		return rec, next, opts
	}

	var off *Book
	if rec, next, opts := run(off, "off"); rec != nil || opts.Tracer != engine.Tracer(next) || !opts.TraceTurnsOnly || next.tokens != 12 {
		t.Fatalf("traces off: recorder %v, tracer %v (next %v), turns only %v, next counted %d tokens", rec, opts.Tracer, next, opts.TraceTurnsOnly, next.tokens)
	}
	var none engine.Options
	if off.Begin("none", "t", nil, &none); none.Tracer != nil || none.TraceTurnsOnly {
		t.Fatalf("traces off without next: %+v", none)
	}

	b := NewBook(Options{CaptureContent: true}, time.Hour, 10)
	rec, next, opts := run(b, "on")
	if opts.Tracer != engine.Tracer(rec) || opts.TraceTurnsOnly || !opts.CaptureContent {
		t.Fatalf("traces on: tracer %v (recorder %p), turns only %v, capture %v", opts.Tracer, rec, opts.TraceTurnsOnly, opts.CaptureContent)
	}
	if next.tokens != 12 || next.events != 1 {
		t.Fatalf("next got %d events and %d tokens; want the one turn's end, 12 tokens", next.events, next.tokens)
	}
	tr, ok := b.Get("on")
	if !ok || tr.Status != "completed" || tr.Turns != 1 || tr.Tokens != (Tokens{10, 2}) || !strings.Contains(tree(tr.Steps), "model_turn test-model  ok") {
		t.Fatalf("trace %+v\n%s", tr, tree(tr.Steps))
	}
	if _, done := b.Runs(10); len(done) != 1 {
		t.Fatalf("the book lists %d finished runs, want the one", len(done))
	}
	// A second End restates the header and files nothing again.
	b.End(rec, "failed", "restated", 1, Tokens{10, 2})
	if tr, _ := b.Get("on"); tr.Status != "failed" || tr.Error != "restated" || len(b.order)-b.head != 1 {
		t.Fatalf("after a second End: %+v, %d filed", tr, len(b.order)-b.head)
	}
}

// A record book (the server's over the in-memory run store) opens and
// closes traces and keeps none: the recorder Open returns is the trace,
// which whoever keeps the run's record keeps. A one-section run is then
// the recorder's one allocation, with no map of the book's to insert into
// or evict from.
func TestRecordBook_KeepsNothingItself(t *testing.T) {
	b := NewRecordBook(Options{})
	section := func(d engine.Detail) engine.TraceEvent {
		return engine.TraceEvent{Event: engine.Event{Section: "Run", Detail: d}, Unit: 2, Via: engine.ViaWalk}
	}
	next := new(turnEnds)
	var rec *Recorder
	run := func() {
		rec = b.Open("run-1", "t", next)
		var opts engine.Options
		b.Enter(rec, next, &opts)
		if opts.Tracer != engine.Tracer(rec) || opts.TraceTurnsOnly {
			t.Fatalf("entered: tracer %v, turns only %v; want the recorder", opts.Tracer, opts.TraceTurnsOnly)
		}
		opts.Tracer.Observe(section(engine.SectionStarted))
		opts.Tracer.Observe(section(engine.SectionFinished))
		b.End(rec, "completed", "", 0, Tokens{})
	}
	if got := testing.AllocsPerRun(200, run); got != 1 {
		t.Fatalf("a one-section traced run allocates %v times; want 1 (the recorder)", got)
	}
	if tr := rec.Snapshot(); tr.RunID != "run-1" || tr.Status != "completed" || tree(tr.Steps) != "section Run walk ok\n" {
		t.Fatalf("the recorder's trace: %+v", tr)
	}
	if _, ok := b.Get("run-1"); ok {
		t.Fatal("a record book found a run by id: it must keep none")
	}
	if live, done := b.Runs(10); len(live) != 0 || len(done) != 0 || len(b.runs) != 0 || len(b.order) != 0 {
		t.Fatalf("a record book lists %v %v and holds %d runs, %d filed; want none", live, done, len(b.runs), len(b.order))
	}
	// A second End restates the header, as over a book that keeps runs.
	b.End(rec, "failed", "restated", 1, Tokens{})
	if tr := rec.Snapshot(); tr.Status != "failed" || tr.Error != "restated" {
		t.Fatalf("after a second End: %+v", tr)
	}
	live, done := Summaries([]*Recorder{rec}, []*Recorder{rec})
	if len(live) != 1 || len(done) != 1 || live[0].RunID != "run-1" || done[0].Status != "failed" {
		t.Fatalf("Summaries: %+v %+v", live, done)
	}
}

// eventLog is a Tracer that keeps every event, for replaying.
type eventLog struct {
	mu  sync.Mutex
	evs []engine.TraceEvent
}

func (l *eventLog) Observe(ev engine.TraceEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, ev)
}

// Observe's short path for a section's start and end has the general
// path's effect: a run's events replayed through each give the same trace.
func TestRecorder_ShortPathIsTheGeneralPath(t *testing.T) {
	c, search := servertest.SearchingGateway(t)
	p, err := prompt.Parse([]byte(structured))
	if err != nil {
		t.Fatal(err)
	}
	var log eventLog
	if _, err := engine.Run(context.Background(), p, "", nil, engine.Options{
		Client: c, Tools: []tools.Tool{search}, Tracer: &log,
		Models: []gateway.Model{servertest.TestModel},
	}); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	opts := Options{Now: func() time.Time { return at }}
	short, general := NewRecorder("run-1", "t", opts), NewRecorder("run-1", "t", opts)
	sections := 0
	for _, ev := range log.evs {
		if ev.Detail == engine.SectionStarted {
			sections++
		}
		short.Observe(ev)
		general.observe(ev)
	}
	if sections == 0 {
		t.Fatal("the run had no section events: nothing took the short path")
	}
	for _, r := range []*Recorder{short, general} {
		r.Finish("completed", "", 2, Tokens{})
	}
	s, g := short.Snapshot(), general.Snapshot()
	if !reflect.DeepEqual(s, g) {
		t.Fatalf("through Observe:\n%s%+v\nthrough the general path:\n%s%+v", tree(s.Steps), s, tree(g.Steps), g)
	}
}
