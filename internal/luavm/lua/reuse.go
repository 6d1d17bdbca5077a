package lua

import (
	"math"
	"sync/atomic"
)

// promptforge: this file is new (see doc.go). Making a state is most of
// the cost of a sandbox section that runs a little Lua; the sandbox keeps
// states that ran to a clean finish and gives them to the next section,
// after Reset has made them what NewState would have made.

// maxExtraGlobals bounds the globals a reused state may have added to its
// template's: Reset deletes them, but a Go map does not shrink, so a state
// that set many globals is not worth keeping.
const maxExtraGlobals = 64

// Reset makes ls, a state made by NewState with Options.Globals set to
// globals, what NewState with the same options would return: empty value
// stack and call frames (cleared, so that nothing of an earlier run stays
// reachable from them), an empty registry table, no metatables for the
// built-in types, the global table holding exactly the template's entries
// in the template's key order with no metatable (but for the keys only
// ever set with SetOwned, which keep what the owner set: it sets them
// again), no context and no meter.
// Number boxes (the allocator's blocks) are kept: they hold no values Lua
// can reach.
//
// It reports false, changing nothing that matters, when ls is not at rest (a
// call still on its stack, an open upvalue, a closed or stopped state, a
// thread, a Go panic recovered by PCall at any time) or its globals cannot
// be restored cheaply (a global of another key type, too many new ones): the
// caller then drops ls.
func (ls *LState) Reset(globals *LTable) bool {
	if ls.stack == nil || ls.Dead || ls.panicked || ls.Parent != nil || ls.currentFrame != nil || !ls.stack.IsEmpty() ||
		ls.reg.top != 0 || ls.uvcache != nil || ls.hasErrorFunc || ls.wrapped ||
		atomic.LoadInt32(&ls.stop) != 0 || len(ls.G.tempFiles) != 0 ||
		(ls.G.MainThread != nil && ls.G.MainThread != ls) || (ls.G.CurrentThread != nil && ls.G.CurrentThread != ls) {
		return false
	}
	if !ls.G.Global.restore(globals) {
		return false
	}
	if len(ls.reg.array) != ls.Options.RegistrySize {
		ls.reg.array = make([]LValue, ls.Options.RegistrySize)
	} else {
		// Most slots are nil already (SetTop clears what it drops): writing
		// only the others spares a write barrier per slot while the
		// collector marks.
		for i, v := range ls.reg.array {
			if v != nil {
				ls.reg.array[i] = nil
			}
		}
	}
	ls.stack.reset()
	if r := ls.G.Registry; r.Metatable != LNil || r.array != nil || r.dict != nil || r.strdict != nil || r.keys != nil {
		ls.G.Registry = newLTable(0, 0)
	}
	ls.G.Registry.meter = nil
	clear(ls.G.builtinMts)
	ls.G.gccount = 0
	ls.G.MainThread, ls.G.CurrentThread = nil, nil
	ls.Env = ls.G.Global
	ls.Panic = panicWithTraceback
	ls.mainLoop = mainLoop
	ls.ctx, ls.ctxCancelFn = nil, nil
	ls.meter = nil
	return true
}

// restore makes tb, a copy of t (cloneEntries) that a state has used, hold
// t's entries in t's order again, as a fresh copy would.
func (tb *LTable) restore(t *LTable) bool {
	n := len(t.keys)
	if t.array != nil || t.dict != nil || len(tb.keys) < n || len(tb.keys) > n+maxExtraGlobals ||
		len(tb.dict) > maxExtraGlobals || len(tb.array) > maxExtraGlobals {
		return false
	}
	// Keys are only ever appended (a deleted key keeps its place), so the
	// first n are t's, and any after them are keys the state added.
	if n > 0 && tb.keys[n-1] != t.keys[n-1] {
		return false
	}
	for _, k := range tb.keys[n:] {
		if s, ok := k.(LString); ok {
			delete(tb.strdict, string(s))
		}
	}
	if w := tb.written; w != nil && !w.over {
		// Only what was set can differ from the template.
		for _, k := range w.keys {
			if v, ok := t.strdict[k]; ok {
				tb.strdict[k] = v
			}
		}
	} else {
		for k, v := range t.strdict {
			tb.strdict[k] = v
		}
	}
	if tb.written != nil {
		clear(tb.written.keys) // the keys are the earlier run's strings
		tb.written.keys, tb.written.over = tb.written.keys[:0], false
	}
	if len(tb.strdict) != len(t.strdict) {
		return false
	}
	tb.Metatable = LNil
	tb.array, tb.dict = nil, nil
	tb.keys, tb.k2i, tb.sharedOrder = t.keys[:n:n], t.k2i, t.k2i != nil
	tb.meter = nil
	return true
}

