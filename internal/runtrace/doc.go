// Package runtrace records what a run did, as a bounded tree of steps: the
// units the engine entered (the H1 pass, sections by walk, jump or execute,
// fanout arms), each model turn and tool call inside them with its size,
// tokens, duration and error, the Lua log lines, and the outcome. The
// server opens one [Recorder] per run from a [Book] and the run registry
// keeps it in the run's record (runs.Registry.LaunchWith), so a trace
// lives exactly as long as its record; over a shared run store, which
// cannot hold one, the book keeps them itself, with the registry's
// retention. The status page, the trace JSON and check_run read them
// there; a [Sink] sees every step start and end as it happens, which is
// how traces are exported over OTLP (package otlp) without a second reading
// of the engine's events.
//
// A trace is bounded: at most Options.MaxSteps steps are kept (later ones
// are counted in Trace.Dropped but still reach the Sink), and captured text
// (only with capture_content) is cut at Options.MaxContentBytes per run.
// Without capture a trace holds no prompt, reply, argument, result or log
// text: names (sections, models, tools, argument keys), sizes and counts.
//
// # Goroutines
//
// None. A Recorder is driven by the engine's Tracer calls, on the run's
// goroutine and its fanout arms' (hence its mutex); a Book is read by
// HTTP handlers and written by the server's run bodies, each of which
// enters its run's trace (Book.Enter, after the server's Book.Open) and
// closes it (Book.End), once. A run first attempted on its caller's
// goroutine (the server's speculative attempt) may enter it twice: an
// attempt that stopped takes it back to its start ([Recorder.Rewind])
// before the run's body enters it again on a run goroutine.
// Retention is a sweep on each write, like the registry's.
package runtrace
