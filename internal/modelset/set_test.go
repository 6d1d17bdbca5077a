package modelset_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/promptforge-go/promptforge/internal/gateway"
	"github.com/promptforge-go/promptforge/internal/gatewaytest"
	"github.com/promptforge-go/promptforge/internal/modelset"
	"github.com/promptforge-go/promptforge/internal/secret"
)

// server is a scripted model list for the holder's timing tests, which
// run in a synctest bubble where a loopback gateway would keep the clock
// from moving. Each fetch returns the current script and is counted with
// its (bubble) time.
type server struct {
	mu     sync.Mutex
	models []gateway.Model
	err    error
	times  []time.Time
	hold   chan struct{} // when set, each fetch waits for it to close
}

func (s *server) fetch(ctx context.Context) ([]gateway.Model, error) {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	hold := s.hold
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.models, s.err
}

func (s *server) set(models []gateway.Model, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models, s.err = models, err
}

func (s *server) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times)
}

var (
	modelA = gateway.Model{ID: "a", Description: "A general assistant model", Context: 8192, Thinking: gateway.ThinkingNever}
	modelB = gateway.Model{ID: "b", Description: "A coding model", Context: 8192, Thinking: gateway.ThinkingNever}
)

func newSet(t *testing.T, s *server, o modelset.Options) *modelset.Set {
	t.Helper()
	o.Fetch = func(ctx context.Context) (gateway.Catalog, error) {
		models, err := s.fetch(ctx)
		return gateway.Catalog{Models: models}, err
	}
	if o.URL == "" {
		o.URL = "http://127.0.0.1:11434/v1"
	}
	set, err := modelset.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestBackoffGrowsAndCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{err: errors.New("connection refused")}
		set := newSet(t, srv, modelset.Options{Backoff: time.Second, MaxBackoff: 8 * time.Second})
		start := time.Now()
		snap, _ := set.Refresh(t.Context())
		// A binding misses every 100ms for a minute; fetches are spaced
		// by the backoff, which doubles and stops at the cap.
		for time.Since(start) < time.Minute {
			time.Sleep(100 * time.Millisecond)
			snap, _ = set.AfterMiss(t.Context(), snap)
		}
		var gaps []time.Duration
		for i := 1; i < len(srv.times); i++ {
			gaps = append(gaps, srv.times[i].Sub(srv.times[i-1]).Round(100*time.Millisecond))
		}
		want := []time.Duration{1, 2, 4, 8, 8, 8, 8, 8, 8}
		if len(gaps) != len(want) {
			t.Fatalf("gaps between fetches %v, want %v seconds", gaps, want)
		}
		for i := range want {
			if gaps[i] != want[i]*time.Second {
				t.Fatalf("gaps between fetches %v, want %v seconds", gaps, want)
			}
		}
		// A success resets it: the next failure waits Backoff again.
		srv.set([]gateway.Model{modelA}, nil)
		if _, err := set.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.set(nil, errors.New("connection refused"))
		snap, _ = set.Refresh(t.Context())
		n := srv.calls()
		time.Sleep(999 * time.Millisecond)
		if _, changed := set.AfterMiss(t.Context(), snap); changed || srv.calls() != n {
			t.Fatal("a miss inside the first backoff fetched")
		}
		time.Sleep(time.Millisecond)
		// It fetches; the fetch fails, which keeps the same models, so there
		// is nothing new to bind against (changed is false).
		if _, changed := set.AfterMiss(t.Context(), snap); changed || srv.calls() != n+1 {
			t.Fatalf("a miss after the first backoff: changed %v, fetches %d, want false and %d", changed, srv.calls(), n+1)
		}
	})
}

