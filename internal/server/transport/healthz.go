package transport

import (
	"context"
	"io"
	"net/http"
	"time"
)

// healthTimeout bounds /healthz's store check: a load balancer's probe
// must get an answer well inside its own timeout.
const healthTimeout = 2 * time.Second

// healthCacheFor is how long one store check answers /healthz: the route
// is open, so without it every probe (anyone's) would be a round trip to
// the database, each holding one of the pool's connections the runs need.
// A load balancer probing every few seconds still sees every change.
const healthCacheFor = time.Second

// healthz answers /healthz (open, no token). Without a shared run store it
// says the server is serving. With one it also reports the store: "ok", or
// 503 with "unreachable" when the store does not answer, since this
// replica can then neither start runs nor read other replicas' records; a
// load balancer takes it out until the store is back. The error itself is
// logged by the store's users, not published here. One check runs at a
// time, concurrent probes wait for it, and its answer serves the probes of
// the next healthCacheFor (healthCheck).
func healthz(check func(context.Context) error) http.Handler {
	hc := &healthCheck{check: check, turn: make(chan struct{}, 1)}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if check == nil {
			io.WriteString(w, `{"status":"serving"}`)
			return
		}
		if err := hc.result(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"status":"degraded","store":"unreachable"}`)
			return
		}
		io.WriteString(w, `{"status":"serving","store":"ok"}`)
	})
}

// healthCheck shares the store check among probes.
type healthCheck struct {
	check func(context.Context) error
	// turn is held (a value in it) for the check: the next probes wait
	// for it, or for their own request to end, then share the answer.
	turn chan struct{}
	at   time.Time // when the last check ended; zero before the first
	err  error
}

// result is the last check's error if it ended within healthCacheFor, else
// a fresh check's. The check runs without the probe's cancellation (other
// probes wait on it), bounded by healthTimeout.
func (h *healthCheck) result(ctx context.Context) error {
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-h.turn }()
	if !h.at.IsZero() && time.Since(h.at) < healthCacheFor {
		return h.err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healthTimeout)
	defer cancel()
	h.err = h.check(ctx)
	h.at = time.Now()
	return h.err
}
