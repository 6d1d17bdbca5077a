// Package luavm is the sandboxed Lua VM a prompt's Lua runs in, and the
// host API bound into it: args, params (typed arguments), the sealed sys table, the var clipboard,
// reply, log, store, untrusted, tools, models and the control globals
// (jump, execute, list_from_section, fanout). The semantics behind tools,
// models and control flow belong to the engine, reached through the [Host]
// interface this package defines; luavm never imports the engine.
//
// A VM is not safe for concurrent use, but VMs are independent: fanout
// arms run one VM per goroutine over one shared store. An arm's VM tags
// its store.write calls ([Options.Writer]) so the store can refuse two arms
// of one fanout writing one path; that refusal ends the chunk even under
// pcall, because one of the two results would be silently lost.
//
// # Sandbox
//
// Each VM is a gopher-lua state as new (a reused one is reset to exactly
// that, see below) with only the base, string, table and math libraries.
// Code loading (load, loadstring, dofile, loadfile, require, module), raw
// access (rawget, rawset, rawequal), environment switching (getfenv,
// setfenv), collectgarbage, print, warn, io, os, debug, package and
// coroutine are absent.
//
// Limits: the reference's instruction quota ([Limits.MaxInstructions],
// 10,000,000 VM instructions per VM) is counted by the vendored interpreter
// (package lua), and a time budget per VM ([Limits.LuaTime], 2 s) is its
// backstop for work that executes few instructions, enforced through the
// state's context. The budget counts only Lua time: it is paused while the
// VM waits on the host (model calls, execute, tools); the shared library
// replay spends the same quota and budget as the blocks after it. It arms
// no timer: the VM reads the clock between chunks of instructions, at
// memory syncs and when the state's context is polled, save a pattern
// search's poll on entry, which reads it on every 16th search only (see
// budget in vm.go, and find). The same context carries the run's cancellation, so a busy loop
// stops promptly. Library calls that could run long inside one Go call
// poll that context as well: string.find, match, gmatch and gsub run on a
// vendored copy of gopher-lua's pattern matcher (package pattern) that
// checks it every few thousand steps, so a backtracking pattern ends with
// the same quota or cancellation error as a loop. A speculative attempt
// ([Options.SpeculateUntil], speculate.go) stops through the same context.
//
// The call stack and the value stack (registry) are bounded; the registry
// starts small and grows in large steps because gopher-lua copies it on
// every growth. One call returns at most 65536 values (string.byte,
// unpack), checked before anything is pushed. string.rep, string.format
// (estimated before it builds anything), string.gsub and table.concat
// refuse results over [Limits.MaxStringBytes] (16 MiB by default). var is
// bounded by [Limits.MaxVarBytes], checked at every assignment against a
// running size estimate.
//
// The `..` operator is bounded by MaxStringBytes too, inside the
// interpreter: gopher-lua is vendored as package lua for this and for the
// memory ceiling below (its doc.go lists every change).
//
// Memory: a run has a ceiling ([Limits.MaxRunMemory], 64 MiB by default,
// the reference's per-VM figure; [limits].max_run_memory in prompts.toml)
// on what its Lua values and its store hold at once, shared by all its VMs
// through one [Memory]. The interpreter charges a VM's meter with what Lua
// grows (strings from `..` and the string library, tables, their slots and
// keys, closures); when the charges would pass the ceiling, the VM measures
// what it still reaches, so garbage is never held against it, and fails
// only if that is over. Store writes and appends are checked before they
// happen. The error is a QuotaError ("lua memory limit exceeded: …") that,
// like the time budget, pcall cannot catch. What Go holds for the run
// outside Lua and the store (var, bounded by MaxVarBytes; chat messages,
// bounded by the string limit per block and the gateway request cap) is
// not counted.
//
// Cost: a VM is built per section entry, so everything without per-VM
// state (library and host functions, metatables) is built once per process
// and shared read-only (see shared.go). The string, table, math, store,
// tools and models globals are per-VM proxies over the shared tables: a
// prompt may add functions to them (function string.trim(s) ... end works,
// also as a method), but pairs(string) sees only what the prompt added, and
// getmetatable on them returns false.
//
// The state itself is reused: Close gives the state of a VM whose Lua all
// ran to a clean finish (no error but jump, no Go panic, no quota, memory,
// time or cancellation abort) to a sync.Pool per kind, after
// lua.LState.Reset has made it what a new state is; New takes one from
// there when it can. Isolation between runs rests on that reset
// (pool_test.go compares what a VM on a reused state observes with what a
// VM on a new one does, after adversarial and fuzzed chunks). Ownership:
// an open VM owns its state; after Close the pool does, and a VM must not
// be used after Close (its L is nil). The pool runs no goroutine and
// keeps nothing the collector wants: sync.Pool empties over a GC cycle or
// two after a burst.
//
// # Lua 5.1, not 5.4
//
// The reference runs Lua 5.4; gopher-lua is Lua 5.1. The differences that
// matter to prompt authors:
//
//   - Numbers are all floats. Results, JSON and templates render integral
//     values without a fraction (return 42 and return 42.0 both give
//     "42"); math.type does not exist.
//   - No integer division `//`, no bitwise operators, no goto, no
//     <const>/<close>: they are syntax errors at parse time.
//   - No utf8 library.
//   - table.unpack is provided as an alias of unpack for 5.4-style code.
//
// # var
//
// var is a guarded proxy (a userdata) over JSON data held in Go: every
// assignment, nested or not, is checked at the assigning line, and the data
// moves between sections, chains and templates without conversion. The
// sandbox's type, next, pairs, ipairs, unpack, table.insert/remove/concat
// see through it, so var.list works as a table would; table.sort refuses it
// (sort a local copy). type(var.x) reports "table".
package luavm
