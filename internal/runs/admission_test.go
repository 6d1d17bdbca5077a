package runs

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func oneSlot(t *testing.T, admission time.Duration) (*Registry, *capture) {
	t.Helper()
	cfg := testOptions(time.Hour)
	cfg.MaxConcurrentRuns = 1
	cfg.AdmissionTimeout = admission
	return newRegistry(t, cfg)
}

func TestAdmissionIsFirstComeFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := oneSlot(t, time.Hour)
		held, err := r.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}

		var (
			mu    sync.Mutex
			order []int
			wg    sync.WaitGroup
		)
		for i := range 5 {
			wg.Go(func() {
				slot, err := r.Admit(t.Context())
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(time.Second)
				slot.Release()
			})
			synctest.Wait() // waiter i is queued before waiter i+1 arrives
		}
		if s := r.Stats(); s.Waiting != 5 {
			t.Fatalf("Stats = %+v, want five callers queued", s)
		}
		held.Release()
		wg.Wait()
		for i, got := range order {
			if got != i {
				t.Fatalf("slots granted in order %v, want arrival order", order)
			}
		}
	})
}

func TestAdmissionWaiterThatGivesUpLosesNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, logs := oneSlot(t, time.Hour)
		held, err := r.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}

		call, hangUp := context.WithCancel(t.Context())
		gaveUp := make(chan error)
		go func() {
			_, err := r.Admit(call)
			gaveUp <- err
		}()
		synctest.Wait()
		patient := make(chan *Slot)
		go func() {
			slot, err := r.Admit(t.Context())
			if err != nil {
				t.Errorf("patient waiter: %v", err)
			}
			patient <- slot
		}()
		synctest.Wait()

		hangUp()
		err = <-gaveUp
		var refused *RefusedError
		if !errors.Is(err, context.Canceled) || errors.As(err, &refused) {
			t.Errorf("Admit whose caller hung up = %v, want context.Canceled and no refusal", err)
		}
		if len(logs.at(slog.LevelWarn)) != 0 || r.Stats().Refused != 0 {
			t.Error("a caller hanging up was counted as a refusal")
		}

		held.Release()
		(<-patient).Release()
		if s := r.Stats(); s.FreeSlots != 1 || s.Waiting != 0 {
			t.Errorf("Stats = %+v, want the one slot free and nobody queued", s)
		}
	})
}

func TestAdmissionGivingUpAsTheSlotArrivesLosesNoSlot(t *testing.T) {
	// The holder releases at the very instant the waiter gives up; which
	// happens first is up to the scheduler. Either way the slot must end up
	// free, neither lost nor duplicated.
	tests := []struct {
		name string
		// admit waits for a slot in its own way and gives up at 30s.
		admit func(t *testing.T, r *Registry) (*Slot, error)
	}{
		{"admission timeout", func(t *testing.T, r *Registry) (*Slot, error) {
			return r.Admit(t.Context())
		}},
		{"caller context", func(t *testing.T, r *Registry) (*Slot, error) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			return r.Admit(ctx)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 50 {
				synctest.Test(t, func(t *testing.T) {
					admission := 30 * time.Second
					if tt.name == "caller context" {
						admission = time.Hour
					}
					r, _ := oneSlot(t, admission)
					held, err := r.Admit(t.Context())
					if err != nil {
						t.Fatal(err)
					}
					go func() {
						time.Sleep(30 * time.Second)
						held.Release()
					}()
					if slot, err := tt.admit(t, r); err == nil {
						slot.Release()
					}
					synctest.Wait()
					if s := r.Stats(); s.FreeSlots != 1 || s.Waiting != 0 {
						t.Fatalf("Stats = %+v, want exactly one free slot", s)
					}
				})
			}
		})
	}
}

func TestAdmissionWaitEndingAsTheSlotArrives(t *testing.T) {
	// A slot can be handed to a waiter in the same instant the waiter stops
	// waiting; the scheduler decides which the waiter sees first, so this
	// drives the crossing directly rather than hoping to hit it.
	hungUp := errors.New("client went away")
	tests := []struct {
		name      string
		giveUp    error
		wantErr   error
		wantTaken bool // the waiter keeps the slot
	}{
		{"woken by the grant", nil, nil, true},
		{"timed out as it was granted", errTimedOut, nil, true},
		{"caller left as it was granted", hungUp, hungUp, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newSlotPool(0)
			enqueue := func() *slotWaiter {
				p.mu.Lock()
				defer p.mu.Unlock()
				w := &slotWaiter{ready: make(chan struct{})}
				w.elem = p.waiters.PushBack(w)
				return w
			}
			first, second := enqueue(), enqueue()
			p.release() // grants first
			if err := p.endWait(first, tt.giveUp); !errors.Is(err, tt.wantErr) {
				t.Fatalf("endWait = %v, want %v", err, tt.wantErr)
			}
			if second.granted == tt.wantTaken {
				t.Errorf("second waiter granted = %v; the slot was lost or duplicated", second.granted)
			}
			wantWaiting := 0
			if tt.wantTaken {
				wantWaiting = 1 // second is still queued for a slot
			}
			if free, waiting := p.state(); free != 0 || waiting != wantWaiting {
				t.Errorf("pool has %d free, %d waiting after the crossing; want 0, %d", free, waiting, wantWaiting)
			}
		})
	}
}

func TestAdmissionWithNoWaitRefusesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := oneSlot(t, 0)
		held, err := r.Admit(t.Context())
		if err != nil {
			t.Fatalf("a free slot is granted even with a zero wait: %v", err)
		}
		start := time.Now()
		var refused *RefusedError
		if _, err := r.Admit(t.Context()); !errors.As(err, &refused) || refused.Wait != 0 {
			t.Errorf("Admit = %v, want a refusal naming a 0s wait", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("refusal took %v, want none", waited)
		}
		held.Release()
	})
}

func TestAdmissionWithEndedContextTakesNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := oneSlot(t, time.Hour)
		ctx, cancel := context.WithCancelCause(t.Context())
		cause := errors.New("client went away")
		cancel(cause)
		if slot, err := r.Admit(ctx); !errors.Is(err, cause) || slot != nil {
			t.Errorf("Admit with an ended context = %v, %v; want its cause", slot, err)
		}
		if s := r.Stats(); s.FreeSlots != 1 {
			t.Errorf("Stats = %+v, want the slot untouched", s)
		}
	})
}

func TestRefusedErrorNamesTheWait(t *testing.T) {
	err := &RefusedError{Wait: 5 * time.Second}
	if got := err.Error(); got != "every run slot stayed busy for 5s; retry the call in a moment" {
		t.Errorf("Error() = %q", got)
	}
}

func TestSlotIsHeldUntilTheRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(50 * time.Millisecond)
		cfg.MaxConcurrentRuns = 1
		cfg.AdmissionTimeout = 10 * time.Second
		r, _ := newRegistry(t, cfg)
		h := launch(t, r, id32, "slow", sleeper(time.Minute, "v", 0))
		if got := r.Settle(t.Context(), h); got.Status != StatusRunning {
			t.Fatalf("Settle = %+v, want running", got)
		}
		// The call was answered, but its run still holds the only slot.
		var refused *RefusedError
		if _, err := r.Admit(t.Context()); !errors.As(err, &refused) {
			t.Fatalf("Admit while the backgrounded run holds the slot = %v, want a refusal", err)
		}
		<-h.Done()
		slot, err := r.Admit(t.Context())
		if err != nil {
			t.Fatalf("Admit once the run ended: %v", err)
		}
		slot.Release()
	})
}
