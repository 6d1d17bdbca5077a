package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promptforge-go/promptforge/internal/logtext"
)

// Log messages an operator (and the tests) match on.
const (
	msgRefused     = "no run slot came free: refusing the call, which can be retried"
	msgOutlived    = "the run outlived its call and is collectable by run id"
	msgTerminal    = "run reached its terminal state"
	msgAbnormal    = "the run ended abnormally and is recorded as failed"
	msgEvicted     = "evicted run records past the retention window"
	msgOverBound   = "evicted the oldest finished run records to stay within the retention bounds"
	msgPanicStack  = "stack of the abnormally ended run"
	msgStoreFinish = "the run store did not take the run's terminal record; this replica answered it, others may read it as running until the store takes it"
	msgStoreRead   = "the run store could not be read"
)

// Causes a run's context is cancelled with; the engine sees them through
// context.Cause, and they name the reason in a failed record.
var (
	// ErrCallerCancelled: the call waiting on the run ended before the reply
	// deadline (the client cancelled or disconnected).
	ErrCallerCancelled = errors.New("the caller cancelled the call")
	// ErrRunCancelled: Cancel was called for the run.
	ErrRunCancelled = errors.New("the run was cancelled")
	// ErrShuttingDown: the registry was closed while the run was going.
	ErrShuttingDown = errors.New("the server is shutting down")
)

var (
	// ErrDuplicateRun: Launch was given a run id that is already registered.
	ErrDuplicateRun = errors.New("the run id was already in use")
	// ErrClosed: the registry no longer admits or launches runs.
	ErrClosed = errPoolClosed
	// ErrGlobalCap: a shared store refused the run because every replica
	// together already runs its global cap of runs.
	ErrGlobalCap = errors.New("every run slot across the replicas is taken")
)

// Options holds the [server] limits the registry enforces.
type Options struct {
	MaxConcurrentRuns int           // run slots; at least 1
	AdmissionTimeout  time.Duration // how long Admit waits for a slot
	ReplyDeadline     time.Duration // how long Settle waits before answering running
	RetainCompleted   time.Duration // how long a finished record stays collectable

	// MaxRetainedRuns caps how many finished records are held at once;
	// zero means DefaultMaxRetainedRuns. Running records are not counted.
	MaxRetainedRuns int
	// MaxRetainedBytes caps the value and error bytes held by finished
	// records together; zero means DefaultMaxRetainedBytes. The record that
	// has just finished is always kept, even when it alone is larger.
	MaxRetainedBytes int64

	// Logger receives the registry's lines; nil discards them.
	Logger *slog.Logger
	// Store keeps the records; nil is the in-memory store over the
	// retention bounds above. A store given here applies its own
	// retention, and its owner closes it after the registry.
	Store Store
	// Replica names this process in the records it owns; empty is
	// "local".
	Replica string
	// OnTerminal, when set, is called once per launched run with its terminal
	// record, after the record is stored and before the run's waiters
	// (Settle, Handle.Done) see it end, so that what it counts (the
	// server's metrics, the trace's final header) is there when the caller
	// is answered. It runs on the run's goroutine and must not block.
	OnTerminal func(Result)
}

// Defaults for the retention bounds, used when Options leaves them zero. They
// are far above what a working server holds within RetainCompleted; they
// exist so that a burst of runs cannot pin memory for the whole window.
const (
	DefaultMaxRetainedRuns  = 10_000
	DefaultMaxRetainedBytes = 64 << 20 // 64 MiB
)

// Outcome is what a run closure returns. A nil Err means the run completed
// with Value; otherwise it failed and Err's text is the record's error.
// Turns counts completed model turns and Tokens the tokens they spent,
// either way.
type Outcome struct {
	Value  string
	Err    error
	Turns  uint32
	Tokens Tokens
	// Ended, when set, is when the run ended as the body read the clock
	// for something else of its own (the server's: its trace's end), so
	// that the record and the trace agree on it and the run's end costs
	// one clock reading, not two; zero, the registry reads the clock when
	// the body returns. A time before the run's start is ignored.
	Ended time.Time
}

// Stats are the registry's counters, read by the server's metrics.
type Stats struct {
	Started   uint64 // runs launched
	Completed uint64 // runs that reached a completed record
	Failed    uint64 // runs that reached a failed record
	Refused   uint64 // admissions refused after AdmissionTimeout
	InFlight  int    // launched runs that have not ended
	FreeSlots int    // run slots nobody holds
	Waiting   int    // calls queued for a slot
	Records   int    // records held: running plus retained finished ones
	// RetainedBytes is the value and error bytes held by finished records.
	RetainedBytes int64
}

