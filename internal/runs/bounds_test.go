package runs

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// finishRun launches a run that ends at once with out and waits for its
// terminal record, so the bounds have been applied when it returns.
func finishRun(t *testing.T, r *Registry, id string, out Outcome) {
	t.Helper()
	<-launch(t, r, id, "p", func(context.Context) Outcome { return out }).Done()
}

// present reports which of ids Check still knows, in order.
func present(r *Registry, ids ...string) []bool {
	got := make([]bool, len(ids))
	for i, id := range ids {
		_, got[i] = r.Check(id)
	}
	return got
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestZeroBoundsMeanTheDefaults(t *testing.T) {
	r, err := New(testOptions(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(t.Context())
	o := r.store.(*memStore).opts
	if o.MaxRetainedRuns != DefaultMaxRetainedRuns || o.MaxRetainedBytes != DefaultMaxRetainedBytes {
		t.Errorf("bounds = %d runs, %d bytes; want %d, %d",
			o.MaxRetainedRuns, o.MaxRetainedBytes, DefaultMaxRetainedRuns, DefaultMaxRetainedBytes)
	}
	if DefaultMaxRetainedRuns != 10_000 || DefaultMaxRetainedBytes != 64*1024*1024 {
		t.Errorf("defaults = %d, %d; want 10000 and 64 MiB", DefaultMaxRetainedRuns, DefaultMaxRetainedBytes)
	}
}

func TestCountBoundEvictsTheOldestFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.MaxRetainedRuns = 3
		r, logs := newRegistry(t, cfg)
		ids := []string{"a", "b", "c", "d", "e"}
		for _, id := range ids {
			finishRun(t, r, id, Outcome{Value: id})
		}
		if got, want := present(r, ids...), []bool{false, false, true, true, true}; !equalBools(got, want) {
			t.Errorf("present = %v, want %v", got, want)
		}
		if got := mustCheck(t, r, "c"); got.Value != "c" {
			t.Errorf("Check(c) = %+v, want its completed record", got)
		}
		if s := r.Stats(); s.Records != 3 || s.RetainedBytes != 3 {
			t.Errorf("Stats = %+v, want 3 records of 3 bytes", s)
		}
		lines := logs.withMessage(msgOverBound)
		if len(lines) != 2 {
			t.Fatalf("bound eviction lines = %+v, want two (one per excess run)", lines)
		}
		for _, l := range lines {
			if l.Level != slog.LevelDebug || l.Attrs["evicted"] != int64(1) {
				t.Errorf("bound eviction line = %+v, want DEBUG evicting 1", l)
			}
		}
		if n := len(logs.withMessage(msgEvicted)); n != 0 {
			t.Errorf("%d retention eviction lines, want none: nothing outlived its window", n)
		}
	})
}

func TestByteBoundCountsValuesAndErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.MaxRetainedBytes = 10
		r, _ := newRegistry(t, cfg)
		finishRun(t, r, "a", Outcome{Value: "aaaa"})
		finishRun(t, r, "b", Outcome{Err: errors.New("bbbb")})
		if s := r.Stats(); s.RetainedBytes != 8 {
			t.Fatalf("RetainedBytes = %d, want 8 (a value of 4 and an error of 4)", s.RetainedBytes)
		}
		finishRun(t, r, "c", Outcome{Value: "cc"}) // 10: exactly at the bound
		if got, want := present(r, "a", "b", "c"), []bool{true, true, true}; !equalBools(got, want) {
			t.Fatalf("at the bound present = %v, want %v", got, want)
		}
		finishRun(t, r, "d", Outcome{Value: "ddddd"}) // 15: a and b must go
		if got, want := present(r, "a", "b", "c", "d"), []bool{false, false, true, true}; !equalBools(got, want) {
			t.Errorf("over the bound present = %v, want %v", got, want)
		}
		if s := r.Stats(); s.RetainedBytes != 7 || s.Records != 2 {
			t.Errorf("Stats = %+v, want 2 records of 7 bytes", s)
		}
	})
}

func TestBoundsNeverEvictRunningRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Millisecond)
		cfg.MaxRetainedRuns = 1
		cfg.MaxRetainedBytes = 1
		r, _ := newRegistry(t, cfg)
		release := make(chan struct{})
		h := launch(t, r, "x", "p", gated(release, "xxxx"))
		finishRun(t, r, "a", Outcome{Value: "aaaa"})
		finishRun(t, r, "b", Outcome{Value: "bbbb"})
		if got := mustCheck(t, r, "x"); got.Status != StatusRunning {
			t.Errorf("Check(x) = %+v, want running", got)
		}
		if got, want := present(r, "a", "b"), []bool{false, true}; !equalBools(got, want) {
			t.Errorf("present = %v, want only the newest finished", got)
		}
		if s := r.Stats(); s.Records != 2 {
			t.Errorf("Records = %d, want the running x plus b", s.Records)
		}
		close(release)
		<-h.Done()
		if got, want := present(r, "x", "b"), []bool{true, false}; !equalBools(got, want) {
			t.Errorf("after x finished present = %v, want %v", got, want)
		}
	})
}

func TestBoundsEvictInFinishingOrderNotLaunchOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Millisecond)
		cfg.MaxRetainedRuns = 2
		r, _ := newRegistry(t, cfg)
		gates := map[string]chan struct{}{}
		handles := map[string]*Handle{}
		for _, id := range []string{"a", "b", "c"} {
			gates[id] = make(chan struct{})
			handles[id] = launch(t, r, id, "p", gated(gates[id], id))
		}
		for _, id := range []string{"b", "c", "a"} { // a launched first, finishes last
			close(gates[id])
			<-handles[id].Done()
		}
		if got, want := present(r, "a", "b", "c"), []bool{true, false, true}; !equalBools(got, want) {
			t.Errorf("present = %v, want b (first to finish) evicted", got)
		}
	})
}

func TestBoundsAndRetentionWindowTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.RetainCompleted = 10 * time.Second
		cfg.MaxRetainedRuns = 2
		r, logs := newRegistry(t, cfg)
		for _, id := range []string{"a", "b", "c"} {
			finishRun(t, r, id, Outcome{Value: id + id})
			time.Sleep(4 * time.Second)
		}
		// a finished at 0s and was pushed out by c at 8s; now is 12s.
		if got, want := present(r, "a", "b", "c"), []bool{false, true, true}; !equalBools(got, want) {
			t.Fatalf("at 12s present = %v, want %v", got, want)
		}
		time.Sleep(2 * time.Second) // 14s: b's window closes
		if got, want := present(r, "b", "c"), []bool{false, true}; !equalBools(got, want) {
			t.Fatalf("at 14s present = %v, want %v", got, want)
		}
		if s := r.Stats(); s.Records != 1 || s.RetainedBytes != 2 {
			t.Errorf("Stats = %+v, want c alone, 2 bytes", s)
		}
		// With room freed by the window, a new run evicts nothing early.
		finishRun(t, r, "d", Outcome{Value: "dd"})
		if got, want := present(r, "c", "d"), []bool{true, true}; !equalBools(got, want) {
			t.Errorf("after d present = %v, want %v", got, want)
		}
		if n := len(logs.withMessage(msgOverBound)); n != 1 {
			t.Errorf("%d bound eviction lines, want 1 (a pushed out by c)", n)
		}
		if n := len(logs.withMessage(msgEvicted)); n != 1 {
			t.Errorf("%d retention eviction lines, want 1 (b's window)", n)
		}
		time.Sleep(10 * time.Second)
		if got, want := present(r, "c", "d"), []bool{false, false}; !equalBools(got, want) {
			t.Errorf("at 24s present = %v, want %v", got, want)
		}
		if s := r.Stats(); s.Records != 0 || s.RetainedBytes != 0 {
			t.Errorf("Stats = %+v, want nothing retained", s)
		}
	})
}

