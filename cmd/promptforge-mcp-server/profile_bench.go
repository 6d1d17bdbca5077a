//go:build benchprofile

package main

import (
	"os"
	"runtime/pprof"
	"time"
)

// Built only with -tags benchprofile (the end-to-end benchmark's -profile
// flag, test/bench): the product binary has no profiling hook. With
// PROMPTFORGE_CPUPROFILE set, the process writes a CPU profile of its
// first PROMPTFORGE_PROFILE_FOR (a Go duration, default 10s) there. The
// goroutine stops itself when the time is up; a process that exits first
// leaves no profile.
func init() {
	path := os.Getenv("PROMPTFORGE_CPUPROFILE")
	if path == "" {
		return
	}
	d, err := time.ParseDuration(os.Getenv("PROMPTFORGE_PROFILE_FOR"))
	if err != nil {
		d = 10 * time.Second
	}
	f, err := os.Create(path)
	if err != nil {
		return
	}
	if pprof.StartCPUProfile(f) != nil {
		f.Close()
		return
	}
	go func() {
		time.Sleep(d)
		pprof.StopCPUProfile()
		f.Close()
	}()
}
