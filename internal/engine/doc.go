// Package engine executes a parsed prompt: the version gate, the H1 pass
// with live capability binding (tools.need/always, models.need/default
// through internal/match), the walk over sections (fall-through, return,
// jump and child walks, execute chains, off-walk sections, visible sets,
// the nesting cap), each section's block lifecycle, prose turned into chat
// messages, the tool loop, template resolution, observations, turn
// counting and the error kinds hosts act on.
//
// It owns run-wide state (bindings, the untrusted-content nonce, the id
// counter, the lazily built gateway client) and implements luavm.Host so
// that Lua can reach it; the Lua VM itself lives in internal/luavm.
//
// Cancellation: the run's context reaches every wait — model calls, tool
// calls, Lua (through the VM's context), infer and execute — and a
// cancelled run fails with Kind Cancelled and the context's cause. Run
// starts no goroutine that outlives it.
//
// Not in this version: fanout. Calling it raises a Lua error; the depth,
// sys.index, item and var-clone plumbing it needs is in place.
package engine
