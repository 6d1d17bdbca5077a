package luavm

import (
	"context"
	"sort"
	"sync"

	lua "github.com/promptforge-go/promptforge/internal/luavm/lua"
)

// Creating a gopher-lua state with its libraries is the main cost of a VM,
// and every section entry gets a fresh one. So everything that does not
// hold per-VM state is built once per process and shared, read-only, by
// all VMs: the library functions, the host bindings (they find their VM
// through the state's context, see vmOf) and the metatables, which Lua
// cannot reach (each sets __metatable) and nothing writes after
// construction. Per VM remain the LState, its globals and the library
// tables themselves (Lua may change those); the global table starts as a
// copy of a shared template (globalsFor), which no VM writes.
//
// Sharing a Go function object across states is safe because the sandbox
// removes getfenv/setfenv, the only operations that touch a function's
// environment.

// vmContext is the context a VM's LState carries: the Lua context (run
// cancellation plus the time budget) and the VM its bindings serve.
// gopher-lua hands a binding nothing but its LState, so the state's
// context is the one place both can travel.
type vmContext struct {
	context.Context
	vm *VM
	// finds counts the pattern searches (VM.find), and entryPoll is set
	// while one's first poll, on entry, is still to come: that poll reads
	// the clock only on every findClockEvery-th search (see find).
	finds     uint32
	entryPoll bool
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

	// The templates of a VM's global table, one per kind (globalsFor):
	// every global a VM of that kind always has, in the order prompts see
	// them, the per-VM ones as placeholders that New overwrites. A new
	// state starts with a copy (lua.Options.Globals), a few allocations
	// where setting each global was a map insertion and growth of three
	// structures (the largest part of creating a VM).
	h1Globals, secGlobals globals
}

// globals is a template of a VM's global table and what its keys cost the
// VM's memory meter: the copy is made before the meter starts, and New
// charges it what setting those globals one by one was charged.
type globals struct {
	table *lua.LTable
	cost  int
	// states holds the states of closed VMs of this kind, ready for reuse
	// (pool.go).
	states *sync.Pool
}

// perVM are the globals every VM has whose values are its own; in the
// templates they hold placeholders (false), in this order after the
// shared base functions, and New sets each one. Globals a VM has only
// sometimes (params, reply, item) are not in the templates: New adds them.
var perVM = []string{"string", "table", "math", "args", "sys", "var", "store", "tools", "models"}

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

// shared returns the process-wide part of every VM, built on first use.
// The sharedLib it returns is never written afterwards, so VMs on any
// goroutine read it without locking. New fetches it once into VM.lib: the
// bindings read it there, which also keeps them from referring back to
// this variable (Go would report that as an initialisation cycle).
var shared = sync.OnceValue(buildShared)

// newTable builds a table holding list plus room for extra entries.
func newTable(L *lua.LState, list []named, extra int) *lua.LTable {
	t := L.CreateTable(0, len(list)+extra)
	for _, n := range list {
		t.RawSetString(n.name, n.v)
	}
	return t
}

// builder manufactures the shared values. Its state T only creates
// function values and tables; no Lua runs in it after the libraries are
// opened.
type builder struct{ T *lua.LState }

// fn wraps a plain binding.
func (b builder) fn(f lua.LGFunction) lua.LValue { return b.T.NewFunction(f) }

// method wraps a binding of the VM the calling state belongs to.
func (b builder) method(f func(*VM, *lua.LState) int) lua.LValue {
	return b.T.NewFunction(func(L *lua.LState) int { return f(vmOf(L), L) })
}

// stub is a binding that fails with msg (a function the phase forbids).
func (b builder) stub(msg string) lua.LValue { return b.fn(stubFn(msg)) }

// meta builds a metatable from its metamethods.
func (b builder) meta(mm ...named) *lua.LTable { return newTable(b.T, mm, 0) }

func buildShared() *sharedLib {
	T := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, open := range []lua.LGFunction{lua.OpenBase, lua.OpenString, lua.OpenTable, lua.OpenMath} {
		T.Push(T.NewFunction(open))
		T.Call(0, 0)
	}
	b := builder{T}
	s := &sharedLib{}
	b.sharedLibs(s)
	b.sharedHostLibs(s)
	b.sharedProxies(s)
	b.sharedMetas(s)
	s.h1Globals, s.secGlobals = b.globals(s, s.h1Control), b.globals(s, s.control)
	return s
}

