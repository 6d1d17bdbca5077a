package runs_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/promptforge-go/promptforge/internal/pgtest"
	"github.com/promptforge-go/promptforge/internal/runs"
	"github.com/promptforge-go/promptforge/internal/runs/pgstore"
)

// The registry's semantics over each store. The synctest tests in this
// package pin the timing over the memory store; these run on real time
// (waiting on channels, never asserting durations) so they can talk to a
// real PostgreSQL, and they check what must hold whichever store keeps the
// records: first write wins, the reply deadline, collection from another
// registry sharing the store (a replica), cancellation across registries,
// retention by age and count, and the record's fields.

// storeKind builds a store over a retention policy; settle applies the
// store's retention now (the PostgreSQL store applies its bounds on its
// keeper's pass, the memory store as each run finishes).
type storeKind struct {
	name string
	open func(t *testing.T, ret runs.RetentionOptions, globalCap int) (store runs.Store, settle func())
}

func kinds() []storeKind {
	return []storeKind{
		{"memory", func(t *testing.T, ret runs.RetentionOptions, _ int) (runs.Store, func()) {
			return runs.NewMemoryStore(ret), func() {}
		}},
		{"postgres", func(t *testing.T, ret runs.RetentionOptions, globalCap int) (runs.Store, func()) {
			dsn := pgtest.Need(t, runs.SharedPG())
			st := openPG(t, dsn, "replica-a", ret, globalCap)
			return st, func() {
				if err := st.Sweep(t.Context()); err != nil {
					t.Fatalf("Sweep: %v", err)
				}
			}
		}},
	}
}

// eachStore runs body once per store kind, over a fresh store that keeps
// finished records for an hour.
func eachStore(t *testing.T, body func(t *testing.T, st runs.Store)) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			st, _ := k.open(t, runs.RetentionOptions{RetainCompleted: time.Hour}, 0)
			body(t, st)
		})
	}
}

func openPG(t *testing.T, dsn, replica string, ret runs.RetentionOptions, globalCap int) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(t.Context(), pgstore.Options{DSN: dsn, Replica: replica, Retention: ret, GlobalMaxRuns: globalCap})
	if err != nil {
		t.Fatalf("pgstore.Open: %v", err)
	}
	t.Cleanup(st.Close)
	return st
}

// replica is one registry over store, closed when the test ends.
func replica(t *testing.T, store runs.Store, name string, deadline time.Duration) *runs.Registry {
	t.Helper()
	r, err := runs.New(runs.Options{
		MaxConcurrentRuns: 4, AdmissionTimeout: 5 * time.Second, ReplyDeadline: deadline,
		RetainCompleted: time.Hour, Store: store, Replica: name,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func start(t *testing.T, r *runs.Registry, id string, run func(context.Context) runs.Outcome) *runs.Handle {
	t.Helper()
	slot, err := r.Admit(t.Context())
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	h, err := r.Launch(slot, id, "p", run)
	if err != nil {
		t.Fatalf("Launch(%s): %v", id, err)
	}
	return h
}

func view(t *testing.T, r *runs.Registry, id string) runs.View {
	t.Helper()
	v, ok, err := r.Lookup(t.Context(), id)
	if err != nil || !ok {
		t.Fatalf("Lookup(%s) = %v, %v; want a record", id, ok, err)
	}
	return v
}

func TestStoresAnswerInsideTheDeadlineWithTheFullRecord(t *testing.T) {
	eachStore(t, func(t *testing.T, st runs.Store) {
		a := replica(t, st, "a", time.Minute)
		h := start(t, a, "r1", func(context.Context) runs.Outcome {
			return runs.Outcome{Value: "v", Turns: 3, Tokens: runs.Tokens{Prompt: 11, Completion: 7}}
		})
		got := a.Settle(t.Context(), h)
		if got.Status != runs.StatusCompleted || got.Value != "v" || got.Turns != 3 || got.Tokens != (runs.Tokens{Prompt: 11, Completion: 7}) {
			t.Fatalf("Settle = %+v", got)
		}
		// Read back through the store (the owner no longer holds it).
		v := view(t, a, "r1")
		if v.Result != got || v.Finished.IsZero() || v.Finished.Before(v.Started) || v.Cause != nil || v.Abnormal {
			t.Fatalf("View = %+v; want the settled record %+v with its times", v, got)
		}
	})
}

func TestStoresLetAnotherReplicaCollectARunPastItsDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, st runs.Store) {
		a := replica(t, st, "a", time.Millisecond)
		c := replica(t, st, "c", time.Millisecond)
		release := make(chan struct{})
		h := start(t, a, "r1", func(context.Context) runs.Outcome {
			<-release
			return runs.Outcome{Value: "late"}
		})
		if got := a.Settle(t.Context(), h); got.Status != runs.StatusRunning {
			t.Fatalf("Settle = %+v; want running past the deadline", got)
		}
		if v := view(t, c, "r1"); v.Status != runs.StatusRunning || v.Prompt != "p" {
			t.Fatalf("C reads %+v; want running", v)
		}
		close(release)
		<-h.Done()
		if v := view(t, c, "r1"); v.Status != runs.StatusCompleted || v.Value != "late" {
			t.Fatalf("C reads %+v; want the completed record", v)
		}
		if _, ok, err := c.Lookup(t.Context(), "nope"); ok || err != nil {
			t.Fatalf("an unknown id reads %v, %v; want unknown", ok, err)
		}
	})
}

