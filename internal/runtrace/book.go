package runtrace

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/promptforge-go/promptforge/internal/engine"
)

// Book holds the traces of runs in flight and of finished runs for as long
// as the run registry keeps their records: the same window
// (retain_completed) and the same count bound (runs.DefaultMaxRetainedRuns
// unless set). Like the registry it sweeps on each write instead of running
// a timer. That is the book of a server whose run records are in a shared
// store, which cannot hold a trace; over the in-memory store the registry
// keeps each trace in its run's record instead, and the book
// ([NewRecordBook]) only opens and closes traces, keeping none.
type Book struct {
	opts Options
	// keep: the book files the runs it opens (NewBook); without it the
	// run registry keeps them with their records (NewRecordBook).
	keep    bool
	retain  time.Duration
	maxKept int
	now     func() time.Time
	// realClock: now is time.Now, so a run's end can be read from its
	// recorder's monotonic start (see Finish).
	realClock bool
	mu        sync.Mutex
	// runs are the runs in flight and the retained finished ones, in
	// one map (a Recorder's filed says which): a run is then one insert
	// and one delete, not also a move from one map to another. Run ids
	// are unique (runs.NewRunID), so an id names one run.
	runs map[string]*Recorder
	// order[head:] are the finished runs, oldest first, with when each
	// finished. The sweep clears the entries it passes and moves head on;
	// once those are as many as the rest, the rest moves down to the front.
	// So a full book, which sweeps one run for each it files, reuses one
	// array instead of reslicing it from the front and growing a new one
	// every few hundred runs.
	order []finishedAt
	head  int
	// wall is a time.Now reading, at most wallAge old when a run starts:
	// a run's start is wall advanced by the monotonic clock since it
	// (startTime).
	wall atomic.Pointer[time.Time]
}

// wallAge is how long a reading of the wall clock stands for the runs that
// start after it. A run's start is that reading advanced by the monotonic
// clock: one clock read instead of time.Now's two (a wall and a monotonic
// one), and a run's start, shown to the second, can be off the wall clock
// only by how much the wall clock was set or slewed in the last wallAge
// (NTP slews at most 0.5 ms a second).
const wallAge = time.Second

type finishedAt struct {
	id string
	at time.Time
}

// NewBook makes a book whose recorders take opts; finished traces are kept
// for retain and at most maxKept of them (0: no count bound beyond retain).
func NewBook(opts Options, retain time.Duration, maxKept int) *Book {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Book{opts: opts, keep: true, retain: retain, maxKept: maxKept, now: now, realClock: opts.Now == nil,
		runs: map[string]*Recorder{}}
}

// NewRecordBook makes a book that keeps no trace itself: whoever calls
// Begin keeps the recorder it returns with the run's record (the server:
// runs.Registry.LaunchWith, over the in-memory run store), so a trace is
// found through the record and lives exactly as long as it. Get and Runs
// then find nothing; [Summaries] lists such recorders as Runs does.
//
// A traced run then costs no map of its own: with the book's index, a run
// was also an insert into a second map of 10,000 retained runs, the
// eviction of the oldest from it, and the entry in its finished-order
// ring, each a hash of the long run id, cold memory, and pointer writes
// through the collector's write barrier (docs/benchmarks.md, Run traces).
func NewRecordBook(opts Options) *Book {
	b := NewBook(opts, 0, 0)
	b.keep = false
	return b
}

// CaptureContent reports whether the book's recorders keep text.
func (b *Book) CaptureContent() bool { return b.opts.CaptureContent }

// Begin is how a run is traced, by the server and by the benchmark that
// measures what tracing costs it: it sets opts.Tracer for run id of prompt
// name, with next the tracer the run has whatever the book (the server's
// metrics), which gets only the ends of model turns. On a nil Book (traces
// off) the tracer is next, with opts.TraceTurnsOnly, and Begin returns nil;
// otherwise it opens the run's trace and the tracer is its recorder, which
// hands next the same events and sets opts.CaptureContent. The run's body
// closes the trace with [Book.End], once: it is the trace's one owner.
func (b *Book) Begin(id, name string, next engine.Tracer, opts *engine.Options) *Recorder {
	rec := b.Open(id, name, next)
	b.Enter(rec, next, opts)
	return rec
}

// Open is the first half of Begin: it makes the recorder of run id of
// prompt name (nil on a nil Book), which starts the trace's clock, and
// keeps it nowhere yet. The server opens a run's trace before it launches
// the run, to hand the recorder to the registry with the run's record
// (runs.Registry.LaunchWith), and the run's body enters it.
func (b *Book) Open(id, name string, next engine.Tracer) *Recorder {
	if b == nil {
		return nil
	}
	return newRecorder(id, name, b.opts, b.startTime(), next)
}

// Enter is the second half of Begin, on the run's goroutine: it sets
// opts.Tracer to rec (to next, with opts.TraceTurnsOnly, when rec is nil:
// traces off) and, in a book that keeps its runs (NewBook), files rec as
// in flight.
func (b *Book) Enter(rec *Recorder, next engine.Tracer, opts *engine.Options) {
	if rec == nil {
		opts.TraceTurnsOnly = next != nil
		if next != nil {
			opts.Tracer = next
		}
		return
	}
	if b.keep {
		b.mu.Lock()
		b.runs[rec.t.RunID] = rec
		b.mu.Unlock()
	}
	opts.Tracer, opts.CaptureContent = rec, rec.CaptureContent()
}

