package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
)

func gcPercent() uint64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// With a small live heap the GC percentage is raised so the heap goal
// stays floor bytes above it, after each collection; stop restores it.
func TestHeapFloorRaisesTheGoalOfASmallHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := heapFloor(1 << 30) // far above this test's live heap
	raised := false
	for range 100 {
		runtime.GC()
		runtime.Gosched() // let the cleanup goroutine run
		if gcPercent() > 100 {
			raised = true
			break
		}
	}
	stop()
	if !raised {
		t.Fatal("the GC percentage was never raised above 100")
	}
	if p := gcPercent(); p != 100 {
		t.Fatalf("after stop the GC percentage is %d, want 100 restored", p)
	}
}

// A live heap above the floor is collected as GOGC says.
func TestHeapFloorLeavesALargeHeapAlone(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	stop := heapFloor(1 << 10)
	defer stop()
	for range 10 {
		runtime.GC()
		runtime.Gosched()
	}
	if p := gcPercent(); p != 100 {
		t.Fatalf("the GC percentage is %d with a live heap far above the floor, want 100", p)
	}
}

// The process memory limit ([limits].process_memory, or GOMEMLIMIT) wins
// over the floor: with the GC percentage raised, the heap goal still
// stays under the limit, so the floor never lets the heap grow past what
// the operator allowed (docs/configuration.md, the heap floor).
func TestHeapFloorStaysUnderTheMemoryLimit(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const limit = 64 << 20
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	stop := heapFloor(1 << 30) // would put the goal a GiB above the live heap
	defer stop()
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	raised := false
	for range 100 {
		runtime.GC()
		runtime.Gosched()
		if gcPercent() > 100 {
			raised = true
			break
		}
	}
	if !raised {
		t.Fatal("the GC percentage was never raised above 100")
	}
	runtime.GC()
	metrics.Read(goal)
	if g := goal[0].Value.Uint64(); g > limit {
		t.Fatalf("heap goal %d with the floor on, over the %d memory limit", g, limit)
	}
}
