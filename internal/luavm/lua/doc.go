// Package lua is gopher-lua v1.1.2 (github.com/yuin/gopher-lua, MIT, see
// LICENSE), copied into the module so that the sandbox can bound what a
// prompt's Lua does inside the interpreter, where gopher-lua offers no hook
// (see package luavm): the instructions it executes, the memory it grows,
// the tracebacks it builds. Only the root package is copied; its parser, AST and
// pattern packages are still imported from the upstream module, unchanged.
//
// vm.go is gopher-lua's generated file (go-inline over _vm.go, which is not
// copied); it is edited directly. Every change is marked with a comment
// starting "promptforge:", so `grep -n promptforge: *.go` lists them all:
//
//   - Constant format strings for RaiseError, an unreachable return and two
//     self-assignments removed, so that go vet is clean. No behaviour
//     changes, except that an assert message containing '%' is no longer
//     read as a format.
//   - state.go stackTrace: a traceback lists at most 8 tail calls per frame
//     and then one "(... N more tail calls)" line. gopher-lua added one line
//     per counted tail call before trimming the traceback to 15 lines, so
//     the time-budget or cancellation error of `local function f() return
//     f() end return f()` took gigabytes and seconds to build (issue #11).
//   - meter.go (new): a Meter per state, charged with what Lua grows: new
//     tables (state.go NewTable/CreateTable and the vararg tables, vm.go
//     OP_NEWTABLE), array slots and hash keys (table.go), closures (vm.go
//     OP_CLOSURE), and strings built by concatenation (vm.go stringConcat,
//     which also refuses a result over the meter's MaxStringBytes before
//     building it) and by string.upper, lower and reverse (stringlib.go).
//     string.sub copies (and charges) a piece shorter than half its
//     source, which would otherwise keep the whole source alive unmeasured
//     (meter.go Piece, which the sandbox's own matchers use too).
//     LTable and LState carry the meter; accessors let the sandbox measure
//     what a state reaches (TableFields, Values, Frames).
//   - vm.go mainLoopWithContext counts each instruction against the
//     meter's Steps (the reference's instruction quota) and calls
//     Owner.OutOfSteps once they run out.
//   - table.go RawSetString boxes a new key as an LValue once instead of at
//     each use: the growth count makes the function too large to inline,
//     and each boxing would then allocate (NewVM went from 103 to 127
//     allocations with the count alone; it is 99 now).
//   - iolib.go, oslib.go, debuglib.go and channellib.go are not copied,
//     and linit.go's OpenLibs list drops them: the sandbox never opens
//     them (every state is made with SkipOpenLibs and opens only base,
//     string, table and math; luavm/vm.go and shared.go), so they were
//     dead code here, and file, process and debug access is then absent
//     from the interpreter itself, not only from the globals.
//   - state.go freeCallFrameStackSegment clears a call-frame segment before
//     it goes back to the pool (MinimizeStackMemory states share one): its
//     stale frames kept a closed state's functions, and through them its
//     globals, reachable from whichever state reused the segment.
//   - state.go Options.Globals and globals.go (new): a state can start with
//     a copy of a prepared global table (LTable.cloneEntries copies its
//     hashes and key order with maps.Clone and slices.Clone) instead of an
//     empty one filled a global at a time; creating a sandbox VM went from
//     96 to 50 allocations (19 to 11 KB). newGlobal no longer preallocates
//     the registry table's hash (made on first use; the sandbox never
//     uses it), the 64-entry globals hash when there is a template, or the
//     io library's temporary-file list (the io library is not copied).
//     NewThread does not copy the template: a thread shares its parent's
//     globals. The copy shares the template's key order (keys, k2i)
//     until it gets a key the template lacks (LTable.sharedOrder,
//     ownOrder in RawSetString and RawSetH), so the template must not
//     change once cloned.
//   - vararg.go (new), state.go and vm.go: the arg table of a vararg
//     function that does not use ... (CompatVarArg; every chunk's main
//     function is one) sets its n field through setArgN, which sizes the
//     hash and key order for that one key instead of gopher-lua's default
//     32-entry hash: about 2 KB less per block a section runs. The meter is
//     charged as before. compile.go: a chunk's main function, which has
//     no arg local, no longer asks for the arg table at all (it was built
//     on every chunk run and never reachable).
//   - reuse.go (new): LState.Reset makes a state that ran to a clean
//     finish what NewState would return (empty and cleared value stack,
//     call frames and registry table, no built-in metatables, the global
//     table back to its template's entries and key order, no context or
//     meter), so the sandbox can reuse it; the callFrameStack interface
//     gains reset. A state's global table logs the string keys set in it
//     (LTable.written, noted in RawSetString), so that Reset restores
//     only those. ReuseTable and ReuseEmpty (through Untouched, which the
//     sandbox also asks before it pools a state) let the sandbox reuse a
//     table its last VM made (the string metatable, the library proxies)
//     when Lua never set anything in it, and LTable.SetOwned sets a
//     global the sandbox sets for every use without logging it (Reset
//     leaves it to the sandbox) and without a write when it holds that very
//     value (identical: bit-equal for numbers, so -0 replaces 0).
//     state.go PCall sets LState.panicked when it recovers a Go panic
//     rather than a Lua error (a host bug, say): Lua's pcall would let the
//     chunk end cleanly after it, and Reset refuses such a state.
package lua
