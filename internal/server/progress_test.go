package server

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/modelset"
)

const trioPrompt = "---\nname: trio\ndescription: Three sections in a row.\npromptforge: 1\n---\n" +
	"# Trio\n\n## First\n\n```lua\nvar.n = 1\n```\n\n## Second\n\n```lua\nvar.n = var.n + 1\n```\n\n## Third\n\n```lua\nreturn \"trio done\"\n```\n"

func TestProgressFramesOverARealSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, fixture{prompts: map[string]string{"trio.md": trioPrompt}})
		var mu sync.Mutex
		var got []*mcp.ProgressNotificationParams
		cs := h.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}})
		params := &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "trio"}}
		params.SetProgressToken("trio-token")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if textOf(t, res) != "trio done" {
			t.Fatalf("result %q", textOf(t, res))
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		want := []struct {
			progress float64
			message  string
		}{{0, "Trio"}, {1, "First"}, {2, "Second"}, {3, "Third"}}
		if len(got) != len(want) {
			t.Fatalf("got %d frames, want 4: %+v", len(got), got)
		}
		for i, w := range want {
			f := got[i]
			if f.Progress != w.progress || f.Message != w.message || f.ProgressToken != "trio-token" || f.Total != 0 {
				t.Errorf("frame %d = %+v, want (%v, %q) with the call's token and no total", i, f, w.progress, w.message)
			}
		}
	})
}

// recorded is a notify function that records what it sends.
type recorded struct {
	mu     sync.Mutex
	frames []frame
}

func (r *recorded) notify(_ context.Context, p *mcp.ProgressNotificationParams) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frames = append(r.frames, frame{progress: p.Progress, message: p.Message})
	return nil
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestProgressMapsObservationsToFrames(t *testing.T) {
	rec := &recorded{}
	p := newProgress(context.Background(), "tok", rec.notify)
	for _, ev := range []engine.Event{
		{Section: "Trio", Detail: engine.RunStarted},
		{Section: "First", Detail: engine.SectionStarted},
		{Section: "First", Detail: engine.ModelTurnCompleted},
		{Section: "First", Detail: engine.SectionFinished},
		{Section: "Second", Detail: engine.SectionStarted},
		{Section: "Second", Detail: engine.StoreWriteSucceeded},
		{Section: "Second", Detail: engine.ToolScopeValidationFailed},
		{Section: "Second", Detail: engine.DetailLua, Message: "Lua: hello"},
		{Section: "Third", Detail: engine.SectionStarted},
		{Section: "Trio", Detail: engine.RunSucceeded},
	} {
		p.Observe(ev)
	}
	dropped, disconnected := p.finish()
	want := []frame{{0, "Trio"}, {1, "First"}, {2, "Second"}, {3, "Third"}}
	if !slices.Equal(rec.frames, want) {
		t.Fatalf("frames %v, want %v", rec.frames, want)
	}
	if dropped != 0 || disconnected != 0 {
		t.Fatalf("dropped %d disconnected %d", dropped, disconnected)
	}
}

func TestASilentObserverDropsNothing(t *testing.T) {
	p := newProgress(context.Background(), nil, nil)
	for range 3 {
		p.Observe(engine.Event{Detail: engine.SectionStarted})
		p.Observe(engine.Event{Detail: engine.ModelTurnCompleted})
	}
	dropped, disconnected := p.finish()
	if dropped != 0 || disconnected != 0 {
		t.Fatalf("dropped %d disconnected %d", dropped, disconnected)
	}
}

// blocked is a client that never reads: every send waits until the pump is
// stopped.
func blocked(ctx context.Context, _ *mcp.ProgressNotificationParams) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestANeverDrainedQueueDropsFramesAndNeverBlocksTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProgress(context.Background(), 7, blocked)
		p.Observe(engine.Event{Detail: engine.RunStarted})
		for range 80 {
			p.Observe(engine.Event{Detail: engine.SectionStarted})
		}
		// Reaching here is the run finishing: Observe never waited.
		start := time.Now()
		dropped, _ := p.finish()
		if waited := time.Since(start); waited != progressGrace {
			t.Errorf("finish waited %v, want exactly the %v grace", waited, progressGrace)
		}
		if dropped == 0 {
			t.Fatal("a full queue dropped nothing")
		}
	})
}

func TestAPumpThatNeverCompletesIsAbandonedAfterTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newProgress(context.Background(), "tok", blocked)
		p.Observe(engine.Event{Detail: engine.RunStarted, Section: "T"})
		start := time.Now()
		p.finish()
		if waited := time.Since(start); waited != 250*time.Millisecond {
			t.Fatalf("abandoned after %v, want 250ms", waited)
		}
	})
}

