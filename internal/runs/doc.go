// Package runs is the run registry: it hands out run slots, races each run
// against the reply deadline, and keeps the records check_run reads.
//
// A client may give up on a call long before a prompt finishes (Cursor drops
// remote calls at about 300 seconds), so a run must not depend on the call that
// started it. A call waits at most the reply deadline; past that it is handed a
// running [Result] naming the run id, and the outcome is collected later by id.
// The registry knows nothing about prompts, the engine or MCP: it runs
// closures of the shape func(context.Context) [Outcome] that the server
// builds.
//
// # Ownership
//
// [Registry.Launch] counts the run as live under the registry's lock, writes
// its running record to the store (outside the lock: a shared store is a
// network round trip), and only then starts the goroutine that drives it;
// nothing between the write and the start can fail, so a stored run id is
// never left without something that will bring it to a terminal record
// (short of the process dying, which a shared store's lease covers), and a
// duplicate id is refused, by the store, before anything starts. Close
// waits for every run counted live, including one between those steps. A
// run launched with [Registry.LaunchInline] is the exception: it is
// counted live and stored at the launch but started by [Registry.Settle],
// so until its handle is settled the caller holding the handle is what
// will bring it to a terminal record, and Close waits for that caller
// too. The call that waits on a run ([Registry.Settle]) holds
// only a [Handle]. If its context ends before the reply deadline, because the
// client cancelled or went away, Settle cancels the run; once the deadline
// has passed nothing the call does can reach the run any more.
//
// # One goroutine per run
//
// The run closure and its supervisor share a single goroutine: the supervisor
// is a deferred function around the closure. A panic (or runtime.Goexit) in the
// closure unwinds through that deferred function on the same goroutine, where
// it is recovered and turned into a failed record. A separate supervisor
// goroutine would buy nothing Go can use, since a panic in one goroutine cannot
// be observed from another, and it would double the stacks held per in-flight
// run. Goroutines the closure starts itself are the closure's to supervise.
//
// A run's goroutine may have driven earlier runs: when a run ends, its
// goroutine waits for the next one Launch starts (up to maxIdleRunners
// wait; more exit), because a new goroutine starts with a 2 KB stack and a
// run grows it to tens of KB, copying it at every doubling, on every call.
// The registry owns these runners: Close cancels the context they wait on
// and waits for them to return.
//
// A run launched with [Registry.LaunchInline] is first attempted on the
// goroutine that settles it, under the same deferred supervisor: an
// attempt that ends the run is the run, recorded as a runner would record
// it, and one that stops (having done nothing a second run could see: the
// caller's promise) hands the run to a runner as Launch does. The stdio
// transport's calls wait for their reply on the goroutine that read them,
// and for a run of tens of microseconds the hand-off to a runner and back
// cost more in thread wake-ups than the run (issue #12). Whatever the
// registry is about to wait for on such a caller's behalf (a slot, a run
// on a runner), it first tells the caller ([WithBeforeWait]), which then
// has another goroutine read on.
//
// # Admission
//
// There are [Options.MaxConcurrentRuns] slots behind a FIFO counting
// semaphore. A caller waits up to [Options.AdmissionTimeout] and is then
// refused with an error naming the wait: a refusal the caller can retry is
// better than an unbounded queue of held client connections. Waiters are
// queued channels, not goroutines, and a waiter that gives up at the moment
// it is granted a slot passes the slot on, so none is ever lost. A slot is
// held until the run ends, even when that is long after its call was
// answered.
//
// # Stores
//
// The records go through a [Store]: the registry keeps in memory only the
// runs whose goroutines it runs (their cancel functions and done channels),
// and writes each record to the store when the run is launched and when it
// ends. The default is the in-memory store ([NewMemoryStore]), which holds
// the retention rules below; the PostgreSQL store (package pgstore, beside
// this one) shares the records between replicas, so a run launched on one
// is read, and cancelled, on any. First write wins in either.
//
// # Retention
//
// A finished record stays readable for [Options.RetainCompleted] and is then
// evicted; a running record is never evicted. Eviction is a sweep taken on
// each read and write rather than a timer goroutine: a stale record costs
// nothing until somebody looks. Finished records are kept in finishing order,
// so a sweep touches only the records it evicts.
//
// Time alone does not bound memory: a burst of runs with large values would
// stay pinned for the whole window. So finished records are also capped by
// count ([Options.MaxRetainedRuns], default 10,000) and by the value and
// error bytes they hold together ([Options.MaxRetainedBytes], default 64
// MiB). When a run finishes and either cap is exceeded, the oldest finished
// records are evicted first, from the same end of the same list the sweep
// uses, so this too costs only what it evicts. Running records are never
// evicted and do not count. The record that has just finished is always kept,
// even when it alone is over the byte cap: its caller may be reading it right
// now, and dropping it would turn a result that was computed into "unknown
// run". It goes when its window closes or the next finished run pushes it
// out. A record evicted early reads as unknown, exactly like one past its
// window. What [Registry.LaunchWith] keeps with a run (the server's trace)
// is in the memory store's record itself, so it goes with the record, by
// the same rules; a shared store does not hold it.
//
// # Logs
//
// The log carries what an operator cannot otherwise see: a call answered with
// running (INFO), every run's terminal record (INFO), a run that ended
// abnormally (INFO), and a refused admission (WARN, because MaxConcurrentRuns
// is biting). Eviction, by time or by the caps, is DEBUG bookkeeping. No line carries a run's value or
// error text, which may hold author- or user-controlled content.
package runs