// Handle is what a call holds on a run it launched.
type Handle struct {
	rec *record
	// unstarted is the run LaunchInline left for Settle to start, with the
	// inline attempt it makes first; nil once started.
	unstarted *inlineJob
}

// inlineJob is a run launched by LaunchInline and not yet started.
type inlineJob struct {
	runJob
	attempt func(context.Context) (Outcome, bool)
}

// RunID is the run's id.
func (h *Handle) RunID() string { return h.rec.id }

// Done is closed once the run's terminal record is written and
// Options.OnTerminal has returned.
func (h *Handle) Done() <-chan struct{} { return h.rec.done }

// record is one run this process owns, while its goroutine lives. The
// store holds what others read; this holds what only the owner can use.
type record struct {
	id, prompt string
	started    time.Time
	cancel     context.CancelCauseFunc
	done       chan struct{} // closed with the first terminal result
	local      any           // Stored.Local, from LaunchWith
	// handle is what LaunchWith returns, here so that a launch allocates
	// one thing fewer (issue #12).
	handle Handle

	// guarded by Registry.mu
	finished bool
	result   Result
}

// ending is how a run ended, beyond its record: what a caller that tells
// a cancelled run from a failed one (the server's task view) needs.
type ending struct {
	cause    error // the run context's cancellation cause when it ended, if any
	abnormal bool  // it panicked or exited without returning
	// at is when it ended: the record's elapsed time and its Finished
	// are the same reading; zero, finish reads the clock.
	at time.Time
}

func (rec *record) snapshotLocked() Result {
	if rec.finished {
		return rec.result
	}
	return Running(rec.id, rec.prompt, time.Since(rec.started))
}

// storeTimeout bounds each store write the registry makes on a run's
// behalf, which no caller's context covers: a store that does not answer
// in this long is treated as unreachable.
const storeTimeout = 10 * time.Second

// isMemStore reports whether s is the in-memory store.
func isMemStore(s Store) bool {
	_, ok := s.(*memStore)
	return ok
}

// storeContext is the context of one store call the registry makes on a
// run's behalf: bounded by storeTimeout, except for the in-memory store,
// which never waits, so that a run_prompt call does not arm and stop two
// timers for nothing.
func (r *Registry) storeContext() (context.Context, context.CancelFunc) {
	if r.localStore {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), storeTimeout)
}

// Registry is every run this process has started. One serves the whole
// server, across all sessions. It is safe for concurrent use.
type Registry struct {
	admissionTimeout time.Duration
	replyDeadline    time.Duration
	retain           time.Duration
	log              *slog.Logger
	onTerminal       func(Result)
	store            Store
	localStore       bool // store is the in-memory store (storeContext)
	replica          string

	slots *slotPool
	// base is cancelled by Close: the idle runners wait on it. Runs'
	// contexts are not its children: Close cancels each owned run itself
	// (see LaunchWith).
	base context.Context
	stop context.CancelCauseFunc

	// timers are Settle's reply-deadline timers, reused: a run_prompt call
	// otherwise allocates one (issue #12). Since Go 1.23 a stopped timer
	// delivers nothing stale, so a timer taken from here is as good as new
	// once Reset.
	timers sync.Pool // *time.Timer

	started, completed, failed, refused atomic.Uint64

	mu sync.Mutex
	// owned are the runs whose goroutines this process runs, from Launch
	// until their terminal record is written.
	owned  map[string]*record
	live   int // run goroutines not yet returned
	closed bool
	idle   chan struct{} // closed once closed && live == 0 && answering == 0
	// answering counts the runs that have left live but whose waiters
	// are still being answered (supervise).
	answering int
	idleSet   bool

	// handoff passes a launched run to an idle run goroutine (runner);
	// it is unbuffered, so a send succeeds only when one is waiting.
	handoff chan runJob
	// idleRunners counts the runners waiting on handoff, at most
	// maxIdleRunners; runners counts every runner, for Close.
	idleRunners atomic.Int32
	runners     sync.WaitGroup
}

// runJob is one launched run, as Launch hands it to a runner.
type runJob struct {
	ctx  context.Context
	rec  *record
	slot *Slot
	run  func(context.Context) Outcome
}

