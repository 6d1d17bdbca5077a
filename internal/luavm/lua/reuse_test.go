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

// TestResetForgetsWhatARunLeft: Reset clears what a run can leave outside
// the globals (reuse.go): a value in a register slot above the top, which
// Lua cannot read but which keeps it alive, and a metatable for a built-in
// type other than strings (the sandbox sets the string one for every VM;
// any other only host code can set).
func TestResetForgetsWhatARunLeft(t *testing.T) {
	tmpl := newLTable(0, 1)
	tmpl.RawSetString("x", LNumber(1))
	ls := NewState(Options{SkipOpenLibs: true, RegistrySize: 64, Globals: tmpl})
	defer ls.Close()
	ls.SetMetatable(LNumber(0), ls.NewTable())
	ls.reg.array[3] = LString("left above the top")
	if !ls.Reset(tmpl) {
		t.Fatal("Reset refused a state at rest")
	}
	if mt := ls.GetMetatable(LNumber(0)); mt != LNil {
		t.Errorf("after Reset numbers have the metatable %v", mt)
	}
	for i, v := range ls.reg.array {
		if v != nil {
			t.Errorf("after Reset register slot %d holds %v", i, v)
		}
	}
}

// TestResetDropsTheMeter: a reset state has no meter, in its registry
// table either (which Reset keeps when nothing was put in it): the meter
// is its last user's.
func TestResetDropsTheMeter(t *testing.T) {
	tmpl := newLTable(0, 1)
	tmpl.RawSetString("x", LNumber(1))
	ls := NewState(Options{SkipOpenLibs: true, RegistrySize: 64, Globals: tmpl})
	defer ls.Close()
	ls.SetMeter(&Meter{Mark: math.MaxInt64})
	if !ls.Reset(tmpl) {
		t.Fatal("Reset refused a state at rest")
	}
	if ls.meter != nil || ls.G.Global.meter != nil || ls.G.Registry.meter != nil {
		t.Errorf("after Reset a meter remains: state %v, globals %v, registry %v", ls.meter, ls.G.Global.meter, ls.G.Registry.meter)
	}
}

// TestUntouchedSeesAKeySetToNil: a table a key was ever set in is not
// untouched, even once the key is nil again (Untouched: "not even to
// nil"): its key order still holds the key.
func TestUntouchedSeesAKeySetToNil(t *testing.T) {
	ls := NewState(Options{SkipOpenLibs: true})
	defer ls.Close()
	tb := ls.CreateTable(0, 0)
	if !tb.Untouched("", LNil) {
		t.Fatal("a new empty table is not untouched")
	}
	tb.RawSetString("x", LTrue)
	tb.RawSetString("x", LNil)
	if tb.Untouched("", LNil) {
		t.Error("a table whose key was set and then set to nil is untouched")
	}
}

// TestReuseTableSetsTheNewValue: ReuseTable gives an untouched table the
// value it is asked for under its key, not the last user's. (The sandbox
// asks only when the value is the same table again, which is why no
// sandbox test would see the difference.)
func TestReuseTableSetsTheNewValue(t *testing.T) {
	ls := NewState(Options{SkipOpenLibs: true})
	defer ls.Close()
	old, next := ls.CreateTable(0, 0), ls.CreateTable(0, 0)
	tb := ls.CreateTable(0, 1)
	tb.RawSetString("__index", old)
	if !ls.ReuseTable(tb, "__index", next) {
		t.Fatal("ReuseTable refused an untouched table")
	}
	if got := tb.RawGetString("__index"); got != LValue(next) {
		t.Errorf("after ReuseTable __index is %v, want the new value %v", got, next)
	}
}
