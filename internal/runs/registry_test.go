package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const retention = 3600 * time.Second

// testOptions is the [server] block most tests use: generous slots and
// waits, the reference's 1h retention, and a reply deadline each test sets.
func testOptions(deadline time.Duration) Options {
	return Options{
		MaxConcurrentRuns: 4,
		AdmissionTimeout:  30 * time.Second,
		ReplyDeadline:     deadline,
		RetainCompleted:   retention,
	}
}

// newRegistry builds a registry whose log lines are captured, and closes it
// when the test ends so no run goroutine outlives the bubble.
func newRegistry(t *testing.T, cfg Options) (*Registry, *capture) {
	t.Helper()
	logs := &capture{}
	cfg.Logger = slog.New(logs)
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r, logs
}

// launch admits and launches one run, failing the test if either is refused.
func launch(t *testing.T, r *Registry, id, prompt string, run func(context.Context) Outcome) *Handle {
	t.Helper()
	slot, err := r.Admit(t.Context())
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	h, err := r.Launch(slot, id, prompt, run)
	if err != nil {
		t.Fatalf("Launch(%s): %v", id, err)
	}
	return h
}

// sleeper is a run that takes d of (fake) time and completes with value.
func sleeper(d time.Duration, value string, turns uint32) func(context.Context) Outcome {
	return func(context.Context) Outcome {
		time.Sleep(d)
		return Outcome{Value: value, Turns: turns}
	}
}

// gated is a run that completes with value once release is closed.
func gated(release <-chan struct{}, value string) func(context.Context) Outcome {
	return func(context.Context) Outcome {
		<-release
		return Outcome{Value: value}
	}
}

func mustCheck(t *testing.T, r *Registry, id string) Result {
	t.Helper()
	got, ok := r.Check(id)
	if !ok {
		t.Fatalf("Check(%s): unknown, want a record", id)
	}
	return got
}

func TestRunPastTheDeadlineIsAnsweredRunningAndKeepsGoing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		start := time.Now()
		h := launch(t, r, id32, "slow", sleeper(5*time.Second, "done", 1))

		got := r.Settle(t.Context(), h)
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Errorf("Settle returned after %v, want exactly the 50ms deadline", waited)
		}
		if want := Running(id32, "slow", 50*time.Millisecond); got != want {
			t.Errorf("Settle = %+v, want %+v", got, want)
		}

		time.Sleep(6*time.Second - time.Since(start))
		synctest.Wait()
		if got, want := mustCheck(t, r, id32), Completed(id32, "slow", "done", 1, 5*time.Second); got != want {
			t.Errorf("Check after 6s = %+v, want %+v", got, want)
		}
	})
}

func TestRunInsideTheDeadlineIsAnsweredWithItsResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(300*time.Second))
		h := launch(t, r, id32, "quick", sleeper(40*time.Millisecond, "value", 2))

		want := Completed(id32, "quick", "value", 2, 40*time.Millisecond)
		if got := r.Settle(t.Context(), h); got != want {
			t.Errorf("Settle = %+v, want %+v", got, want)
		}
		if got := mustCheck(t, r, id32); got != want {
			t.Errorf("Check = %+v, want %+v", got, want)
		}
		if want.Error != "" || want.ElapsedMS != 40 || want.Turns != 2 {
			t.Errorf("completed result carries %+v", want)
		}
	})
}

