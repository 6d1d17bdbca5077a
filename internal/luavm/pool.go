package luavm

import (
	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// Reusing states. A section that runs a little Lua spent about half its
// server CPU making its VM's gopher-lua state (the state, its value stack
// and call frames, the copy of the global table) and collecting it after.
// So a VM whose Lua all ran to a clean finish gives its state back when it
// closes, and the next VM of the same kind (same global template) takes
// it, after lua.LState.Reset has made it exactly what a new state would
// be: same globals in the same key order, nothing of the earlier run on
// its value stack, call frames, registry or built-in metatables. Isolation
// between runs depends on that, so a state is only offered for reuse when
// nothing went wrong in it (VM.reusable: no Lua error other than jump, no
// Go panic through it, no quota, memory, time budget or cancellation
// abort), and Reset refuses a state that is not at rest. The state also
// keeps the string metatable and the empty per-VM tables (the library
// proxies, sys) its last VM made, which the next VM takes only if that
// VM's Lua never set anything in them (lua.LState.ReuseTable,
// ReuseEmpty): unreachable from the old run's values once the globals are
// restored, and as new. One its last VM's Lua did set something in is
// dropped before the state is pooled (put), with the global holding it,
// so that a waiting state keeps nothing of its last run alive. Everything
// else a VM has (its context, meter, budget, var, the VM itself) is made
// anew by New, as before.
//
// Ownership: an open VM owns its state; Close hands it to the kind's
// sync.Pool (globals.states), which owns it until New takes it. The pool
// holds no goroutine and keeps nothing through a GC cycle or two after a
// burst: sync.Pool lets the collector take what sits in it.

// pooledState is a state and the limits it was made with: a VM may only
// take a state made with its own call stack and registry bounds.
type pooledState struct {
	L         *lua.LState
	callStack int
	regMax    int
	// strMeta is the string metatable the state's last VM made: the next
	// reuses it if its Lua left it as made (ReuseTable).
	strMeta *lua.LTable
	// tables are the empty per-VM tables the state's last VM made (the
	// library proxies and sys), which the next reuses if nothing was set
	// in them (ReuseEmpty).
	tables [numTables]*lua.LTable
}

// The per-VM empty tables a state keeps for its next VM.
const (
	tableString = iota
	tableTable
	tableMath
	tableStore
	tableTools
	tableModels
	tableSys
	numTables
)

// tableGlobal is the global that holds kept table i.
func tableGlobal(i int) string {
	return [numTables]string{"string", "table", "math", "store", "tools", "models", "sys"}[i]
}

// table returns an empty table reading through meta for slot i of a
// section VM: the state's last VM's if untouched, else a new one made
// with room for extra keys.
func (st *pooledState) table(i int, meta *lua.LTable, extra int) *lua.LTable {
	if t := st.tables[i]; t != nil && st.L.ReuseEmpty(t, extra, meta) {
		return t
	}
	t := proxyTable(st.L, meta, extra)
	st.tables[i] = t
	return t
}

// stringMeta returns the string metatable of a VM whose string table is
// str: {__index = str}, reused from the state's last VM if untouched.
func (st *pooledState) stringMeta(str *lua.LTable) *lua.LTable {
	if st.strMeta != nil && st.L.ReuseTable(st.strMeta, "__index", str) {
		return st.strMeta
	}
	st.strMeta = st.L.CreateTable(0, 1)
	st.strMeta.RawSetString("__index", str)
	return st.strMeta
}

// state returns a state for a VM of this kind with limits lim: a reused
// one if the pool has one made with the same bounds, else a new one.
func (g globals) state(lim Limits) *pooledState {
	if st, ok := g.states.Get().(*pooledState); ok {
		if st.callStack == lim.CallStackSize && st.regMax == lim.RegistryMaxSize {
			return st
		}
		st.L.Close()
	}
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       lim.CallStackSize,
		RegistrySize:        registryInitial,
		RegistryMaxSize:     lim.RegistryMaxSize,
		RegistryGrowStep:    registryGrowStep,
		MinimizeStackMemory: true,
		Globals:             g.table,
	})
	return &pooledState{L: L, callStack: lim.CallStackSize, regMax: lim.RegistryMaxSize}
}

// put resets st and keeps it for the next VM of this kind; false when the
// state cannot be reset (the caller closes it).
func (g globals) put(st *pooledState) bool {
	if !st.L.Reset(g.table) {
		return false
	}
	// The globals New sets with SetOwned that hold the run's data go back
	// to their placeholders (false, as in the template: perVM), or the
	// waiting state would keep the run's args and var alive.
	st.L.G.Global.SetOwned("args", lua.LFalse)
	st.L.G.Global.SetOwned("var", lua.LFalse)
	// A kept table Lua set something in would not be reused anyway, and
	// holds that run's values: the waiting state must not keep them alive.
	// Nor may the global that holds it (Reset leaves the globals New sets
	// with SetOwned as they are): it gets the template's placeholder back.
	for i, t := range st.tables {
		if t != nil && !t.Untouched("", t.Metatable) {
			st.tables[i] = nil
			if name := tableGlobal(i); st.L.G.Global.RawGetString(name) == t {
				st.L.G.Global.SetOwned(name, g.table.RawGetString(name))
			}
		}
	}
	if m := st.strMeta; m != nil && (!m.Untouched("__index", lua.LNil) || st.tables[tableString] == nil ||
		m.RawGetString("__index") != lua.LValue(st.tables[tableString])) {
		st.strMeta = nil
	}
	g.states.Put(st)
	return true
}
