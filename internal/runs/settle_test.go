package runs

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Settle reuses its deadline timers (issue #12). A reused timer waits the
// whole deadline again, whether the last Settle's timer fired and was
// read (outlived), was stopped before firing, or fired at the very
// instant its run ended, when Settle took the run's end: no stale tick
// answers a later call early.
func TestSettleReusesItsTimerAndStillWaitsTheWholeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const deadline = 50 * time.Millisecond
		r, _ := newRegistry(t, testOptions(deadline))
		for i, run := range []struct {
			name string
			take time.Duration
		}{
			{"outlived", time.Hour},
			{"quick", time.Millisecond},
			{"outlived after quick", time.Hour},
			{"ends at the deadline", deadline},
			{"outlived after a tie", time.Hour},
			{"outlived again", time.Hour},
		} {
			id := string(rune('a'+i)) + id32[1:]
			start := time.Now()
			h := launch(t, r, id, "p", sleeper(run.take, "v", 0))
			got := r.Settle(t.Context(), h)
			waited := time.Since(start)
			want := min(run.take, deadline)
			if waited != want {
				t.Errorf("%s: Settle returned after %v, want %v", run.name, waited, want)
			}
			// At a tie either answer is right: which one the select
			// takes is the runtime's choice.
			if wantRunning := run.take > deadline; run.take != deadline && (got.Status == StatusRunning) != wantRunning {
				t.Errorf("%s: Settle = %+v", run.name, got)
			}
			r.Cancel(id)
			synctest.Wait()
		}
	})
}

// Settling a run that has ended allocates nothing: the deadline timer is
// the last call's.
func TestSettleOfAnEndedRunAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled timers on purpose")
	}
	r, _ := newRegistry(t, testOptions(time.Minute))
	h := launch(t, r, id32, "p", func(context.Context) Outcome { return Outcome{Value: "v"} })
	<-h.Done()
	if allocs := testing.AllocsPerRun(100, func() { r.Settle(context.Background(), h) }); allocs != 0 {
		t.Errorf("Settle allocated %v times per call; want 0", allocs)
	}
}
