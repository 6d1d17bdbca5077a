package lua

import (
	"math"
	"testing"
)

// TestSetOwnedSetsWhatItIsGiven: SetOwned skips the write only when the
// key already holds the very value: -0 and 0 compare equal, but 1/x tells
// them apart, so one must replace the other.
func TestSetOwnedSetsWhatItIsGiven(t *testing.T) {
	tb := newLTable(0, 1)
	tb.RawSetString("k", LNumber(math.Copysign(0, -1)))
	tb.SetOwned("k", LNumber(0))
	if v := float64(tb.RawGetString("k").(LNumber)); math.Signbit(v) {
		t.Fatalf("SetOwned(k, 0) left -0 in k")
	}
	tb.SetOwned("k", LNumber(math.Copysign(0, -1)))
	if v := float64(tb.RawGetString("k").(LNumber)); !math.Signbit(v) {
		t.Fatalf("SetOwned(k, -0) left 0 in k")
	}
}
