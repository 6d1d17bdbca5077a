package modelset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/redact"
)

// Defaults of [Options]. Interval is short because a binding miss is the
// moment a user waits on the answer: a model pulled a few seconds ago
// should bind. MaxBackoff is kept under ten seconds so that a model
// server that comes up after a long outage is noticed by the first run
// at most that long after it answers, well inside the fifteen seconds a
// user waits before restarting things (issue 10).
const (
	DefaultInterval   = 10 * time.Second
	DefaultBackoff    = time.Second
	DefaultMaxBackoff = 8 * time.Second
)

// Fetch outcomes, as [Options.OnFetch] is told them.
const (
	OutcomeOK     = "ok"
	OutcomeEmpty  = "empty"
	OutcomeFailed = "failed"
)

// Options configure a [Set].
type Options struct {
	// Fetch reads the model server's list once (required). The Set never
	// calls it twice at once. A fetch that ends because its context ended
	// changes nothing.
	Fetch func(ctx context.Context) (gateway.Catalog, error)
	// URL is where the list comes from, for messages; it is redacted.
	URL string
	// Setting names where the user sets URL, for messages; "" is
	// "[gateway].url".
	Setting string
	// Interval is how old a good list may be before a binding miss fetches
	// it again; 0 is DefaultInterval.
	Interval time.Duration
	// Backoff is how long a binding miss waits after a failed fetch before
	// fetching again; it doubles with each further failure, up to
	// MaxBackoff. 0 takes the defaults.
	Backoff, MaxBackoff time.Duration
	// Logger receives a line when the list's state changes (first failure,
	// recovery, an empty list, a new count); repeats go to debug. nil
	// discards.
	Logger *slog.Logger
	// OnFetch, when set, is told the outcome of every fetch that
	// completed (OutcomeOK, OutcomeEmpty, OutcomeFailed), for metrics. It
	// must not block.
	OnFetch func(outcome string)
}

// Set holds the last good model list and fetches it again when asked or
// when it may be out of date. It is safe for concurrent use.
type Set struct {
	o       Options
	url     string
	setting string
	log     *slog.Logger

	mu       sync.Mutex
	cur      Snapshot
	last     time.Time // when the last recorded fetch completed
	failures int       // failed fetches since the last success
	flight   *flight   // the fetch in progress; nil when none

	// kicks carries Kick's requests to Run; one pending request is enough.
	kicks chan struct{}
	// static: a Set made by Static, which never fetches.
	static bool
}

// flight is one fetch in progress; done is closed when it is recorded.
type flight struct {
	done chan struct{}
	err  error
	// recorded: the fetch was recorded (it was not cut short by its
	// starter's context). Written before done is closed.
	recorded bool
}

// Snapshot is the model list as one fetch left it. It is immutable: the
// slice is shared and must not be modified.
type Snapshot struct {
	// Models are the models binding may choose from: those of the last
	// fetch that succeeded, in the server's order.
	Models []gateway.Model
	// Unmatched are the [models] tables whose id the last good fetch did
	// not serve: a need that binds nothing names them, since a mistyped
	// id (a wrong tag) is the likeliest reason.
	Unmatched []gateway.UnmatchedOverride
	// gen counts recorded fetches, so a holder of a snapshot can tell
	// whether a newer one exists.
	gen     uint64
	problem error
}

// Fixed is a snapshot of a list that never changes, for hosts without a
// model server to ask (tests, a list given directly).
func Fixed(models []gateway.Model) Snapshot { return Snapshot{Models: models} }

// Problem says why Models may not be what the model server serves now:
// the last fetch failed (the model server is not reachable, or answered
// with an error), or it succeeded with no models at all. nil when the
// last fetch succeeded with models, and for a Fixed snapshot. The text is
// whole sentences saying what to do.
func (s Snapshot) Problem() error { return s.problem }

