package luavm

import (
	"context"
	"sort"
	"sync"

	lua "github.com/yuin/gopher-lua"
)

// Creating a gopher-lua state with its libraries is the main cost of a VM,
// and every section entry gets a fresh one. So everything that does not
// hold per-VM state is built once per process and shared, read-only, by
// all VMs: the library functions, the host bindings (they find their VM
// through the state's context, see vmOf) and the metatables, which Lua
// cannot reach (each sets __metatable) and nothing writes after
// construction. Per VM remain the LState, its globals and the library
// tables themselves (Lua may change those).
//
// Sharing a Go function object across states is safe because the sandbox
// removes getfenv/setfenv, the only operations that touch a function's
// environment.

// vmContext is the context a VM's LState carries: the Lua context (run
// cancellation plus the time budget) and the VM its bindings serve.
type vmContext struct {
	context.Context
	vm *VM
}

// vmOf returns the VM a binding was called from.
func vmOf(L *lua.LState) *VM { return L.Context().(*vmContext).vm }

type named struct {
	name string
	v    lua.LValue
}

// sharedLib is the process-wide, immutable part of every VM.
type sharedLib struct {
	global, str, table, math, store []named
	h1Tools, h1Models               []named
	secTools, secModels             []named
	control, h1Control              []named
	jump, next                      lua.LValue
	sysMeta, varMeta, callsMeta     *lua.LTable
	toolMeta, modelMeta, errorMeta  *lua.LTable
	resultMeta                      *lua.LTable

	// Library and host tables are shared behind per-VM proxies: each VM's
	// string, table, math, store, tools and models is an empty table whose
	// protected metatable reads through to these. A prompt that adds to a
	// library (function string.trim(s) ... end) writes into its own proxy.
	strLib, tableLib, mathLib, storeLib     *lua.LTable
	h1ToolsLib, h1ModelsLib                 *lua.LTable
	secToolsLib, secModelsLib               *lua.LTable
	strProxy, tableProxy, mathProxy         *lua.LTable
	storeProxy, h1ToolsProxy, h1ModelsProxy *lua.LTable
	secToolsProxy, secModelsProxy           *lua.LTable
}

// proxyMeta is the protected metatable of a library proxy. getmetatable on
// the proxy returns false, as close as Lua allows to "no metatable".
func proxyMeta(T *lua.LState, lib *lua.LTable) *lua.LTable {
	mt := T.CreateTable(0, 2)
	mt.RawSetString("__index", lib)
	mt.RawSetString("__metatable", lua.LFalse)
	return mt
}

// proxyTable returns a fresh, empty per-VM table reading through meta.
func proxyTable(L *lua.LState, meta *lua.LTable, extra int) *lua.LTable {
	t := L.CreateTable(0, extra)
	t.Metatable = meta
	return t
}

// keptBase are the base functions a prompt may use as gopher-lua has them;
// next, pairs, ipairs, type and unpack are replaced by var-aware versions,
// and everything else in the base library is left out.
var keptBase = []string{"assert", "error", "getmetatable", "setmetatable", "pcall", "xpcall", "select", "tonumber", "tostring"}

// The shared part is built on first use and never changes afterwards.
var (
	sharedOnce sync.Once
	sharedVal  *sharedLib
)

func shared() *sharedLib {
	sharedOnce.Do(func() { sharedVal = buildShared() })
	return sharedVal
}

// newTable builds a table holding list plus room for extra entries.
func newTable(L *lua.LState, list []named, extra int) *lua.LTable {
	t := L.CreateTable(0, len(list)+extra)
	for _, n := range list {
		t.RawSetString(n.name, n.v)
	}
	return t
}

