package runs

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLaunchSettle is the registry's cost for one call whose run ends
// inside the deadline: admit, launch, settle.
func BenchmarkLaunchSettle(b *testing.B) {
	r, err := New(Options{MaxConcurrentRuns: 64, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	run := func(context.Context) Outcome { return Outcome{Value: "v", Turns: 1} }
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		slot, err := r.Admit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		h, err := r.Launch(slot, strconv.Itoa(i), "p", run)
		if err != nil {
			b.Fatal(err)
		}
		if res := r.Settle(ctx, h); res.Status != StatusCompleted {
			b.Fatalf("Settle = %+v", res)
		}
	}
	b.StopTimer()
	if err := r.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkHeldRunsMemory holds 1,000 runs in flight, each blocked on a
// channel the way a run gated on a slow gateway is, and reports what the
// registry costs per run: heap (record, context, slot) plus goroutine stack.
// The target is 150 KB per run; it is reported, not asserted, because the
// runtime's accounting is not a contract.
func BenchmarkHeldRunsMemory(b *testing.B) {
	const held = 1000
	ctx := context.Background()
	ids := make([]string, held)
	for i := range ids {
		ids[i] = NewRunID()
	}
	var heapPerRun, stackPerRun float64
	for b.Loop() {
		r, err := New(Options{MaxConcurrentRuns: held, AdmissionTimeout: time.Minute, ReplyDeadline: time.Hour, RetainCompleted: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		release := make(chan struct{})
		run := func(context.Context) Outcome {
			<-release
			return Outcome{Value: "v"}
		}

		before := memNow()
		for _, id := range ids {
			slot, err := r.Admit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Launch(slot, id, "gated", run); err != nil {
				b.Fatal(err)
			}
		}
		after := memNow()
		heapPerRun = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / held
		stackPerRun = float64(int64(after.StackInuse)-int64(before.StackInuse)) / held

		close(release)
		if err := r.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(heapPerRun, "heap-B/run")
	b.ReportMetric(stackPerRun, "stack-B/run")
	b.ReportMetric(heapPerRun+stackPerRun, "B/run")
}

func memNow() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}
