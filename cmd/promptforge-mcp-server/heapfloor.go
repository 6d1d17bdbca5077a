package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// heapFloorBytes is the least garbage the server lets accumulate before a
// collection (docs/benchmarks.md, "Where the time goes"): below it the
// runtime's default (collect when the heap has doubled) would collect
// every few calls, since a call allocates about 300 KB, nearly all of it
// the go-sdk's JSON decoding, against a live heap of a few MB.
const heapFloorBytes = 32 << 20

// heapFloor keeps the garbage collector's heap goal at least floor bytes
// above the live heap, and otherwise where GOGC puts it: after each
// collection it raises the GC percentage so that live*percent/100 >= floor,
// and lowers it back to the starting value as the live heap grows. A
// server with a small live heap then collects several times less often
// (each collection's fixed costs, marking, sweeping, waking the workers,
// were most of a call's CPU in the profile); one with a large live heap,
// such as a thousand runs in flight, is collected exactly as before, so
// its memory per run does not grow. The memory limit ([limits].process_memory,
// app/memory.go, or GOMEMLIMIT) still bounds the heap and wins: the
// runtime's goal is the lower of the two.
//
// It runs in the runtime's cleanup goroutine, re-armed once per
// collection by a sentinel object's cleanup; stop disarms it and restores
// the starting percentage.
func heapFloor(floor uint64) (stop func()) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 { // GOGC=off: nothing to keep above
		return func() {}
	}
	var (
		mu      sync.Mutex
		current = base
		stopped atomic.Bool
		sample  = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	)
	adjust := func() {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := max(sample[0].Value.Uint64(), 1<<20)
		want := max(base, int(min(floor*100/live, 10000)))
		mu.Lock()
		defer mu.Unlock()
		// Only a change of a tenth or more is applied: each call takes the
		// heap lock.
		if !stopped.Load() && (want*10 > current*11 || want*11 < current*10) {
			debug.SetGCPercent(want)
			current = want
		}
	}
	var arm func()
	arm = func() {
		// Large enough and with a pointer, so it is not batched by the tiny
		// allocator (whose objects may never be cleaned up).
		sentinel := &struct {
			_ [16]byte
			_ *int
		}{}
		runtime.AddCleanup(sentinel, func(struct{}) {
			if !stopped.Load() {
				adjust()
				arm()
			}
		}, struct{}{})
	}
	adjust()
	arm()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped.Store(true)
		debug.SetGCPercent(base)
	}
}
