// Package memtest measures the heap a piece of test code grows, for the
// sandbox's memory tests (the bombs of issue #11: a prompt must not be able
// to exhaust the process). It is test support: only tests import it.
//
// Goroutines: Peak starts one sampler and stops it before returning.
package memtest

import (
	"runtime"
	"runtime/metrics"
	"time"
)

// heapObjects is the bytes of heap memory occupied by objects, live or not
// yet swept: what the process actually holds, garbage included, which is
// what an out-of-memory kill sees.
const heapObjects = "/memory/classes/heap/objects:bytes"

// Peak runs fn and returns how far the heap rose above where it stood
// before fn, at the highest of samples taken every 200µs while fn ran
// (and once right after it). Sampling can miss a spike shorter than the
// interval, so a bound asserted on it needs margin; the bombs it is used
// against grow for hundreds of milliseconds when unbounded.
func Peak(fn func()) uint64 {
	runtime.GC()
	base := read()
	stop := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var top uint64
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			top = max(top, read())
			select {
			case <-stop:
				peak <- max(top, read())
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(stop)
	top := <-peak
	if top < base {
		return 0
	}
	return top - base
}

func read() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