func buildShared() *sharedLib {
	// T only manufactures function values; it is never run again.
	T := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenString, lua.OpenTable, lua.OpenMath} {
		T.Push(T.NewFunction(open))
		T.Call(0, 0)
	}
	fn := func(f lua.LGFunction) lua.LValue { return T.NewFunction(f) }
	m := func(f func(*VM, *lua.LState) int) lua.LValue {
		return T.NewFunction(func(L *lua.LState) int { return f(vmOf(L), L) })
	}
	stub := func(msg string) lua.LValue { return fn(stubFn(msg)) }
	g := T.G.Global
	s := &sharedLib{}

	for _, name := range keptBase {
		s.global = append(s.global, named{name, g.RawGetString(name)})
	}
	s.next = m((*VM).luaNext)
	unpack := m((*VM).luaUnpack)
	s.global = append(s.global,
		named{"_VERSION", lua.LString(lua.LuaVersion)},
		named{"next", s.next},
		named{"type", m((*VM).luaType)},
		named{"pairs", m((*VM).luaPairs)},
		named{"ipairs", fn(luaIpairs)},
		named{"unpack", unpack},
		named{"untrusted", m((*VM).luaUntrusted)},
		named{"log", m((*VM).luaLog)},
	)

	collect := func(t *lua.LTable, skip ...string) []named {
		var out []named
		t.ForEach(func(k, v lua.LValue) {
			name := string(k.(lua.LString))
			for _, x := range skip {
				if x == name {
					return
				}
			}
			out = append(out, named{name, v})
		})
		sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
		return out
	}
	str := g.RawGetString("string").(*lua.LTable)
	format := str.RawGetString("format").(*lua.LFunction).GFunction
	gmatch := m((*VM).strGmatch)
	s.str = append(collect(str, "dump", "rep", "format", "find", "match", "gmatch", "gfind", "gsub", "byte", "__index"),
		named{"rep", m((*VM).strRep)},
		named{"format", m(func(vm *VM, L *lua.LState) int { return vm.strFormat(L, format) })},
		named{"find", m((*VM).strFind)},
		named{"match", m((*VM).strMatch)},
		named{"gmatch", gmatch},
		named{"gfind", gmatch},
		named{"gsub", m((*VM).strGsub)},
		named{"byte", fn(strByte)},
	)
	tbl := g.RawGetString("table").(*lua.LTable)
	sortFn := tbl.RawGetString("sort").(*lua.LFunction).GFunction
	s.table = append(collect(tbl, "concat", "insert", "remove", "sort"),
		named{"concat", m((*VM).tableConcat)},
		named{"insert", m((*VM).tableInsert)},
		named{"remove", m((*VM).tableRemove)},
		named{"sort", fn(tableSort(sortFn))},
		// Lua 5.4 moved unpack into table; prompts written for it use that.
		named{"unpack", unpack},
	)
	s.math = collect(g.RawGetString("math").(*lua.LTable))

	s.store = []named{
		{"read", m((*VM).storeRead)},
		{"read_numbered", m((*VM).storeReadNumbered)},
		{"write", m((*VM).storeWrite)},
		{"append", m((*VM).storeAppend)},
		{"str_replace", m((*VM).storeReplace)},
		{"delete", m((*VM).storeDelete)},
		{"glob", m((*VM).storeGlob)},
		{"exists", m((*VM).storeExists)},
	}
	infer := m((*VM).modelsInfer)
	s.h1Tools = []named{
		{"need", m((*VM).toolsNeed)},
		{"always", m((*VM).toolsAlways)},
		{"add", stub("tools.add is only available during H2 recording")},
	}
	s.h1Models = []named{
		{"need", m((*VM).modelsNeed)},
		{"default", m((*VM).modelsDefault)},
		{"use", stub("models.use is only available during H2 recording")},
		{"infer", infer},
	}
	s.secTools = []named{
		{"need", stub("tools.need is only available during live H1 execution")},
		{"always", stub("tools.always is only available during live H1 execution")},
		{"add", m((*VM).toolsAdd)},
		{"add_local", m((*VM).toolsAddLocal)},
	}
	s.secModels = []named{
		{"need", stub("models.need is only available during live H1 execution")},
		{"default", stub("models.default is only available during live H1 execution")},
		{"use", m((*VM).modelsUse)},
		{"get", m((*VM).modelsGet)},
		{"infer", infer},
	}
	s.jump = m((*VM).luaJump)
	s.control = []named{
		{"jump", s.jump},
		{"execute", m((*VM).luaExecute)},
		{"list_from_section", m((*VM).luaListFromSection)},
		{"fanout", m((*VM).luaFanout)},
	}
	for _, name := range []string{"execute", "jump", "fanout", "list_from_section"} {
		s.h1Control = append(s.h1Control, named{name, stub(name + " is only available in sections (## headings); H1 runs before sections exist")})
	}

	s.strLib, s.tableLib, s.mathLib = newTable(T, s.str, 0), newTable(T, s.table, 0), newTable(T, s.math, 0)
	s.storeLib = newTable(T, s.store, 0)
	s.h1ToolsLib, s.h1ModelsLib = newTable(T, s.h1Tools, 0), newTable(T, s.h1Models, 0)
	s.secToolsLib, s.secModelsLib = newTable(T, s.secTools, 0), newTable(T, s.secModels, 0)
	s.strProxy, s.tableProxy, s.mathProxy = proxyMeta(T, s.strLib), proxyMeta(T, s.tableLib), proxyMeta(T, s.mathLib)
	s.storeProxy = proxyMeta(T, s.storeLib)
	s.h1ToolsProxy, s.h1ModelsProxy = proxyMeta(T, s.h1ToolsLib), proxyMeta(T, s.h1ModelsLib)
	s.secToolsProxy, s.secModelsProxy = proxyMeta(T, s.secToolsLib), proxyMeta(T, s.secModelsLib)

	meta := func(mm ...named) *lua.LTable { return newTable(T, mm, 0) }
	s.sysMeta = meta(
		named{"__index", fn(sysIndex)},
		named{"__newindex", fn(sysNewIndex)},
		named{"__metatable", lua.LString("sys is sealed")},
	)
	s.varMeta = meta(
		named{"__index", fn(varIndex)},
		named{"__newindex", fn(varNewIndex)},
		named{"__len", fn(varLen)},
		named{"__metatable", lua.LString("var is guarded")},
	)
	s.callsMeta = meta(
		named{"__index", fn(callsIndex)},
		named{"__newindex", stub("tools.calls is read-only")},
		named{"__metatable", lua.LString("tools.calls is read-only")},
	)
	s.toolMeta = meta(
		named{"__index", fn(toolIndex)},
		named{"__newindex", fn(frozen("Tool"))},
		named{"__tostring", fn(toolString)},
		named{"__metatable", lua.LString("Tool objects are frozen")},
	)
	handleInfer := m((*VM).handleInfer)
	s.modelMeta = meta(
		named{"__index", fn(modelIndex(handleInfer))},
		named{"__newindex", fn(frozen("Model"))},
		named{"__tostring", fn(modelString)},
		named{"__metatable", lua.LString("Model objects are frozen")},
	)
	s.errorMeta = meta(
		named{"__tostring", fn(errorString)},
		named{"__metatable", lua.LString("error")},
	)
	s.resultMeta = meta(
		named{"__index", fn(resultIndex)},
		named{"__tostring", fn(resultString)},
		named{"__newindex", stub("fanout results are read-only")},
		named{"__metatable", lua.LString("fanout result")},
	)
	return s
}

func stubFn(msg string) lua.LGFunction {
	return func(L *lua.LState) int {
		L.RaiseError("%s", msg)
		return 0
	}
}

func errorString(L *lua.LState) int {
	if he, ok := L.CheckUserData(1).Value.(*hostError); ok {
		L.Push(lua.LString(he.err.Error()))
		return 1
	}
	L.Push(lua.LString("error"))
	return 1
}