func TestAMissFetchesOnlyWhenAGoodListIsOld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{models: []gateway.Model{modelA}}
		set := newSet(t, srv, modelset.Options{Interval: 10 * time.Second})
		snap, err := set.Refresh(t.Context())
		if err != nil || len(snap.Models) != 1 || snap.Problem() != nil {
			t.Fatalf("first fetch: %+v %v", snap, err)
		}
		srv.set([]gateway.Model{modelA, modelB}, nil)
		time.Sleep(9 * time.Second)
		if got, changed := set.AfterMiss(t.Context(), snap); changed || len(got.Models) != 1 || srv.calls() != 1 {
			t.Fatalf("a miss 9s after a good fetch: changed %v, %d models, %d fetches", changed, len(got.Models), srv.calls())
		}
		time.Sleep(time.Second)
		got, changed := set.AfterMiss(t.Context(), snap)
		if !changed || len(got.Models) != 2 || srv.calls() != 2 {
			t.Fatalf("a miss 10s after a good fetch: changed %v, %d models, %d fetches", changed, len(got.Models), srv.calls())
		}
		// A run still holding the old snapshot gets the newer one without
		// a fetch.
		if got, changed := set.AfterMiss(t.Context(), snap); !changed || len(got.Models) != 2 || srv.calls() != 2 {
			t.Fatalf("a stale snapshot: changed %v, %d models, %d fetches", changed, len(got.Models), srv.calls())
		}
	})
}

func TestAMissAfterAnEmptyListLooksAgainSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{}
		set := newSet(t, srv, modelset.Options{Backoff: time.Second, Interval: 10 * time.Second})
		snap, _ := set.Refresh(t.Context())
		srv.set([]gateway.Model{modelA}, nil) // "ollama pull"
		time.Sleep(time.Second)
		if got, changed := set.AfterMiss(t.Context(), snap); !changed || len(got.Models) != 1 {
			t.Fatalf("a miss 1s after an empty list: changed %v, %+v", changed, got)
		}
	})
}

func TestConcurrentMissesCauseOneFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{err: errors.New("connection refused")}
		set := newSet(t, srv, modelset.Options{})
		snap, _ := set.Refresh(t.Context())
		time.Sleep(time.Minute)
		srv.set([]gateway.Model{modelA}, nil)
		srv.hold = make(chan struct{})

		const misses = 20
		var wg sync.WaitGroup
		results := make(chan modelset.Snapshot, misses)
		for range misses {
			wg.Go(func() {
				got, changed := set.AfterMiss(t.Context(), snap)
				if !changed {
					t.Error("a miss that waited for the fetch saw no change")
				}
				results <- got
			})
		}
		synctest.Wait() // one goroutine fetching, the rest waiting for it
		if n := srv.calls(); n != 2 {
			t.Fatalf("%d misses started %d fetches, want 1", misses, n-1)
		}
		close(srv.hold)
		wg.Wait()
		close(results)
		for got := range results {
			if len(got.Models) != 1 || got.Problem() != nil {
				t.Fatalf("a miss got %+v", got)
			}
		}
		if n := srv.calls(); n != 2 {
			t.Fatalf("%d fetches after the misses, want 2", n)
		}
	})
}

func TestThePeriodicRefreshPicksUpANewModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{models: []gateway.Model{modelA}}
		set := newSet(t, srv, modelset.Options{})
		if _, err := set.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			set.Run(ctx, 5*time.Minute)
		}()
		srv.set([]gateway.Model{modelA, modelB}, nil) // "ollama pull"
		time.Sleep(5*time.Minute - time.Second)
		synctest.Wait()
		if n := len(set.Snapshot().Models); n != 1 {
			t.Fatalf("%d models before the period, want 1", n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := len(set.Snapshot().Models); n != 2 || srv.calls() != 2 {
			t.Fatalf("%d models and %d fetches after the period, want 2 and 2", n, srv.calls())
		}
		cancel()
		<-done
	})
}

