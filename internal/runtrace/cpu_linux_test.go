package runtrace

import (
	"time"

	"golang.org/x/sys/unix"
)

// threadCPU is the calling thread's CPU time (user and system), to the
// nanosecond: getrusage's is in microseconds, as coarse as a tenth of a
// Lua-only run, which a pair's ratio cannot take.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