// New makes a Set that has fetched nothing yet: its snapshot is empty
// until the first [Set.Refresh] or [Set.AfterMiss].
func New(o Options) (*Set, error) {
	if o.Fetch == nil {
		return nil, errors.New("modelset: no Fetch function was given")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.Backoff)
	s := &Set{o: o, url: redact.RawURL(o.URL), setting: o.Setting, log: o.Logger, kicks: make(chan struct{}, 1)}
	if s.setting == "" {
		s.setting = "[gateway].url"
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Static is a Set that holds models and never fetches, for hosts and
// tests that are given the list rather than a model server to ask.
func Static(models []gateway.Model) *Set {
	return &Set{cur: Snapshot{Models: models, gen: 1}, static: true, kicks: make(chan struct{}, 1), log: slog.New(slog.DiscardHandler)}
}

// Unavailable is a Set that never fetches and holds no models, because
// there is no model server to ask: problem (whole sentences saying what
// to set) is what a need that binds nothing reports, rather than a
// capability mismatch.
func Unavailable(problem error) *Set {
	return &Set{cur: Snapshot{gen: 1, problem: problem}, static: true, kicks: make(chan struct{}, 1), log: slog.New(slog.DiscardHandler)}
}

// StaticCatalog is a Set that never fetches and holds what one fetch of
// cat from the model server at url would leave: its bindable models, its
// unmatched [models] tables and, when nothing can be bound, the problem
// that says why. For hosts and tests given a whole catalog.
func StaticCatalog(url string, cat gateway.Catalog) *Set {
	s := &Set{url: redact.RawURL(url), setting: "[gateway].url", static: true, kicks: make(chan struct{}, 1), log: slog.New(slog.DiscardHandler)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(cat, nil)
	return s
}

// Snapshot is the current list.
func (s *Set) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// Refresh fetches the list now, or waits for the fetch already in flight,
// and returns the snapshot it left with that fetch's error (nil on
// success, even for an empty list). If ctx ends while waiting, it returns
// the current snapshot and ctx's error.
func (s *Set) Refresh(ctx context.Context) (Snapshot, error) {
	if s.static {
		return s.Snapshot(), nil
	}
	for {
		s.mu.Lock()
		f := s.flight
		if f == nil {
			f = s.takeOff()
			s.mu.Unlock()
			s.fetch(ctx, f)
			return s.Snapshot(), f.err
		}
		s.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return s.Snapshot(), ctx.Err()
		}
		// A flight its starter's context cut short recorded nothing and
		// says nothing about the model server: fetch again for this
		// caller, whose context is still live.
		if f.recorded {
			return s.Snapshot(), f.err
		}
	}
}

// AfterMiss is what a binding that found no model in snap calls. When a
// newer snapshot than snap exists, it returns it without fetching; when a
// fetch is in flight, it waits for it; when the list may be out of date
// (the last fetch failed and its backoff has passed, or it listed no
// models more than Backoff ago, or models more than Interval ago, or
// nothing was fetched yet) it fetches. changed reports whether the
// returned snapshot is newer than snap, i.e. whether binding again may
// find something. A fetch cut short by its starter's context leaves the
// snapshot as it was, for the starter and for those waiting on it.
func (s *Set) AfterMiss(ctx context.Context, snap Snapshot) (_ Snapshot, changed bool) {
	for {
		s.mu.Lock()
		if cur := s.cur; cur.gen != snap.gen {
			if !sameModels(cur, snap) {
				s.mu.Unlock()
				return cur, true
			}
			// Only a failure was recorded since snap: the models are the
			// same, so binding again would find nothing. Take its problem
			// (it says more about now) and decide on a fetch from here.
			snap = cur
		}
		f := s.flight
		switch {
		case f != nil:
			s.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return s.Snapshot(), false
			}
			// Look again: the flight either recorded a list, or its
			// starter's context cut it short and this caller may fetch.
			continue
		case s.due(time.Now()):
			f = s.takeOff()
			s.mu.Unlock()
			s.fetch(ctx, f)
		default:
			s.mu.Unlock()
			return snap, false
		}
		cur := s.Snapshot()
		return cur, cur.gen != snap.gen && !sameModels(cur, snap)
	}
}

// sameModels reports whether a and b hold the same model list: a failed
// fetch keeps the previous slice, a successful one brings a new one.
func sameModels(a, b Snapshot) bool {
	if len(a.Models) != len(b.Models) {
		return false
	}
	return len(a.Models) == 0 || &a.Models[0] == &b.Models[0]
}

// Kick asks Run for a refresh soon, without waiting for it: a catalog
// reload calls it from the watcher, which must not wait on the network.
// Without a Run, kicks are dropped.
func (s *Set) Kick() {
	select {
	case s.kicks <- struct{}{}:
	default: // one is pending already
	}
}

// Run refreshes the list on every Kick and, when period is more than 0,
// every period, until ctx ends. It runs on the caller's goroutine.
func (s *Set) Run(ctx context.Context, period time.Duration) {
	var tick <-chan time.Time
	if period > 0 {
		t := time.NewTicker(period)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-s.kicks:
		}
		_, _ = s.Refresh(ctx)
	}
}

// due reports whether a binding miss at now may fetch. s.mu is held.
func (s *Set) due(now time.Time) bool {
	switch {
	case s.static:
		return false
	case s.cur.gen == 0:
		return true
	case s.failures > 0:
		return now.Sub(s.last) >= s.backoff(s.failures)
	case len(s.cur.Models) == 0:
		// Nothing pulled yet: the user's next step is a pull, so a miss
		// looks again after the short Backoff rather than Interval.
		return now.Sub(s.last) >= s.o.Backoff
	default:
		return now.Sub(s.last) >= s.o.Interval
	}
}

// backoff is the wait after n consecutive failures: Backoff doubled n-1
// times, capped at MaxBackoff.
func (s *Set) backoff(n int) time.Duration {
	d := s.o.Backoff
	for i := 1; i < n && d < s.o.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.o.MaxBackoff)
}

// takeOff registers a new flight. s.mu is held.
func (s *Set) takeOff() *flight {
	f := &flight{done: make(chan struct{})}
	s.flight = f
	return f
}