// reset empties a stack the state has unwound, clearing its frames.
func (cs *fixedCallFrameStack) reset() {
	clear(cs.array)
	cs.sp = 0
}

// reset empties a stack the state has unwound, clearing its first segment
// and giving any other back to the pool.
func (cs *autoGrowingCallFrameStack) reset() {
	for i := segIdx(1); i < segIdx(len(cs.segments)); i++ {
		if cs.segments[i] != nil {
			freeCallFrameStackSegment(cs.segments[i])
			cs.segments[i] = nil
		}
	}
	*cs.segments[0] = callFrameStackSegment{}
	cs.segIdx, cs.segSp = 0, 0
}

// maxWritten bounds a writeLog: past it, Reset restores every global.
const maxWritten = 64

// writeLog is the string keys set in a table (with repeats of the last
// one skipped), up to maxWritten.
type writeLog struct {
	keys []string
	over bool
}

func (w *writeLog) note(key string) {
	switch {
	case w.over:
	case len(w.keys) > 0 && w.keys[len(w.keys)-1] == key:
	case len(w.keys) == maxWritten:
		w.over = true
	default:
		w.keys = append(w.keys, key)
	}
}

// Untouched reports whether tb, a table an earlier user of a state made
// with CreateTable and gave the metatable meta (and, when key is not "",
// the one entry key), still holds just that: no other key was ever set in
// it (not even to nil) and its metatable is still meta. ReuseTable and
// ReuseEmpty take only such tables, and the sandbox drops any other before
// a state waits for reuse, so that a waiting state keeps no value of its
// last run.
func (tb *LTable) Untouched(key string, meta LValue) bool {
	if tb.Metatable != meta || tb.array != nil || tb.dict != nil || tb.written != nil {
		return false
	}
	if key == "" {
		return tb.keys == nil && tb.k2i == nil && len(tb.strdict) == 0
	}
	if len(tb.keys) != 1 || tb.keys[0] != LString(key) || len(tb.strdict) != 1 {
		return false
	}
	_, ok := tb.strdict[key]
	return ok
}

// ReuseTable readies tb, a table an earlier user of ls made with the one
// entry key (CreateTable(0, 1) then RawSetString), for the next: if tb
// is Untouched, with no metatable, it gets v under key and ls's meter,
// charged what making it anew would be, and ReuseTable reports true;
// otherwise the caller makes a new table.
func (ls *LState) ReuseTable(tb *LTable, key string, v LValue) bool {
	if !tb.Untouched(key, LNil) {
		return false
	}
	tb.strdict[key] = v
	tb.meter = ls.meter
	ls.charge(CostTable + 2*CostSlot + CostKey + len(key))
	return true
}

// ReuseEmpty readies tb, an empty table an earlier user of ls made with
// CreateTable(0, hcap) and gave the metatable meta, for the next: if it is
// Untouched, it gets ls's meter, charged what making it anew would be, and
// ReuseEmpty reports true; otherwise the caller makes a new table.
func (ls *LState) ReuseEmpty(tb *LTable, hcap int, meta LValue) bool {
	if !tb.Untouched("", meta) {
		return false
	}
	tb.meter = ls.meter
	ls.charge(CostTable + hcap*2*CostSlot)
	return true
}

// SetOwned sets key, a global of the template that the state's owner sets
// anew for every use of the state, to value: without a write if it holds
// that very value already (identical), and without logging the key for
// Reset, which then leaves it as the owner last set it (the owner sets it
// again before any Lua runs). A key the table lacks, or a nil value, is set
// as RawSetString sets it.
func (tb *LTable) SetOwned(key string, value LValue) {
	if old, ok := tb.strdict[key]; ok && value != LNil {
		if !identical(old, value) {
			tb.strdict[key] = value
		}
		return
	}
	tb.RawSetString(key, value)
}

// identical reports whether a and b are the same value, which Lua
// cannot tell apart: == on the interfaces, but for numbers, where 0 ==
// -0 (1/x tells them apart) and NaN ~= NaN, the bits.
func identical(a, b LValue) bool {
	if x, ok := a.(LNumber); ok {
		y, ok := b.(LNumber)
		return ok && math.Float64bits(float64(x)) == math.Float64bits(float64(y))
	}
	return a == b
}
