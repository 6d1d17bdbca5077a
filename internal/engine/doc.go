// Package engine executes a parsed prompt: the version gate, the H1 pass
// with live capability binding (tools.need/always, models.need/default
// through internal/match), the walk over sections (fall-through, return,
// jump and child walks, execute chains, off-walk sections, visible sets,
// the nesting cap), each section's block lifecycle, prose turned into chat
// messages, the tool loop, template resolution, observations, turn
// counting and the error kinds hosts act on. [Probe] runs the H1 pass
// alone, contacting nothing, to learn what each declared need binds to
// (check's preflight, list_prompts' binding problems).
//
// It owns run-wide state (bindings, the untrusted-content nonce, the id
// counter) and implements luavm.Host so that Lua can reach it; the Lua VM
// itself lives in internal/luavm. It reads no environment: the gateway
// client is the host's ([Options.Client]), and a run without one fails
// only when it calls a model.
//
// Cancellation: the run's context reaches every wait — model calls, tool
// calls, Lua (through the VM's context), infer and execute — and a
// cancelled run fails with [KindCancelled] and the context's cause. [Run]
// starts no goroutine that outlives it: fanout waits for its arms. The
// gateway client's idle connections are the host's to close.
//
// Limits: each VM gets a Lua time budget, a call-stack and value-stack
// bound, caps on built strings and on var's size ([Limits]). The run has
// one memory ceiling (Limits.MaxRunMemory): Run builds one luavm.Memory and
// hands it to every VM of the run, fanout arms included, so what they and
// the store hold counts together. A prose block whose rendering would pass
// the string limit fails with kind Substitution before it is built.
//
// Fanout: each arm is a fresh VM for the worker section on its own
// goroutine, at most [Limits.FanoutConcurrency] at once, started in
// collection order as slots free up. Arms share the run's store (writes
// are race-tracked per fanout, see store.Writer) and each gets its own
// clone of the caller's var. The first arm failure cancels the other arms
// through a context derived from the caller's, and fanout returns only once
// every arm it started has ended, so no arm goroutine outlives the call; a
// tool loop that runs out in an arm is a soft result instead. The caller's
// Lua time budget is paused while it waits.
//
// Speculative attempts ([Options.SpeculateUntil], issue #12): a host may
// first run a prompt inline as an attempt that stops, with an error that
// is [ErrSpeculationStopped], before anything that would wait on the host
// or reach outside the run (a model turn, the live bindings, infer,
// fanout; execute runs inline) or once the clock passes its deadline, and
// then run it again ordinarily. The stop goes through the VMs' contexts,
// as the Lua quotas do, so pcall cannot catch it; observations made before
// it are the host's to discard.
//
// Observations from arms: each arm reports Fanout arm started and exactly
// one terminal event under the worker's name; its model turns, tool calls
// and log lines are reported as usual, but its section lifecycle (section,
// chunk, teardown, scope and store events) is not, since the arm events
// already stand for it. The [Observer] and [Options.Debug] are called from arm
// goroutines; Debug calls are serialised by the run, Observer must be safe
// for concurrent use.
//
// Tracing: an [Options.Tracer] gets the events a trace records (the run's
// failure, the H1's, sections' and arms' starts and ends, arms' own
// lifecycle included, turns, tool calls and log lines; see traced), each as
// a [TraceEvent] that places it in the run's structure (its
// unit, the unit that started its chain, and how it was entered: walk,
// jump, execute, fanout) with what model turns and tool calls measured
// ([Info]); a failing section adds [SectionFailed], for the tracer only.
// The Observer's events are the same with or without a tracer, and without
// one no TraceEvent or Info is built (package runtrace builds traces from
// them); with [Options.TraceTurnsOnly] only the ends of model turns are.
package engine
