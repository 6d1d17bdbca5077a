package transport

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// /healthz reports the shared run store when there is one: 200 and "ok"
// while it answers, 503 and "unreachable" (never the store's error text,
// which may name its host) when it does not; without one, the plain answer.
func TestHealthzReportsTheRunStore(t *testing.T) {
	down := errors.New("dial tcp db.internal:5432: connection refused")
	for _, tt := range []struct {
		name  string
		check func(context.Context) error
		code  int
		body  string
	}{
		{"memory", nil, 200, `{"status":"serving"}`},
		{"store up", func(context.Context) error { return nil }, 200, `{"status":"serving","store":"ok"}`},
		{"store down", func(context.Context) error { return down }, 503, `{"status":"degraded","store":"unreachable"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := HTTPHandler(Backend{Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}, Health: tt.check})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			res, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.code || string(b) != tt.body {
				t.Fatalf("/healthz = %d %s; want %d %s", res.StatusCode, b, tt.code, tt.body)
			}
		})
	}
}

// /healthz is open, so a flood of probes must not become a flood of store
// round trips (each takes one of the pool's connections from the runs):
// concurrent probes share one check, a check's answer serves the probes
// of the next healthCacheFor, and a probe that goes away does not cancel
// the check the others wait on.
func TestHealthzChecksTheStoreOnceForManyProbes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var checks atomic.Int32
		release := make(chan struct{})
		check := func(ctx context.Context) error {
			checks.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		h, err := HTTPHandler(Backend{Calls: &Calls{}}, HTTPOptions{APIKey: "k", AllowedHosts: []string{"localhost"}, Health: check})
		if err != nil {
			t.Fatal(err)
		}
		probe := func(ctx context.Context) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "http://localhost/healthz", nil))
			return rec
		}
		gone, leave := context.WithCancel(context.Background())
		codes := make(chan int, 50)
		go func() { codes <- probe(gone).Code }()
		synctest.Wait()
		for range 49 {
			go func() { codes <- probe(context.Background()).Code }()
		}
		synctest.Wait()
		leave()
		synctest.Wait()
		close(release)
		for range 50 {
			if code := <-codes; code != http.StatusOK {
				t.Errorf("a probe got %d, want 200: the check must not end with the probe that started it", code)
			}
		}
		if n := checks.Load(); n != 1 {
			t.Fatalf("50 concurrent probes made %d store checks, want 1", n)
		}
		if rec := probe(context.Background()); rec.Code != http.StatusOK || checks.Load() != 1 {
			t.Fatalf("a probe right after: %d with %d checks, want 200 from the shared answer", rec.Code, checks.Load())
		}
		time.Sleep(healthCacheFor)
		if rec := probe(context.Background()); rec.Code != http.StatusOK || checks.Load() != 2 {
			t.Fatalf("a probe after healthCacheFor: %d with %d checks, want a fresh check", rec.Code, checks.Load())
		}
	})
}
