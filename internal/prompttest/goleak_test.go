package prompttest

import (
	"testing"

	"go.uber.org/goleak"
)

// Each test starts a scripted gateway and a gateway client; both must be
// gone, idle connections included, when Run returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
