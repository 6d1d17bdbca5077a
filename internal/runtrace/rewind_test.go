package runtrace

import (
	"context"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/prompt"
	"github.com/promptforge-go/promptforge/internal/server/servertest"
	"github.com/promptforge-go/promptforge/internal/tools"
)

// A rewound trace is the trace of a run that starts then: a whole run
// recorded, rewound and recorded again has the one run's steps, numbered
// from 1, and the header of that run.
func TestRecorder_RewindForgetsWhatWasRecorded(t *testing.T) {
	p, err := prompt.Parse([]byte(structured))
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder("run-1", "t", Options{})
	if !rec.Rewindable() {
		t.Fatal("a plain recorder is not rewindable")
	}
	started := rec.Started()
	run := func() engine.Result {
		c, search := servertest.SearchingGateway(t) // scripted for one run
		res, err := engine.Run(context.Background(), p, "", nil, engine.Options{
			Client: c, Tools: []tools.Tool{search}, Tracer: rec, Models: []gateway.Model{servertest.TestModel},
		})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		return res
	}
	run()
	if got := rec.Snapshot(); len(got.Steps) == 0 {
		t.Fatal("the first run recorded no steps")
	}
	if !rec.Rewind() {
		t.Fatal("Rewind of a plain recorder going = false")
	}
	if got := rec.Snapshot(); len(got.Steps) != 0 || got.Status != StatusRunning || got.Turns != 0 || !got.Started.Equal(started) {
		t.Fatalf("after Rewind: %+v; want no steps, running, the same start", got)
	}
	res := run()
	rec.Finish("completed", "", res.Turns, Tokens{Prompt: res.Tokens.PromptTokens, Completion: res.Tokens.CompletionTokens})
	_, once := runStructured(t, Options{})
	if got, want := tree(rec.Snapshot().Steps), tree(once.Snapshot().Steps); got != want {
		t.Fatalf("rewound and run again:\n%s\nrun once:\n%s", got, want)
	}
	if got := rec.Snapshot().Steps; got[0].ID != 1 || got[len(got)-1].ID != len(got) {
		t.Errorf("step ids run from %d to %d over %d steps; want 1 to %d", got[0].ID, got[len(got)-1].ID, len(got), len(got))
	}
	if rec.Rewind() {
		t.Error("Rewind of an ended trace = true")
	}
}

// What cannot be taken back is not rewound: an exported trace, a captured
// one (its budget spent), one on another clock.
func TestRecorder_OnlyAPlainTraceRewinds(t *testing.T) {
	for name, opts := range map[string]Options{
		"export":  {NewSink: func() Sink { return &countingSink{} }},
		"capture": {CaptureContent: true},
		"clock":   {Now: func() time.Time { return time.Unix(0, 0) }},
	} {
		rec := NewRecorder("run-1", "t", opts)
		if rec.Rewindable() || rec.Rewind() {
			t.Errorf("%s: Rewindable %v; want false, and Rewind refused", name, rec.Rewindable())
		}
	}
	var none *Recorder
	if !none.Rewindable() || !none.Rewind() {
		t.Error("a nil recorder (traces off) has nothing to rewind: want true")
	}
}