func TestAKickRefreshesWithoutWaitingAndAZeroPeriodDoesNotPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{models: []gateway.Model{modelA}}
		set := newSet(t, srv, modelset.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			set.Run(ctx, 0)
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := srv.calls(); n != 0 {
			t.Fatalf("%d fetches in an hour with period 0", n)
		}
		set.Kick()
		set.Kick() // coalesced with the first while it is pending or running
		synctest.Wait()
		if n := srv.calls(); n < 1 || n > 2 || len(set.Snapshot().Models) != 1 {
			t.Fatalf("after two kicks: %d fetches, snapshot %+v", n, set.Snapshot())
		}
		cancel()
		<-done
	})
}

func TestAFailedFetchKeepsTheLastListAndSaysWhy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var outcomes []string
		srv := &server{models: []gateway.Model{modelA}}
		set := newSet(t, srv, modelset.Options{OnFetch: func(o string) { outcomes = append(outcomes, o) }})
		if _, err := set.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
		srv.set(nil, errors.New("boom"))
		snap, err := set.Refresh(t.Context())
		if err == nil || len(snap.Models) != 1 || snap.Problem() == nil || !strings.Contains(snap.Problem().Error(), "could not list its models: boom") {
			t.Fatalf("after a failure: %+v, %v, problem %v", snap, err, snap.Problem())
		}
		srv.set(nil, nil)
		snap, err = set.Refresh(t.Context())
		if err != nil || len(snap.Models) != 0 || snap.Problem() == nil || !strings.Contains(snap.Problem().Error(), "lists no models; pull one") {
			t.Fatalf("an empty list: %+v, %v", snap, err)
		}
		if strings.Join(outcomes, ",") != "ok,failed,empty" {
			t.Fatalf("outcomes %v", outcomes)
		}
	})
}

func TestACancelledFetchChangesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{models: []gateway.Model{modelA}}
		set := newSet(t, srv, modelset.Options{})
		before, _ := set.Refresh(t.Context())
		srv.hold = make(chan struct{})
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := set.Refresh(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v", err)
		}
		after := set.Snapshot()
		if _, changed := set.AfterMiss(t.Context(), before); changed || after.Problem() != nil || len(after.Models) != 1 {
			t.Fatalf("a cancelled fetch changed the list: %+v", after)
		}
	})
}