// fetch runs one fetch under ctx, records it and lands f. The flight is
// landed even if Fetch panics (the panic goes on to the caller's
// recovery), so no later caller waits on it forever.
func (s *Set) fetch(ctx context.Context, f *flight) {
	landed := false
	defer func() {
		if landed {
			return
		}
		s.mu.Lock()
		f.err = fmt.Errorf("fetch the model list: the fetch panicked: %v", recover())
		s.flight = nil
		s.mu.Unlock()
		close(f.done)
		panic(f.err)
	}()
	cat, err := s.o.Fetch(ctx)
	outcome := ""
	s.mu.Lock()
	// A fetch cut short by its caller's context says nothing about the
	// model server: the list and the backoff stay as they were.
	if err == nil || ctx.Err() == nil {
		outcome = s.record(cat, err)
		f.recorded = true
	}
	f.err = err
	s.flight = nil
	s.mu.Unlock()
	landed = true
	close(f.done)
	if outcome != "" && s.o.OnFetch != nil {
		s.o.OnFetch(outcome)
	}
}

// record applies one completed fetch and logs what changed. s.mu is held.
func (s *Set) record(cat gateway.Catalog, err error) string {
	models := cat.Models
	prev := s.cur
	first := prev.gen == 0 && s.failures == 0
	s.last = time.Now()
	next := Snapshot{gen: prev.gen + 1}
	if err != nil {
		s.failures++
		next.Models, next.Unmatched = prev.Models, prev.Unmatched
		next.problem = s.describe(err)
		s.cur = next
		level := slog.LevelDebug
		if s.failures == 1 {
			level = slog.LevelWarn
		}
		s.log.Log(context.Background(), level, "the model server's list of models could not be fetched; runs bind against the last list fetched until it answers",
			"models", len(next.Models), "retry_after", s.backoff(s.failures).String(), "error", next.problem)
		return OutcomeFailed
	}
	recovered := s.failures > 0
	s.failures = 0
	next.Models, next.Unmatched = models, cat.Unmatched
	s.cur = next
	if len(models) == 0 {
		next.problem = s.emptyProblem(cat)
		s.cur = next
		wasEmpty := !first && !recovered && prev.problem != nil && len(prev.Models) == 0
		level := slog.LevelWarn
		if wasEmpty {
			level = slog.LevelDebug
		}
		s.log.Log(context.Background(), level, next.problem.Error())
		return OutcomeEmpty
	}
	level := slog.LevelDebug
	if first || recovered || len(models) != len(prev.Models) {
		level = slog.LevelInfo
	}
	s.log.Log(context.Background(), level, "the model server lists models for binding", "models", len(models))
	return OutcomeOK
}

// describe words a failed fetch for the run that needed a model: a
// server that cannot be reached is named as such, with the cause and what
// to do; any other failure keeps the gateway's own advice.
func (s *Set) describe(err error) error {
	var ge *gateway.Error
	if errors.As(err, &ge) && ge.Kind == gateway.KindTransport {
		return &unreachableError{
			msg: fmt.Sprintf("the model server at %s is not reachable: %s; start it, or check %s", s.url, cause(ge), s.setting),
			err: err,
		}
	}
	return fmt.Errorf("the model server at %s could not list its models: %w", s.url, err)
}

// unreachableError is Problem's error for a server that cannot be
// reached: its own sentence, and the gateway's error beneath it.
type unreachableError struct {
	msg string
	err error
}

func (e *unreachableError) Error() string { return e.msg }
func (e *unreachableError) Unwrap() error { return e.err }

// IsUnreachable reports whether err (a Problem) says the model server
// could not be reached at all.
func IsUnreachable(err error) bool {
	var u *unreachableError
	return errors.As(err, &u)
}

// cause is the innermost useful text of a transport failure: the dial or
// connection error without the request line the URL error adds.
func cause(ge *gateway.Error) string {
	if ge.Timeout() {
		return "it did not answer within the model-list timeout"
	}
	var ue *url.Error
	if errors.As(ge, &ue) {
		return ue.Err.Error()
	}
	if inner := ge.Unwrap(); inner != nil {
		return inner.Error()
	}
	return ge.Error()
}

// emptyProblem says why a list that fetched fine binds nothing, and what
// to do: pull a model, or describe the served ones, naming any [models]
// table whose id is not served (the likeliest mistake when both happen).
func (s *Set) emptyProblem(cat gateway.Catalog) error {
	var msg string
	if len(cat.Skipped) == 0 {
		msg = fmt.Sprintf("the model server at %s lists no models; pull one (for Ollama: ollama pull llama3.1) or check %s", s.url, s.setting)
	} else {
		// It serves models, but none can be bound: the usual first run of a
		// plain server, whose list carries ids and no descriptions.
		msg = fmt.Sprintf("the model server at %s lists %d model(s) but none can be bound: %s: %s",
			s.url, len(cat.Skipped), cat.Skipped[0].ID, cat.Skipped[0].Reason)
		if len(cat.Skipped) > 1 {
			msg += fmt.Sprintf(" (and %d more like it)", len(cat.Skipped)-1)
		}
	}
	for _, u := range gateway.Misnamed(cat.Unmatched) {
		msg += "; " + u.Problem()
	}
	return errors.New(msg)
}