func TestAClosedQueueCountsADisconnectNotADrop(t *testing.T) {
	rec := &recorded{}
	p := newProgress(context.Background(), "tok", rec.notify)
	p.Observe(engine.Event{Detail: engine.RunStarted})
	p.finish()
	// The run goes on after a running reply.
	p.Observe(engine.Event{Detail: engine.SectionStarted})
	p.Observe(engine.Event{Detail: engine.SectionStarted})
	if p.dropped.Load() != 0 || p.disconnected.Load() != 2 {
		t.Fatalf("dropped %d disconnected %d, want 0 and 2", p.dropped.Load(), p.disconnected.Load())
	}
}

// levelLog captures records at every level.
type levelLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *levelLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r)
	return nil
}
func (l *levelLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levelLog) WithGroup(string) slog.Handler      { return l }

func (l *levelLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.records {
		line := r.Level.String() + " " + r.Message
		r.Attrs(func(a slog.Attr) bool {
			line += " " + a.String()
			return true
		})
		out = append(out, line)
	}
	return out
}

// The server narrates its runs with serveNarration: at info and above
// only the run start and the failures, and no line, at any level, carries
// a section name or anything else the author wrote (mcp-server §1.3;
// the narration itself is tested in engine).
func TestServeNarratesRunsWithoutAuthorText(t *testing.T) {
	log := &levelLog{}
	h := newHarness(t, fixture{
		prompts: map[string]string{
			"chatty.md":  luaPrompt("chatty", "Log, then return.", `log("secret note") return "said"`),
			"explode.md": luaPrompt("explode", "Fail with a Lua runtime error.", `error("secret boom")`),
		},
		opts: func(o *Options) { o.Logger = slogOf(log) },
	})
	h.ok(ToolRunPrompt, map[string]any{"prompt": "chatty"})
	h.call(ToolRunPrompt, map[string]any{"prompt": "explode"})
	var narrated []string
	for _, line := range log.lines() {
		if strings.Contains(line, "ecret") || strings.Contains(line, "Chatty") || strings.Contains(line, "Explode") {
			t.Errorf("a log line carries author text: %q", line)
		}
		if strings.HasPrefix(line, "INFO Run") || strings.HasPrefix(line, "WARN") {
			narrated = append(narrated, line)
		}
	}
	if want := []string{"INFO Run started", "INFO Run started", "WARN Run failed"}; !slices.Equal(narrated, want) {
		t.Fatalf("narration %q, want %q", narrated, want)
	}
}

func slogOf(h slog.Handler) *slog.Logger { return slog.New(h) }

// slowPrompt reports two frames (the run, then "Say"), waits at the model
// in "Say", and reaches "Tail" only once the gateway answers.
var slowPrompt = promptFile("slow", "Speak, then finish in Lua.", "",
	"# Slow\n\n```lua\nmodels.default(\"writer\", \"A general assistant model\")\n```\n\n## Say\n\nSay something.\n\n## Tail\n\n```lua\nreturn \"tail ran\"\n```\n")

// A call with a progress token that reaches reply_deadline is answered at
// the deadline, not after the progress grace on top of it, and the run it
// leaves running reports nothing more on that call: "Tail" starts after
// the reply and its frame never reaches the client.
func TestARunningReplyIsNotHeldByProgressAndEndsTheFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		limits := defaultLimits()
		limits.ReplyDeadline = 50 * time.Millisecond
		h := newHarness(t, fixture{
			prompts: map[string]string{"slow.md": slowPrompt},
			limits:  limits,
			opts: func(o *Options) {
				o.Client = g.client
				o.Models = modelset.Static([]gateway.Model{testModel})
			},
		})
		var mu sync.Mutex
		var got []frame
		cs := h.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, frame{progress: req.Params.Progress, message: req.Params.Message})
			mu.Unlock()
		}})
		framesSoFar := func() []frame {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(got)
		}

		params := &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "slow"}}
		params.SetProgressToken(7)
		start := time.Now()
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != limits.ReplyDeadline {
			t.Errorf("the running reply came after %v, want exactly the %v deadline (the %v progress grace must not add to it)", waited, limits.ReplyDeadline, progressGrace)
		}
		s := structuredOf(t, res)
		if res.IsError || s["status"] != "running" {
			t.Fatalf("result %v, want running", s)
		}
		synctest.Wait()
		want := []frame{{0, "Slow"}, {1, "Say"}}
		if f := framesSoFar(); !slices.Equal(f, want) {
			t.Fatalf("frames by the reply = %+v, want %+v", f, want)
		}

		// Let the run go on into "Tail" and finish.
		g.Release()
		synctest.Wait()
		done := structuredOf(t, h.ok(ToolCheckRun, map[string]any{"run_id": s["run_id"]}))
		if done["status"] != "completed" || done["value"] != "tail ran" {
			t.Fatalf("the detached run did not finish: %v", done)
		}
		if f := framesSoFar(); !slices.Equal(f, want) {
			t.Fatalf("frames after the reply = %+v, want none beyond %+v", f, want)
		}
	})
}

