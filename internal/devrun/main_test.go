package devrun

import (
	"testing"

	"go.uber.org/goleak"
)

// Every goroutine the package starts must be stopped by its owner before
// the tests end (see the package doc's goroutine section).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