func TestRunThatDoesNotReturnIsRecordedFailed(t *testing.T) {
	tests := []struct {
		name      string
		run       func(context.Context) Outcome
		wantError string
	}{
		{
			name:      "panic with a string",
			run:       func(context.Context) Outcome { panic("boom") },
			wantError: "the run did not finish: boom",
		},
		{
			name:      "panic with an error",
			run:       func(context.Context) Outcome { panic(fmt.Errorf("index %d out of range", 3)) },
			wantError: "the run did not finish: index 3 out of range",
		},
		{
			name:      "runtime.Goexit",
			run:       func(context.Context) Outcome { runtime.Goexit(); return Outcome{} },
			wantError: "the run did not finish: its goroutine exited without returning a result",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, logs := newRegistry(t, testOptions(300*time.Second))
				h := launch(t, r, id32, "fragile", tt.run)

				want := Failed(id32, "fragile", tt.wantError, 0, 0)
				if got := r.Settle(t.Context(), h); got != want {
					t.Errorf("Settle = %+v, want %+v", got, want)
				}
				if got := mustCheck(t, r, id32); got != want {
					t.Errorf("Check = %+v, want %+v", got, want)
				}
				synctest.Wait() // the run goroutine logs after the record is written
				if n := len(logs.withMessage(msgAbnormal)); n != 1 {
					t.Errorf("%d abnormal-end lines, want 1", n)
				}
				terminal := logs.withMessage(msgTerminal)
				if len(terminal) != 1 || terminal[0].Attrs["status"] != "failed" {
					t.Errorf("terminal lines = %+v, want one with status failed", terminal)
				}
				if s := r.Stats(); s.FreeSlots != 4 || s.Failed != 1 || s.InFlight != 0 {
					t.Errorf("Stats = %+v, want the slot back and one failed run", s)
				}
			})
		})
	}
}

func TestBackgroundedPanicIsCollectableThenEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		h := launch(t, r, id32, "fragile", func(context.Context) Outcome {
			time.Sleep(time.Second)
			panic("boom")
		})
		if got := r.Settle(t.Context(), h); got.Status != StatusRunning {
			t.Fatalf("Settle = %+v, want running", got)
		}

		<-h.Done()
		want := Failed(id32, "fragile", "the run did not finish: boom", 0, time.Second)
		if got := mustCheck(t, r, id32); got != want {
			t.Errorf("Check after the panic = %+v, want %+v", got, want)
		}

		time.Sleep(3601 * time.Second)
		if got, ok := r.Check(id32); ok {
			t.Errorf("Check after 3601s = %+v, want evicted", got)
		}
	})
}

func TestAbandonedSettleCancelsTheRun(t *testing.T) {
	tests := []struct {
		name      string
		runErr    func(ctx context.Context) error
		wantError string
	}{
		{
			name:      "engine error carries the cause",
			runErr:    func(ctx context.Context) error { return fmt.Errorf("model turn 2: %w", context.Cause(ctx)) },
			wantError: "model turn 2: the caller cancelled the call",
		},
		{
			name:      "engine error of its own",
			runErr:    func(context.Context) error { return errors.New("interrupted") },
			wantError: "the caller cancelled the call: interrupted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := testOptions(300 * time.Second)
				cfg.MaxConcurrentRuns = 1
				cfg.AdmissionTimeout = 50 * time.Second
				r, _ := newRegistry(t, cfg)
				start := time.Now()
				h := launch(t, r, id32, "speak", func(ctx context.Context) Outcome {
					<-ctx.Done()
					return Outcome{Err: tt.runErr(ctx), Turns: 1}
				})

				call, hangUp := context.WithCancel(t.Context())
				settled := make(chan Result)
				go func() { settled <- r.Settle(call, h) }()
				time.Sleep(2 * time.Second)
				hangUp()
				got := <-settled

				want := Failed(id32, "speak", tt.wantError, 1, 2*time.Second)
				if got != want {
					t.Errorf("Settle after hang-up = %+v, want %+v", got, want)
				}
				if waited := time.Since(start); waited != 2*time.Second {
					t.Errorf("Settle returned %v after launch, want 2s (when the call hung up)", waited)
				}
				if rec := mustCheck(t, r, id32); rec != want {
					t.Errorf("Check = %+v, want %+v", rec, want)
				}

				// The cancelled run returned its only slot: admission is
				// immediate rather than a 50s wait ending in refusal.
				before := time.Now()
				slot, err := r.Admit(t.Context())
				if err != nil {
					t.Fatalf("Admit after the cancelled run: %v", err)
				}
				if waited := time.Since(before); waited != 0 {
					t.Errorf("Admit waited %v, want a free slot at once", waited)
				}
				slot.Release()

				time.Sleep(retention)
				if rec, ok := r.Check(id32); ok {
					t.Errorf("Check after the retention window = %+v, want evicted", rec)
				}
			})
		})
	}
}