// Start opens the trace of run id of prompt name.
func (b *Book) Start(id, name string) *Recorder { return b.Begin(id, name, nil, &engine.Options{}) }

// startTime is a run's start: on the real clock, the book's last reading
// of the wall clock advanced by the monotonic clock since (see wallAge).
func (b *Book) startTime() time.Time {
	if !b.realClock {
		return b.now()
	}
	if w := b.wall.Load(); w != nil {
		if d := time.Since(*w); d >= 0 && d < wallAge {
			return w.Add(d)
		}
	}
	// Two runs may both read it anew: either reading will do.
	now := time.Now()
	b.wall.Store(&now)
	return now
}

// End closes rec's trace with the run's outcome and files it with the
// finished ones: what the body of a run begun with [Book.Begin] calls once
// it has its outcome. A nil rec (traces off) is ignored; so is a second
// End, beyond restating the header (see [Recorder.Finish]).
//
// It returns the run's end as the trace has it (its start plus its
// duration, with the start's monotonic reading), for the run's record
// (runs.Outcome.Ended), so that record and trace end at the same instant
// and the run's end is one clock reading; zero for a nil rec or a
// restatement in a book that keeps its runs.
func (b *Book) End(rec *Recorder, status, errText string, turns int, tokens Tokens) time.Time {
	if rec == nil {
		return time.Time{}
	}
	// Read before the lock, which other runs wait for. t.Started does not
	// change once the recorder is made.
	d := b.elapsed(rec)
	if !b.keep {
		rec.finish(d, status, errText, turns, tokens)
		return rec.t.Started.Add(d)
	}
	var at time.Time
	b.mu.Lock()
	if rec.filed {
		d = -1 // a restatement, which does not read it
	} else {
		at = rec.t.Started.Add(d)
		b.fileLocked(rec, at)
	}
	b.mu.Unlock()
	rec.finish(d, status, errText, turns, tokens)
	return at
}

// Finish is End for run id; an id Start never saw, or one evicted since,
// is ignored.
func (b *Book) Finish(id, status, errText string, turns int, tokens Tokens) {
	b.mu.Lock()
	rec := b.runs[id]
	b.mu.Unlock()
	b.End(rec, status, errText, turns, tokens)
}

// elapsed is the time from rec's start to now on the book's clock.
func (b *Book) elapsed(rec *Recorder) time.Duration {
	if !b.realClock {
		return b.now().Sub(rec.t.Started)
	}
	// The start has a monotonic reading: the time since it reads only the
	// monotonic clock, where time.Now reads the wall clock too; and the
	// end, the start plus that, keeps both, as time.Now's would.
	return time.Since(rec.t.Started)
}

// fileLocked files rec, ended at now, with the finished runs and sweeps.
func (b *Book) fileLocked(rec *Recorder, now time.Time) {
	rec.filed = true
	b.order = append(b.order, finishedAt{id: rec.t.RunID, at: now})
	b.sweepAtLocked(now)
}

func (b *Book) sweepLocked() { b.sweepAtLocked(b.now()) }

func (b *Book) sweepAtLocked(now time.Time) {
	n := b.head
	// The count bound first: in a full book, the steady state, it is
	// what evicts, and it is cheaper to test than the time.
	for n < len(b.order) && ((b.maxKept > 0 && len(b.order)-n > b.maxKept) || now.Sub(b.order[n].at) >= b.retain) {
		delete(b.runs, b.order[n].id)
		b.order[n] = finishedAt{}
		n++
	}
	b.head = n
	if b.head > 0 && b.head >= len(b.order)-b.head {
		kept := copy(b.order, b.order[b.head:])
		clear(b.order[kept:])
		b.order, b.head = b.order[:kept], 0
	}
}

// Get is run id's trace, running or finished and still retained.
func (b *Book) Get(id string) (Trace, bool) {
	b.mu.Lock()
	b.sweepLocked()
	rec, ok := b.runs[id]
	b.mu.Unlock()
	if !ok {
		return Trace{}, false
	}
	return rec.Snapshot(), true
}

// Runs lists the runs in flight (oldest first) and the retained finished
// ones (newest first, at most recent of them).
func (b *Book) Runs(recent int) (inFlight, finished []Summary) {
	b.mu.Lock()
	b.sweepLocked()
	// The runs in flight are the map's entries not filed: this walks the
	// retained finished ones too, which only the status page pays.
	var live []*Recorder
	for _, r := range b.runs {
		if !r.filed {
			live = append(live, r)
		}
	}
	var done []*Recorder
	for i := len(b.order) - 1; i >= b.head && len(done) < recent; i-- {
		done = append(done, b.runs[b.order[i].id])
	}
	b.mu.Unlock()
	return Summaries(live, done)
}

// Summaries are the summaries of the recorders of runs in flight, oldest
// first, and of finished ones, in the order given: what Runs returns, for
// recorders kept elsewhere (NewRecordBook).
func Summaries(live, done []*Recorder) (inFlight, finished []Summary) {
	for _, r := range live {
		inFlight = append(inFlight, r.Summary())
	}
	slices.SortFunc(inFlight, func(a, b Summary) int { return a.Started.Compare(b.Started) })
	for _, r := range done {
		finished = append(finished, r.Summary())
	}
	return inFlight, finished
}
