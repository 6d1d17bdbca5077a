package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StoreObserver returns the function a shared run store reports each
// operation's duration to, as promptforge_run_store_seconds{op}. It
// registers the series on first use, so a server keeping runs in memory
// exports none; call it at most once per Metrics.
func (m *Metrics) StoreObserver() func(op string, d time.Duration) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "promptforge_run_store_seconds",
		Help: "Run store operations (register, finish, lookup, cancel, sweep) from call to answer.",
		// A loopback PostgreSQL answers in well under a millisecond; a
		// remote one in a few; seconds mean it is in trouble.
		Buckets: []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1, 0.5, 2.5, 10},
	}, []string{"op"})
	m.reg.MustRegister(h)
	return func(op string, d time.Duration) { h.WithLabelValues(op).Observe(d.Seconds()) }
}