func TestCallerEndingAfterTheDeadlineDoesNotCancelTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		var cancelled atomic.Bool
		h := launch(t, r, id32, "slow", func(ctx context.Context) Outcome {
			select {
			case <-ctx.Done():
				cancelled.Store(true)
				return Outcome{Err: context.Cause(ctx)}
			case <-time.After(time.Second):
				return Outcome{Value: "done"}
			}
		})
		call, hangUp := context.WithCancel(t.Context())
		if got := r.Settle(call, h); got.Status != StatusRunning {
			t.Fatalf("Settle = %+v, want running", got)
		}
		hangUp()

		<-h.Done()
		if cancelled.Load() {
			t.Error("the run was cancelled by a call that had already been answered")
		}
		if got, want := mustCheck(t, r, id32), Completed(id32, "slow", "done", 0, time.Second); got != want {
			t.Errorf("Check = %+v, want %+v", got, want)
		}
	})
}

func TestAbandonedSettleStillHonoursTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, logs := newRegistry(t, testOptions(300*time.Second))
		start := time.Now()
		// A run that never looks at its context.
		h := launch(t, r, id32, "stubborn", sleeper(1000*time.Second, "late", 0))

		call, hangUp := context.WithCancel(t.Context())
		settled := make(chan Result)
		go func() { settled <- r.Settle(call, h) }()
		time.Sleep(2 * time.Second)
		hangUp()
		got := <-settled

		if waited := time.Since(start); waited != 300*time.Second {
			t.Errorf("Settle returned after %v, want the 300s deadline", waited)
		}
		if want := Running(id32, "stubborn", 300*time.Second); got != want {
			t.Errorf("Settle = %+v, want %+v", got, want)
		}
		if n := len(logs.withMessage(msgOutlived)); n != 1 {
			t.Errorf("%d outlived lines, want 1", n)
		}
		<-h.Done()
		// The run ignored its cancellation and produced a value, which
		// stands: cancellation is a request, not a verdict.
		if got := mustCheck(t, r, id32); got.Status != StatusCompleted || got.Value != "late" {
			t.Errorf("Check = %+v, want the value the run produced", got)
		}
	})
}

func TestDuplicateIDIsRefusedAndNeverSpawned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		release := make(chan struct{})
		launch(t, r, id32, "first", gated(release, "one"))

		slot, err := r.Admit(t.Context())
		if err != nil {
			t.Fatalf("Admit: %v", err)
		}
		var spawned atomic.Bool
		h, err := r.Launch(slot, id32, "second", func(context.Context) Outcome {
			spawned.Store(true)
			return Outcome{Value: "two"}
		})
		if !errors.Is(err, ErrDuplicateRun) || h != nil {
			t.Fatalf("Launch of a duplicate id = %v, %v; want ErrDuplicateRun", h, err)
		}
		synctest.Wait()
		if spawned.Load() {
			t.Error("the refused run was started")
		}
		if got, want := mustCheck(t, r, id32), Running(id32, "first", 0); got != want {
			t.Errorf("Check = %+v, want the first record intact: %+v", got, want)
		}
		if s := r.Stats(); s.FreeSlots != 3 || s.Started != 1 {
			t.Errorf("Stats = %+v, want the refused launch's slot returned and one run started", s)
		}

		close(release)
		synctest.Wait()
		if got := mustCheck(t, r, id32); got.Value != "one" || got.Prompt != "first" {
			t.Errorf("Check = %+v, want the first run's value", got)
		}
	})
}

func TestFirstTerminalResultWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(300 * time.Second)
		var terminal []Result
		cfg.OnTerminal = func(res Result) { terminal = append(terminal, res) }
		r, logs := newRegistry(t, cfg)
		release := make(chan struct{})
		h := launch(t, r, id32, "p", gated(release, "second"))

		first := Completed(id32, "p", "first", 1, 0)
		if got := r.finish(h.rec, first, ending{}); got != first {
			t.Fatalf("finish on a running record = %+v, want %+v", got, first)
		}
		if got := r.finish(h.rec, Failed(id32, "p", "late", 0, 0), ending{}); got != first {
			t.Errorf("a second finish returned %+v, want the first result %+v", got, first)
		}
		close(release)
		if got := r.Settle(t.Context(), h); got != first {
			t.Errorf("Settle = %+v, want %+v", got, first)
		}
		synctest.Wait()
		if got := mustCheck(t, r, id32); got != first {
			t.Errorf("Check = %+v, want %+v", got, first)
		}
		if len(terminal) != 1 || terminal[0] != first {
			t.Errorf("OnTerminal saw %+v, want only %+v", terminal, first)
		}
		if lines := logs.withMessage(msgTerminal); len(lines) != 1 || lines[0].Attrs["status"] != "completed" {
			t.Errorf("terminal lines = %+v, want one reporting the standing result", lines)
		}
	})
}

func TestRegisteredRunIsVisibleAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		release := make(chan struct{})
		h := launch(t, r, id32, "p", gated(release, "v"))
		if got, want := mustCheck(t, r, id32), Running(id32, "p", 0); got != want {
			t.Errorf("Check straight after Launch = %+v, want %+v", got, want)
		}
		if h.RunID() != id32 {
			t.Errorf("Handle.RunID() = %q, want %q", h.RunID(), id32)
		}
		close(release)
		<-h.Done()
		if got, want := mustCheck(t, r, id32), Completed(id32, "p", "v", 0, 0); got != want {
			t.Errorf("Check after the run = %+v, want %+v", got, want)
		}
	})
}

func TestBackgroundingLogsExactlyOneInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, logs := newRegistry(t, testOptions(50*time.Millisecond))
		h := launch(t, r, id32, "slow", sleeper(5*time.Second, "done", 3))
		r.Settle(t.Context(), h)

		infos := logs.at(slog.LevelInfo)
		if len(infos) != 1 || infos[0].Message != msgOutlived {
			t.Fatalf("INFO lines after backgrounding = %+v, want exactly one %q", infos, msgOutlived)
		}
		if got := infos[0].Attrs; got["run_id"] != id32 || got["prompt"] != "slow" || len(got) != 2 {
			t.Errorf("backgrounding fields = %v, want run_id and prompt", got)
		}

		<-h.Done()
		synctest.Wait() // the run goroutine logs after the record is written
		infos = logs.at(slog.LevelInfo)
		if len(infos) != 2 || infos[1].Message != msgTerminal {
			t.Fatalf("INFO lines after the run = %+v, want the terminal line second", infos)
		}
		want := map[string]any{"run_id": id32, "prompt": "slow", "status": "completed", "turns": uint64(3), "elapsed_ms": uint64(5000)}
		for k, v := range want {
			if infos[1].Attrs[k] != v {
				t.Errorf("terminal field %s = %v (%T), want %v", k, infos[1].Attrs[k], infos[1].Attrs[k], v)
			}
		}
		if n := len(logs.withMessage(msgAbnormal)); n != 0 {
			t.Errorf("%d abnormal-end lines for a run that returned", n)
		}
		if n := len(logs.at(slog.LevelWarn)); n != 0 {
			t.Errorf("%d WARN lines, want none", n)
		}
	})
}

func TestAdmissionIsRefusedAfterItsTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(50 * time.Millisecond)
		cfg.MaxConcurrentRuns = 1
		cfg.AdmissionTimeout = 30 * time.Second
		r, logs := newRegistry(t, cfg)

		held, err := r.Admit(t.Context())
		if err != nil {
			t.Fatalf("the only slot starts free: %v", err)
		}
		start := time.Now()
		slot, err := r.Admit(t.Context())
		var refused *RefusedError
		if !errors.As(err, &refused) || slot != nil {
			t.Fatalf("Admit with every slot held = %v, %v; want *RefusedError", slot, err)
		}
		if refused.Wait != 30*time.Second {
			t.Errorf("refusal names a %v wait, want 30s", refused.Wait)
		}
		if waited := time.Since(start); waited != 30*time.Second {
			t.Errorf("refused after %v, want exactly 30s", waited)
		}
		warns := logs.at(slog.LevelWarn)
		if len(warns) != 1 || warns[0].Message != msgRefused {
			t.Errorf("WARN lines = %+v, want exactly one %q", warns, msgRefused)
		}
		if s := r.Stats(); s.Refused != 1 || s.Waiting != 0 {
			t.Errorf("Stats = %+v, want one refusal and nobody queued", s)
		}

		held.Release()
		held.Release() // idempotent: must not mint a second slot
		start = time.Now()
		slot, err = r.Admit(t.Context())
		if err != nil {
			t.Fatalf("Admit after the slot was freed: %v", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Admit of a free slot waited %v", waited)
		}
		if s := r.Stats(); s.FreeSlots != 0 {
			t.Errorf("Stats = %+v: a double Release minted a slot", s)
		}
		slot.Release()
	})
}

func TestRetentionWindowIsHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, logs := newRegistry(t, testOptions(50*time.Millisecond))
		h := launch(t, r, id32, "p", sleeper(0, "v", 0))
		<-h.Done()

		time.Sleep(retention - time.Second)
		if _, ok := r.Check(id32); !ok {
			t.Fatal("record gone at retain-1s, want still collectable")
		}
		time.Sleep(time.Second)
		if got, ok := r.Check(id32); ok {
			t.Fatalf("record %+v still there at exactly retain, want evicted", got)
		}
		evictions := logs.withMessage(msgEvicted)
		if len(evictions) != 1 || evictions[0].Level != slog.LevelDebug || evictions[0].Attrs["evicted"] != int64(1) {
			t.Errorf("eviction lines = %+v, want one DEBUG line counting 1", evictions)
		}
		if s := r.Stats(); s.Records != 0 {
			t.Errorf("Stats = %+v, want no records held", s)
		}
	})
}

func TestSweepEvictsOnlyExpiredRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.RetainCompleted = 10 * time.Second
		r, _ := newRegistry(t, cfg)
		ids := []string{"a", "b", "c"}
		for _, id := range ids {
			<-launch(t, r, id, "p", sleeper(0, id, 0)).Done()
			time.Sleep(4 * time.Second)
		}
		// a finished at 0s, b at 4s, c at 8s; now is 12s.
		present := map[string]bool{}
		for _, id := range ids {
			_, present[id] = r.Check(id)
		}
		if present["a"] || !present["b"] || !present["c"] {
			t.Errorf("at 12s present = %v, want only b and c", present)
		}
		time.Sleep(2 * time.Second)
		if _, ok := r.Check("b"); ok {
			t.Error("b still present at 14s, 10s after it finished")
		}
		if _, ok := r.Check("c"); !ok {
			t.Error("c gone at 14s, 6s after it finished")
		}
	})
}

func TestRunningRecordIsNeverEvicted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		release := make(chan struct{})
		h := launch(t, r, id32, "p", gated(release, "v"))

		time.Sleep(7200 * time.Second)
		got := mustCheck(t, r, id32)
		if want := Running(id32, "p", 7200*time.Second); got != want || got.ElapsedMS != 7_200_000 {
			t.Errorf("Check after 7200s = %+v, want %+v", got, want)
		}
		close(release)
		<-h.Done()
	})
}

func TestUnknownIDIsUnknown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		if got, ok := r.Check(strings.Repeat("0", 32)); ok {
			t.Errorf("Check of an id never launched = %+v, want unknown", got)
		}
		r.Cancel(strings.Repeat("0", 32)) // harmless
	})
}

func TestCancelStopsTheRunAndIsIdempotent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		h := launch(t, r, id32, "p", func(ctx context.Context) Outcome {
			time.Sleep(time.Second)
			<-ctx.Done()
			return Outcome{Err: errors.New("stopped")}
		})
		time.Sleep(time.Second)
		r.Cancel(id32)
		r.Cancel(id32)
		<-h.Done()
		if got, want := mustCheck(t, r, id32), Failed(id32, "p", "the run was cancelled: stopped", 0, time.Second); got != want {
			t.Errorf("Check = %+v, want %+v", got, want)
		}
		r.Cancel(id32) // a finished run is left alone
		if got := mustCheck(t, r, id32); got.Error != "the run was cancelled: stopped" {
			t.Errorf("Cancel rewrote a finished record: %+v", got)
		}
	})
}

func TestCloseStopsRunsAndRefusesNewOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(50 * time.Millisecond)
		cfg.MaxConcurrentRuns = 2
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := launch(t, r, id32, "p", func(ctx context.Context) Outcome {
			<-ctx.Done()
			return Outcome{Err: context.Cause(ctx)}
		})
		spare, err := r.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		// A caller queued for a slot is woken by Close, not left to time out.
		queued := make(chan error)
		go func() {
			_, err := r.Admit(t.Context())
			queued <- err
		}()
		synctest.Wait()
		if s := r.Stats(); s.Waiting != 1 {
			t.Fatalf("Stats = %+v, want one caller queued", s)
		}

		if err := r.Close(t.Context()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := <-queued; !errors.Is(err, ErrClosed) {
			t.Errorf("queued Admit after Close = %v, want ErrClosed", err)
		}
		if got, want := mustCheck(t, r, id32), Failed(id32, "p", ErrShuttingDown.Error(), 0, 0); got != want {
			t.Errorf("Check after Close = %+v, want %+v", got, want)
		}
		select {
		case <-h.Done():
		default:
			t.Error("Close returned before the run's record was terminal")
		}
		if _, err := r.Admit(t.Context()); !errors.Is(err, ErrClosed) {
			t.Errorf("Admit after Close = %v, want ErrClosed", err)
		}
		var spawned atomic.Bool
		if _, err := r.Launch(spare, "other", "p", func(context.Context) Outcome {
			spawned.Store(true)
			return Outcome{}
		}); !errors.Is(err, ErrClosed) {
			t.Errorf("Launch after Close = %v, want ErrClosed", err)
		}
		synctest.Wait()
		if spawned.Load() {
			t.Error("a run was started after Close")
		}
		if err := r.Close(t.Context()); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
}

func TestCloseIsBoundedByItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := New(testOptions(50 * time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		h := launch(t, r, id32, "stubborn", sleeper(10*time.Second, "v", 0))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := r.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close with a run ignoring cancellation = %v, want the context's deadline", err)
		}
		<-h.Done()
		if err := r.Close(t.Context()); err != nil {
			t.Errorf("Close once the run ended: %v", err)
		}
	})
}

func TestStatsCountRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		release := make(chan struct{})
		<-launch(t, r, "ok", "p", sleeper(0, "v", 0)).Done()
		<-launch(t, r, "bad", "p", func(context.Context) Outcome { return Outcome{Err: errors.New("no")} }).Done()
		launch(t, r, "going", "p", gated(release, "v"))
		synctest.Wait() // counters move after the record is written

		want := Stats{Started: 3, Completed: 1, Failed: 1, InFlight: 1, FreeSlots: 3, Records: 3, RetainedBytes: 3} // "v" and "no"
		if got := r.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}
		close(release)
		synctest.Wait()
		want = Stats{Started: 3, Completed: 2, Failed: 1, FreeSlots: 4, Records: 3, RetainedBytes: 4}
		if got := r.Stats(); got != want {
			t.Errorf("Stats = %+v, want %+v", got, want)
		}
	})
}

func TestLaunchRefusesBadArguments(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		other, _ := newRegistry(t, testOptions(50*time.Millisecond))
		run := sleeper(0, "v", 0)

		if _, err := r.Launch(nil, "a", "p", run); err == nil {
			t.Error("Launch without a slot was accepted")
		}
		foreign, err := other.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Launch(foreign, "a", "p", run); err == nil {
			t.Error("Launch with another registry's slot was accepted")
		}
		foreign.Release()

		slot, err := r.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Launch(slot, "a", "p", nil); err == nil {
			t.Error("Launch without a run function was accepted")
		}
		if _, err := r.Launch(slot, "a", "p", run); err == nil {
			t.Error("Launch with a slot already returned was accepted")
		}
		if s := r.Stats(); s.FreeSlots != 4 || s.Started != 0 {
			t.Errorf("Stats = %+v, want every slot free and nothing started", s)
		}
	})
}