// maxIdleRunners bounds the run goroutines kept waiting for the next run
// after theirs ended. Reusing one saves starting a goroutine per call and,
// above all, growing its stack again: a run (the engine and the Lua
// interpreter) needs tens of KB of stack, a new goroutine starts with 2 KB,
// and every doubling copies the stack (about 2 % of the server's CPU per
// run_prompt call in the stdio profile). More than this many idle runners
// exit, so a burst of runs leaves at most this many stacks behind.
const maxIdleRunners = 16

// New builds a registry over the limits in opts.
func New(opts Options) (*Registry, error) {
	if opts.MaxConcurrentRuns < 1 {
		return nil, fmt.Errorf("create the run registry: max_concurrent_runs is %d; set it to 1 or more", opts.MaxConcurrentRuns)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"admission_timeout", opts.AdmissionTimeout},
		{"reply_deadline", opts.ReplyDeadline},
		{"retain_completed", opts.RetainCompleted},
	} {
		if d.v < 0 {
			return nil, fmt.Errorf("create the run registry: %s is %s; it cannot be negative", d.name, d.v)
		}
	}
	if opts.MaxRetainedRuns < 0 {
		return nil, fmt.Errorf("create the run registry: max_retained_runs is %d; set it to 1 or more, or 0 for the default", opts.MaxRetainedRuns)
	}
	if opts.MaxRetainedBytes < 0 {
		return nil, fmt.Errorf("create the run registry: max_retained_bytes is %d; set it to 1 or more, or 0 for the default", opts.MaxRetainedBytes)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	store := opts.Store
	if store == nil {
		store = NewMemoryStore(RetentionOptions{
			RetainCompleted:  opts.RetainCompleted,
			MaxRetainedRuns:  opts.MaxRetainedRuns,
			MaxRetainedBytes: opts.MaxRetainedBytes,
			Logger:           logger,
		})
	}
	replica := opts.Replica
	if replica == "" {
		replica = "local"
	}
	base, stop := context.WithCancelCause(context.Background())
	r := &Registry{
		admissionTimeout: opts.AdmissionTimeout,
		replyDeadline:    opts.ReplyDeadline,
		retain:           opts.RetainCompleted,
		log:              logger,
		onTerminal:       opts.OnTerminal,
		store:            store,
		localStore:       isMemStore(store),
		replica:          replica,
		slots:            newSlotPool(opts.MaxConcurrentRuns),
		base:             base,
		stop:             stop,
		owned:            make(map[string]*record),
		idle:             make(chan struct{}),
		handoff:          make(chan runJob),
	}
	// A cancellation sent to another replica reaches the run here.
	store.OnCancel(func(id string) { r.cancelOwned(id) })
	return r, nil
}

// AdmissionTimeout is how long Admit waits for a slot.
func (r *Registry) AdmissionTimeout() time.Duration { return r.admissionTimeout }

// StoreNeverWaits reports whether the registry's run store is the
// in-memory one, whose calls never wait: Admit and Settle then wait for
// nothing but what WithBeforeWait announces.
func (r *Registry) StoreNeverWaits() bool { return r.localStore }

// ReplyDeadline is how long Settle waits for a run.
func (r *Registry) ReplyDeadline() time.Duration { return r.replyDeadline }

// RetainCompleted is how long a finished run stays collectable.
func (r *Registry) RetainCompleted() time.Duration { return r.retain }

// Admit waits up to AdmissionTimeout for a run slot, in arrival order. When
// none came free it logs one WARN and returns a *RefusedError; when ctx ends
// first it returns ctx's cause; after [Registry.Close] it returns [ErrClosed].
func (r *Registry) Admit(ctx context.Context) (*Slot, error) {
	err := r.slots.acquire(ctx, r.admissionTimeout)
	switch {
	case err == nil:
		return &Slot{pool: r.slots}, nil
	case errors.Is(err, errTimedOut):
		r.refused.Add(1)
		r.log.Warn(msgRefused)
		return nil, &RefusedError{Wait: r.admissionTimeout}
	case errors.Is(err, errPoolClosed):
		return nil, fmt.Errorf("admit a run: %w", ErrClosed)
	default:
		return nil, fmt.Errorf("wait for a run slot: %w", err)
	}
}

// Launch registers the run id for prompt and starts run on its own goroutine,
// in one step under the registry lock. It takes ownership of slot: the slot
// is returned when the run ends, or at once if Launch refuses. A duplicate id
// is refused with [ErrDuplicateRun] and run is never called.
//
// run receives a context that is cancelled (with [ErrCallerCancelled],
// [ErrRunCancelled] or [ErrShuttingDown] as its cause) when the run should
// stop; it is not derived from any call's context, so a call that has been
// answered cannot stop the run by ending.
func (r *Registry) Launch(slot *Slot, id, prompt string, run func(ctx context.Context) Outcome) (*Handle, error) {
	return r.LaunchWith(slot, id, prompt, time.Time{}, nil, run)
}