func TestStoresRefuseADuplicateIDAcrossReplicas(t *testing.T) {
	eachStore(t, func(t *testing.T, st runs.Store) {
		a := replica(t, st, "a", time.Minute)
		b := replica(t, st, "b", time.Minute)
		a.Settle(t.Context(), start(t, a, "same", func(context.Context) runs.Outcome { return runs.Outcome{Value: "first"} }))
		slot, err := b.Admit(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		called := false
		h, err := b.Launch(slot, "same", "p", func(context.Context) runs.Outcome { called = true; return runs.Outcome{} })
		if !errors.Is(err, runs.ErrDuplicateRun) || h != nil {
			t.Fatalf("Launch of a duplicate = %v, %v; want ErrDuplicateRun", h, err)
		}
		if called || b.Stats().FreeSlots != 4 {
			t.Fatalf("the refused run was called (%v) or kept its slot (%d free)", called, b.Stats().FreeSlots)
		}
		if v := view(t, b, "same"); v.Value != "first" {
			t.Fatalf("record = %+v; want the first run's", v)
		}
	})
}

func TestStoresKeepTheFirstTerminalRecord(t *testing.T) {
	eachStore(t, func(t *testing.T, st runs.Store) {
		a := replica(t, st, "a", time.Minute)
		release := make(chan struct{})
		h := start(t, a, "r1", func(context.Context) runs.Outcome {
			<-release
			return runs.Outcome{Value: "too late"}
		})
		// Another replica got there first (as when the owner's lease
		// ran out): its record stands, and the owner answers it.
		now := time.Now()
		first := runs.Stored{Result: runs.Failed("r1", "p", runs.MsgReplicaStopped, 0, time.Second),
			Owner: "b", Started: now, Finished: now, Abnormal: true}
		if got, err := st.Finish(t.Context(), first); err != nil || got.Error != runs.MsgReplicaStopped {
			t.Fatalf("Finish = %+v, %v", got, err)
		}
		close(release)
		if got := a.Settle(t.Context(), h); got.Status != runs.StatusFailed || got.Error != runs.MsgReplicaStopped {
			t.Fatalf("Settle = %+v; want the record written first", got)
		}
		if v := view(t, a, "r1"); v.Status != runs.StatusFailed || !v.Abnormal {
			t.Fatalf("View = %+v; want the first, abnormal, record", v)
		}
	})
}

func TestStoresCarryACancelToTheOwningReplica(t *testing.T) {
	eachStore(t, func(t *testing.T, st runs.Store) {
		a := replica(t, st, "a", time.Millisecond)
		b := replica(t, st, "b", time.Millisecond)
		started := make(chan struct{})
		h := start(t, a, "r1", func(ctx context.Context) runs.Outcome {
			close(started)
			<-ctx.Done()
			return runs.Outcome{Err: errors.New("stopped")}
		})
		<-started
		// One cancellation: the PostgreSQL store LISTENs before Open
		// returns, so the first notification is heard.
		b.Cancel("r1")
		select {
		case <-h.Done():
		case <-time.After(20 * time.Second):
			t.Fatal("the run was not cancelled")
		}
		v := view(t, b, "r1")
		if v.Status != runs.StatusFailed || !errors.Is(v.Cause, runs.ErrRunCancelled) || !strings.Contains(v.Error, "stopped") {
			t.Fatalf("B reads %+v; want failed, cancelled by ErrRunCancelled", v)
		}
	})
}

func TestStoresEvictByCountOldestFirstAndNeverARunningRecord(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			st, settle := k.open(t, runs.RetentionOptions{RetainCompleted: time.Hour, MaxRetainedRuns: 2}, 0)
			a := replica(t, st, "a", time.Minute)
			hold := make(chan struct{})
			defer close(hold)
			start(t, a, "running", func(context.Context) runs.Outcome { <-hold; return runs.Outcome{} })
			for _, id := range []string{"one", "two", "three"} {
				a.Settle(t.Context(), start(t, a, id, func(context.Context) runs.Outcome { return runs.Outcome{Value: id} }))
			}
			settle()
			if _, ok, _ := a.Lookup(t.Context(), "one"); ok {
				t.Errorf("the oldest finished record is still held past MaxRetainedRuns")
			}
			for _, id := range []string{"two", "three", "running"} {
				view(t, a, id)
			}
			if n, _ := st.Held(); n != 3 {
				t.Errorf("Held = %d records; want 3 (two finished, one running)", n)
			}
		})
	}
}