func TestNewRefusesImpossibleLimits(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Options)
	}{
		{"no slots", func(c *Options) { c.MaxConcurrentRuns = 0 }},
		{"negative admission_timeout", func(c *Options) { c.AdmissionTimeout = -time.Second }},
		{"negative reply_deadline", func(c *Options) { c.ReplyDeadline = -time.Second }},
		{"negative retain_completed", func(c *Options) { c.RetainCompleted = -time.Second }},
		{"negative max_retained_runs", func(c *Options) { c.MaxRetainedRuns = -1 }},
		{"negative max_retained_bytes", func(c *Options) { c.MaxRetainedBytes = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testOptions(time.Second)
			tt.edit(&cfg)
			if r, err := New(cfg); err == nil {
				t.Errorf("New accepted %+v: %v", cfg, r)
			}
		})
	}
	cfg := testOptions(0)
	cfg.AdmissionTimeout, cfg.RetainCompleted = 0, 0
	r, err := New(cfg)
	if err != nil {
		t.Fatalf("New refused zero durations, which the spec allows: %v", err)
	}
	if r.AdmissionTimeout() != 0 || r.RetainCompleted() != 0 {
		t.Errorf("accessors = %v, %v; want the configured zeros", r.AdmissionTimeout(), r.RetainCompleted())
	}
	if err := r.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestViewSaysWhenAndHowARunEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		start := time.Now()
		launch(t, r, id32, "ok", sleeper(time.Second, "done", 1))
		cancelled := launch(t, r, "cancelled", "p", func(ctx context.Context) Outcome {
			<-ctx.Done()
			return Outcome{Err: errors.New("stopped")}
		})
		panicked := launch(t, r, "panicked", "p", func(context.Context) Outcome {
			time.Sleep(time.Second)
			panic("boom")
		})

		if v, ok := r.View(id32); !ok || v.Status != StatusRunning || !v.Started.Equal(start) || !v.Finished.IsZero() || v.Cause != nil {
			t.Errorf("View while running = %+v, %v; want running, started at the launch, not finished, no cause", v, ok)
		}
		time.Sleep(2 * time.Second)
		r.Cancel("cancelled")
		<-cancelled.Done()
		<-panicked.Done()

		v, _ := r.View(id32)
		if v.Result != Completed(id32, "ok", "done", 1, time.Second) || !v.Finished.Equal(start.Add(time.Second)) || v.Cause != nil || v.Abnormal {
			t.Errorf("View of the completed run = %+v", v)
		}
		if v, _ := r.View("cancelled"); v.Status != StatusFailed || !errors.Is(v.Cause, ErrRunCancelled) || v.Abnormal || !v.Finished.Equal(start.Add(2*time.Second)) {
			t.Errorf("View of the cancelled run = %+v, want failed with ErrRunCancelled as its cause", v)
		}
		if v, _ := r.View("panicked"); v.Status != StatusFailed || !v.Abnormal || v.Cause != nil {
			t.Errorf("View of the panicked run = %+v, want failed and abnormal", v)
		}
		if _, ok := r.View("unknown"); ok {
			t.Error("View of an unknown id reported a run")
		}
	})
}

// A run launched with its start already read (the server's trace's) and
// whose body reports when it ended (Outcome.Ended) is recorded with those
// instants, read once for the record and the trace; an Ended before the
// start is ignored for the registry's own reading.
func TestLaunchWithTakesTheCallersStartAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, testOptions(50*time.Millisecond))
		start := time.Now().Add(-3 * time.Second)
		end := start.Add(1500 * time.Millisecond)
		for _, c := range []struct {
			id       string
			ended    time.Time
			finished time.Time
		}{{"given", end, end}, {"before-start", start.Add(-time.Second), time.Now()}, {"not-given", time.Time{}, time.Now()}} {
			slot, err := r.Admit(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			h, err := r.LaunchWith(slot, c.id, "p", start, nil, func(context.Context) Outcome {
				return Outcome{Value: "v", Ended: c.ended}
			})
			if err != nil {
				t.Fatal(err)
			}
			<-h.Done()
			v, _ := r.View(c.id)
			if !v.Started.Equal(start) || !v.Finished.Equal(c.finished) || v.ElapsedMS != uint64(c.finished.Sub(start).Milliseconds()) {
				t.Errorf("%s: started %v, finished %v, %d ms; want %v, %v, %d ms", c.id, v.Started, v.Finished, v.ElapsedMS, start, c.finished, c.finished.Sub(start).Milliseconds())
			}
		}
	})
}