// LaunchWith is Launch keeping local with the run's record in this
// process ([Stored.Local]): [Registry.Lookup] returns it with the record
// while the run goes and, with the memory store, for as long as the
// finished record is retained, and no longer (the server's run trace, so
// that a trace is kept by the record's own map and retention instead of a
// second index of its own). A shared store does not keep it: once such a
// run has finished, Lookup returns it without.
//
// started, when not zero, is the run's start as the caller has just read
// it for local (the server's trace's start), so that the record and the
// trace start at the same instant and a traced run reads the clock once
// for both; zero, the registry reads it here. It should carry a monotonic
// reading (time.Now's does), which the run's elapsed time is read on.
func (r *Registry) LaunchWith(slot *Slot, id, prompt string, started time.Time, local any, run func(ctx context.Context) Outcome) (*Handle, error) {
	return r.launch(slot, id, prompt, started, local, run, nil)
}

// LaunchInline is LaunchWith for a caller that settles the run at once
// and can afford to run it on its own goroutine: the run is registered
// here, as by LaunchWith, and started by [Registry.Settle], which first
// calls attempt on the caller's goroutine, with the run's context. An
// attempt that returns ok is the run: its outcome is recorded as run's
// would be, and Settle returns the terminal record without a goroutine
// hand-off or a timer. An attempt that returns false must have done
// nothing a second run could see (the server's speculative attempt,
// which stops before anything that waits or reaches outside the run);
// run is then started on a run goroutine, as LaunchWith starts it, and
// Settle waits for it as usual. A panic in attempt is the run's, recorded
// as run's would be (a runtime.Goexit ends the caller's goroutine). The handle must be settled: until then the run holds
// its slot and counts as in flight.
//
// Why (issue #12, docs/benchmarks.md): over stdio at one client, handing
// a short run to a run goroutine and waiting for it with a timer cost
// more in thread wake-ups than the run itself.
func (r *Registry) LaunchInline(slot *Slot, id, prompt string, started time.Time, local any, run func(ctx context.Context) Outcome, attempt func(ctx context.Context) (Outcome, bool)) (*Handle, error) {
	if attempt == nil {
		slot.Release()
		return nil, errors.New("launch a run inline: no attempt function was given; use LaunchWith")
	}
	return r.launch(slot, id, prompt, started, local, run, attempt)
}

// launch is LaunchWith, and LaunchInline when attempt is set.
func (r *Registry) launch(slot *Slot, id, prompt string, started time.Time, local any, run func(ctx context.Context) Outcome, attempt func(ctx context.Context) (Outcome, bool)) (*Handle, error) {
	if slot == nil || slot.pool != r.slots {
		return nil, errors.New("launch a run: the slot was not admitted by this registry; call Admit first")
	}
	if run == nil {
		slot.Release()
		return nil, errors.New("launch a run: no run function was given")
	}
	if slot.released.Load() {
		return nil, errors.New("launch a run: the slot was already released; admit a new one")
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		slot.Release()
		return nil, fmt.Errorf("launch run %s: %w", id, ErrClosed)
	}
	if _, taken := r.owned[id]; taken {
		r.mu.Unlock()
		slot.Release()
		return nil, fmt.Errorf("launch run %s: %w", id, ErrDuplicateRun)
	}
	// Not a child of r.base: Close cancels every owned run itself, under
	// the lock this check holds, so a run launched before Close is
	// reached and none is launched after. As a child, each run would
	// take base's lock and grow and shrink its children map (issue #12).
	ctx, cancel := context.WithCancelCause(context.Background())
	if started.IsZero() {
		started = time.Now()
	}
	rec := &record{
		id:      id,
		prompt:  prompt,
		started: started,
		cancel:  cancel,
		done:    make(chan struct{}),
		local:   local,
	}
	// Owned before it is stored: a cancellation that arrives as soon as
	// the record is readable finds the run and cancels its context, which
	// the run sees when it starts.
	r.owned[id] = rec
	r.live++
	r.mu.Unlock()

	// The store round trip is made outside the lock, which every check_run
	// takes; a shared store may take a network round trip here.
	sctx, done := r.storeContext()
	err := r.store.Register(sctx, Stored{Result: Running(id, prompt, 0), Owner: r.replica, Started: rec.started})
	done()
	if err != nil {
		cancel(nil)
		slot.Release()
		r.mu.Lock()
		delete(r.owned, id)
		r.live--
		r.markIdleLocked()
		r.mu.Unlock()
		if errors.Is(err, ErrDuplicateRun) || errors.Is(err, ErrGlobalCap) {
			return nil, fmt.Errorf("launch run %s: %w", id, err)
		}
		return nil, fmt.Errorf("launch run %s: record it in the run store: %w", id, err)
	}
	r.started.Add(1)
	job := runJob{ctx: ctx, rec: rec, slot: slot, run: run}
	rec.handle.rec = rec
	if attempt != nil {
		rec.handle.unstarted = &inlineJob{runJob: job, attempt: attempt}
		return &rec.handle, nil
	}
	r.start(job)
	return &rec.handle, nil
}

