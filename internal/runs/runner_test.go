package runs

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

// goroutineID is the calling goroutine's number, from its stack header
// ("goroutine 42 [running]:"): the only way to tell goroutines apart.
func goroutineID() uint64 {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	field := bytes.Fields(bytes.TrimPrefix(buf, []byte("goroutine ")))[0]
	id, err := strconv.ParseUint(string(field), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("cannot read the goroutine id from %q", buf))
	}
	return id
}

// runnerGoroutines counts the goroutines in Registry.runner, from a dump of
// every goroutine. runtime.NumGoroutine counts the whole process, where a
// goroutine of another test ending outside the bubble moved the count by
// one under load (a CI failure: "Close left -1 run goroutines").
func runnerGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("runs.(*Registry).runner(")) {
			count++
		}
	}
	return count
}

// TestRunnersAreReusedBoundedAndStopped: runs one after another run on one
// goroutine (a new one would start with a small stack and grow it again
// for every run); after a burst at most maxIdleRunners goroutines wait for
// the next run; Close stops them all.
func TestRunnersAreReusedBoundedAndStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newRegistry(t, Options{MaxConcurrentRuns: 64, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: time.Hour})

		seen := map[uint64]bool{}
		for i := range 5 {
			var id uint64
			h := launch(t, r, fmt.Sprintf("seq-%d", i), "p", func(context.Context) Outcome {
				id = goroutineID()
				return Outcome{Value: "ok"}
			})
			if res := r.Settle(t.Context(), h); res.Status != StatusCompleted {
				t.Fatalf("run %d: %+v", i, res)
			}
			synctest.Wait() // the runner is back waiting for the next run
			seen[id] = true
		}
		if len(seen) != 1 {
			t.Errorf("5 runs one after another ran on %d goroutines, want 1 reused", len(seen))
		}

		release := make(chan struct{})
		var handles []*Handle
		for i := range maxIdleRunners + 8 {
			handles = append(handles, launch(t, r, fmt.Sprintf("burst-%d", i), "p", gated(release, "ok")))
		}
		synctest.Wait()
		if got := runnerGoroutines(); got != maxIdleRunners+8 {
			t.Errorf("%d runs in flight on %d goroutines, want one each", maxIdleRunners+8, got)
		}
		close(release)
		for _, h := range handles {
			if res := r.Settle(t.Context(), h); res.Status != StatusCompleted {
				t.Fatalf("burst run: %+v", res)
			}
		}
		synctest.Wait()
		if got := runnerGoroutines(); got != maxIdleRunners {
			t.Errorf("after the burst %d goroutines wait, want at most maxIdleRunners (%d)", got, maxIdleRunners)
		}

		if err := r.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		// Close returns once each runner has called runners.Done, which
		// it does on its way out: let them be gone.
		synctest.Wait()
		if got := runnerGoroutines(); got != 0 {
			t.Errorf("Close left %d run goroutines", got)
		}
	})
}

// deadlineStore is the in-memory store behind another type, as a shared
// store would be, noting whether each write carried a deadline.
type deadlineStore struct {
	Store
	register, finish bool
}

func (d *deadlineStore) Register(ctx context.Context, rec Stored) error {
	_, d.register = ctx.Deadline()
	return d.Store.Register(ctx, rec)
}

func (d *deadlineStore) Finish(ctx context.Context, rec Stored) (Stored, error) {
	_, d.finish = ctx.Deadline()
	return d.Store.Finish(ctx, rec)
}

// TestStoreWritesAreBounded: a store that is not the in-memory one (which
// never waits, and gets no timer) has each write bounded by storeTimeout.
func TestStoreWritesAreBounded(t *testing.T) {
	st := &deadlineStore{Store: NewMemoryStore(RetentionOptions{RetainCompleted: time.Hour})}
	r, _ := newRegistry(t, Options{MaxConcurrentRuns: 1, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: time.Hour, Store: st})
	h := launch(t, r, "bounded", "p", func(context.Context) Outcome { return Outcome{Value: "ok"} })
	if res := r.Settle(t.Context(), h); res.Status != StatusCompleted {
		t.Fatalf("run: %+v", res)
	}
	if !st.register || !st.finish {
		t.Errorf("store writes had deadlines: register %v, finish %v; want both bounded", st.register, st.finish)
	}
}

// A caller answered with a run's result finds it out of the in-flight
// count: /metrics read right after a reply said runs_in_flight 1 now and
// then (TestMetricsEndpoint under -race), as the count went down only
// after the waiters were answered.
func TestAnsweredRunIsNoLongerInFlight(t *testing.T) {
	r, _ := newRegistry(t, Options{MaxConcurrentRuns: 4, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: time.Hour})
	for i := range 300 {
		h := launch(t, r, fmt.Sprintf("run-%d", i), "p", func(context.Context) Outcome { return Outcome{Value: "ok"} })
		if res := r.Settle(t.Context(), h); res.Status != StatusCompleted {
			t.Fatalf("run %d: %+v", i, res)
		}
		if n := r.Stats().InFlight; n != 0 {
			t.Fatalf("run %d answered, yet %d run(s) in flight", i, n)
		}
	}
}
