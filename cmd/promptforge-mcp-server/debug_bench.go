//go:build benchprofile

package main

import (
	"net"
	"net/http"
	_ "net/http/pprof" // the profiles, on http.DefaultServeMux
	"os"
	"runtime/debug"
)

// Built only with -tags benchprofile (test/bench builds every server it
// measures so, the baseline included): the product binary has no debug
// port. With PROMPTFORGE_DEBUG_ADDR set (a loopback host:port), the
// process serves net/http/pprof there, and /debug/free, which returns
// every free page to the operating system (debug.FreeOSMemory: a full
// collection first), so the benchmark can read the live heap and the
// resident set the load really needs, without the collector's headroom
// or pages not yet returned. The serving goroutine lives as long as the
// process: a benchmark's server is stopped by signal.
func init() {
	addr := os.Getenv("PROMPTFORGE_DEBUG_ADDR")
	if addr == "" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return
	}
	http.HandleFunc("/debug/free", func(w http.ResponseWriter, _ *http.Request) {
		debug.FreeOSMemory()
		w.WriteHeader(http.StatusNoContent)
	})
	go http.Serve(ln, nil) // returns only when the process ends
}