func TestAnEmptyListIsWarnedOnceUntilItChanges(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := &server{}
	set := newSet(t, srv, modelset.Options{Logger: logger})
	for range 3 {
		if _, err := set.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := strings.Count(buf.String(), "lists no models; pull one (for Ollama: ollama pull llama3.1) or check [gateway].url"); n != 1 {
		t.Fatalf("%d warnings for three empty lists, want 1:\n%s", n, buf.String())
	}
	srv.set([]gateway.Model{modelA}, nil)
	set.Refresh(t.Context())
	srv.set(nil, nil)
	set.Refresh(t.Context())
	if n := strings.Count(buf.String(), "lists no models"); n != 2 {
		t.Fatalf("%d warnings after the list emptied again, want 2:\n%s", n, buf.String())
	}
}

// With a real client, a model server that is not listening is named as
// not reachable, with the cause and what to do.
func TestAServerThatIsDownIsNotReachable(t *testing.T) {
	g := gatewaytest.New(t)
	g.Close()
	c, err := gateway.New(gateway.Options{BaseURL: g.URL(), APIKey: secret.MustNew("k")})
	if err != nil {
		t.Fatal(err)
	}
	set, err := modelset.New(modelset.Options{
		Fetch: func(ctx context.Context) (gateway.Catalog, error) { return c.Models(ctx, nil) },
		URL:   g.URL(),
	})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := set.Refresh(t.Context())
	if err == nil {
		t.Fatal("no error from a closed server")
	}
	p := snap.Problem()
	want := "the model server at " + g.URL() + " is not reachable: dial tcp "
	if !modelset.IsUnreachable(p) || !strings.HasPrefix(p.Error(), want) || !strings.HasSuffix(p.Error(), "; start it, or check [gateway].url") {
		t.Fatalf("problem %q, want it to start %q", p, want)
	}
	var ge *gateway.Error
	if !errors.As(p, &ge) || ge.Kind != gateway.KindTransport {
		t.Fatalf("the gateway error is not beneath the problem: %v", p)
	}
}

func TestAStaticSetNeverFetches(t *testing.T) {
	set := modelset.Static([]gateway.Model{modelA})
	snap := set.Snapshot()
	if got, changed := set.AfterMiss(t.Context(), snap); changed || len(got.Models) != 1 {
		t.Fatalf("static miss: %+v %v", got, changed)
	}
	if got, err := set.Refresh(t.Context()); err != nil || len(got.Models) != 1 {
		t.Fatalf("static refresh: %+v %v", got, err)
	}
}

// A catalog that serves models none of which can be bound says which and
// what to add, and names only the [models] tables that look misnamed (one
// with a served id near it), not those for models nobody pulled.
func TestStaticCatalogSaysWhyNothingBinds(t *testing.T) {
	set := modelset.StaticCatalog("http://user:pw@127.0.0.1:11434/v1", gateway.Catalog{
		Skipped: []gateway.SkippedModel{{ID: "llama3.1:latest", Reason: "no description"}, {ID: "phi4:latest", Reason: "no description"}},
		Unmatched: []gateway.UnmatchedOverride{
			{ID: "llama3.1:8b", Closest: "llama3.1:latest"},
			{ID: "qwen2.5:latest"},
		},
	})
	snap := set.Snapshot()
	problem := snap.Problem()
	if problem == nil || len(snap.Models) != 0 || len(snap.Unmatched) != 2 {
		t.Fatalf("snapshot %+v", snap)
	}
	for _, want := range []string{"lists 2 model(s) but none can be bound: llama3.1:latest: no description (and 1 more like it)", `rename the table to [models."llama3.1:latest"]`} {
		if !strings.Contains(problem.Error(), want) {
			t.Errorf("problem %q lacks %q", problem, want)
		}
	}
	if msg := problem.Error(); strings.Contains(msg, "qwen2.5") || strings.Contains(msg, "pw") {
		t.Errorf("problem %q names an unpulled model's table or the URL's password", msg)
	}
	if _, err := set.Refresh(t.Context()); err != nil || set.Snapshot().Problem() == nil {
		t.Errorf("a static set never fetches: %v", err)
	}
}

// A binding miss waiting on a fetch that its starter's context cut short
// fetches again itself, rather than giving up with the old list; and a
// failure recorded meanwhile by someone else does not count as a newer
// list that makes a due fetch unnecessary.
func TestAMissOutlivesAFetchItsStarterCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &server{}
		srv.set(nil, errors.New("connection refused"))
		set := newSet(t, srv, modelset.Options{Backoff: time.Second, MaxBackoff: time.Second})
		snap, _ := set.Refresh(t.Context()) // down at boot: failed, empty

		// The server comes up, but answers slowly.
		time.Sleep(time.Second)
		srv.set([]gateway.Model{modelA}, nil)
		hold := make(chan struct{})
		srv.mu.Lock()
		srv.hold = hold
		srv.mu.Unlock()

		starterCtx, cancelStarter := context.WithCancel(t.Context())
		go set.AfterMiss(starterCtx, snap) // run A starts the fetch
		synctest.Wait()
		type result struct {
			snap    modelset.Snapshot
			changed bool
		}
		got := make(chan result, 1)
		go func() { // run B waits on A's fetch
			s, c := set.AfterMiss(t.Context(), snap)
			got <- result{s, c}
		}()
		synctest.Wait()
		cancelStarter() // run A is cancelled mid-fetch
		synctest.Wait()
		srv.mu.Lock()
		srv.hold = nil
		srv.mu.Unlock()
		close(hold)
		r := <-got
		if !r.changed || len(r.snap.Models) != 1 {
			t.Fatalf("the waiting miss got changed=%v models=%v, want the list the server now serves", r.changed, r.snap.Models)
		}
	})
}
