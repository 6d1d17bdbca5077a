package runtrace

import (
	"slices"
	"sync"
	"time"
)

// Book holds the traces of runs in flight and of finished runs for as long
// as the run registry keeps their records: the same window
// (retain_completed) and the same count bound (runs.DefaultMaxRetainedRuns
// unless set). Like the registry it sweeps on each write instead of running
// a timer.
type Book struct {
	opts    Options
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
}

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
	return &Book{opts: opts, retain: retain, maxKept: maxKept, now: now, realClock: opts.Now == nil,
		runs: map[string]*Recorder{}}
}

// CaptureContent reports whether the book's recorders keep text.
func (b *Book) CaptureContent() bool { return b.opts.CaptureContent }

// Start opens the trace of run id of prompt name.
func (b *Book) Start(id, name string) *Recorder {
	rec := NewRecorder(id, name, b.opts)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs[id] = rec
	return rec
}

// Finish closes run id's trace with its outcome and files it with the
// finished ones. It may be called again with the run's terminal record,
// which then restates the header (the registry may word the error
// differently, as when a cancellation names its cause). An id Start never
// saw, or one evicted since, is ignored.
func (b *Book) Finish(id, status, errText string, turns int, tokens Tokens) {
	b.mu.Lock()
	rec := b.runs[id]
	var now time.Time // zero: a restatement, which does not read it
	if rec != nil && !rec.filed {
		rec.filed = true
		if b.realClock {
			// The recorder's start has a monotonic reading: the time
			// since it reads only the monotonic clock, where time.Now
			// reads the wall clock too. The result keeps both, as
			// time.Now's would.
			now = rec.start.Add(time.Since(rec.start))
		} else {
			now = b.now()
		}
		b.order = append(b.order, finishedAt{id: id, at: now})
		b.sweepAtLocked(now)
	}
	b.mu.Unlock()
	if rec != nil {
		rec.finish(now, status, errText, turns, tokens)
	}
}

func (b *Book) sweepLocked() { b.sweepAtLocked(b.now()) }

func (b *Book) sweepAtLocked(now time.Time) {
	n := b.head
	for n < len(b.order) && (now.Sub(b.order[n].at) >= b.retain || (b.maxKept > 0 && len(b.order)-n > b.maxKept)) {
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
	for _, r := range live {
		inFlight = append(inFlight, r.Summary())
	}
	slices.SortFunc(inFlight, func(a, b Summary) int { return a.Started.Compare(b.Started) })
	for _, r := range done {
		finished = append(finished, r.Summary())
	}
	return inFlight, finished
}