// globals builds the template of a global table: _G, the kept base
// functions, the per-VM globals as placeholders, then the kind's control
// globals.
func (b builder) globals(s *sharedLib, control []named) globals {
	list := append([]named{{"_G", lua.LFalse}}, s.global...)
	for _, name := range perVM {
		list = append(list, named{name, lua.LFalse})
	}
	list = append(list, control...)
	g := globals{table: newTable(b.T, list, 0), states: new(sync.Pool)}
	for _, n := range list {
		g.cost += lua.CostKey + len(n.name)
	}
	return g
}

// globalsFor is the template of a VM of kind k.
func (s *sharedLib) globalsFor(k Kind) globals {
	if k == KindH1 {
		return s.h1Globals
	}
	return s.secGlobals
}

// sharedLibs builds the base functions and the string, table and math
// libraries: gopher-lua's, with the unsafe or unbounded functions replaced
// by the VM's own.
func (b builder) sharedLibs(s *sharedLib) {
	g := b.T.G.Global
	for _, name := range keptBase {
		s.global = append(s.global, named{name, g.RawGetString(name)})
	}
	s.next = b.method((*VM).luaNext)
	unpack := b.method((*VM).luaUnpack)
	s.global = append(s.global,
		named{"_VERSION", lua.LString(lua.LuaVersion)},
		named{"next", s.next},
		named{"type", b.method((*VM).luaType)},
		named{"pairs", b.method((*VM).luaPairs)},
		named{"ipairs", b.fn(luaIpairs)},
		named{"unpack", unpack},
		named{"untrusted", b.method((*VM).luaUntrusted)},
		named{"log", b.method((*VM).luaLog)},
	)

	str := g.RawGetString("string").(*lua.LTable)
	format := str.RawGetString("format").(*lua.LFunction).GFunction
	gmatch := b.method((*VM).strGmatch)
	s.str = append(collect(str, "dump", "rep", "format", "find", "match", "gmatch", "gfind", "gsub", "byte", "__index"),
		named{"rep", b.method((*VM).strRep)},
		named{"format", b.method(func(vm *VM, L *lua.LState) int { return vm.strFormat(L, format) })},
		named{"find", b.method((*VM).strFind)},
		named{"match", b.method((*VM).strMatch)},
		named{"gmatch", gmatch},
		named{"gfind", gmatch},
		named{"gsub", b.method((*VM).strGsub)},
		named{"byte", b.fn(strByte)},
	)
	tbl := g.RawGetString("table").(*lua.LTable)
	sortFn := tbl.RawGetString("sort").(*lua.LFunction).GFunction
	s.table = append(collect(tbl, "concat", "insert", "remove", "sort"),
		named{"concat", b.method((*VM).tableConcat)},
		named{"insert", b.method((*VM).tableInsert)},
		named{"remove", b.method((*VM).tableRemove)},
		named{"sort", b.fn(tableSort(sortFn))},
		// Lua 5.4 moved unpack into table; prompts written for it use that.
		named{"unpack", unpack},
	)
	s.math = collect(g.RawGetString("math").(*lua.LTable))
}

