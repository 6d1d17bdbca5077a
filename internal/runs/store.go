package runs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Store keeps the run records check_run and task lookups read. The registry
// writes a running record when it launches a run and the terminal record
// when the run ends; it keeps in its own memory only what must stay in the
// process that runs the goroutine (the cancel function, the done channel).
// The default is the in-memory store ([NewMemoryStore]); the PostgreSQL store
// (package runs/pgstore) shares the records between replicas.
//
// A Store is safe for concurrent use. Every method taking a context may
// wait on I/O; the memory store never does.
type Store interface {
	// Register records rec, a running run. A record with the same id,
	// running or finished, anywhere the store reaches, refuses it with
	// [ErrDuplicateRun]; a store enforcing a global cap refuses with
	// [ErrGlobalCap].
	Register(ctx context.Context, rec Stored) error
	// Finish writes rec as id's terminal record unless one already stands
	// (first write wins, across replicas too) and returns the record that
	// stands.
	Finish(ctx context.Context, rec Stored) (Stored, error)
	// Lookup reads id's record at now; false when no such run is known or
	// its record was evicted.
	Lookup(ctx context.Context, id string, now time.Time) (Stored, bool, error)
	// Cancel asks whichever replica owns id to cancel it. The registry
	// cancels runs it owns itself, so a store that serves one process
	// does nothing here.
	Cancel(ctx context.Context, id string) error
	// OnCancel adds a function a cancellation requested through Cancel (on
	// this or another replica) is delivered to; it must not block. Each
	// registry over the store adds one, in [New].
	OnCancel(func(id string))
	// Held is what the store holds: records (running and finished) and the
	// value and error bytes of the finished ones. A shared store reports
	// what it last counted.
	Held() (records int, bytes int64)
}

// Stored is one run's record as a store keeps it.
type Stored struct {
	Result
	// Owner names the replica whose goroutine runs it.
	Owner    string
	Started  time.Time
	Finished time.Time // zero while running
	// Cause is the cancellation cause the run ended under ([ErrRunCancelled],
	// [ErrCallerCancelled], [ErrShuttingDown]) or nil.
	Cause    error
	Abnormal bool
	// Local is what the process that runs the run keeps with its record
	// and no shared store can hold: the server's run trace. The memory
	// store keeps it in the record itself, so it lives exactly as long as
	// the record (one map, one retention); a shared store drops it, and
	// whoever set it keeps its own copy (see [Registry.LaunchWith]).
	Local any
}

// Causes are stored by name; CauseName and CauseOf convert, so a record
// read back from a shared store carries the same sentinel errors.
var causeNames = []struct {
	name string
	err  error
}{
	{"caller_cancelled", ErrCallerCancelled},
	{"run_cancelled", ErrRunCancelled},
	{"shutting_down", ErrShuttingDown},
}