// start hands job to an idle run goroutine, or starts one. The job counts
// as live (launch), so a Close under way is still waiting for it and has
// not reached runners.Wait.
func (r *Registry) start(job runJob) {
	select {
	case r.handoff <- job:
	default:
		r.runners.Add(1)
		go r.runner(job)
	}
}

// runner drives runs on one goroutine, one at a time: the run it was
// started for, then each run Launch hands it while it waits idle. It
// exits when more than maxIdleRunners would be waiting, or once Close has
// cancelled the registry's base context; Close waits for that. A run that
// calls runtime.Goexit ends its runner with it (supervise still writes its
// record).
func (r *Registry) runner(job runJob) {
	defer r.runners.Done()
	done := r.base.Done()
	for {
		r.supervise(job.ctx, job.rec, job.slot, job.run, nil)
		job = runJob{} // the finished run's closure is garbage now
		if r.idleRunners.Add(1) > maxIdleRunners {
			r.idleRunners.Add(-1)
			return
		}
		select {
		case job = <-r.handoff:
			r.idleRunners.Add(-1)
		case <-done:
			r.idleRunners.Add(-1)
			return
		}
	}
}

// supervise runs run and, however it ends, writes the terminal record. The
// deferred function is the supervisor: a panic or runtime.Goexit in run
// unwinds through it on this same goroutine.
//
// With attempt set, supervise calls it instead of run (LaunchInline): an
// attempt that returns false has not ended the run, so nothing is
// recorded and the slot is kept; supervise reports whether the run ended.
func (r *Registry) supervise(ctx context.Context, rec *record, slot *Slot, run func(context.Context) Outcome, attempt func(context.Context) (Outcome, bool)) (ended bool) {
	var (
		out      Outcome
		returned bool
	)
	ended = true
	defer func() {
		if returned && !ended {
			return
		}
		var res Result
		// One reading of the run's end, or the body's (Outcome.Ended),
		// for both its elapsed time and its Finished.
		at := out.Ended
		if !returned || at.IsZero() || at.Before(rec.started) {
			at = time.Now()
		}
		end := ending{cause: context.Cause(ctx), abnormal: !returned, at: at}
		if returned {
			res = r.outcomeResult(ctx, rec, out, at.Sub(rec.started))
		} else {
			res = r.abnormalEnd(rec, recover(), at.Sub(rec.started))
		}
		// Read above, before this sets the cause to context.Canceled.
		rec.cancel(nil) // ends what the run derived from its context
		// Return the slot before the record is visible as terminal, so a
		// caller who sees the result and calls again finds the slot free.
		slot.Release()
		final := r.finish(rec, res, end)
		if final.Status == StatusCompleted {
			r.completed.Add(1)
		} else {
			r.failed.Add(1)
		}
		// The line is dated by the wall clock when it is written, as
		// every other line is, after the store took the record and after
		// any line written on the way (the abnormal end's, the store's
		// error), so that a log sorted by time keeps them in order. When
		// the registry read the run's end above (not the body's own
		// reading, Outcome.Ended, which may be a monotonic advance of an
		// older wall reading: the server's trace clock), the run returned
		// and the in-memory store, which never waits, took the record,
		// nothing stands between that reading and here, and it dates the
		// line: one clock reading fewer (issue #12).
		logAt := at
		if !returned || !r.localStore || !out.Ended.IsZero() {
			logAt = time.Now()
		}
		// Typed attrs: the key-value form boxes each value and converts
		// it back (slog's argsToAttr), on every run (issue #12); through
		// logtext, which skips slog.Logger's caller lookup.
		logtext.LogAttrsAt(r.log.Handler(), logAt, slog.LevelInfo, msgTerminal,
			slog.String("run_id", final.RunID), slog.String("prompt", final.Prompt), slog.String("status", string(final.Status)),
			slog.Uint64("turns", uint64(final.Turns)), slog.Uint64("prompt_tokens", final.Tokens.Prompt),
			slog.Uint64("completion_tokens", final.Tokens.Completion), slog.Uint64("elapsed_ms", final.ElapsedMS))
		if r.onTerminal != nil {
			r.onTerminal(final)
		}
		// The run's waiters are answered only now, after the terminal
		// line and OnTerminal, so a caller that reads the metrics or the
		// trace once answered finds this run in them.
		// The run leaves the in-flight count before its waiters are
		// answered, so a caller that reads /metrics once answered does
		// not count it; the registry is idle only once they are.
		r.mu.Lock()
		r.live--
		r.answering++
		r.mu.Unlock()
		close(rec.done)
		r.mu.Lock()
		r.answering--
		r.markIdleLocked()
		r.mu.Unlock()
	}()
	if attempt != nil {
		out, ended = attempt(ctx)
	} else {
		out = run(ctx)
	}
	returned = true
	return ended
}

