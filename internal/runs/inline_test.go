package runs

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// goid is the calling goroutine's id, read from its stack header.
func goid() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := bytes.Cut(bytes.TrimPrefix(buf, []byte("goroutine ")), []byte(" "))
	return string(id)
}

func launchInline(t *testing.T, r *Registry, id string, run func(context.Context) Outcome, attempt func(context.Context) (Outcome, bool)) *Handle {
	t.Helper()
	slot, err := r.Admit(t.Context())
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	h, err := r.LaunchInline(slot, id, "p", time.Time{}, nil, run, attempt)
	if err != nil {
		t.Fatalf("LaunchInline(%s): %v", id, err)
	}
	return h
}

// An attempt that ends the run is the run: it runs on the goroutine that
// settles, its outcome is the record, and run is never started.
func TestAnInlineAttemptThatEndsTheRunIsTheRun(t *testing.T) {
	r, logs := newRegistry(t, testOptions(time.Minute))
	var ran atomic.Bool
	here := goid()
	var where string
	h := launchInline(t, r, id32, func(context.Context) Outcome {
		ran.Store(true)
		return Outcome{Value: "from run"}
	}, func(context.Context) (Outcome, bool) {
		where = goid()
		return Outcome{Value: "inline", Turns: 2}, true
	})
	got := r.Settle(t.Context(), h)
	if where != here {
		t.Errorf("the attempt ran on goroutine %s, not on the settling goroutine %s", where, here)
	}
	if ran.Load() {
		t.Error("run was started although the attempt ended the run")
	}
	if got.Status != StatusCompleted || got.Value != "inline" || got.Turns != 2 {
		t.Errorf("Settle = %+v; want the attempt's completed record", got)
	}
	if c, ok := r.Check(id32); !ok || c.Status != StatusCompleted {
		t.Errorf("Check = %+v, %v; want the completed record", c, ok)
	}
	if n := len(logs.withMessage(msgTerminal)); n != 1 {
		t.Errorf("%d terminal lines were written; want 1", n)
	}
	if free, _ := r.slots.state(); free != 4 {
		t.Errorf("%d slots free after the run; want all 4", free)
	}
}

// An attempt that stops leaves no trace: run is started on a run
// goroutine, its outcome is the record, and Settle calls the caller's
// before-wait function before it waits for it.
func TestAnInlineAttemptThatStopsHandsTheRunToARunner(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(time.Minute))
		release := make(chan struct{})
		here := goid()
		var runOn string
		h := launchInline(t, r, id32, func(context.Context) Outcome {
			<-release
			runOn = goid()
			return Outcome{Value: "from run"}
		}, func(context.Context) (Outcome, bool) {
			return Outcome{Value: "stopped attempt"}, false
		})
		var waits atomic.Int32
		ctx := WithBeforeWait(t.Context(), func() {
			if waits.Add(1) == 1 {
				close(release)
			}
		})
		// Without the before-wait call the run never ends and the
		// deadline answers running.
		got := r.Settle(ctx, h)
		if got.Status != StatusCompleted || got.Value != "from run" {
			t.Fatalf("Settle = %+v; want run's completed record", got)
		}
		if runOn == here {
			t.Error("run ran on the settling goroutine; want a run goroutine")
		}
		if n := waits.Load(); n != 1 {
			t.Errorf("the before-wait function was called %d times; want 1", n)
		}
	})
}

// A panic in the attempt is the run's: the record fails as a run's panic
// fails it, and the slot is returned.
func TestAPanicInAnInlineAttemptFailsTheRun(t *testing.T) {
	r, _ := newRegistry(t, testOptions(time.Minute))
	h := launchInline(t, r, id32, func(context.Context) Outcome { return Outcome{Value: "from run"} },
		func(context.Context) (Outcome, bool) { panic("boom") })
	got := r.Settle(t.Context(), h)
	if got.Status != StatusFailed || got.Error != AbnormalText("boom") {
		t.Errorf("Settle = %+v; want the failed record of a panic", got)
	}
	if free, _ := r.slots.state(); free != 4 {
		t.Errorf("%d slots free after the run; want all 4", free)
	}
}

// A caller gone before Settle gets no inline attempt: the run goes to a
// runner and is cancelled as the caller's, as from LaunchWith.
func TestAnInlineRunOfACallerGoneIsNotAttempted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(time.Minute))
		var attempted atomic.Bool
		h := launchInline(t, r, id32, func(ctx context.Context) Outcome {
			<-ctx.Done()
			return Outcome{Err: context.Cause(ctx)}
		}, func(context.Context) (Outcome, bool) {
			attempted.Store(true)
			return Outcome{Value: "inline"}, true
		})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		got := r.Settle(ctx, h)
		if attempted.Load() {
			t.Error("the attempt was made for a caller already gone")
		}
		if got.Status != StatusFailed || !strings.Contains(got.Error, ErrCallerCancelled.Error()) {
			t.Errorf("Settle = %+v; want the run cancelled as the caller's", got)
		}
	})
}

