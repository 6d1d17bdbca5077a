package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The tests boot servers and run prompts through realMain in this
// process; every goroutine they start must be gone when they end. The
// binary the acceptance tests build is removed at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { bin.Remove() }))
}