// CauseName is the stored name of a cancellation cause: "" for nil, and
// "other" for a cause that is none of the registry's.
func CauseName(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range causeNames {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "other"
}

// CauseOf is the cause CauseName named: nil for "", one of the registry's
// sentinels, or for "other" an error saying the run was cancelled.
func CauseOf(name string) error {
	if name == "" {
		return nil
	}
	for _, c := range causeNames {
		if c.name == name {
			return c.err
		}
	}
	return errors.New("the run was cancelled")
}

// MsgReplicaStopped is the error of a run whose owner stopped renewing its
// lease: the replica running it died or lost the store.
const MsgReplicaStopped = "the replica running it stopped"

// RetentionOptions are the retention bounds a store applies; see
// [Options.RetainCompleted], [Options.MaxRetainedRuns] and
// [Options.MaxRetainedBytes]. Zero bounds mean the defaults.
type RetentionOptions struct {
	RetainCompleted  time.Duration
	MaxRetainedRuns  int
	MaxRetainedBytes int64
	Logger           *slog.Logger
}

// Normalised returns o with the zero bounds replaced by the defaults and
// a nil logger by a discarding one.
func (o RetentionOptions) Normalised() RetentionOptions {
	if o.MaxRetainedRuns == 0 {
		o.MaxRetainedRuns = DefaultMaxRetainedRuns
	}
	if o.MaxRetainedBytes == 0 {
		o.MaxRetainedBytes = DefaultMaxRetainedBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// memStore is the embedded default: the records of one process.
//
// Eviction is a sweep taken on each read and write rather than a timer
// goroutine (see the package doc, Retention).
type memStore struct {
	opts RetentionOptions

	mu      sync.Mutex
	records map[string]*memRecord
	// expiring holds finished records in finishing order. RetainCompleted is
	// fixed, so they also expire in this order and a sweep stops at the first
	// record still inside its window. The size bounds evict from the same
	// end, so every eviction takes the oldest finished record.
	expiring []*memRecord
	// retainedBytes is the value and error bytes of the records in expiring.
	retainedBytes int64
	// cancels are the registries sharing this store (one, in a server).
	cancels []func(string)
}

type memRecord struct{ Stored }

// NewMemoryStore is the in-memory store, bounded by opts.
func NewMemoryStore(opts RetentionOptions) Store {
	return &memStore{opts: opts.Normalised(), records: make(map[string]*memRecord)}
}

func (m *memStore) Register(_ context.Context, rec Stored) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(rec.Started)
	if _, taken := m.records[rec.RunID]; taken {
		return ErrDuplicateRun
	}
	m.records[rec.RunID] = &memRecord{rec}
	return nil
}

func (m *memStore) Finish(_ context.Context, rec Stored) (Stored, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(rec.Finished)
	mr, ok := m.records[rec.RunID]
	if !ok {
		// A running record is never evicted, so this is a run the store
		// never registered: nothing to keep.
		return rec, nil
	}
	if !mr.Finished.IsZero() {
		return mr.Stored, nil
	}
	mr.Stored = rec
	m.expiring = append(m.expiring, mr)
	m.retainedBytes += resultBytes(rec.Result)
	m.boundLocked()
	return rec, nil
}

func (m *memStore) Lookup(_ context.Context, id string, now time.Time) (Stored, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	mr, ok := m.records[id]
	if !ok {
		return Stored{}, false, nil
	}
	return mr.Stored, true, nil
}

// Cancel hands id to every registry sharing the store; the one that owns
// the run cancels it. In a server there is one registry, which has already
// looked for the run itself.
func (m *memStore) Cancel(_ context.Context, id string) error {
	m.mu.Lock()
	cancels := slices.Clone(m.cancels)
	m.mu.Unlock()
	for _, f := range cancels {
		f(id)
	}
	return nil
}

func (m *memStore) OnCancel(f func(string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cancels = append(m.cancels, f)
}

// Recent lists the newest retained finished records, newest first, at
// most n of them (the status page's recent runs).
func (m *memStore) Recent(n int, now time.Time) []Stored {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	out := make([]Stored, 0, min(n, len(m.expiring)))
	for i := len(m.expiring) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, m.expiring[i].Stored)
	}
	return out
}

func (m *memStore) Held() (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.records), m.retainedBytes
}

// sweepLocked evicts finished records whose retention window has closed:
// now - Finished >= RetainCompleted, so a record is still there one
// instant before the window ends and gone exactly at its end.
func (m *memStore) sweepLocked(now time.Time) {
	n := 0
	for n < len(m.expiring) && now.Sub(m.expiring[n].Finished) >= m.opts.RetainCompleted {
		n++
	}
	if n == 0 {
		return
	}
	m.evictOldestLocked(n)
	m.opts.Logger.Debug(msgEvicted, "evicted", n)
}

// boundLocked evicts the oldest finished records until the count and byte
// bounds hold. The newest record is never evicted here: it has just been
// written and its caller may be about to read it, so a single record larger
// than MaxRetainedBytes stays (alone) until its window closes or the next
// finished run pushes it out.
func (m *memStore) boundLocked() {
	n := 0
	count, size := len(m.expiring), m.retainedBytes
	for n < len(m.expiring)-1 && (count > m.opts.MaxRetainedRuns || size > m.opts.MaxRetainedBytes) {
		size -= resultBytes(m.expiring[n].Result)
		count--
		n++
	}
	if n == 0 {
		return
	}
	m.evictOldestLocked(n)
	m.opts.Logger.Debug(msgOverBound, "evicted", n, "retained_runs", len(m.expiring), "retained_bytes", m.retainedBytes)
}

// evictOldestLocked drops the n oldest finished records. Clearing the slots
// lets the records be collected now; the next append that outgrows the array
// copies only the records still waiting.
func (m *memStore) evictOldestLocked(n int) {
	for i, mr := range m.expiring[:n] {
		if m.records[mr.RunID] == mr {
			delete(m.records, mr.RunID)
		}
		m.retainedBytes -= resultBytes(mr.Result)
		m.expiring[i] = nil
	}
	m.expiring = m.expiring[n:]
}

// resultBytes is what a finished record holds that a caller controls the
// size of; ids, names and counters are small and bounded by the count.
func resultBytes(res Result) int64 {
	return int64(len(res.Value) + len(res.Error))
}