// collect lists t's entries but skip, sorted by name.
func collect(t *lua.LTable, skip ...string) []named {
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

// sharedHostLibs builds the host bindings: store, the H1's and the
// sections' tools and models, and the control globals, with stubs where a
// phase may not call a function.
func (b builder) sharedHostLibs(s *sharedLib) {
	s.store = []named{
		{"read", b.method((*VM).storeRead)},
		{"read_numbered", b.method((*VM).storeReadNumbered)},
		{"write", b.method((*VM).storeWrite)},
		{"append", b.method((*VM).storeAppend)},
		{"str_replace", b.method((*VM).storeReplace)},
		{"delete", b.method((*VM).storeDelete)},
		{"glob", b.method((*VM).storeGlob)},
		{"exists", b.method((*VM).storeExists)},
	}
	infer := b.method((*VM).modelsInfer)
	s.h1Tools = []named{
		{"need", b.method((*VM).toolsNeed)},
		{"always", b.method((*VM).toolsAlways)},
		{"add", b.stub("tools.add is only available during H2 recording")},
	}
	s.h1Models = []named{
		{"need", b.method((*VM).modelsNeed)},
		{"default", b.method((*VM).modelsDefault)},
		{"use", b.stub("models.use is only available during H2 recording")},
		{"infer", infer},
	}
	s.secTools = []named{
		{"need", b.stub("tools.need is only available during live H1 execution")},
		{"always", b.stub("tools.always is only available during live H1 execution")},
		{"add", b.method((*VM).toolsAdd)},
		{"add_local", b.method((*VM).toolsAddLocal)},
	}
	s.secModels = []named{
		{"need", b.stub("models.need is only available during live H1 execution")},
		{"default", b.stub("models.default is only available during live H1 execution")},
		{"use", b.method((*VM).modelsUse)},
		{"get", b.method((*VM).modelsGet)},
		{"infer", infer},
	}
	s.jump = b.method((*VM).luaJump)
	s.control = []named{
		{"jump", s.jump},
		{"execute", b.method((*VM).luaExecute)},
		{"list_from_section", b.method((*VM).luaListFromSection)},
		{"fanout", b.method((*VM).luaFanout)},
	}
	for _, name := range []string{"execute", "jump", "fanout", "list_from_section"} {
		s.h1Control = append(s.h1Control, named{name, b.stub(name + " is only available in sections (## headings); H1 runs before sections exist")})
	}
}

// sharedProxies builds the shared library tables and the metatables of
// the per-VM proxies that read through to them.
func (b builder) sharedProxies(s *sharedLib) {
	T := b.T
	s.strLib, s.tableLib, s.mathLib = newTable(T, s.str, 0), newTable(T, s.table, 0), newTable(T, s.math, 0)
	s.storeLib = newTable(T, s.store, 0)
	s.h1ToolsLib, s.h1ModelsLib = newTable(T, s.h1Tools, 0), newTable(T, s.h1Models, 0)
	s.secToolsLib, s.secModelsLib = newTable(T, s.secTools, 0), newTable(T, s.secModels, 0)
	s.strProxy, s.tableProxy, s.mathProxy = proxyMeta(T, s.strLib), proxyMeta(T, s.tableLib), proxyMeta(T, s.mathLib)
	s.storeProxy = proxyMeta(T, s.storeLib)
	s.h1ToolsProxy, s.h1ModelsProxy = proxyMeta(T, s.h1ToolsLib), proxyMeta(T, s.h1ModelsLib)
	s.secToolsProxy, s.secModelsProxy = proxyMeta(T, s.secToolsLib), proxyMeta(T, s.secModelsLib)
}

// sharedMetas builds the protected metatables of sys, var, tools.calls,
// the handle objects and host errors.
func (b builder) sharedMetas(s *sharedLib) {
	s.sysMeta = b.meta(
		named{"__index", b.fn(sysIndex)},
		named{"__newindex", b.fn(sysNewIndex)},
		named{"__metatable", lua.LString("sys is sealed")},
	)
	s.varMeta = b.meta(
		named{"__index", b.fn(varIndex)},
		named{"__newindex", b.fn(varNewIndex)},
		named{"__len", b.fn(varLen)},
		named{"__metatable", lua.LString("var is guarded")},
	)
	s.callsMeta = b.meta(
		named{"__index", b.fn(callsIndex)},
		named{"__newindex", b.stub("tools.calls is read-only")},
		named{"__metatable", lua.LString("tools.calls is read-only")},
	)
	s.toolMeta = b.meta(
		named{"__index", b.fn(toolIndex)},
		named{"__newindex", b.fn(frozen("Tool"))},
		named{"__tostring", b.fn(toolString)},
		named{"__metatable", lua.LString("Tool objects are frozen")},
	)
	handleInfer := b.method((*VM).handleInfer)
	s.modelMeta = b.meta(
		named{"__index", b.fn(modelIndex(handleInfer))},
		named{"__newindex", b.fn(frozen("Model"))},
		named{"__tostring", b.fn(modelString)},
		named{"__metatable", lua.LString("Model objects are frozen")},
	)
	s.errorMeta = b.meta(
		named{"__tostring", b.fn(errorString)},
		named{"__metatable", lua.LString("error")},
	)
	s.resultMeta = b.meta(
		named{"__index", b.fn(resultIndex)},
		named{"__tostring", b.fn(resultString)},
		named{"__newindex", b.stub("fanout results are read-only")},
		named{"__metatable", lua.LString("fanout result")},
	)
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