func TestHugeSingleRecordIsKeptUntilTheNextFinishes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.MaxRetainedBytes = 1 << 10
		r, _ := newRegistry(t, cfg)
		huge := strings.Repeat("x", 1<<20)
		finishRun(t, r, "small", Outcome{Value: "s"})
		finishRun(t, r, "huge", Outcome{Value: huge})
		if got := mustCheck(t, r, "huge"); got.Status != StatusCompleted || got.Value != huge {
			t.Errorf("Check(huge) = %s %d bytes, want the whole completed value", got.Status, len(got.Value))
		}
		if _, ok := r.Check("small"); ok {
			t.Error("small still present, want evicted to make room")
		}
		if s := r.Stats(); s.Records != 1 || s.RetainedBytes != 1<<20 {
			t.Errorf("Stats = %+v, want huge alone", s)
		}
		finishRun(t, r, "next", Outcome{Value: "n"})
		if got, want := present(r, "huge", "next"), []bool{false, true}; !equalBools(got, want) {
			t.Errorf("after next present = %v, want %v", got, want)
		}
		if s := r.Stats(); s.RetainedBytes != 1 {
			t.Errorf("RetainedBytes = %d, want 1", s.RetainedBytes)
		}
	})
}

// What LaunchWith keeps with a run (the server's trace) is read with its
// record while the run goes and after it ends, and goes exactly when the
// record goes: by the retention window, the count bound and the byte
// bound alike, never before and never after. Locals lists it the same way.
func TestLocalLivesExactlyAsLongAsItsRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testOptions(time.Hour)
		cfg.RetainCompleted = 10 * time.Second
		cfg.MaxRetainedRuns = 2
		cfg.MaxRetainedBytes = 8
		r, _ := newRegistry(t, cfg)
		type local struct{ id string }
		// check says, for each id, whether the record is known and
		// whether its local is, which must agree.
		check := func(when string, ids []string, want []bool) {
			t.Helper()
			for i, id := range ids {
				v, ok := r.View(id)
				l, _ := v.Local.(*local)
				if ok != want[i] || (l != nil) != want[i] || (l != nil && l.id != id) {
					t.Errorf("%s: %s: record %v, local %+v; want both %v", when, id, ok, l, want[i])
				}
			}
			_, finished := r.Locals(10)
			n := 0
			for _, w := range want {
				if w {
					n++
				}
			}
			if len(finished) != n {
				t.Errorf("%s: Locals lists %d finished, want %d", when, len(finished), n)
			}
		}
		run := func(id, value string) {
			slot, err := r.Admit(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			h, err := r.LaunchWith(slot, id, "p", time.Time{}, &local{id}, func(context.Context) Outcome {
				<-release
				return Outcome{Value: value}
			})
			if err != nil {
				t.Fatal(err)
			}
			// While it runs, the local is read with the running record.
			if v, ok := r.View(id); !ok || v.Status != StatusRunning || v.Local.(*local).id != id {
				t.Errorf("running %s: %+v %v, want its running record with its local", id, v, ok)
			}
			if live, _ := r.Locals(10); len(live) != 1 || live[0].(*local).id != id {
				t.Errorf("running %s: Locals in flight = %v", id, live)
			}
			close(release)
			<-h.Done()
		}
		ids := []string{"a", "b", "c", "d"}
		run("a", "a")
		time.Sleep(4 * time.Second)
		run("b", "b")
		time.Sleep(4 * time.Second)
		run("c", "c") // 8s: the count bound (2) pushes a out
		check("at 8s", ids[:3], []bool{false, true, true})
		time.Sleep(6*time.Second - time.Nanosecond) // one instant before b's window closes
		check("at 14s-1ns", ids[:3], []bool{false, true, true})
		time.Sleep(time.Nanosecond) // 14s: b's window closes
		check("at 14s", ids[:3], []bool{false, false, true})
		run("d", "dddddddd") // 8 bytes: with c's 1, over the byte bound: c goes
		check("after d", ids, []bool{false, false, false, true})
		time.Sleep(10 * time.Second)
		check("at 24s", ids, []bool{false, false, false, false})
	})
}