// During a long model turn or tool call the pump sends a frame at least
// every heartbeat, saying what the run waits on and for how long; progress
// keeps growing and stays below the next section's number. Nothing is
// sent before the run-start frame, and nothing after finish.
func TestProgressHeartbeatsWhileTheRunWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorded{}
		p := newProgress(context.Background(), "tok", rec.notify)
		// Waiting for a slot: no run-start frame yet, so no heartbeat.
		time.Sleep(2 * heartbeat)
		synctest.Wait()
		if n := len(rec.snapshot()); n != 0 {
			t.Fatalf("%d frames before the run started", n)
		}
		p.Observe(engine.Event{Section: "Trio", Detail: engine.RunStarted})
		p.Observe(engine.Event{Section: "Say", Detail: engine.SectionStarted})
		p.Observe(engine.Event{Section: "Say", Detail: engine.ModelTurnStarted, Subject: "writer, llama3.1:latest"})
		time.Sleep(2*heartbeat + time.Second)
		p.Observe(engine.Event{Section: "Say", Detail: engine.ModelTurnCompleted})
		p.Observe(engine.Event{Section: "Say", Detail: engine.ToolCallStarted, Subject: "web_fetch"})
		time.Sleep(heartbeat + time.Second)
		p.Observe(engine.Event{Section: "Say", Detail: engine.ToolCallSucceeded})
		time.Sleep(heartbeat)
		p.Observe(engine.Event{Section: "Next", Detail: engine.SectionStarted})
		synctest.Wait()
		p.finish()
		time.Sleep(3 * heartbeat)
		synctest.Wait()

		// The k-th heartbeat after section n, computed as the pump does.
		beat := func(n, k int) float64 { return float64(n) + float64(k)/float64(k+1) }
		want := []frame{
			{0, "Trio"},
			{1, "Say"},
			{beat(1, 1), "waiting for the model (writer, llama3.1:latest), 10 s"},
			{beat(1, 2), "waiting for the model (writer, llama3.1:latest), 20 s"},
			{beat(1, 3), "waiting for tool web_fetch, 9 s"},
			{beat(1, 4), "running Say, 40 s"},
			{2, "Next"},
		}
		got := rec.snapshot()
		if !slices.Equal(got, want) {
			t.Fatalf("frames\n got %v\nwant %v", got, want)
		}
	})
}

func (r *recorded) snapshot() []frame {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.frames)
}

// Through a real session: a call whose model turn is held gets a heartbeat
// every 10 s naming the model it waits for, so a client that resets its
// timeout on progress keeps waiting, and then its result.
func TestAHeldModelTurnSendsHeartbeatsToTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newMemGateway(t)
		h := speakingHarness(t, g, Limits{MaxConcurrentRuns: 1, AdmissionTimeout: time.Minute, ReplyDeadline: 45 * time.Second, RetainCompleted: time.Hour})
		var mu sync.Mutex
		var got []*mcp.ProgressNotificationParams
		cs := h.connect(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, req.Params)
			mu.Unlock()
		}})
		params := &mcp.CallToolParams{Name: ToolRunPrompt, Arguments: map[string]any{"prompt": "speak"}}
		params.SetProgressToken("held")
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(context.Background(), params)
			done <- err
		}()
		<-g.arrived
		time.Sleep(30*time.Second + time.Millisecond)
		g.Release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		var msgs []string
		last := -1.0
		for _, p := range got {
			if p.Progress <= last {
				t.Fatalf("progress went from %v to %v: %+v", last, p.Progress, got)
			}
			last = p.Progress
			msgs = append(msgs, p.Message)
		}
		model := "the model (writer, " + testModel.ID + ")"
		want := []string{"Speak", "Say", "waiting for " + model + ", 10 s", "waiting for " + model + ", 20 s", "waiting for " + model + ", 30 s"}
		if !slices.Equal(msgs, want) {
			t.Fatalf("messages\n got %q\nwant %q", msgs, want)
		}
	})
}

// A call without a progress token pays nothing per event: no pump, no
// wait tracking, not even the wait's name; nor per call: its progress is
// neither made nor held while its run waits.
func TestProgressWithoutATokenCostsNothingPerEvent(t *testing.T) {
	p := newProgress(context.Background(), nil, nil)
	subject := strings.Repeat("m", 8)
	allocs := testing.AllocsPerRun(100, func() {
		p.Observe(engine.Event{Detail: engine.ModelTurnStarted, Section: "Say", Subject: subject})
		p.Observe(engine.Event{Detail: engine.ToolCallStarted, Section: "Say", Subject: subject})
		p.Observe(engine.Event{Detail: engine.ModelTurnCompleted, Section: "Say"})
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per event round without a progress token, want 0", allocs)
	}
	ctx := context.Background()
	allocs = testing.AllocsPerRun(100, func() {
		if dropped, disconnected := newProgress(ctx, nil, nil).finish(); dropped+disconnected != 0 {
			t.Fatalf("dropped %d disconnected %d", dropped, disconnected)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per call without a progress token, want 0", allocs)
	}
}