// Admit calls the before-wait function when it has to wait for a slot,
// and not when one is free.
func TestAdmitCallsTheBeforeWaitFunctionOnlyWhenItWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Minute)
		cfg.MaxConcurrentRuns = 1
		r, _ := newRegistry(t, cfg)
		var waits atomic.Int32
		var held *Slot
		ctx := WithBeforeWait(t.Context(), func() {
			waits.Add(1)
			held.Release() // the wait the caller was warned of ends
		})
		held, err := r.Admit(ctx)
		if err != nil {
			t.Fatalf("Admit of a free slot: %v", err)
		}
		if n := waits.Load(); n != 0 {
			t.Fatalf("Admit of a free slot called the before-wait function %d times", n)
		}
		slot, err := r.Admit(ctx)
		if err != nil {
			t.Fatalf("Admit after the before-wait function freed a slot: %v", err)
		}
		slot.Release()
		if n := waits.Load(); n != 1 {
			t.Errorf("Admit that waited called the before-wait function %d times; want 1", n)
		}
	})
}

// LaunchInline without an attempt is refused and returns the slot.
func TestLaunchInlineWithoutAnAttemptIsRefused(t *testing.T) {
	r, _ := newRegistry(t, testOptions(time.Minute))
	slot, err := r.Admit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.LaunchInline(slot, id32, "p", time.Time{}, nil, func(context.Context) Outcome { return Outcome{} }, nil); err == nil || !strings.Contains(err.Error(), "LaunchWith") {
		t.Errorf("LaunchInline(nil attempt) = %v; want an error naming LaunchWith", err)
	}
	if free, _ := r.slots.state(); free != 4 {
		t.Errorf("%d slots free; want all 4", free)
	}
	if _, ok := r.Check(id32); ok {
		t.Error("the refused run was registered")
	}
}

// The reply deadline runs from the launch, not from the end of an
// attempt that stopped: the caller of a run whose attempt took long (one
// long library call the Lua clock checks do not see into) is answered
// running by the deadline, as from LaunchWith, not that much later.
func TestAStoppedAttemptsTimeCountsAgainstTheReplyDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(time.Minute))
		launched := time.Now()
		h := launchInline(t, r, id32, func(ctx context.Context) Outcome {
			<-ctx.Done()
			return Outcome{Err: context.Cause(ctx)}
		}, func(context.Context) (Outcome, bool) {
			time.Sleep(10 * time.Second)
			return Outcome{}, false
		})
		got := r.Settle(t.Context(), h)
		if got.Status != StatusRunning {
			t.Fatalf("Settle = %+v; want running", got)
		}
		if waited := time.Since(launched); waited != time.Minute {
			t.Errorf("Settle answered running %v after the launch; want the reply deadline, %v", waited, time.Minute)
		}
	})
}

// Under a zero reply deadline Settle waits for nothing, so it announces
// no wait: the caller's hand-off (the stdio lane's, which readies another
// goroutine) would only give the run time to end before Settle looks,
// and a zero reply_deadline answers every call running. Here the before-wait function lets the run end; if Settle
// called it, the deadline's answer would depend on which of the two
// ready channels its select took.
func TestAZeroReplyDeadlineAnnouncesNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(0)
		cfg.MaxConcurrentRuns = 32
		r, _ := newRegistry(t, cfg)
		for i := range 20 {
			release := make(chan struct{})
			slot, err := r.Admit(t.Context())
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			h, err := r.LaunchWith(slot, fmt.Sprintf("%032x", i), "p", time.Time{}, nil, func(ctx context.Context) Outcome {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return Outcome{Value: "done"}
			})
			if err != nil {
				t.Fatalf("LaunchWith: %v", err)
			}
			var waits atomic.Int32
			ctx := WithBeforeWait(t.Context(), func() {
				waits.Add(1)
				close(release)
				synctest.Wait() // the run has ended
			})
			got := r.Settle(ctx, h)
			if got.Status != StatusRunning {
				t.Fatalf("Settle under a zero reply deadline = %+v (run %d); want running", got, i)
			}
			if n := waits.Load(); n != 0 {
				t.Fatalf("Settle under a zero reply deadline called the before-wait function %d times; want none", n)
			}
			close(release)
		}
	})
}