// outcomeResult turns what run returned into its record. A run stopped by
// cancellation fails with the engine's error; the cause is put in front when
// the engine's error does not already carry it, so the record always says
// who stopped the run.
func (r *Registry) outcomeResult(ctx context.Context, rec *record, out Outcome, elapsed time.Duration) Result {
	var res Result
	if out.Err == nil {
		res = Completed(rec.id, rec.prompt, out.Value, out.Turns, elapsed)
	} else {
		res = Failed(rec.id, rec.prompt, FailureText(ctx, out.Err), out.Turns, elapsed)
	}
	res.Tokens = out.Tokens
	return res
}

// FailureText is the error of the record of a run whose body returned err,
// with ctx the context the registry gave it: err's text, after the cause of
// ctx's cancellation when err does not carry it. Exported so that a run's
// body can word its trace's end as the record will (the server's).
func FailureText(ctx context.Context, err error) string {
	msg := err.Error()
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
		msg = cause.Error() + ": " + msg
	}
	return msg
}

// AbnormalText is the error of the record of a run whose body panicked
// with p, or called runtime.Goexit (p nil); exported as FailureText is.
func AbnormalText(p any) string {
	if p != nil {
		return fmt.Sprintf("the run did not finish: %v", p)
	}
	return "the run did not finish: its goroutine exited without returning a result"
}

// abnormalEnd is the record of a run that never returned: it panicked with p,
// or called runtime.Goexit (p is nil).
func (r *Registry) abnormalEnd(rec *record, p any, elapsed time.Duration) Result {
	if p != nil {
		r.log.Debug(msgPanicStack, "run_id", rec.id, "stack", string(debug.Stack()))
	}
	res := Failed(rec.id, rec.prompt, AbnormalText(p), 0, elapsed)
	r.log.Info(msgAbnormal,
		"run_id", res.RunID, "prompt", res.Prompt, "status", string(res.Status),
		"turns", res.Turns, "elapsed_ms", res.ElapsedMS)
	return res
}