func TestStoresForgetARecordExactlyAtTheEndOfItsWindow(t *testing.T) {
	for _, k := range kinds() {
		t.Run(k.name, func(t *testing.T) {
			const window = time.Hour
			st, _ := k.open(t, runs.RetentionOptions{RetainCompleted: window}, 0)
			started := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
			finished := started.Add(time.Second)
			rec := runs.Stored{Result: runs.Running("r1", "p", 0), Owner: "a", Started: started}
			if err := st.Register(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			rec.Result, rec.Finished = runs.Completed("r1", "p", "v", 1, time.Second), finished
			if _, err := st.Finish(t.Context(), rec); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := st.Lookup(t.Context(), "r1", finished.Add(window-time.Millisecond)); !ok || err != nil {
				t.Fatalf("one instant before the window ends: %v, %v; want the record", ok, err)
			}
			if _, ok, err := st.Lookup(t.Context(), "r1", finished.Add(window)); ok || err != nil {
				t.Fatalf("at the end of the window: %v, %v; want unknown", ok, err)
			}
		})
	}
}

func TestPostgresGlobalCapRefusesAcrossReplicas(t *testing.T) {
	dsn := pgtest.Need(t, runs.SharedPG())
	ret := runs.RetentionOptions{RetainCompleted: time.Hour}
	a := replica(t, openPG(t, dsn, "a", ret, 1), "a", time.Millisecond)
	b := replica(t, openPG(t, dsn, "b", ret, 1), "b", time.Millisecond)
	release := make(chan struct{})
	h := start(t, a, "r1", func(context.Context) runs.Outcome { <-release; return runs.Outcome{} })
	slot, err := b.Admit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Launch(slot, "r2", "p", func(context.Context) runs.Outcome { return runs.Outcome{} }); !errors.Is(err, runs.ErrGlobalCap) {
		t.Fatalf("Launch past the global cap = %v; want ErrGlobalCap", err)
	}
	close(release)
	<-h.Done()
	b.Settle(t.Context(), start(t, b, "r3", func(context.Context) runs.Outcome { return runs.Outcome{} }))
}