// finish records res as rec's terminal result unless one is already there
// (first write wins, so a late writer cannot rewrite an outcome a caller may
// already have read, and across replicas a run already marked failed by
// another stays failed), and returns the result that stands. A store that
// cannot be written leaves the caller its result; the store's own retry
// (or the lease) settles what others read.
func (r *Registry) finish(rec *record, res Result, end ending) Result {
	if end.at.IsZero() {
		end.at = time.Now()
	}
	stored := Stored{
		Result: res, Owner: r.replica, Started: rec.started, Finished: end.at,
		Cause: end.cause, Abnormal: end.abnormal, Local: rec.local,
	}
	sctx, done := r.storeContext()
	standing, err := r.store.Finish(sctx, stored)
	done()
	if err != nil {
		r.log.Error(msgStoreFinish, "run_id", rec.id, "error", err.Error())
		standing = stored
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.finished {
		return rec.result
	}
	rec.finished = true
	rec.result = standing.Result
	delete(r.owned, rec.id)
	return standing.Result
}

// Settle waits up to ReplyDeadline for h's run and returns what the caller
// should be told:
//   - the run ended in time: its terminal record;
//   - the deadline passed: a running snapshot, and one INFO line naming the
//     run id; the run keeps going and nothing ctx does afterwards reaches it;
//   - ctx ended first (the client cancelled or disconnected): the run is
//     cancelled with [ErrCallerCancelled] and its terminal record returned,
//     still bounded by the same deadline in case the run ignores the
//     cancellation.
//
// A run launched by LaunchInline is started here: when ctx has not ended,
// its attempt runs first on this goroutine, and a run it ends is answered
// at once; after an attempt that stopped, the deadline runs from the
// launch (the run's start). Before Settle waits (a deadline not yet
// passed), it calls the function ctx carries from
// [WithBeforeWait].
func (r *Registry) Settle(ctx context.Context, h *Handle) Result {
	wait := r.replyDeadline
	if job := h.unstarted; job != nil {
		h.unstarted = nil
		if ctx.Err() == nil {
			if r.supervise(job.ctx, job.rec, job.slot, nil, job.attempt) {
				return r.terminal(h.rec)
			}
			// The attempt's time is the caller's too: the deadline runs
			// from the launch, as for a run launched with LaunchWith, so
			// that an attempt that overran its window (a long library
			// call, which the Lua clock checks do not see into) does not
			// put off the running answer by as much.
			wait -= time.Since(h.rec.started)
		}
		r.start(job.runJob)
	}
	select {
	case <-h.rec.done:
		return r.terminal(h.rec)
	default:
	}
	if wait > 0 {
		// A deadline already passed waits for nothing: telling the
		// caller would only give the run the time to end first (the
		// lane's hand-off readies a goroutine), and a zero reply_deadline
		// answers running.
		beforeWait(ctx)
	}
	timer, _ := r.timers.Get().(*time.Timer)
	if timer == nil {
		timer = time.NewTimer(wait)
	} else {
		timer.Reset(wait)
	}
	defer r.putTimer(timer)
	select {
	case <-h.rec.done:
		return r.terminal(h.rec)
	case <-timer.C:
		return r.outlived(h.rec)
	case <-ctx.Done():
	}
	h.rec.cancel(ErrCallerCancelled)
	select {
	case <-h.rec.done:
		return r.terminal(h.rec)
	case <-timer.C:
		return r.outlived(h.rec)
	}
}

// putTimer stops timer and keeps it for the next Settle.
func (r *Registry) putTimer(timer *time.Timer) {
	timer.Stop()
	r.timers.Put(timer)
}

func (r *Registry) terminal(rec *record) Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rec.result
}

func (r *Registry) outlived(rec *record) Result {
	r.mu.Lock()
	res := rec.snapshotLocked()
	r.mu.Unlock()
	if res.Status == StatusRunning {
		r.log.Info(msgOutlived, "run_id", rec.id, "prompt", rec.prompt)
	}
	return res
}

// Check returns the run id names: its terminal record while retained, a
// fresh running snapshot (elapsed since registration, 0 turns) while it is
// going, or false when no such run is known.
func (r *Registry) Check(id string) (Result, bool) {
	v, ok := r.View(id)
	return v.Result, ok
}

// View is a run as a task reads it: its record, when it was registered
// and finished, and how it ended.
type View struct {
	Result
	Started time.Time
	// Finished is when the terminal record was written; zero while running.
	Finished time.Time
	// Cause is the cause the run's context was cancelled with before the
	// run ended ([ErrRunCancelled], [ErrCallerCancelled],
	// [ErrShuttingDown]), nil if it was not, and always nil while running.
	// A run that finished before the cancellation took effect keeps its
	// completed record, whatever Cause says.
	Cause error
	// Abnormal: the run panicked or exited without returning; its record
	// is failed and says so.
	Abnormal bool
	// Local is what [Registry.LaunchWith] kept with the record, while
	// this process holds it (see [Stored.Local]).
	Local any
}

// View returns what [Registry.Check] returns for id, with the times and
// the ending, read together so they cannot disagree. A store that cannot be
// read makes the run read as unknown, with one ERROR line; callers that can
// say so use [Registry.Lookup].
func (r *Registry) View(id string) (View, bool) {
	v, ok, err := r.Lookup(context.Background(), id)
	if err != nil {
		r.log.Error(msgStoreRead, "run_id", id, "error", err.Error())
		return View{}, false
	}
	return v, ok
}

// Lookup is View with the store's error: a run this process owns is read
// from memory, any other from the store.
func (r *Registry) Lookup(ctx context.Context, id string) (View, bool, error) {
	r.mu.Lock()
	rec, mine := r.owned[id]
	if mine && !rec.finished {
		v := View{Result: rec.snapshotLocked(), Started: rec.started, Local: rec.local}
		r.mu.Unlock()
		return v, true, nil
	}
	r.mu.Unlock()
	now := time.Now()
	st, ok, err := r.store.Lookup(ctx, id, now)
	if err != nil {
		return View{}, false, fmt.Errorf("read run %s from the run store: %w", id, err)
	}
	if !ok {
		return View{}, false, nil
	}
	v := View{Result: st.Result, Started: st.Started, Local: st.Local}
	if st.Status == StatusRunning {
		v.Result = Running(st.RunID, st.Prompt, now.Sub(st.Started))
		return v, true, nil
	}
	v.Finished, v.Cause, v.Abnormal = st.Finished, st.Cause, st.Abnormal
	return v, true, nil
}

// Locals lists what [Registry.LaunchWith] kept with the runs in flight
// (in no order) and with the newest retained finished ones (newest first,
// at most recent of them); runs launched without one are left out. Only
// the memory store keeps finished ones: over a shared store finished is
// empty. For the status page: it walks every run in flight.
func (r *Registry) Locals(recent int) (inFlight, finished []any) {
	r.mu.Lock()
	for _, rec := range r.owned {
		if rec.local != nil && !rec.finished {
			inFlight = append(inFlight, rec.local)
		}
	}
	r.mu.Unlock()
	m, ok := r.store.(*memStore)
	if !ok {
		return inFlight, nil
	}
	for _, st := range m.Recent(recent, time.Now()) {
		if st.Local != nil {
			finished = append(finished, st.Local)
		}
	}
	return inFlight, finished
}

// Cancel asks the run id names to stop, with [ErrRunCancelled] as the cause.
// Unknown and finished runs are left alone, and cancelling twice is harmless.
// A run another replica owns is reached through the store.
func (r *Registry) Cancel(id string) {
	if r.cancelOwned(id) {
		return
	}
	ctx, done := r.storeContext()
	defer done()
	if err := r.store.Cancel(ctx, id); err != nil {
		r.log.Error("the run store did not pass the cancellation on to the run's replica", "run_id", id, "error", err.Error())
	}
}

// cancelOwned cancels id if this process runs it, and says whether it does.
func (r *Registry) cancelOwned(id string) bool {
	r.mu.Lock()
	rec, ok := r.owned[id]
	r.mu.Unlock()
	if ok {
		rec.cancel(ErrRunCancelled)
	}
	return ok
}

// Stats reads the registry's counters.
func (r *Registry) Stats() Stats {
	free, waiting := r.slots.state()
	r.mu.Lock()
	inFlight := r.live
	r.mu.Unlock()
	records, retained := r.store.Held()
	return Stats{
		RetainedBytes: retained,
		Started:       r.started.Load(),
		Completed:     r.completed.Load(),
		Failed:        r.failed.Load(),
		Refused:       r.refused.Load(),
		InFlight:      inFlight,
		FreeSlots:     free,
		Waiting:       waiting,
		Records:       records,
	}
}

// Close stops admitting and launching, wakes queued [Registry.Admit] calls
// with [ErrClosed], cancels every running run with [ErrShuttingDown], and
// waits until all of their goroutines have returned or ctx ends. Finished
// records stay readable. It may be called more than once.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	r.markIdleLocked()
	// Every run launched is owned until its terminal record is written,
	// and none is launched once closed is set: these are all the runs
	// still going.
	going := make([]context.CancelCauseFunc, 0, len(r.owned))
	for _, rec := range r.owned {
		going = append(going, rec.cancel)
	}
	r.mu.Unlock()
	r.slots.close()
	for _, cancel := range going {
		cancel(ErrShuttingDown)
	}
	r.stop(ErrShuttingDown)
	select {
	case <-r.idle:
		// No run is live and the base context is cancelled, so every
		// runner is returning or about to see that; none can take a new
		// run, since Launch refuses once closed.
		r.runners.Wait()
		return nil
	case <-ctx.Done():
		r.mu.Lock()
		live := r.live
		r.mu.Unlock()
		return fmt.Errorf("wait for %d run(s) to stop after cancelling them: %w", live, context.Cause(ctx))
	}
}

func (r *Registry) markIdleLocked() {
	if r.closed && r.live == 0 && r.answering == 0 && !r.idleSet {
		r.idleSet = true
		close(r.idle)
	}
}
